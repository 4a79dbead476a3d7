"""Where a rank is, read from what it says: its faulthandler stacks and its error tracebacks.

Pure text reading, no process is touched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["COLLECTIVES", "Place", "error_line", "place"]

#: MindSpore's collective operators and functions (``mindspore.ops`` primitives and
#: ``mindspore.communication.comm_func``): a busy rank whose cell line calls one waits in it.
COLLECTIVES = (
    "AllReduce", "AllGather", "ReduceScatter", "Broadcast", "AlltoAll", "AllToAll", "NeighborExchange",
    "Send", "Receive", "Barrier", "Reduce", "CollectiveScatter", "CollectiveGather",
    "all_reduce", "all_gather_into_tensor", "all_gather", "reduce_scatter_tensor", "reduce_scatter",
    "broadcast", "barrier", "all_to_all", "isend", "irecv", "send", "recv", "reduce", "scatter_tensor",
    "gather_into_tensor",
)  # fmt: skip

_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+) in (?P<function>\S+)', re.MULTILINE)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CELL_LINE = re.compile(r"Cell In\[\d+\], line (\d+)")
_CALL = re.compile(r"\b(" + "|".join(sorted(COLLECTIVES, key=len, reverse=True)) + r")\s*\(")


@dataclass(frozen=True)
class Place:
    """A busy rank's place: its cell line (0 when outside the cell), that line's code, the
    collective it calls (''), and the innermost frame when it is not in the cell."""

    line: int = 0
    code: str = ""
    collective: str = ""
    frame: str = ""


def _is_cell(path: str) -> bool:
    """ipykernel names a cell's code ``/tmp/ipykernel_<pid>/<hash>.py``; IPython ``<ipython-input-...>``."""
    return "/ipykernel_" in path or path.startswith("<ipython-input-")


def place(stacks: str, cell: str, offset: int = 0) -> Place:
    """Where the main thread of a faulthandler dump is in ``cell`` (the code as sent); ``offset``
    is added to its line numbers to make them the notebook cell's."""
    main = stacks.split("Current thread", 1)[-1].split("\nThread 0x", 1)[0]
    frames = [(m["path"], int(m["line"]), m["function"]) for m in _FRAME.finditer(main)]  # innermost first
    lines = cell.splitlines()
    for path, line, _ in frames:
        if _is_cell(path):
            code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
            found = _CALL.search(code)
            return Place(line + offset, code, found.group(1) if found else "")
    if frames:
        path, line, function = frames[0]
        return Place(frame=f"{function} ({path}:{line})")
    return Place()


def error_line(traceback: list[str]) -> int:
    """The cell line an error was raised at: the last ``Cell In[N], line L`` of an IPython
    traceback (ANSI colours and all), 0 when it names none."""
    found = _CELL_LINE.findall(_ANSI.sub("", "\n".join(traceback)))
    return int(found[-1]) if found else 0
