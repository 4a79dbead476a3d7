"""Source locations that point into notebook cells.

ipykernel names each cell after a file (``/tmp/ipykernel_<pid>/<hash>.py``) and msdebug's
``CellFiles`` hook writes the cell there; IPython also keeps every cell in ``linecache``.
A dump's ``# In file`` line into such a file is shown as the cell's own code, and named
after the cell ("cell [14], line 12") when this process ran it: the IPython layer tells
:func:`remember` which execution count each file belongs to.
"""

from __future__ import annotations

import linecache
import os
import re
import textwrap
from collections.abc import Callable

from ..errors import MsDebugError
from ..files import MiB, read_regular

__all__ = [
    "add_namer",
    "cell_code",
    "cell_number",
    "is_cell",
    "place",
    "remember",
    "remember_blank",
    "remove_namer",
    "typed_line",
]

_CELL = re.compile(r"(?:^|/)ipykernel_\d+/-?\d+\.py$|^<ipython-input-\d+-[0-9a-f]+>$")
_MAX_LINES = 12
_MAX_NAMES = 10_000
_CELL_LIMIT = 16 * MiB

# file name -> the execution count of the cell run from it, as told by remember().
_numbers: dict[str, int] = {}
# file name -> the empty lines a cell starts with, which IPython drops before it compiles the cell:
# a compiled line number is that many lines above the line as typed (and as the file holds it).
_blank: dict[str, int] = {}
# Functions file name -> execution count or None, added by the IPython layer (the shell knows).
_namers: list[Callable[[str], int | None]] = []


def remember(path: str, number: int) -> None:
    """Note that the cell numbered ``number`` (``In [number]``) was run from file ``path``."""
    _numbers.pop(path, None)
    _numbers[path] = number
    while len(_numbers) > _MAX_NAMES:  # bounded: the oldest names go first
        del _numbers[next(iter(_numbers))]


def remember_blank(path: str, lines: int) -> None:
    """Note that the cell behind ``path`` starts with ``lines`` empty lines IPython did not compile."""
    _blank.pop(path, None)
    if lines:
        _blank[path] = lines
        while len(_blank) > _MAX_NAMES:
            del _blank[next(iter(_blank))]


def typed_line(path: str, line: int) -> int:
    """The line of the cell as typed (and shown) for ``line`` of the code IPython compiled from it."""
    return line + _blank.get(path, 0)


def add_namer(namer: Callable[[str], int | None]) -> None:
    """Ask ``namer`` for the execution count behind a file name (first answer wins)."""
    if namer not in _namers:
        _namers.append(namer)


def remove_namer(namer: Callable[[str], int | None]) -> None:
    if namer in _namers:
        _namers.remove(namer)


def cell_number(path: str) -> int | None:
    """The execution count of the cell behind ``path``, when this process ran it."""
    for namer in _namers:
        try:
            number = namer(path)
        except Exception:  # noqa: BLE001 - a namer that fails leaves the cell unnamed, nothing more
            number = None
        if number is not None:
            return number
    return _numbers.get(path)


def is_cell(path: str) -> bool:
    """Whether ``path`` is the name IPython or ipykernel gives a cell."""
    return bool(_CELL.search(path))


def cell_code(path: str, line: int, end: int | None = None) -> str | None:
    """Lines ``line..end`` (as compiled) of the cell behind ``path`` (at most 12), or None when
    ``path`` is not a cell or its code is not known here (another process, the file gone)."""
    if not is_cell(path) or line < 1:
        return None
    try:
        # A dump names whatever path it likes: only a regular file, and only a cell's worth of it.
        lines = read_regular(path, _CELL_LIMIT, follow=False).decode("utf-8", "replace").splitlines(keepends=True)
        shift = typed_line(path, line) - line  # the file holds the cell as typed
        line, end = line + shift, (end + shift if end else None)
    except MsDebugError:
        # IPython's own cells (<ipython-input-...>) live only in linecache, as compiled; a path
        # that exists but is no regular file (a FIFO) must not reach linecache, which would block on it.
        lines = [] if os.path.lexists(path) else linecache.getlines(path)
    if not lines or line > len(lines):
        return None
    last = min(end or line, line + _MAX_LINES - 1, len(lines))
    return textwrap.dedent("".join(lines[line - 1 : last])).rstrip("\n")


def place(path: str, line: int) -> str:
    """``cell [3], line 5`` for a line of a notebook cell this process ran (the line as typed),
    ``notebook cell, line 5`` for one whose ``In [N]`` it does not know (run before msdebug was
    loaded, or by another process), ``train.py:12`` for a file of the person's own; '' with no
    path. The one wording of a place in every answer (``%%msnan``, ``%%mswatch``, the explorer's
    rows name the same places the same way)."""
    if is_cell(path):
        number = cell_number(path)
        line = typed_line(path, line)
        return f"cell [{number}], line {line}" if number is not None else f"notebook cell, line {line}"
    return f"{os.path.basename(path)}:{line}" if path and not path.startswith("<") else ""
