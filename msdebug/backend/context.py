"""MindSpore's context through one object: read without freezing, write validated values.

Absorbs the differences between MindSpore 2.7.0 and 2.10.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import sys
from collections.abc import Iterator
from typing import Any, NamedTuple

from ..errors import DeviceLockedError, MindSporeMissingError, MindSporeRefusedError, echo
from .version import INSTALL_HINT

__all__ = ["Backend", "DeviceState", "first_cell", "machine_default"]

# Versions whose set_context body msdebug has read and tested: within this range msdebug
# calls MindSpore's own per-key setter after validating the value itself, exactly as
# set_context dispatches, which skips set_context's deprecation log lines. Outside it
# msdebug calls set_context and filters those lines instead.
_DIRECT_RANGE = ((2, 7), (2, 11))

# Keys stored as attributes of the Python context object rather than as C++ params.
_ATTRIBUTE_KEYS = (
    "reserve_class_name_in_scope",
    "support_binary",
    "enable_compile_cache",
    "aoe_config",
    "jit_config",
    "ascend_config",
    "gpu_config",
)


def first_cell(target: str, device_id: int | None) -> str:
    """The code to run first in a fresh kernel to get ``target:device_id``."""
    args = repr(target) if device_id is None else f"{target!r}, {device_id}"
    return f"import mindspore; mindspore.set_device({args})"


class DeviceState(NamedTuple):
    """Where this process runs, and whether that can still change.

    ``configured`` is true once ``mindspore.set_device`` was called (it may be called once);
    ``started`` once the runtime of ``target`` is initialised (after the first operator).
    """

    target: str
    device_id: int
    configured: bool
    started: bool
    supported: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.target}:{self.device_id}"


class _DropDeprecations(logging.Filter):
    """Drops MindSpore's deprecation lines; only attached around msdebug's own calls."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(words in message for words in ("deprecated", "will be removed", "is currently replaced by"))


class Backend:
    """MindSpore's context seen through one object. Use :func:`get_backend`."""

    def __init__(self) -> None:
        try:
            import mindspore
        except ImportError as error:
            raise MindSporeMissingError(
                f"MindSpore is not installed in this environment ({sys.executable}); install it with: {INSTALL_HINT}"
            ) from error
        from mindspore import context as ms_context
        from mindspore._c_expression import (
            DeviceManagerConf,
            MSContext,
            RuntimeConf,
            ms_ctx_param,
        )
        from mindspore.hal.device import is_initialized

        from ..keys import ALL_DEVICES, CATALOG, version_tuple

        self.ms = mindspore
        self.version: str = mindspore.__version__
        self._ctx = ms_context._context()
        # The C++ context behind it: reading params here skips the Python object's
        # __getattribute__ wrapper, which costs more than the read itself.
        self._handle = MSContext.get_instance()
        self._is_initialized = is_initialized
        # pybind11 builds __members__ afresh on every access: look the params up once.
        members = dict(ms_ctx_param.__members__)
        self._params = {name: member for name, member in members.items() if not name.startswith("_")}
        self._setters = dict(getattr(type(self._ctx), "setters", {}))
        self._attributes = tuple(name for name in _ATTRIBUTE_KEYS if hasattr(self._ctx, name))
        self._devices = DeviceManagerConf.get_instance()
        self._runtime = RuntimeConf.get_instance()
        self._supported = tuple(t for t in ALL_DEVICES if self._handle.is_pkg_support_device(t))
        # Reading these through get_param fixes them for the rest of the process (CheckReadStatus
        # in ms_context.cc): device_id comes from DeviceManagerConf, the others are never read.
        self._frozen_by_reading = frozenset(name for name, key in CATALOG.items() if key.freezes_on_read)
        self._direct = _DIRECT_RANGE[0] <= version_tuple(self.version)[:2] < _DIRECT_RANGE[1]
        # Values msdebug wrote for keys it must not read back (reading would freeze them).
        self.written: dict[str, Any] = {}
        self.pristine: dict[str, Any] | None = None
        # set_auto_parallel_context's keys that msdebug describes, where this MindSpore has them;
        # those that get_auto_parallel_context refuses are written only.
        setters, getters = _auto_parallel_maps()
        described = [name for name, key in CATALOG.items() if key.api == "set_auto_parallel_context"]
        self._parallel = tuple(name for name in described if name in setters)
        self._parallel_readable = frozenset(
            name for name in self._parallel if name in getters and not CATALOG[name].write_only
        )
        self._parallel_getters = {
            name: getters[name] for name in (*self._parallel_readable, *_PARALLEL_ALIASES.values())
        }
        self._write_only_defaults = {
            name: CATALOG[name].default for name in self._parallel if name not in self._parallel_readable
        }

    # ----------------------------------------------------------------- reading

    def live_keys(self) -> tuple[str, ...]:
        """Every key the installed ``set_context`` accepts, in a stable order, then the
        ``set_auto_parallel_context`` keys msdebug describes."""
        names = dict.fromkeys([*self._params, *self._setters, *self._attributes, *self._parallel])
        return tuple(names)

    def readable(self, name: str) -> bool:
        """Whether :meth:`read` can report ``name`` without side effects."""
        return (
            name == "device_id"
            or name in self._parallel_readable
            or (name not in self._frozen_by_reading and (name in self._params or name in self._attributes))
        )

    def write_only(self) -> dict[str, Any]:
        """The auto-parallel keys MindSpore cannot read back, as msdebug last wrote them (else
        their start-up values)."""
        # Their values are flat dicts and strings: a shallow copy keeps the caller's apart.
        return {
            name: dict(value) if isinstance(value, dict) else value
            for name, default in self._write_only_defaults.items()
            for value in (self.written.get(name, default),)
        }

    def network_built(self) -> int:
        """How many Cells (networks and their layers) live in this process now."""
        return int(getattr(self.ms.nn.Cell, "total_instance_count", 0))

    def read(self, name: str) -> Any:
        """The raw value of ``name``, as ``get_context`` would return it.

        Unlike ``get_context`` it logs nothing, and it never reads a key whose read
        freezes it: ``device_id`` comes from ``get_current_device()``.
        """
        if name == "device_id":
            return self._devices.get_device_id()
        if name in self._frozen_by_reading:
            raise KeyError(f"{name} is never read: reading it would freeze it")
        if name in self._parallel:
            if name not in self._parallel_readable:
                raise KeyError(f"{name} cannot be read: get_auto_parallel_context refuses it")
            # One value under two names; reading the old one logs a line every time. Each read
            # builds its dicts and lists afresh.
            return self._parallel_getters[_PARALLEL_ALIASES.get(name, name)]()
        if name in self._attributes:
            return getattr(self._ctx, name)
        return self._handle.get_param(self._params[name])

    def read_all(self) -> dict[str, Any]:
        """Raw values of every readable live key; dict values are copies, not MindSpore's own."""
        return {
            name: copy.deepcopy(value) if isinstance(value, dict) and name not in self._parallel else value
            for name in self.live_keys()
            if self.readable(name)
            for value in (self.read(name),)
        }  # (the auto-parallel getters build their dicts afresh on every read)

    def device(self) -> DeviceState:
        """The current device and whether it can still change."""
        target = self.read("device_target")
        return DeviceState(
            target=target,
            device_id=self._devices.get_device_id(),
            configured=self._devices.is_device_enable(),
            started=self.runtime_started(target),
            supported=self._supported,
        )

    def runtime_started(self, target: str) -> bool:
        """Whether the runtime of ``target`` is initialised (the device is then fixed)."""
        return bool(self._is_initialized(target)) if target in self._supported else False

    def writes_print_files(self) -> bool:
        """Whether MindSpore itself honours ``print_file_path`` here (only on Ascend; on CPU
        and GPU it ignores the key)."""
        return self.read("device_target") == "Ascend"

    def parallel_mode(self) -> str:
        """``get_auto_parallel_context("parallel_mode")``: ``stand_alone`` unless set."""
        return str(self.ms.get_auto_parallel_context("parallel_mode"))

    def launch_blocking(self) -> bool:
        """Whether ``mindspore.runtime.launch_blocking()`` was called (it cannot be undone)."""
        return bool(self._runtime.is_launch_blocking())

    # ----------------------------------------------------------------- writing

    def write(self, name: str, value: Any) -> None:
        """Apply one validated, canonical value, the way ``set_context(name=value)`` would."""
        try:
            # quiet() around every path: MindSpore's per-key setters log deprecations too
            # (jit_config's infer_boost on 2.10), not only set_context.
            with self.quiet():
                self._write(name, value)
        except _MINDSPORE_ERRORS as error:
            raise _translate(name, value, error) from None
        if name in self._frozen_by_reading or name in self._write_only_defaults:
            self.written[name] = value

    def _write_parallel(self, name: str, raw: Any) -> None:
        if isinstance(raw, list) and name == "dataset_strategy":
            raw = tuple(tuple(row) for row in raw)  # read back as lists, set as tuples
        if raw == [] and name == "all_reduce_fusion_config":
            self._clear_parallel(name)  # MindSpore refuses [] ("can not be empty")
            return
        self.ms.set_auto_parallel_context(**{name: raw})

    def _clear_parallel(self, name: str) -> None:
        """Put ``name`` back to its start-up value where set_auto_parallel_context cannot: reset
        the whole auto-parallel context, then put every other key back as it was."""
        others = [other for other in self._parallel_readable if other != name and other not in _PARALLEL_ALIASES]
        kept = {other: self.read(other) for other in others}
        self.ms.reset_auto_parallel_context()
        for other, raw in kept.items():
            if self.read(other) != raw:
                self._write_parallel(other, raw)
        for other, value in self.written.items():
            if other in self._parallel and other != name:
                self.ms.set_auto_parallel_context(**{other: value})

    def _write(self, name: str, value: Any) -> None:
        if name in self._parallel:
            self._write_parallel(name, value)
        elif not self._direct:
            self.ms.set_context(**{name: value})
        elif name in self._setters:
            self._setters[name](self._ctx, value)
        elif name == "enable_compile_cache":
            self._ctx.enable_compile_cache = value
            self._ctx.set_param(self._params[name], int(value))
        elif name in self._attributes:
            setattr(self._ctx, name, value)
        elif name in self._params:
            self._ctx.set_param(self._params[name], value)
        else:
            raise MindSporeRefusedError(f"MindSpore {self.version} does not accept the key {name!r}.")

    def write_raw(self, name: str, raw: Any) -> None:
        """Put back a value :meth:`read` returned (used to restore snapshots exactly).

        Dict keys are restored as attributes only: their entries are separate keys
        (``jit_level``, ``infer_boost``, ...) and are restored as their own params.
        """
        try:
            if name in self._parallel:
                with self.quiet():
                    self._write_parallel(name, raw)
            elif name == "mode":
                self._ctx.set_mode(raw)
            elif name == "deterministic":
                # Its setter also sets or clears HCCL_DETERMINISTIC / TE_PARALLEL_COMPILER.
                self._setters[name](self._ctx, raw)
            elif name == "enable_compile_cache":
                self._ctx.enable_compile_cache = raw
                self._ctx.set_param(self._params[name], -1 if raw is None else int(raw))
            elif name in self._attributes:
                setattr(self._ctx, name, raw)
            else:
                self._ctx.set_param(self._params[name], raw)
        except _MINDSPORE_ERRORS as error:
            raise _translate(name, raw, error) from None

    def set_device(self, target: str, device_id: int | None) -> None:
        """``mindspore.set_device``; callers check :meth:`device` first."""
        try:
            self.ms.set_device(target, device_id)
        except _MINDSPORE_ERRORS as error:
            raise _translate("device", f"{target}:{device_id}", error) from None
        self.written.pop("device_id", None)  # set_device supersedes a set_context(device_id=...)

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """Keep MindSpore's deprecation lines caused by msdebug's own calls out of the cell."""
        logger = getattr(self.ms.log, "_get_logger", lambda: None)()
        if logger is None:  # pragma: no cover - every 2.x has _get_logger
            yield
            return
        drop = _DropDeprecations()
        logger.addFilter(drop)
        try:
            yield
        finally:
            logger.removeFilter(drop)


_MINDSPORE_ERRORS = (ValueError, TypeError, RuntimeError, OSError, KeyError)

# auto_parallel_search_mode is search_mode's old name: MindSpore keeps one value for both.
_PARALLEL_ALIASES = {"auto_parallel_search_mode": "search_mode"}


def _auto_parallel_maps() -> tuple[dict, dict]:
    """The keys ``set_auto_parallel_context`` and ``get_auto_parallel_context`` accept here."""
    try:
        from mindspore.parallel import _auto_parallel_context as apc
    except ImportError:  # pragma: no cover - every 2.x has it
        return {}, {}
    return (
        dict(getattr(apc, "_set_auto_parallel_context_func_map", {})),
        dict(getattr(apc, "_get_auto_parallel_context_func_map", {})),
    )


def _translate(name: str, value: Any, error: Exception) -> Exception:
    """MindSpore's exception as a one-line msdebug error."""
    text = str(error).strip()
    # All of MindSpore's lines, joined: the first is often only a position ("Expecting value:
    # line 1 column 20") and the file it is about comes in the next one.
    first = echo(" ".join(text.split()), quote=False, limit=400) if text else type(error).__name__
    if "can not be set repeatedly" in first or "has been in effect" in first:
        return DeviceLockedError(
            f"{name}: MindSpore has already used this value in this process, so it can no "
            f"longer change; restart the kernel and set it first. (MindSpore: {first})"
        )
    return MindSporeRefusedError(f"MindSpore refused {name}={echo(value)}: {first}")


def machine_default(name: str) -> Any:
    """Defaults MindSpore derives from the machine rather than declaring."""
    if name == "runtime_num_threads":
        # ms_context.cc: min(std::thread::hardware_concurrency(), 30)
        return min(os.cpu_count() or 1, 30)
    return None


# ----------------------------------------------------------------- dumps and env_config
