"""MindSpore in this process: its first import, the one Backend, compiles, queued work."""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Callable
from typing import Any

from .context import Backend
from .version import is_imported

__all__ = [
    "capture_pristine",
    "get_backend",
    "graph_compiled",
    "synchronize",
    "track_compiles",
    "untrack_compiles",
    "unwatch",
    "watch_first_import",
]

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
