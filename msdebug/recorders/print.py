"""Capture the Print operator's output: C++ writes to fd 1, Python ``print()`` to ``sys.stdout``.

The core is one context manager, :class:`PrintCapture` (``msdebug.capture_print()``). For
its duration:

* fd 1 points at an unnamed temporary file, through ``wurlitzer.pipes``, which
  also flushes C stdio and puts fd 1 back afterwards. A file rather than a pipe: no reader
  thread, so C code that writes megabytes while holding the GIL cannot deadlock, and
  nothing is left in a pipe when the block ends;
* ``sys.stdout`` writes straight to fd 1 as well, so Python ``print()``, PyNative Print
  (which goes through ``print()``), GRAPH-mode and ``@jit`` Print (C++ ``std::cout``) share one
  stream and keep the order they were written in, from any thread.

On exit MindSpore's queue is synchronised (Print kernels of async graphs finish), the bytes
are read back into a :class:`~msdebug.dumps.print.PrintLog` and shown. With ``file=`` fd 1
points at that new file instead of the temporary file, and it is read back the same way. IPython hooks (``%msprint on``) are built on top of this in :mod:`msdebug.ipython.hooks` and :mod:`msdebug.ipython.magics.print`.

:class:`PrintFile` is the other use of the same plumbing: ``print_file_path`` on CPU and
GPU, where MindSpore ignores it. Print output goes to the file, not the screen, until the
path is cleared; other ``print()`` output still goes to the screen.
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
import threading
import time
from typing import Any, BinaryIO

from .. import interrupts
from ..dumps.print import PrintLog
from ..errors import MsDebugError

__all__ = ["PrintCapture", "PrintFile", "capture_print", "resolve_print_file", "active_print_file", "PrintCaptureError"]


class PrintCaptureError(MsDebugError, OSError):
    """A print file that cannot be created: a directory, an existing name, no permission."""


# --------------------------------------------------------------------------- streams


class _FdWriter(io.TextIOBase):
    """``sys.stdout`` for the duration of a capture: each line goes straight to fd 1.

    Line-buffered on purpose: a Python line must reach fd 1 before the C++ line printed
    after it, or the two would swap; a partial line waits for its newline (or a flush).

    Fast, because ``print()`` calls ``write`` once per argument, separator and end: text
    without a newline only joins its thread's list (no lock, no system call; only the
    thread itself touches its list, and a dict's item access is atomic), and a line costs
    one ``write(2)`` under the lock.
    """

    encoding = "utf-8"
    errors = "surrogateescape"

    def __init__(self, fd: int = 1) -> None:
        super().__init__()
        self._fd = fd
        self.buffer = _FdBuffer(fd)
        self.notes: list[str] = []
        # Each thread's partial line waits apart: print() writes the text and its newline
        # in two calls, and another thread's line must not land between them.
        self._pending: dict[int, list[str]] = {}
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        if text.__class__ is not str and not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if "\n" not in text:
            ident = threading.get_ident()
            parts = self._pending.get(ident)
            if parts is None:
                self._pending[ident] = [text]
            else:
                parts.append(text)
            return len(text)
        self._emit(text, whole_lines=True)
        return len(text)

    def flush(self) -> None:
        if self._pending.get(threading.get_ident()):
            self._emit("", whole_lines=False)

    def _emit(self, text: str, whole_lines: bool) -> None:
        """Write this thread's pending text and ``text`` (up to its last newline) to fd 1,
        once MindSpore's queue is done."""
        # Not under the lock: MindSpore's own threads may print meanwhile.
        note = _synchronize() if "mindspore" in sys.modules else ""
        ident = threading.get_ident()
        parts = self._pending.pop(ident, None)
        if parts:
            parts.append(text)
            text = "".join(parts)
        if whole_lines:
            cut = text.rfind("\n") + 1
            if cut < len(text):
                self._pending[ident] = [text[cut:]]
                text = text[:cut]
        data = text.encode(self.encoding, self.errors)
        with self._lock:
            if note:
                self.notes.append(note)
            if data:
                self.buffer.write(data)

    def drain(self) -> None:
        """Write every thread's pending text to fd 1 now, without waiting for MindSpore's queue."""
        with self._lock:
            pending, self._pending = self._pending, {}
            text = "".join("".join(parts) for parts in pending.values())
            if text:
                self.buffer.write(text.encode(self.encoding, self.errors))

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return False


class _FdBuffer(io.RawIOBase):
    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        done = os.write(self._fd, view)  # a line: one system call
        while done < len(view):  # a partial write (a signal): the rest, in order
            done += os.write(self._fd, view[done:])
        return len(data)


def _from_print_operator() -> bool:
    """Whether the ``print()`` being written was called by MindSpore's Print operator.

    In PyNative mode ``Print.__call__`` prints each argument with the builtin ``print``,
    which calls ``sys.stdout.write`` directly: the caller two frames up is that method.
    """
    frame = sys._getframe(2)
    code = frame.f_code
    return code.co_name == "__call__" and code.co_filename.endswith("debug_ops.py") and "mindspore" in code.co_filename


class _PrintRouter(_FdWriter):
    """``sys.stdout`` while a print file is active: Print operator text goes to fd 1 (the
    file), everything else to the screen stream that was there before."""

    def __init__(self, screen: Any) -> None:
        super().__init__(1)
        self.screen = screen

    def write(self, text: str) -> int:
        if _from_print_operator():
            super().write(text)
            super().flush()
            return len(text)
        return self.screen.write(text)

    def flush(self) -> None:
        self.screen.flush()

    def fileno(self) -> int:
        return self.screen.fileno()

    def isatty(self) -> bool:
        return self.screen.isatty()

    def __getattr__(self, name: str) -> Any:  # ipykernel's OutStream attributes, e.g. session
        return getattr(self.screen, name)


def _memory_file() -> BinaryIO:
    """An unnamed temporary file (``O_TMPFILE`` where the system has it): its pages live in
    the page cache and are dropped unwritten when it is closed.

    Not a ``memfd``: shmem zeroes every page it allocates, and 50 MB of Print output went
    through one at 0.6x the speed of a plain file (``benchmarks/bench_print.py``).
    """
    return tempfile.TemporaryFile(prefix="msdebug-print-")


_MAP_FROM = 1 << 20  # below this, copying the bytes out is as cheap as mapping them


def _contents(sink: BinaryIO):
    """Everything written to ``sink``: bytes, or for large outputs a read-only memoryview of
    the file's pages (no copy; it stays valid after the file is closed and is unmapped when
    the last view of it goes away)."""
    size = os.fstat(sink.fileno()).st_size
    if size >= _MAP_FROM:
        view = _map(sink.fileno(), size)
        if view is not None:
            return view
    sink.seek(0)
    return sink.read()


def _map(fd: int, size: int) -> memoryview | None:
    # Not the mmap module: it keeps a duplicate of the fd open for as long as the mapping
    # lives, one descriptor per kept log. A plain mmap(2) needs none once it is made.
    import ctypes
    import mmap
    import weakref

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if address is None or address == ctypes.c_void_p(-1).value:
        return None
    pages = (ctypes.c_ubyte * size).from_address(address)
    weakref.finalize(pages, libc.munmap, address, size)
    return memoryview(pages).cast("B").toreadonly()


@interrupts.interruptible
def _synchronize() -> str:
    """Let queued MindSpore kernels (an async graph's Print) finish; '' or what went wrong.

    Called before every Python write during a capture as well: a ``@jit`` function's Print
    runs on MindSpore's own threads after the call has returned, and would otherwise land
    after (or inside) the next ``print()`` line.
    """
    if "mindspore" not in sys.modules:
        return ""
    from ..backend import synchronize

    return synchronize()


# --------------------------------------------------------------------------- files


def resolve_print_file(path: str | os.PathLike) -> str:
    """The file a Print output should go to, by MindSpore's rule for ``print_file_path``.

    The real path; if a file of that name exists, ``<name>.<unix seconds>`` beside it, and an
    error if that exists too; an error for a directory. Parent directories are created.
    """
    given = os.fspath(path)
    real = os.path.realpath(os.path.expanduser(given))
    if os.path.isdir(real):
        raise PrintCaptureError(f"print_file_path should be a file path, but {given} is a directory.")
    if os.path.lexists(real):
        suffixed = f"{real}.{int(time.time())}"
        if os.path.lexists(suffixed):
            raise PrintCaptureError(
                f"print_file_path: {given} exists and so does {suffixed}; msdebug never overwrites a print "
                "file, give another name or try again in a second."
            )
        real = suffixed
    try:
        os.makedirs(os.path.dirname(real), exist_ok=True)
    except OSError as error:
        raise PrintCaptureError(f"print_file_path: cannot create the directory of {given}: {error.strerror}.") from None
    return real


def _create(path: str, mode: str = "xb") -> BinaryIO:
    """Open a new file for writing; never an existing one."""
    try:
        return open(path, mode)
    except FileExistsError:
        raise PrintCaptureError(
            f"{path} appeared while msdebug was about to create it; nothing was overwritten."
        ) from None
    except OSError as error:
        raise PrintCaptureError(f"cannot create the print file {path}: {error.strerror}.") from None


# --------------------------------------------------------------------------- fd 1

_lock = threading.RLock()


class _Fd1:
    """fd 1 onto ``sink`` (wurlitzer: flushes C stdio, puts fd 1 back) and ``sys.stdout``
    replaced, together; :meth:`stop` undoes both, after MindSpore's queue has finished."""

    def __init__(self, sink: BinaryIO) -> None:
        self.sink = sink
        self.stdout: Any = None
        self.replacement: Any = None
        self._pipes = None

    @interrupts.protected
    def start(self, make_stdout) -> None:
        """``make_stdout(previous)`` builds the ``sys.stdout`` of the redirection.

        Protected: a Ctrl-C waits until fd 1 and ``sys.stdout`` have both switched."""
        import wurlitzer

        with _lock:
            self.stdout = sys.stdout
            _flush(self.stdout)
            replacement = make_stdout(self.stdout)
            self._pipes = wurlitzer.pipes(stdout=self.sink, stderr=None, encoding=None)
            self._pipes.__enter__()
            self.replacement = sys.stdout = replacement

    @interrupts.protected
    def stop(self) -> str:
        """Undo :meth:`start`; returns a note if finishing MindSpore's queue went wrong.

        Protected, except the wait for MindSpore's queue: Ctrl-C may stop that wait, and
        both switches are undone all the same (then the interrupt goes on)."""
        try:
            _flush(self.replacement)
            return _synchronize()
        finally:
            with _lock:
                if sys.stdout is self.replacement:
                    sys.stdout = self.stdout
                if isinstance(self.replacement, _FdWriter):
                    self.replacement.drain()  # a thread's partial line, written during the switch
                self._pipes.__exit__(None, None, None)


# --------------------------------------------------------------------------- capture

_open_captures = 0
_deferred: list = []  # print-file switches waiting for the open captures to end


def _after_captures(switch) -> None:
    """Run ``switch`` now, or when the last open capture ends.

    Redirections nest: a capture puts back the fd 1 it found. A print file started or
    stopped inside a capture (``%mscontext print_file_path=...`` in a captured cell) must
    not be undone by that capture's exit, so the switch waits for it.
    """
    with _lock:
        if _open_captures:
            _deferred.append(switch)
            return
    switch()


class PrintCapture:
    """Capture every Print and ``print()`` output of a block, in order.

    Parameters
    ----------
    file : path-like, optional
        Capture into this new file rather than into memory (an existing name gets a
        ``.<unix seconds>`` suffix, as MindSpore does for ``print_file_path``).
    show : bool
        On exit, show the output: inline in IPython / Jupyter (a rich view), on the
        screen's ``sys.stdout`` in plain Python.

    Attributes
    ----------
    log : PrintLog
        What was printed, once the block has ended (``.text``, ``.items``, ``.tensors``).
    """

    def __init__(self, file: str | os.PathLike | None = None, show: bool = True) -> None:
        self.file = file
        self.show = show
        self.path = ""
        self.log: PrintLog | None = None
        self._fd1: _Fd1 | None = None
        self._writer: _FdWriter | None = None

    def __enter__(self) -> PrintCapture:
        # The SIGINT handler that defers interrupts stays from here to the end of __exit__,
        # so an interrupt on the first line of __exit__ waits for the switch back.
        interrupts.enter_held(self._open, self._close)
        return self

    @interrupts.protected
    def _open(self) -> None:
        global _open_captures
        if self.file is not None:
            # Straight into the new file, which is then read back like the temporary file.
            self.path = resolve_print_file(self.file)
            sink = _create(self.path, "xb+")
        else:
            sink = _memory_file()
        self._fd1 = _Fd1(sink)
        self._writer = _FdWriter(1)
        try:
            self._fd1.start(lambda previous: self._writer)
        except BaseException:
            sink.close()
            raise
        with _lock:
            _open_captures += 1

    @interrupts.protected
    def _close(self) -> None:
        if self._fd1 is not None and self._fd1.replacement is not None:
            self.__exit__(None, None, None)  # lets go of the handler too
            return
        if self._fd1 is not None:
            self._fd1.sink.close()
        interrupts.let_go()

    @interrupts.protected
    def __exit__(self, exc_type, exc, tb) -> bool:
        global _open_captures
        fd1, self._fd1 = self._fd1, None
        if fd1 is None:
            return False
        note, stopped = "", None
        try:
            note = fd1.stop()
        except KeyboardInterrupt as error:  # the wait for MindSpore's queue; fd 1 is back
            note, stopped = "interrupted while waiting for MindSpore's queue", error
        finally:
            raw = _contents(fd1.sink)
            fd1.sink.close()
            with _lock:
                _open_captures -= 1
                waiting = _deferred[:] if not _open_captures else []
                del _deferred[: len(waiting)]
            interrupts.let_go()
        for switch in waiting:
            switch()
        notes = dict.fromkeys([*self._writer.notes, note] if note else self._writer.notes)
        self.log = PrintLog(raw=raw, source="captured", path=self.path, note="; ".join(notes))
        if self.show and self.log:
            show(self.log)
        if stopped is not None:
            raise stopped
        return False


def capture_print(file: str | os.PathLike | None = None, show: bool = True) -> PrintCapture:
    """``with msdebug.capture_print() as cap:`` capture Print and ``print()`` output in order;
    ``cap.log`` holds it afterwards. See :class:`PrintCapture`."""
    return PrintCapture(file=file, show=show)


def _flush(stream: Any) -> None:
    try:
        stream.flush()
    except Exception:  # noqa: BLE001 - a closed or odd stream must not stop the capture
        pass


def show(log: PrintLog) -> None:
    """Inline in IPython (rich view), else the exact text on ``sys.stdout``."""
    shell = _ipython()
    if shell is not None:
        from IPython.display import display

        display(log)
        return
    sys.stdout.write(log.text)
    _flush(sys.stdout)


def _fileno(stream: Any) -> int | None:
    try:
        return stream.fileno()
    except Exception:  # noqa: BLE001 - StringIO, closed streams
        return None


def _ipython():
    module = sys.modules.get("IPython")
    if module is None:
        return None
    return module.get_ipython()


# --------------------------------------------------------------------------- print_file_path


class PrintFile:
    """Print output to a file instead of the screen, until :meth:`close` (CPU and GPU).

    The file holds exactly the text the Print operator would have shown (msdebug's choice of
    format: see README, "print_file_path on CPU and GPU").
    """

    def __init__(self, path: str, handle: BinaryIO) -> None:
        self.path = path
        self._fd1 = _Fd1(handle)
        self._screen_copy = None
        self._started = False

    @interrupts.protected
    def start(self) -> None:
        try:
            self._fd1.start(self._router)
        except BaseException:
            self._close_copy()
            self._fd1.sink.close()
            raise
        self._started = True

    def _router(self, screen: Any) -> _PrintRouter:
        if _fileno(screen) == 1:
            # Plain Python and terminal IPython: the screen *is* fd 1, which is about to
            # point at the file; other output keeps going to a copy of the screen's fd.
            self._screen_copy = io.TextIOWrapper(
                io.FileIO(os.dup(1), "w"), encoding=getattr(screen, "encoding", None) or "utf-8", line_buffering=True
            )
        return _PrintRouter(self._screen_copy or screen)

    def _close_copy(self) -> None:
        if self._screen_copy is not None:
            _flush(self._screen_copy)
            self._screen_copy.close()
            self._screen_copy = None

    @interrupts.protected
    def close(self) -> None:
        try:
            if self._started:  # a switch that never ran has only the file to close
                self._fd1.stop()
        finally:
            self._fd1.sink.close()
            self._close_copy()


_active: PrintFile | None = None


def active_print_file() -> str:
    """The file Print output goes to on this CPU/GPU process ('' when none)."""
    return _active.path if _active is not None else ""


def set_print_file(path: str, *, resume: bool = False) -> str:
    """Send Print output to ``path`` from now on ('' sends it back to the screen).

    A new name follows :func:`resolve_print_file`; ``resume=True`` appends to a file msdebug
    wrote before (restoring a snapshot). The new file is opened before the old one is
    closed, so a refused path changes nothing. Returns the file in use.
    """
    global _active
    if resume and _active is not None and _active.path == path:
        return path
    handle = None
    if path and resume:
        try:
            handle = open(path, "ab")
        except OSError as error:
            raise PrintCaptureError(f"cannot reopen the print file {path}: {error.strerror}.") from None
    elif path:
        path = resolve_print_file(path)
        handle = _create(path)
    old, new = _active, (PrintFile(path, handle) if handle is not None else None)
    _active = new

    def switch() -> None:
        if old is not None:
            old.close()
        if new is not None:
            new.start()

    _after_captures(switch)
    return active_print_file()
