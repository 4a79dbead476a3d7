"""Source locations that point into notebook cells.

ipykernel names each cell after a file (``/tmp/ipykernel_<pid>/<hash>.py``) and msdebug's
``CellFiles`` hook writes the cell there; IPython also keeps every cell in ``linecache``.
A dump's ``# In file`` line into such a file is shown as the cell's own code.
"""

from __future__ import annotations

import linecache
import os
import re
import textwrap

from ..errors import MsDebugError
from ..files import MiB, read_regular

__all__ = ["cell_code", "is_cell"]

_CELL = re.compile(r"(?:^|/)ipykernel_\d+/-?\d+\.py$|^<ipython-input-\d+-[0-9a-f]+>$")
_MAX_LINES = 12
_CELL_LIMIT = 16 * MiB


def is_cell(path: str) -> bool:
    """Whether ``path`` is the name IPython or ipykernel gives a cell."""
    return bool(_CELL.search(path))


def cell_code(path: str, line: int, end: int | None = None) -> str | None:
    """Lines ``line..end`` of the cell behind ``path`` (at most 12), or None when ``path`` is
    not a cell or its code is not known here (another process, the file gone)."""
    if not is_cell(path) or line < 1:
        return None
    try:
        # A dump names whatever path it likes: only a regular file, and only a cell's worth of it.
        lines = read_regular(path, _CELL_LIMIT).decode("utf-8", "replace").splitlines(keepends=True)
    except MsDebugError:
        # IPython's own cells (<ipython-input-...>) live only in linecache; a path that exists
        # but is no regular file (a FIFO) must not reach linecache, which would block on it.
        lines = [] if os.path.lexists(path) else linecache.getlines(path)
    if not lines or line > len(lines):
        return None
    last = min(end or line, line + _MAX_LINES - 1, len(lines))
    return textwrap.dedent("".join(lines[line - 1 : last])).rstrip("\n")
