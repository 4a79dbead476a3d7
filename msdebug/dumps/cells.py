"""Source locations that point into notebook cells.

ipykernel names each cell after a file (``/tmp/ipykernel_<pid>/<hash>.py``) and msdebug's
``CellFiles`` hook writes the cell there; IPython also keeps every cell in ``linecache``.
A dump's ``# In file`` line into such a file is shown as the cell's own code.
"""

from __future__ import annotations

import linecache
import re
import textwrap

__all__ = ["cell_code", "is_cell"]

_CELL = re.compile(r"(?:^|/)ipykernel_\d+/-?\d+\.py$|^<ipython-input-\d+-[0-9a-f]+>$")
_MAX_LINES = 12


def is_cell(path: str) -> bool:
    """Whether ``path`` is the name IPython or ipykernel gives a cell."""
    return bool(_CELL.search(path))


def cell_code(path: str, line: int, end: int | None = None) -> str | None:
    """Lines ``line..end`` of the cell behind ``path`` (at most 12), or None when ``path`` is
    not a cell or its code is not known here (another process, the file gone)."""
    if not is_cell(path) or line < 1:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.readlines()
    except OSError:
        lines = linecache.getlines(path)
    if not lines or line > len(lines):
        return None
    last = min(end or line, line + _MAX_LINES - 1, len(lines))
    return textwrap.dedent("".join(lines[line - 1 : last])).rstrip("\n")
