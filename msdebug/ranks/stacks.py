"""Where a rank is, read from what it says: its faulthandler stacks and its error tracebacks.

Pure text reading, no process is touched. A rank's main thread is read innermost frame first:

* the **running cell's own file** gives the cell line (ipykernel names every cell after a file;
  the rank's flight recorder says which file is the running cell's, so a frame in a function
  of an earlier cell is not taken for this cell's);
* the innermost frame of the person's own code, when it is elsewhere: a function or a Cell's
  ``construct`` from an earlier cell (named at that cell and line) or a script;
* the innermost frame inside MindSpore says what the rank waits in: a communication function
  (named as that op), the queue of launched ops (``asnumpy()``, a tensor printed: PyNative
  launches ops asynchronously, so a rank whose collective never completes waits there), a
  graph run, or msdebug's wait at the end of the cell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..dumps import cells
from .collectives import communication

__all__ = [
    "COMMUNICATION",
    "END_OF_CELL",
    "GRAPH",
    "QUEUE",
    "Frame",
    "Place",
    "error_line",
    "frames",
    "place",
    "place_of",
]

# What a rank waits in, by its innermost MindSpore (or msdebug) frame.
COMMUNICATION = "communication"
QUEUE = "queue"  # waits for the ops it launched (a tensor's values, a sync)
GRAPH = "graph"  # runs a compiled graph
END_OF_CELL = "end of cell"  # msdebug's wait for what the cell launched

_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<function>\S+)', re.MULTILINE)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CELL_LINE = re.compile(r"Cell In\[\d+\], line (\d+)")
_MINDSPORE = "/mindspore/"
_COMMUNICATION_FILES = ("/mindspore/communication/", "/mindspore/mint/distributed/", "/ops/operations/comm_ops.py",
                        "/ops/function/comm_func.py")  # fmt: skip
_QUEUE_FILES = ("/mindspore/common/tensor.py", "/mindspore/common/_stub_tensor.py")
_GRAPH_FUNCTIONS = ("_exec_pip", "grad_jit", "run_graph")
_END_OF_CELL = ("/msdebug/backend/ranks.py", "wait_launched")  # the pool knows the wait by this frame
_LIBRARIES = ("/site-packages/", "/dist-packages/", "/lib/python3")
_OWN = "/msdebug/"


@dataclass(frozen=True)
class Frame:
    """One frame. ``op``: the primitive the frame runs, where the reader of the stack knows it
    (py-spy reads a MindSpore frame's locals; faulthandler says nothing of them)."""

    path: str
    line: int
    function: str
    op: str = ""


@dataclass(frozen=True)
class Place:
    """A busy rank's place.

    ``line`` and ``code``: the running cell's line (0 when its main thread is not in the cell).
    ``waiting``: what it waits in (:data:`COMMUNICATION`, :data:`QUEUE`, :data:`GRAPH`,
    :data:`END_OF_CELL`, or '' while it computes in Python), and ``op`` the communication op
    when its frame names one. ``inner``: the innermost frame of the person's code when it is not
    the running cell's line (``cell [3], line 9 in construct``), with ``inner_code``. ``frame``:
    the innermost frame of all, when no frame is the person's.
    """

    line: int = 0
    code: str = ""
    waiting: str = ""
    op: str = ""
    inner: str = ""
    inner_code: str = ""
    frame: str = ""

    @property
    def in_communication(self) -> bool:
        """Whether its own stack shows it inside a communication op."""
        return self.waiting == COMMUNICATION


def frames(stacks: str) -> list[Frame]:
    """The main thread's frames of a faulthandler dump (``Current thread``), innermost first."""
    main = stacks.split("Current thread", 1)[-1].split("\nThread 0x", 1)[0]
    return [Frame(m["path"], int(m["line"]), m["function"]) for m in _FRAME.finditer(main)]


def _is_library(path: str) -> bool:
    return path.startswith("<frozen") or _OWN in path or any(part in path for part in _LIBRARIES)


def _waiting(frame: Frame) -> tuple[str, str]:
    """What ``frame`` (a library frame) says the rank waits in, and the op it names."""
    path, function = frame.path, frame.function
    if path.endswith(_END_OF_CELL[0]) and function == _END_OF_CELL[1]:
        return END_OF_CELL, ""
    if _MINDSPORE not in path:
        return "", ""
    if frame.op and (found := communication(frame.op)) is not None:
        return COMMUNICATION, found[0]  # a primitive run where it is called (launch_blocking)
    if any(part in path for part in _COMMUNICATION_FILES):
        found = communication(function, known=True)  # not init(), create_group(): they set up
        return (COMMUNICATION, found[0]) if found else ("", "")
    if function in _GRAPH_FUNCTIONS:
        return GRAPH, ""
    if any(path.endswith(part) for part in _QUEUE_FILES) or function == "sync":
        return QUEUE, ""
    return "", ""


def _named(frame: Frame, numbers: Mapping[str, tuple[int, int]]) -> tuple[str, str]:
    """``cell [3], line 9 in construct`` (or ``train.py:12 in step``) and that line's code."""
    known = numbers.get(frame.path)
    if known is not None:
        number, offset = known
        code = cells.cell_code(frame.path, frame.line) or ""
        return f"cell [{number}], line {frame.line + offset} in {frame.function}", code.strip()
    return f"{frame.path}:{frame.line} in {frame.function}", ""


def place(
    stacks: str,
    cell: str,
    offset: int = 0,
    running: str | None = None,
    numbers: Mapping[str, tuple[int, int]] | None = None,
) -> Place:
    """Where the main thread of a faulthandler dump is.

    ``cell``: the running cell's code as sent; ``offset`` is added to its line numbers to make
    them the notebook cell's. ``running``: the file the rank runs it from, as its flight
    recorder says (None: any cell file counts, for a rank without a recorder). ``numbers``: every
    cell file the rank knows, with its cell number and offset.
    """
    return place_of(frames(stacks), cell, offset, running, numbers)


def place_of(
    stack: list[Frame],
    cell: str,
    offset: int = 0,
    running: str | None = None,
    numbers: Mapping[str, tuple[int, int]] | None = None,
) -> Place:
    """Where a main thread is, from its frames (innermost first), as :func:`place` says; any
    reader of a stack (faulthandler's text, py-spy's JSON) ends here."""
    numbers = numbers or {}
    if not stack:
        return Place()
    lines = cell.splitlines()
    line = code = inner = inner_code = ""
    waiting = op = ""
    for frame in stack:
        own = frame.path == running if running is not None else cells.is_cell(frame.path)
        if own:
            line = frame.line
            code = lines[frame.line - 1].strip() if 0 < frame.line <= len(lines) else ""
            break
        if not inner and not _is_library(frame.path):
            inner, inner_code = _named(frame, numbers)
        if not inner and not waiting:
            waiting, op = _waiting(frame)
    if not line and any(_waiting(frame)[0] == END_OF_CELL for frame in stack):
        waiting, op = END_OF_CELL, ""  # msdebug's wait, below MindSpore's sync
    top = stack[0]
    return Place(
        line=line + offset if line else 0,
        code=code,
        waiting=waiting,
        op=op,
        inner=inner,
        inner_code=inner_code,
        frame="" if line or inner else f"{top.function} ({top.path}:{top.line})",
    )


def error_line(traceback: list[str]) -> int:
    """The cell line an error was raised at: the last ``Cell In[N], line L`` of an IPython
    traceback (ANSI colours and all), 0 when it names none."""
    found = _CELL_LINE.findall(_ANSI.sub("", "\n".join(traceback)))
    return int(found[-1]) if found else 0
