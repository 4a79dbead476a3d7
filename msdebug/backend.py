"""The only module that imports MindSpore.

It imports it lazily, reads the context without freezing anything, writes validated
values, and absorbs the differences between MindSpore 2.7.0 and 2.10.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from .errors import DeviceLockedError, MindSporeMissingError, MindSporeRefusedError

__all__ = [
    "Backend",
    "DeviceState",
    "INSTALL_HINT",
    "get_backend",
    "anf_ir_model",
    "capture_pristine",
    "first_cell",
    "graph_compiled",
    "track_compiles",
    "untrack_compiles",
    "installed_version",
    "is_imported",
    "machine_default",
    "package_version",
    "unwatch",
    "watch_first_import",
]

INSTALL_HINT = 'pip install "msdebug[mindspore]"  (MindSpore 2.7.0-2.10.x with numpy<2)'

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


def package_version(name: str) -> str | None:
    """An installed package's version from its metadata, without importing it."""
    import importlib.metadata  # costs milliseconds: only when asked

    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def installed_version() -> str | None:
    """MindSpore's version (asked on every completion, so remembered)."""
    return package_version("mindspore")


def is_imported() -> bool:
    """Whether anything in this process has imported MindSpore yet."""
    return sys.modules.get("mindspore") is not None


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
        return "deprecated" not in message and "will be removed" not in message


class Backend:
    """MindSpore's context seen through one object. Use :func:`get_backend`."""

    def __init__(self) -> None:
        try:
            import mindspore
        except ImportError as error:
            raise MindSporeMissingError(
                f"MindSpore is not installed in this environment ({sys.executable}); "
                f"install it with: {INSTALL_HINT}"
            ) from error
        from mindspore import context as ms_context
        from mindspore._c_expression import (
            DeviceManagerConf,
            MSContext,
            RuntimeConf,
            ms_ctx_param,
        )
        from mindspore.hal.device import is_initialized

        from .keys import ALL_DEVICES, CATALOG, version_tuple

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

    # ----------------------------------------------------------------- reading

    def live_keys(self) -> tuple[str, ...]:
        """Every key the installed ``set_context`` accepts, in a stable order."""
        names = dict.fromkeys([*self._params, *self._setters, *self._attributes])
        return tuple(names)

    def readable(self, name: str) -> bool:
        """Whether :meth:`read` can report ``name`` without side effects."""
        return name == "device_id" or (
            name not in self._frozen_by_reading and (name in self._params or name in self._attributes)
        )

    def read(self, name: str) -> Any:
        """The raw value of ``name``, as ``get_context`` would return it.

        Unlike ``get_context`` it logs nothing, and it never reads a key whose read
        freezes it: ``device_id`` comes from ``get_current_device()``.
        """
        if name == "device_id":
            return self._devices.get_device_id()
        if name in self._frozen_by_reading:
            raise KeyError(f"{name} is never read: reading it would freeze it")
        if name == "print_file_path" and not self.writes_print_files():
            from .capture import active_print_file

            return active_print_file()
        if name in self._attributes:
            return getattr(self._ctx, name)
        return self._handle.get_param(self._params[name])

    def read_all(self) -> dict[str, Any]:
        """Raw values of every readable live key; dict values are copies, not MindSpore's own."""
        return {
            name: copy.deepcopy(value) if isinstance(value, dict) else value
            for name in self.live_keys()
            if self.readable(name)
            for value in (self.read(name),)
        }

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
        and GPU it ignores the key, and msdebug writes the file instead)."""
        return self.read("device_target") == "Ascend"

    def launch_blocking(self) -> bool:
        """Whether ``mindspore.runtime.launch_blocking()`` was called (it cannot be undone)."""
        return bool(self._runtime.is_launch_blocking())

    # ----------------------------------------------------------------- writing

    def write(self, name: str, value: Any) -> None:
        """Apply one validated, canonical value, the way ``set_context(name=value)`` would."""
        if name == "print_file_path" and not self.writes_print_files():
            from .capture import set_print_file

            set_print_file(value)
            return
        try:
            if not self._direct:
                with self.quiet():
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
        except _MINDSPORE_ERRORS as error:
            raise _translate(name, value, error) from None
        if name in self._frozen_by_reading:
            self.written[name] = value

    def write_raw(self, name: str, raw: Any) -> None:
        """Put back a value :meth:`read` returned (used to restore snapshots exactly).

        Dict keys are restored as attributes only: their entries are separate keys
        (``jit_level``, ``infer_boost``, ...) and are restored as their own params.
        """
        if name == "print_file_path" and not self.writes_print_files():
            from .capture import set_print_file

            set_print_file(raw, resume=True)
            return
        try:
            if name == "mode":
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


_MINDSPORE_ERRORS = (ValueError, TypeError, RuntimeError, OSError)


def synchronize() -> str:
    """Wait for MindSpore's queued kernels (an async graph's Print output) if MindSpore is
    imported; returns '' or the first line of what a failed kernel raised."""
    # The PyNative executor's queue runs @jit functions and ops asynchronously (the device-stream
    # mindspore.runtime.synchronize only logs an error on CPU).
    api = _api_module()
    if api is None:
        return ""
    try:
        api._pynative_executor.sync()
    except Exception as error:  # noqa: BLE001 - the cell reports it; the capture keeps its output
        text = str(error).strip()
        return f"MindSpore reported an error while finishing queued work: {text.splitlines()[0] if text else error!r}"
    return ""


def _translate(name: str, value: Any, error: Exception) -> Exception:
    """MindSpore's exception as a one-line msdebug error."""
    text = str(error).strip()
    first = text.splitlines()[0] if text else type(error).__name__
    if "can not be set repeatedly" in first or "has been in effect" in first:
        return DeviceLockedError(
            f"{name}: MindSpore has already used this value in this process, so it can no "
            f"longer change; restart the kernel and set it first. (MindSpore: {first})"
        )
    return MindSporeRefusedError(f"MindSpore refused {name}={value!r}: {first}")


_backend: Backend | None = None
_backend_lock = threading.Lock()
_watcher: _ImportWatcher | None = None


def get_backend() -> Backend:
    """The process-wide :class:`Backend`, importing MindSpore on first use.

    Raises
    ------
    MindSporeMissingError
        When MindSpore is not installed; the message says how to install it.
    """
    global _backend
    if _backend is None:
        with _backend_lock:
            if _backend is None:
                unwatch()  # msdebug imports it now and records the start-up state itself
                fresh_import = not is_imported()
                backend = Backend()
                if fresh_import:
                    backend.pristine = backend.read_all()
                _backend = backend
    return _backend


# ----------------------------------------------------------------- first import


class _NotifyingLoader(importlib.abc.Loader):
    """Wraps MindSpore's loader to run a callback once its module has executed."""

    def __init__(self, loader: importlib.abc.Loader, callback: Callable[[], None]) -> None:
        self._loader = loader
        self._callback = callback

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        try:
            self._callback()
        except Exception:  # noqa: BLE001 - a failure here must never break the user's import
            pass


class _ImportWatcher(importlib.abc.MetaPathFinder):
    """Calls ``callback`` right after the first ``import mindspore`` finishes, whoever imports it."""

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback

    def find_spec(self, fullname, path=None, target=None):  # noqa: D102 - importlib protocol
        if fullname != "mindspore":
            return None
        unwatch()
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _NotifyingLoader(spec.loader, self.callback)
        return spec


def watch_first_import(callback: Callable[[], None]) -> bool:
    """Arrange for ``callback`` right after MindSpore's first import.

    Returns False (and arranges nothing) when MindSpore is already imported.
    """
    global _watcher
    unwatch()
    if is_imported() or _backend is not None:
        return False
    _watcher = _ImportWatcher(callback)
    sys.meta_path.insert(0, _watcher)
    return True


def unwatch() -> None:
    """Remove the watcher installed by :func:`watch_first_import`, if any."""
    global _watcher
    if _watcher is not None:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(_watcher)
        _watcher = None


def capture_pristine() -> None:
    """Record MindSpore's start-up context (called right after its first import)."""
    backend = get_backend()
    if backend.pristine is None:
        backend.pristine = backend.read_all()
    track_compiles()


def machine_default(name: str) -> Any:
    """Defaults MindSpore derives from the machine rather than declaring."""
    if name == "runtime_num_threads":
        # ms_context.cc: min(std::thread::hardware_concurrency(), 30)
        return min(os.cpu_count() or 1, 30)
    return None


# ----------------------------------------------------------------- dumps and env_config


def _api_module():
    """MindSpore's executor module: ``mindspore.graph.api`` (2.10) or ``mindspore.common.api`` (2.7)."""
    for name in ("mindspore.graph.api", "mindspore.common.api"):
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "_CellGraphExecutor"):
            return module
    return None


def track_compiles() -> bool:
    """Note every graph compile from now on (wraps the executors' ``compile`` methods).

    The compile caches alone miss compiles of cells that are gone (a temporary
    ``Net()(x)``): :func:`graph_compiled` uses both. Returns False when MindSpore is not
    imported yet. :func:`untrack_compiles` undoes it.
    """
    api = _api_module()
    if api is None:
        return False
    for cls in (getattr(api, "_CellGraphExecutor", None), getattr(api, "_JitExecutor", None)):
        original = getattr(cls, "compile", None) if cls is not None else None
        if original is not None and getattr(original, "_msdebug_original", None) is None:
            cls.compile = _noting_compiles(original)
    return True


def _noting_compiles(original: Callable) -> Callable:
    @functools.wraps(original)
    def compile(self, *args, **kwargs):
        global _compiled
        try:
            return original(self, *args, **kwargs)
        finally:
            _compiled = True

    compile._msdebug_original = original
    return compile


def untrack_compiles() -> None:
    """Put back the ``compile`` methods :func:`track_compiles` wrapped."""
    api = _api_module()
    for cls in (getattr(api, "_CellGraphExecutor", None), getattr(api, "_JitExecutor", None)) if api else ():
        original = getattr(getattr(cls, "compile", None), "_msdebug_original", None)
        if original is not None:
            cls.compile = original


def graph_compiled() -> bool:
    """Whether a GRAPH-mode compile has happened in this process (settings MindSpore reads
    once, like RDR's, are then fixed).

    Sources: compiles seen since :func:`track_compiles`, and MindSpore's compile caches
    for earlier ones (cells still alive, jit functions). False before MindSpore is imported.
    """
    global _compiled
    if _compiled or not is_imported():
        return _compiled
    api = _api_module()
    if api is None:
        return False
    track_compiles()
    cells = getattr(api, "cells_compile_cache", {}) or {}
    _compiled = bool(getattr(api, "ms_compile_cache", None)) or any(cells.values())
    return _compiled


_compiled = False


def anf_ir_model(data: bytes):
    """``data`` parsed as ``mindspore.irpb.ModelProto`` with MindSpore's own generated module
    (``.pb`` files of RDR and save_graphs); None when MindSpore is not installed.

    Raises
    ------
    ValueError
        When the bytes are not a ModelProto.
    """
    try:
        from mindspore.train import anf_ir_pb2
    except ImportError:
        return None
    model = anf_ir_pb2.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as error:  # noqa: BLE001 - protobuf's DecodeError and RuntimeWarning-like errors
        raise ValueError(str(error) or type(error).__name__) from None
    return model
