"""The status bar's messages: MindSpore's context as the small, versioned JSON that
JupyterLab's status item reads.

``status.schema.json`` beside this module is the one description of the protocol (every
message, both directions): pytest validates what these functions build against it, and
jest checks that ``extension/src/protocol.ts`` reads exactly its fields, from messages
these functions wrote (``extension/test/messages.json``, kept current by tests/test_status.py).

Pure: dictionaries in, dictionaries out; the kernel side (``msdebug/ipython/comm.py``)
sends them over the ``msdebug`` comm.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["PROTOCOL", "TARGET", "reply_message", "schema", "state_message", "unloaded_state"]

#: The comm target the kernel registers, and the front end opens.
TARGET = "msdebug"

#: Bumped when a field changes meaning or goes away (adding a field does not bump it:
#: the front end ignores fields it does not know).
PROTOCOL = 1

_SYNC_FIXED = "mindspore.runtime.launch_blocking() was called; it cannot be undone in this process"


def state_message(
    state: Any,
    *,
    print_capture: bool,
    device_fixed: str,
    first_cell: str,
    parallel_mode: str,
    ranks: tuple[int, ...] = (),
    busy: tuple[int, ...] = (),
) -> dict:
    """The ``state`` message for a context state.

    Parameters
    ----------
    state : ContextState
        Its ``summary_parts()`` (the facts the table's and the panel's summaries are made
        of), ``summary()``, ``version``, ``device``, ``sync`` and ``launch_blocking``.
    print_capture : bool
        Whether msdebug captures every cell's Print output.
    device_fixed : str
        Why the device cannot change any more in this process, or "".
    first_cell : str
        The first cell of a fresh kernel that gets this device.
    parallel_mode : str
        ``set_auto_parallel_context``'s ``parallel_mode`` (``stand_alone`` unless set).
    ranks, busy : tuple of int
        The ranks ``%msrun`` started on this host, and those running a cell now.
    """
    parts = state.summary_parts(print_capture)
    launch_blocking = bool(state.launch_blocking)
    return _message(
        "state",
        state={
            "mindspore": state.version,
            "installed": state.version,
            "mode": parts["mode"],
            "device": parts["device"],
            "device_fixed": device_fixed,
            "sync": bool(state.sync) or launch_blocking,
            "sync_fixed": _SYNC_FIXED if launch_blocking else "",
            "runtime_started": bool(state.device.started),
            "print_capture": bool(print_capture),
            "summary": state.summary(),
            "first_cell": first_cell,
            "parallel_mode": parallel_mode,
            **_ranks(ranks, busy),
        },
    )


def unloaded_state(
    installed: str | None, *, print_capture: bool, ranks: tuple[int, ...] = (), busy: tuple[int, ...] = ()
) -> dict:
    """The ``state`` message while the kernel has not imported MindSpore (reading its
    context would import it, which takes seconds)."""
    summary = f"MindSpore {installed} is not imported yet" if installed else "MindSpore is not installed"
    return _message(
        "state",
        state={
            "mindspore": None,
            "installed": installed,
            "mode": "",
            "device": "",
            "device_fixed": "",
            "sync": False,
            "sync_fixed": "",
            "runtime_started": False,
            "print_capture": bool(print_capture),
            "summary": summary,
            "first_cell": "",
            "parallel_mode": "",
            **_ranks(ranks, busy),
        },
    )


def reply_message(request_id: Any, error: str = "") -> dict:
    """The answer to one command: ``ok`` with an empty ``error``, or the one-line error."""
    return _message("reply", id=request_id if isinstance(request_id, int) else -1, ok=not error, error=error)


def schema() -> dict:
    """The protocol's JSON Schema (``status.schema.json``, shipped in the package)."""
    return json.loads(resources.files(__package__).joinpath("status.schema.json").read_text(encoding="utf-8"))


def _ranks(ranks: tuple[int, ...], busy: tuple[int, ...]) -> dict:
    return {"ranks": sorted(ranks), "busy_ranks": sorted(rank for rank in busy if rank in ranks)}


def _message(kind: str, **fields: Any) -> dict:
    return {"protocol": PROTOCOL, "kind": kind, **fields}
