"""The ``msdebug`` comm: MindSpore's context for JupyterLab's status bar (``extension/``).

When msdebug loads in a Jupyter kernel it registers the comm target ``msdebug`` and lists a
sign under it, which ``comm_info`` shows; it opens no comm itself (a JupyterLab without the
extension, installed without Node, would log "Exception opening new comm" for it). The
extension asks for ``comm_info`` when it starts following a kernel and after each cell while
it waits, and opens a comm when it finds the sign. Over each comm
the kernel pushes the context (:mod:`msdebug.views.status`) when it connects and after
every change, and nothing when nothing changed. Commands come back over the same comm
and go through :func:`msdebug.settings.apply`, the validated path of ``%mscontext``.

In a terminal IPython there is no kernel, so nothing is registered. No polling: changes
arrive through :func:`msdebug.settings.on_change` (msdebug's own writes at once, the rest
by the end of the cell).
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
import uuid
import warnings
from typing import Any

from .. import backend, interrupts
from ..errors import MsDebugError

# The message views are imported where a kernel is there: importing msdebug.views runs its
# __init__, which imports the key catalog (tens of ms), and a terminal IPython needs none of it.
TARGET = "msdebug"  # the same as views.status.TARGET (tests/test_status.py checks it)

__all__ = ["MIN_INTERVAL_S", "StatusComm", "front_end_connected", "register", "show_ranks", "unregister"]

#: While a cell runs, at most one message per this many seconds (a loop of scoped settings
#: must not flood the front end); the first change a cell makes is sent at once, and the end
#: of the cell always sends the final state.
MIN_INTERVAL_S = 0.05

_ACTIONS = ("set", "print_capture")


class _Sign:
    """What ``comm_info`` lists under the target while msdebug is loaded: a comm id that no
    front end ever opened, so nothing is sent for it, not even a ``comm_close`` (JupyterLab
    logs an error for a close of a comm it does not know)."""

    def __init__(self) -> None:
        self.comm_id = f"msdebug-{uuid.uuid4().hex}"
        self.target_name = TARGET

    def handle_msg(self, msg) -> None:
        """Nothing goes over it."""

    def handle_close(self, msg) -> None:
        """Nothing to close."""


class StatusComm:
    """The comm target of one shell's kernel, and the comms open to front ends."""

    def __init__(self, shell, comm_manager, prefs) -> None:
        self.shell = shell
        self.comm_manager = comm_manager
        self.prefs = prefs
        self.comms: dict[str, Any] = {}
        self.sent: dict | None = None  # the last state message sent
        self.read: tuple | None = None  # what it was built from
        self.sent_at = -math.inf  # when a running cell last sent one (other sends do not throttle)
        self.ranks: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())  # %msrun's ranks, and the busy ones
        self._unsubscribe = None
        self.sign = _Sign()

    # ------------------------------------------------------------------ lifetime

    def register(self) -> None:
        """Register the target, and the sign that ``comm_info`` lists for it."""
        self.comm_manager.register_target(TARGET, self._opened)
        try:
            self.comm_manager.register_comm(self.sign)
        except Exception as error:  # noqa: BLE001 - the status bar is an extra: never fail the load
            warnings.warn(f"msdebug: the status bar cannot find this kernel: {error!r}", RuntimeWarning, stacklevel=2)

    def unregister(self) -> None:
        """Undo :meth:`register`: close every comm, drop the target, the sign and the listener."""
        with contextlib.suppress(Exception):
            self.comm_manager.unregister_target(TARGET, self._opened)
        with contextlib.suppress(Exception):
            self.comm_manager.unregister_comm(self.sign)
        for comm in list(self.comms.values()):
            with contextlib.suppress(Exception):
                comm.close()
        self.comms.clear()
        self._listen(False)

    def _opened(self, comm, msg) -> None:
        """A front end opened a comm: answer with the state at once."""
        self._use(comm)
        self.read = self.reading()
        message = self.message(self.read)
        self.sent = message
        self._send(comm, message)

    def _use(self, comm) -> None:
        self.comms[comm.comm_id] = comm
        comm.on_msg(self._received)
        comm.on_close(lambda msg, comm_id=comm.comm_id: self._closed(comm_id))
        self._listen(True)

    def _closed(self, comm_id: str) -> None:
        self.comms.pop(comm_id, None)
        if not self.comms:
            self._listen(False)

    def _listen(self, on: bool) -> None:
        """Follow the context while a front end is connected.

        Changes arrive through settings.on_change; until msdebug.settings is imported (the
        first %mscontext, msdebug.set or panel, which %load_ext does not do, to stay cheap)
        nothing can have gone through it, and a post_run_cell hook follows the rest (an
        ``import mindspore``, %msprint) and subscribes once settings is there.
        """
        if on and self._unsubscribe is None:
            if "msdebug.settings" in sys.modules:
                self._subscribe()
            elif self._after_cell not in self.shell.events.callbacks["post_run_cell"]:
                self.shell.events.register("post_run_cell", self._after_cell)
        elif not on:
            self._stop_after_cell()
            if self._unsubscribe is not None:
                self._unsubscribe()
                self._unsubscribe = None
            self.sent = self.read = None

    def _subscribe(self) -> None:
        from .. import settings

        self._stop_after_cell()
        self._unsubscribe = settings.on_change(self.changed, while_held=True)

    def _after_cell(self, result=None) -> None:
        self.changed()
        if "msdebug.settings" in sys.modules:
            self._subscribe()

    def _stop_after_cell(self) -> None:
        if self._after_cell in self.shell.events.callbacks["post_run_cell"]:
            self.shell.events.unregister("post_run_cell", self._after_cell)

    # ------------------------------------------------------------------ kernel -> front end

    def reading(self) -> tuple:
        """What the message is built from, read cheaply (about 10 µs); never imports MindSpore."""
        capture = (bool(self.prefs.print_capture), self.ranks)
        if not backend.is_imported():
            return (capture,)
        ms = backend.get_backend()
        return (
            capture, ms.read("mode"), ms.device(), bool(ms.read("pynative_synchronize")), ms.launch_blocking(),
            ms.parallel_mode(),
        )  # fmt: skip

    def message(self, reading: tuple | None = None) -> dict:
        """The state message for the context now (or for ``reading``)."""
        from ..views.status import state_message, unloaded_state

        (capture, (ranks, busy)), *context = reading or self.reading()
        if not context:
            return unloaded_state(backend.installed_version(), print_capture=capture, ranks=ranks, busy=busy)
        from .. import settings

        _, device, sync, launch_blocking, parallel_mode = context
        state = settings.ContextState(
            version=backend.get_backend().version, device=device, sync=sync, launch_blocking=launch_blocking, rows=()
        )
        return state_message(
            state,
            print_capture=capture,
            device_fixed=settings.device_lock(device),
            first_cell=backend.first_cell(device.target, device.device_id),
            ranks=ranks,
            busy=busy,
            parallel_mode=parallel_mode,
        )

    def changed(self) -> None:
        """settings.on_change listener: send the state if it differs from the last one sent."""
        if not self.comms:
            return
        settings = sys.modules.get("msdebug.settings")
        held = settings is not None and settings.holding()
        now = time.monotonic()
        if not held:
            # Between cells (the end of one included): only a running cell's own sends count
            # against the interval, so the next cell's first change shows at once.
            self.sent_at = -math.inf
        elif now - self.sent_at < MIN_INTERVAL_S:
            return  # the end of the cell sends what is left
        try:
            reading = self.reading()
            if reading == self.read:
                return  # nothing changed: the common case after a cell, kept cheap
            message = self.message(reading)
        except MsDebugError:
            return  # a MindSpore that cannot be read: the table says why; keep the last state shown
        self.read = reading
        if message == self.sent:
            return
        self.sent = message
        if held:
            self.sent_at = now
        for comm in list(self.comms.values()):
            self._send(comm, message)

    @interrupts.protected  # a Ctrl-C inside ipykernel's send would leave a half-sent message
    def _send(self, comm, message: dict) -> None:
        try:
            comm.send(message)
        except Exception:  # noqa: BLE001 - a front end that went away must not fail the cell
            self._closed(comm.comm_id)

    # ------------------------------------------------------------------ front end -> kernel

    def _received(self, msg) -> None:
        from ..views.status import reply_message

        data = msg.get("content", {}).get("data")
        request = data.get("id") if isinstance(data, dict) else None
        comm = self.comms.get(msg.get("content", {}).get("comm_id", ""))
        error = self.run(data)
        if comm is not None:
            self._send(comm, reply_message(request, error))
        self.changed()

    def run(self, data: Any) -> str:
        """Carry out one command; returns "" when done, else the one-line error."""
        from ..views.status import PROTOCOL

        if not isinstance(data, dict) or data.get("kind") != "command":
            return "msdebug: expected a command message"
        if data.get("protocol") != PROTOCOL:
            return (
                f"msdebug: this kernel speaks protocol {PROTOCOL}, the front end {data.get('protocol')!r}; "
                "install the same msdebug version in both"
            )
        action = data.get("action")
        try:
            if action == "set":
                values = data.get("values")
                if not isinstance(values, dict) or not values:
                    return 'set: expected values, e.g. {"mode": "graph"}'
                from .. import settings

                settings.apply({str(name): value for name, value in values.items()})
            elif action == "print_capture":
                value = data.get("value")
                if not isinstance(value, bool):
                    return "print_capture: expected true or false"
                self.prefs.print_capture = value
            else:
                return f"unknown action {action!r}; allowed: {', '.join(_ACTIONS)}"
        except MsDebugError as error:
            return str(error)
        except Exception as error:  # noqa: BLE001 - a command must never crash the kernel
            return f"{type(error).__name__}: {error}"
        return ""


_active: dict[int, StatusComm] = {}


def register(shell, prefs) -> StatusComm | None:
    """Register the comm target in ``shell``'s kernel; ``None`` where there is no kernel
    (terminal IPython) or it has no comm manager."""
    if id(shell) in _active:
        return _active[id(shell)]
    manager = getattr(getattr(shell, "kernel", None), "comm_manager", None)
    if manager is None or not hasattr(manager, "register_target"):
        return None
    status = StatusComm(shell, manager, prefs)
    status.register()
    _active[id(shell)] = status
    return status


def show_ranks(shell, ranks, busy=()) -> None:
    """Tell the status bar of ``shell``'s kernel which ranks ``%msrun`` runs, and which of them
    run a cell now (sent at once when a front end follows and it changed)."""
    status = _active.get(id(shell))
    if status is not None:
        status.ranks = (tuple(sorted(ranks)), tuple(sorted(busy)))
        status.changed()


def front_end_connected(shell) -> bool:
    """Whether a JupyterLab with msdebug's extension follows ``shell``'s kernel now (it renders
    widgets; nbval and terminals open no comm)."""
    status = _active.get(id(shell))
    return status is not None and bool(status.comms)


def unregister(shell) -> None:
    """Undo :func:`register` for ``shell``."""
    status = _active.pop(id(shell), None)
    if status is not None:
        status.unregister()
