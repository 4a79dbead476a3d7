"""What runs around every cell: Print capture, cell files, MindSpore's log level, held notifications.

* :class:`CellCapture`: ``%msprint on`` captures each cell from ``pre_run_cell`` to ``post_run_cell``;
* :class:`CellFiles`: each cell's source written where ipykernel names it, so GRAPH-mode compiles
  find it instead of logging ``GetRealPath ... may not exists``;
* :class:`LogLevel`: MindSpore's log level (``GLOG_v``, read once at ``import mindspore``);
* :func:`hold_during_cell` / :func:`refresh_after_cell`: open panels follow the context once per cell.
"""

from __future__ import annotations

import os
import sys
import threading

from IPython.core.inputtransformer2 import leading_empty_lines

from .. import backend, interrupts
from ..dumps import cells
from ..errors import MsDebugError

__all__ = ["LEVELS", "CellCapture", "CellFiles", "LogLevel", "hold_during_cell", "refresh_after_cell"]

# The hooks must cost nothing before msdebug's settings are in use: they look the module up
# instead of importing it (importing it loads the key catalog).
_SETTINGS = __name__.rsplit(".", 2)[0] + ".settings"

# MindSpore's levels, as GLOG_v numbers (mindspore/log.py).
LEVELS = {"DEBUG": "0", "INFO": "1", "WARNING": "2", "ERROR": "3", "CRITICAL": "4"}


class LogLevel:
    """Sets ``GLOG_v`` before MindSpore is imported; :meth:`undo` puts the old value back."""

    def __init__(self) -> None:
        self._saved: tuple[bool, str | None] | None = None

    def apply(self, level: str) -> str | None:
        """Apply ``level`` ("keep" leaves MindSpore alone).

        Returns why it cannot take effect in this process, or None when it does.
        """
        if level == "keep":
            self.undo()
            return None
        if backend.is_imported():
            if os.environ.get("GLOG_v", LEVELS["WARNING"]) == LEVELS[level]:
                return None  # already so
            return (
                f"MindSpore was imported before msdebug, so its log level can no longer change in this "
                f"process; for {level}, put %env GLOG_v={LEVELS[level]} in the first cell."
            )
        if self._saved is None:
            self._saved = ("GLOG_v" in os.environ, os.environ.get("GLOG_v"))
        os.environ["GLOG_v"] = LEVELS[level]
        return None

    def undo(self) -> None:
        """Restore ``GLOG_v`` as it was, if MindSpore has not read it yet."""
        if self._saved is None or backend.is_imported():
            self._saved = None
            return
        existed, value = self._saved
        if existed:
            os.environ["GLOG_v"] = value
        else:
            os.environ.pop("GLOG_v", None)
        self._saved = None


class CellFiles:
    """A ``pre_run_cell`` hook that writes each cell's source to the file ipykernel names it after.

    MindSpore's graph compiler looks the file up (``GetRealPath``) and logs two warnings
    per compile when it is missing; with the file present it also finds the source lines.
    Only files this hook created are removed by :meth:`remove_all`.
    """

    def __init__(self, shell) -> None:
        self.shell = shell
        self.created: list[str] = []

    def __call__(self, info) -> None:
        raw = getattr(info, "raw_cell", None)
        if not raw:
            return
        try:
            name = self.shell.compile.get_code_name(raw, raw, self.shell.execution_count)
        except Exception:  # noqa: BLE001 - a compiler without file names: nothing to do
            return
        self._remember_blank(raw)
        if not os.path.isabs(name) or os.path.exists(name):
            return  # terminal IPython names cells <ipython-input-...>; nothing on disk to fix
        try:
            os.makedirs(os.path.dirname(name), exist_ok=True)
            with open(name, "x", encoding="utf-8") as handle:
                handle.write(raw)
        except OSError:
            return
        self.created.append(name)

    def _remember_blank(self, raw: str) -> None:
        """The empty lines the cell starts with, which IPython drops before it compiles the cell,
        under each name the compiled cell may have: ipykernel's hashes the cell as typed, a
        terminal's the compiled code and its number, which IPython 9 counts before this hook."""
        lines = raw.splitlines()
        blank = len(lines) - len(leading_empty_lines(lines))
        if not blank:
            return
        try:
            compiled = self.shell.transform_cell(raw)
            count = self.shell.execution_count
            names = {self.shell.compile.get_code_name(raw, compiled, number) for number in (count, count - 1)}
        except Exception:  # noqa: BLE001 - a cell IPython cannot transform fails on its own; nothing to note
            return
        for name in names:
            cells.remember_blank(name, blank)

    def remove_all(self) -> None:
        for name in self.created:
            try:
                os.remove(name)
            except OSError:
                pass
        self.created.clear()


class CellCapture:
    """Captures each cell from ``pre_run_cell`` to ``post_run_cell`` and shows it at the end.

    A cell that runs while ``print_file_path`` sends Print output to a file is left alone:
    that output belongs in the file. On Ascend, where MindSpore writes the print file itself,
    the values appended during the cell are read back and shown.
    """

    def __init__(self, shell) -> None:
        self.shell = shell
        self.every_cell = False
        self.current = None
        self.ascend_offset: tuple[str, int] | None = None
        self.last = None
        self._last_before = None

    def register(self) -> None:
        events = self.shell.events
        if self.pre not in events.callbacks["pre_run_cell"]:
            events.register("pre_run_cell", self.pre)
        if self.post not in events.callbacks["post_run_cell"]:
            events.register("post_run_cell", self.post)

    def unregister(self) -> None:
        self.stop()
        for name, hook in (("pre_run_cell", self.pre), ("post_run_cell", self.post)):
            if hook in self.shell.events.callbacks[name]:
                self.shell.events.unregister(name, hook)

    def pre(self, info=None) -> None:
        self.ascend_offset = None
        if backend.is_imported():
            path = ascend_print_file()
            if path:
                self.ascend_offset = (path, _size(path))
                return
        if self.current is not None:
            self.stop()  # the last cell's post_run_cell never ran: an interrupt landed in IPython between them
        if not self.every_cell:
            return
        from ..recorders.print import PrintCapture, active_print_file

        if active_print_file():
            return
        try:
            capture = PrintCapture(show=True)
            capture.__enter__()
        except MsDebugError as error:  # pragma: no cover - the environment refused (no memfd, no fds)
            print(f"msdebug: print capture is off for this cell: {error}")
            return
        self._last_before = self.last  # what last_print() said when the cell began
        self.current = capture

    @interrupts.protected
    def post(self, result=None) -> None:
        self.stop()
        if self.ascend_offset is not None:
            self._show_ascend(*self.ascend_offset)

    @interrupts.protected
    def stop(self) -> None:
        capture, self.current = self.current, None
        if capture is None:
            return
        try:
            capture.__exit__(None, None, None)
        except KeyboardInterrupt:
            pass  # the wait for MindSpore's queue after the cell was stopped; the log says so
        # A %%msprint inside the cell captured (and showed) its own log, which is the cell's
        # output then: the per-cell capture around it saw nothing, and must not replace it.
        if capture.log is not None and (capture.log.text or self.last is self._last_before):
            self.last = capture.log

    def _show_ascend(self, path: str, offset: int) -> None:
        """Show what MindSpore appended to its binary print file during the cell."""
        from IPython.display import display

        from ..dumps.print import PrintFileError, read_appended

        try:
            log = read_appended(path, offset)
        except PrintFileError as error:
            print(f"msdebug: could not read back {path}: {error}")
            return
        if log is not None:
            self.last = log
            display(log)


def ascend_print_file() -> str:
    """The print file MindSpore itself writes (Ascend), or ``""``."""
    ms = backend.get_backend()
    if not ms.writes_print_files():
        return ""
    return ms.read("print_file_path") or ""


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def hold_during_cell(info=None) -> None:
    """pre_run_cell hook: open panels wait for the end of the cell instead of following
    every change the cell makes."""
    settings = sys.modules.get(_SETTINGS)
    if settings is not None:
        settings.hold()


def refresh_after_cell(result=None) -> None:
    """post_run_cell hook: open panels re-read the context, so a plain
    ``mindspore.set_context(...)`` in a cell shows up in them by the end of that cell.

    Costs a dictionary lookup while no panel is open, and never imports anything.
    """
    settings = sys.modules.get(_SETTINGS)
    if settings is not None:
        settings.release()


def guard_shell(shell) -> None:
    """Keep the kernel answering when a Ctrl-C lands at the end of ipykernel's message handling.

    ipykernel (7.4) ignores SIGINT between messages and installs Python's default handler
    around each one (``pre_handler_hook``/``post_handler_hook`` in ``Kernel.dispatch_shell``).
    An interrupt that arrives after the handler has finished (or while ipykernel logs
    "KeyboardInterrupt caught in kernel.") and before ``post_handler_hook`` has put SIG_IGN back
    raises KeyboardInterrupt out of ``dispatch_shell``; it stops ipykernel's event loop,
    ``IPKernelApp.start()`` swallows it and the kernel shuts down (or hangs in
    ``zmq.Context.term()``): the front end gets no answer again. Two interrupts a few
    milliseconds apart at the end of a cell hit that window now and then.

    The wrapper catches what escapes, puts ipykernel's between-messages handler back (again if
    another interrupt lands meanwhile) and sends the idle status ipykernel did not get to send.
    The kernel session's ``send`` is made :func:`~msdebug.interrupts.protected` as well.
    """
    kernel = getattr(shell, "kernel", None)
    dispatch = getattr(kernel, "dispatch_shell", None)
    if dispatch is None or getattr(dispatch, "_msdebug_original", None) or not _is_coroutine_function(dispatch):
        return

    async def dispatch_shell(*args, **kwargs):
        try:
            return await dispatch(*args, **kwargs)
        except KeyboardInterrupt:
            if kwargs.get("concurrent"):
                return None  # no handler hooks around these: SIGINT stayed as it was
        while True:  # the next interrupt may land on any line until SIG_IGN is back
            try:
                kernel.post_handler_hook()
                break
            except KeyboardInterrupt:
                continue
        try:
            kernel._publish_status("idle", "shell")
        except Exception:  # noqa: BLE001 - an ipykernel without it: the next message still gets through
            pass
        return None

    dispatch_shell._msdebug_original = dispatch
    kernel.dispatch_shell = dispatch_shell
    # A message is several zmq frames sent one by one: an interrupt between two of them (the
    # default handler is installed while a message is handled) leaves a partial message that
    # the next one completes, and the front end gets "Invalid Signature" instead of a reply.
    session = getattr(kernel, "session", None)
    send = getattr(session, "send", None)
    if send is not None and not getattr(send, "_msdebug_original", None):
        whole = interrupts.protected(send)
        whole._msdebug_original = send
        session.send = whole
    _keep_iopub_alive(kernel)
    for stream in _kernel_streams():
        if "flush" not in vars(stream):
            flush = interrupts.protected(stream.flush)
            flush._msdebug_original = True
            stream.flush = flush


def _kernel_streams() -> list:
    """ipykernel's ``sys.stdout`` and ``sys.stderr`` (OutStream: they publish through the IOPub thread).

    Their ``flush()`` waits for the IOPub thread with a ``threading.Event``. A Ctrl-C that lands
    between the acquire of that event's lock and the ``with`` block it guards (inside
    ``Condition.__enter__``) leaves the lock held for good: the IOPub thread then blocks in
    ``Event.set()`` and the kernel shows nothing again. The flush is made protected: an
    interrupt during it is raised when it has returned.
    """
    return [s for s in (sys.stdout, sys.stderr) if hasattr(s, "pub_thread")]


def _keep_iopub_alive(kernel) -> None:
    """Make the IOPub thread's ``is_alive()`` immune to a Ctrl-C.

    CPython 3.11's ``Thread._wait_for_tstate_lock`` (which ``is_alive()`` calls) marks a running
    thread as stopped when a KeyboardInterrupt lands just after its non-blocking ``acquire()``
    has failed: the ``except`` branch sees the lock held (by the running thread) and releases it.
    ipykernel asks the IOPub thread ``is_alive()`` at every ``print`` flush and message send;
    after one such Ctrl-C it believes the thread dead and sends from the calling thread, at the
    same time as the IOPub thread: the frames of two messages mix, and the front end drops them
    ("Invalid Signature"), or a stream never shows. The check here reads the thread table
    instead (``threading._active``: a dictionary lookup, with nothing an interrupt can half do).
    """
    thread = getattr(getattr(kernel, "iopub_thread", None), "thread", None)
    active = getattr(threading, "_active", None)
    if not isinstance(thread, threading.Thread) or not isinstance(active, dict) or "is_alive" in vars(thread):
        return

    def is_alive() -> bool:
        return thread._started.is_set() and active.get(thread.ident) is thread

    thread.is_alive = is_alive


def unguard_shell(shell) -> None:
    """Undo :func:`guard_shell`."""
    kernel = getattr(shell, "kernel", None)
    original = getattr(getattr(kernel, "dispatch_shell", None), "_msdebug_original", None)
    if original is not None:
        del kernel.dispatch_shell  # the instance attribute; the class's method shows again
        if kernel.dispatch_shell != original:
            kernel.dispatch_shell = original
    session = getattr(kernel, "session", None)
    original = getattr(getattr(session, "send", None), "_msdebug_original", None)
    if original is not None:
        del session.send
        if session.send != original:
            session.send = original
    thread = getattr(getattr(kernel, "iopub_thread", None), "thread", None)
    if thread is not None and "is_alive" in vars(thread):
        del thread.is_alive
    for stream in _kernel_streams():
        if getattr(vars(stream).get("flush"), "_msdebug_original", False):
            del stream.flush


def _is_coroutine_function(function) -> bool:
    import inspect

    return inspect.iscoroutinefunction(function)
