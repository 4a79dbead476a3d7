"""MindSpore in this process: its first import, the one Backend, compiles, queued work."""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import os
import struct
import sys
import threading
from collections.abc import Callable
from typing import Any

from .. import interrupts
from .context import Backend
from .version import is_imported

__all__ = [
    "capture_pristine",
    "get_backend",
    "graph_compiled",
    "keep_sigint",
    "msrun_rank",
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
                interrupts.keep_while_held(keep_sigint)
    return _backend


# ----------------------------------------------------------------- first import


def msrun_rank() -> int | None:
    """This process's rank when msrun started it as a worker (``MS_ROLE=MS_WORKER`` with
    ``RANK_ID``, as in a ``%%msrun`` cell), else None: what it records then goes to a folder of
    its own, ``rank_<R>``, so that the ranks' outputs open together."""
    if os.environ.get("MS_ROLE") != "MS_WORKER":
        return None
    rank = os.environ.get("RANK_ID", "")
    return int(rank) if rank.isdigit() else None


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
    interrupts.keep_while_held(keep_sigint)


# ----------------------------------------------------------------- SIGINT
#
# MindSpore 2.10 takes SIGINT from Python in C++: GraphScheduler::Run (every GRAPH run, @jit
# functions included) calls RegisterGlobalSignalHandler(DefaultIntHandler), and the PyNative
# queue's worker thread opens a SignalGuard when it starts. Both handlers send SIGTERM to the
# process, so a Ctrl-C while one is installed kills the kernel; restoring Python's handler
# after a run leaves the run itself (most of a GRAPH step) uncovered. All of them install
# through the one ``sigaction`` that libmindspore_common.so imports (signal_util.cc, SIGINT
# only), so while msdebug holds SIGINT (interrupts.hold) that library's import of
# ``sigaction`` points at ``getpid``: a call that succeeds (never -1) and changes nothing.
# Python's handler stays in place through every run; the import is put back after the hold.

_SIGINT_LIBRARIES = ("libmindspore_common.so",)
_GOT_TYPES = {6, 7, 1025, 1026}  # R_X86_64_GLOB_DAT, _JUMP_SLOT; R_AARCH64_GLOB_DAT, _JUMP_SLOT
_sigint_slots: list[tuple[int, int, tuple[int, int] | None]] | None = None  # (address, original, relro page)
_libc = None


def keep_sigint(holding: bool) -> None:
    """While ``holding``, MindSpore's C++ code cannot replace the SIGINT handler (see above)."""
    global _sigint_slots, _libc
    if _sigint_slots is None:
        _sigint_slots = _find_sigint_slots()
    if not _sigint_slots:
        return
    import ctypes

    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    libc = _libc
    stand_in = ctypes.cast(libc.getpid, ctypes.c_void_p).value
    for address, original, page in _sigint_slots:
        if page is not None:
            libc.mprotect(ctypes.c_void_p(page[0]), ctypes.c_size_t(page[1]), 3)  # PROT_READ | PROT_WRITE
        ctypes.c_void_p.from_address(address).value = stand_in if holding else original
        if page is not None:
            libc.mprotect(ctypes.c_void_p(page[0]), ctypes.c_size_t(page[1]), 1)  # PROT_READ, as RELRO left it


def _find_sigint_slots() -> list[tuple[int, int, tuple[int, int] | None]]:
    """The GOT entries through which MindSpore's signal code calls ``sigaction`` (empty where
    they cannot be found: not Linux, another layout; msdebug then changes nothing)."""
    import ctypes

    if not sys.platform.startswith("linux") or sys.modules.get("mindspore") is None:
        return []
    slots = []
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        page_size = os.sysconf("SC_PAGE_SIZE")
        folder = os.path.join(os.path.dirname(os.path.abspath(sys.modules["mindspore"].__file__)), "lib")
        for name in _SIGINT_LIBRARIES:
            path = os.path.join(folder, name)
            if not os.path.exists(path):
                continue
            handle = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)._handle
            link_map = ctypes.c_void_p()
            if libc.dlinfo(ctypes.c_void_p(handle), 2, ctypes.byref(link_map)) != 0:  # RTLD_DI_LINKMAP
                continue
            base = ctypes.c_size_t.from_address(link_map.value).value  # link_map.l_addr
            offsets, relro = _elf_slots(path, b"sigaction")
            for offset in offsets:
                address = base + offset
                page = None
                if relro is not None and relro[0] <= offset < relro[1]:
                    start = address & ~(page_size - 1)
                    page = (start, page_size)
                slots.append((address, ctypes.c_void_p.from_address(address).value or 0, page))
    except (OSError, AttributeError, ValueError, struct.error):
        return []
    return [slot for slot in slots if slot[1]]


def _elf_slots(path: str, symbol: bytes) -> tuple[list[int], tuple[int, int] | None]:
    """Offsets of the GOT entries that import ``symbol`` in the ELF64 library at ``path``, and
    its RELRO range (read-only once loaded), from its section and program headers."""
    from ..files import open_regular

    with open_regular(path, OSError) as file:
        data = file.read()
    if data[:5] != b"\x7fELF\x02" or data[5] != 1:  # ELF64, little-endian
        return [], None
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
    relro = None
    for index in range(phnum):
        kind, _flags, _offset, vaddr, _paddr, _filesz, memsz = struct.unpack_from(
            "<IIQQQQQ", data, phoff + index * phentsize
        )
        if kind == 0x6474E552:  # PT_GNU_RELRO
            relro = (vaddr, vaddr + memsz)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + index * shentsize) for index in range(shnum)]
    found = []
    for _name, kind, _flags, _addr, offset, size, link, _info, _align, entsize in sections:
        if kind != 4 or not entsize:  # SHT_RELA
            continue
        symtab = sections[link]
        strtab = sections[symtab[6]]
        for at in range(offset, offset + size, entsize):
            r_offset, r_info = struct.unpack_from("<QQ", data, at)
            if r_info & 0xFFFFFFFF not in _GOT_TYPES:
                continue
            st_name = struct.unpack_from("<I", data, symtab[4] + (r_info >> 32) * symtab[9])[0]
            start = strtab[4] + st_name
            if data[start : data.index(b"\0", start)] == symbol:
                found.append(r_offset)
    return found, relro


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
