"""MindSpore's profiler behind one small interface: the only module that imports ``mindspore.profiler``.

Two adapters, chosen by what the installed MindSpore offers rather than by its version string:

* :class:`_ProfileApi`: ``mindspore.profiler.profile`` (2.5+), started and stopped by hand with
  ``tensorboard_trace_handler(dir, analyse_flag=...)``: without analysis the CPU op tables are
  still written, in milliseconds instead of the second the analysis takes;
* :class:`_LegacyApi`: ``mindspore.Profiler(start_profile=False)`` with ``start``/``stop``/``analyse``.

Neither freezes ``device_id``: MindSpore's profiler reads it with ``get_context("device_id")``,
which fixes it for the rest of the process; while msdebug drives the profiler it reads the id
from the device manager instead, which fixes nothing.
"""

from __future__ import annotations

import contextlib
import functools
import io
import itertools
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ProfilerError
from .process import get_backend

__all__ = [
    "ProfilerSession",
    "callback_class",
    "device_note",
    "dynamic_monitor",
    "env_profiler_running",
    "execution_mode",
    "open_session",
    "quiet_logs",
    "monitor_config",
]


def _ms():
    get_backend()  # the one place that imports MindSpore and reports a missing install
    import mindspore

    return mindspore


@contextlib.contextmanager
def _device_id_unfrozen() -> Iterator[None]:
    """While inside, MindSpore's profiler reads ``device_id`` without freezing it."""
    from mindspore._c_expression import DeviceManagerConf

    def read() -> str:
        return str(DeviceManagerConf.get_instance().get_device_id())

    patched = []
    for name in ("mindspore.profiler.common.profiler_context", "mindspore.profiler.platform.npu_profiler"):
        module = __import__(name, fromlist=["get_device_id"]) if _importable(name) else None
        if module is not None and hasattr(module, "get_device_id"):
            patched.append((module, module.get_device_id))
            module.get_device_id = read
    try:
        yield
    finally:
        for module, original in patched:
            module.get_device_id = original


def _importable(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class ProfilerSession:
    """One MindSpore profiler writing into ``output``; :meth:`start` and :meth:`stop` may repeat
    only as MindSpore allows (once each for the adapters here)."""

    api = ""

    def __init__(self, output: str, analyse: bool) -> None:
        self.output, self.analyse = output, analyse
        self.running = False

    _profiler: Any  # MindSpore's profiler object, made by each adapter

    def start(self) -> None:
        with _device_id_unfrozen():
            self._profiler.start()
        self.running = True

    def stop(self) -> None:
        raise NotImplementedError


class _ProfileApi(ProfilerSession):
    api = "mindspore.profiler.profile"

    def __init__(self, output: str, analyse: bool) -> None:
        super().__init__(output, analyse)
        from mindspore.profiler import ProfilerActivity, profile, tensorboard_trace_handler

        with _device_id_unfrozen():
            self._profiler = profile(
                activities=[ProfilerActivity.CPU],
                start_profile=False,
                on_trace_ready=tensorboard_trace_handler(output, analyse_flag=analyse),
            )

    def stop(self) -> None:
        self.running = False
        with _device_id_unfrozen():
            self._profiler.stop()


class _LegacyApi(ProfilerSession):
    api = "mindspore.Profiler"

    def __init__(self, output: str, analyse: bool) -> None:
        super().__init__(output, analyse)
        with _device_id_unfrozen():
            self._profiler = _ms().Profiler(start_profile=False, output_path=output)

    def stop(self) -> None:
        self.running = False
        with _device_id_unfrozen():
            self._profiler.stop()
            # The legacy API writes its tables only when it analyses.
            self._profiler.analyse()


def open_session(output: str, analyse: bool = False) -> ProfilerSession:
    """A profiler for CPU ops writing under ``output``, by the API the installed MindSpore has."""
    mindspore = _ms()
    import mindspore.profiler as profiler

    if all(hasattr(profiler, name) for name in ("profile", "tensorboard_trace_handler", "ProfilerActivity")):
        kind = _ProfileApi
    elif hasattr(mindspore, "Profiler"):
        kind = _LegacyApi
    else:
        raise ProfilerError(f"MindSpore {mindspore.__version__} has neither mindspore.profiler.profile nor Profiler.")
    try:
        return kind(output, analyse)
    except (RuntimeError, TypeError, ValueError) as error:
        raise ProfilerError(f"MindSpore's profiler did not start: {str(error).splitlines()[0]}") from None


def env_profiler_running() -> bool:
    """Whether ``MS_PROFILER_OPTIONS`` started a profiler at ``import mindspore`` in this process."""
    _ms()
    try:
        from mindspore.profiler.envprofiler import EnvProfiler
    except ImportError:
        return False
    return EnvProfiler.profiler is not None


def device_note() -> str:
    """One line when running ops now will fix ``device_id`` (MindSpore's rule, not the profiler's)."""
    state = get_backend().device()
    if state.started:
        return ""
    return (
        f"note: the first op run here starts the {state.target} runtime, which fixes device_id={state.device_id} "
        "for this process (MindSpore's rule; the profiler itself leaves it settable)."
    )


def execution_mode() -> str:
    """``GRAPH`` or ``PYNATIVE``."""
    return "GRAPH" if get_backend().read("mode") == 0 else "PYNATIVE"


def callback_class() -> type:
    """``mindspore.train.Callback``, the base of msdebug's training callbacks."""
    _ms()
    from mindspore.train import Callback

    return Callback


def dynamic_monitor(cfg_path: str, output_path: str, poll_interval: int) -> Any:
    """MindSpore's ``DynamicProfilerMonitor``; it writes a default ``profiler_config.json``
    when ``cfg_path`` has none."""
    _ms()
    try:
        from mindspore.profiler import DynamicProfilerMonitor
    except ImportError:
        raise ProfilerError(
            "this MindSpore has no mindspore.profiler.DynamicProfilerMonitor (2.5 or later has)."
        ) from None
    with _device_id_unfrozen():
        return _with_own_memory(DynamicProfilerMonitor)(
            cfg_path=cfg_path, output_path=output_path, poll_interval=poll_interval
        )


_monitor_numbers = itertools.count()


@functools.cache
def _with_own_memory(monitor_class: type) -> type:
    """``monitor_class`` with a shared memory of its own for the config its poller reads.

    MindSpore names that memory after the hour (``DynamicProfileShm<YYYYMMDDHH>``), so that the
    ranks of one job on a host share one poller. Any other monitor on the machine in the same hour
    (another kernel, or one that was killed and left the memory behind) then attaches to it, starts
    no poller of its own and never sees its own ``profiler_config.json``.
    """

    class OwnMemoryMonitor(monitor_class):
        def _create_shm(self):
            self._shm_name = f"{self._shm_name}_msdebug_{os.getpid()}_{next(_monitor_numbers)}"
            return super()._create_shm()

    OwnMemoryMonitor.__name__ = OwnMemoryMonitor.__qualname__ = monitor_class.__name__
    return OwnMemoryMonitor


def monitor_config(monitor: Any) -> dict:
    """The config a ``DynamicProfilerMonitor``'s poller last read (it shares it with the training
    process through shared memory); ``{}`` before its first read or where it cannot be seen."""
    read = getattr(monitor, "_get_prof_args", None)
    try:
        config = read() if read is not None else {}
    except Exception:  # noqa: BLE001 - shared memory gone (closed) or another MindSpore layout
        return {}
    return dict(config) if isinstance(config, dict) else {}


@contextlib.contextmanager
def quiet_logs(keep: io.StringIO) -> Iterator[None]:
    """MindSpore's log lines go to ``keep`` while inside.

    Its handler holds the ``sys.stderr`` of ``import mindspore`` (in a kernel, the cell's
    stream), so swapping ``sys.stderr`` or fd 2 does not reach it.
    """
    _ms()
    from mindspore import log

    logger = log._get_logger() if hasattr(log, "_get_logger") else logging.getLogger()
    swapped = []
    for handler in getattr(logger, "handlers", ()):
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler, logging.FileHandler):
            swapped.append((handler, handler.setStream(keep)))
    try:
        yield
    finally:
        for handler, stream in swapped:
            handler.setStream(stream)


# MindSpore 2.10's tables, for an installed MindSpore whose sources do not have them where 2.10 does.
_TABLES_2_10 = {
    "params": {
        "output_path": "str", "profiler_level": "ProfilerLevel", "activities": "list", "aic_metrics": "AicoreMetrics",
        "with_stack": "bool", "profile_memory": "bool", "data_process": "bool", "parallel_strategy": "bool",
        "start_profile": "bool", "l2_cache": "bool", "hbm_ddr": "bool", "pcie": "bool", "sys_io": "bool",
        "sys_interconnection": "bool", "host_sys": "list", "sync_enable": "bool", "data_simplification": "bool",
        "record_shapes": "bool", "export_type": "list", "mstx": "bool", "mstx_domain_include": "list",
        "mstx_domain_exclude": "list", "schedule": "Schedule", "on_trace_ready": "Optional[Callable[..., Any]]",
    },
    "enums": {
        "ProfilerLevel": ("LevelNone", "Level0", "Level1", "Level2"),
        "ProfilerActivity": ("NPU", "GPU", "CPU"),
        "AicoreMetrics": (
            "PipeUtilization", "ArithmeticUtilization", "Memory", "MemoryL0", "MemoryUB", "ResourceConflictRatio",
            "L2Cache", "MemoryAccess", "None",
        ),
        "ExportType": ("db", "text"),
        "HostSystem": ("cpu", "mem", "disk", "network", "osrt"),
    },
    "config": (
        "start_step", "stop_step", "aic_metrics", "profiler_level", "analyse_mode", "activities", "export_type",
        "profile_memory", "mstx", "parallel_strategy", "with_stack", "data_simplification", "l2_cache", "analyse",
        "record_shapes", "prof_path", "mstx_domain_include", "mstx_domain_exclude", "sys_io", "sys_interconnection",
        "host_sys", "is_valid",
    ),
}  # fmt: skip


@functools.lru_cache(maxsize=1)
def profiler_tables() -> dict:
    """MindSpore's own tables for its profiler's settings, read from the installed sources with
    ``ast``, without running them: ``import mindspore`` starts the profiler that ``MS_PROFILER_OPTIONS``
    asks for, so the options must be checked before it.

    ``params``: ``ProfilerParameters.PARAMS`` (``common/profiler_parameters.py``), name -> type
    name, the fields ``EnvProfiler`` reads from ``MS_PROFILER_OPTIONS``; ``enums``: the values of
    the enums in ``common/constant.py``; ``config``: the keys ``DynamicProfilerConfigContext.to_dict``
    writes to ``profiler_config.json`` (``dynamic_profile/dynamic_profiler_config_context.py``).
    Where a file is missing or has changed shape, 2.10's table stands in for it.
    """
    import ast
    import importlib.util

    spec = importlib.util.find_spec("mindspore")  # finds the package without importing it
    root = Path(next(iter(spec.submodule_search_locations or ()), "")) / "profiler" if spec else None

    def parse(relative: str) -> ast.Module | None:
        try:
            return ast.parse((root / relative).read_text(encoding="utf-8")) if root else None
        except (OSError, SyntaxError, ValueError):
            return None

    def classes(tree: ast.Module | None) -> dict[str, ast.ClassDef]:
        return {node.name: node for node in (tree.body if tree else ()) if isinstance(node, ast.ClassDef)}

    tables = {key: dict(value) if isinstance(value, dict) else value for key, value in _TABLES_2_10.items()}
    for node in classes(parse("common/profiler_parameters.py")).get("ProfilerParameters", ast.ClassDef()).body:
        if isinstance(node, ast.AnnAssign | ast.Assign) and "PARAMS" in ast.unparse(node).split("=")[0]:
            if isinstance(node.value, ast.Dict):
                tables["params"] = {
                    ast.literal_eval(k): ast.unparse(v.elts[0])
                    for k, v in zip(node.value.keys, node.value.values, strict=True)
                }
    enums = {
        name: tuple(
            ast.literal_eval(item.value)
            for item in node.body
            if isinstance(item, ast.Assign) and isinstance(item.value, ast.Constant)
        )
        for name, node in classes(parse("common/constant.py")).items()
        if any(ast.unparse(base) == "Enum" for base in node.bases)
    }
    tables["enums"].update({name: values for name, values in enums.items() if name in tables["enums"]})
    context = classes(parse("dynamic_profile/dynamic_profiler_config_context.py")).get("DynamicProfilerConfigContext")
    for node in ast.walk(context) if context else ():
        if isinstance(node, ast.FunctionDef) and node.name == "to_dict":
            returned = next((n.value for n in ast.walk(node) if isinstance(n, ast.Return)), None)
            if isinstance(returned, ast.Dict):
                tables["config"] = tuple(ast.literal_eval(key) for key in returned.keys)
    return tables
