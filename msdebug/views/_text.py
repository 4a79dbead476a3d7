"""Shared pieces of msdebug's plain text: the one way a long name is shortened, and tables
whose name column gives way so that a line fits the width.

A scope name's head says where it starts (``Gradients/Default/...``) and its tail which op it
is (``.../MatMul-op2``): both stay, the middle gives way (``Gradients/Default/…/MatMul-op2``).
Op types and numbers are never cut: a table shortens only the column it is told to fit.

The width is 100 columns for ``repr`` (a notebook's text/plain, a log); the ``msdebug``
command sets its terminal's width for what it prints with :func:`text_width`.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

__all__ = ["ELLIPSIS", "REPR_WIDTH", "Column", "current_width", "fit_table", "shorten", "text_width"]

ELLIPSIS = "…"
REPR_WIDTH = 100
MIN_FIT = 16  # a fitted column is never narrower than this: below it the line may run over
_WIDTH: contextvars.ContextVar[int] = contextvars.ContextVar("msdebug_text_width", default=REPR_WIDTH)


def current_width() -> int:
    """The columns text is fitted to now: 100, or what :func:`text_width` set."""
    return _WIDTH.get()


@contextlib.contextmanager
def text_width(columns: int) -> Iterator[int]:
    """Text rendered inside the block fits ``columns`` (at least ``MIN_FIT + 24``)."""
    token = _WIDTH.set(max(int(columns), MIN_FIT + 24))
    try:
        yield _WIDTH.get()
    finally:
        _WIDTH.reset(token)


def shorten(text: str, width: int) -> str:
    """``text`` at most ``width`` characters, its middle replaced by ``…`` when it is longer.

    The tail keeps about two thirds of the room (it tells rows apart: ``MatMul-op0`` from
    ``MatMul-op1``), the head the rest; a cut next to a ``/`` moves to it, so that whole scope
    levels show. ``shorten(shorten(t, w), w) == shorten(t, w)``, and a text that fits comes back
    as it is.
    """
    text = str(text)
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[: max(0, width)]
    room = width - 1
    tail = room - room // 3
    head = room - tail
    start = len(text) - tail
    # The tail begins after a "/" when one is among its first quarter: the characters that
    # saves go to the head, so the result is exactly ``width`` long.
    slash = text.find("/", start, start + tail // 4 + 1)
    if 0 <= slash < len(text) - 1:
        head += slash + 1 - start
        start = slash + 1
    return text[:head] + ELLIPSIS + text[start:]


@dataclass(frozen=True)
class Column:
    """One column of a text table: its header, the width it is padded to at least, whether it
    is right-aligned (numbers), and whether it gives way to fit the line (a name)."""

    header: str
    least: int = 0
    right: bool = False
    fit: bool = False


def fit_table(columns: Sequence[Column], rows: Sequence[Sequence[object]], width: int | None = None) -> list[str]:
    """The header line and one line per row, columns one space apart, each line at most
    ``width`` (default :func:`current_width`) where the fitted column can give way enough.

    A column is as wide as its widest cell (at least ``least``); the fitted column takes what
    the others leave, no more than it needs and no less than ``MIN_FIT``, and its cells are
    shortened in the middle. Other columns are never cut.
    """
    width = current_width() if width is None else width
    cells = [[str(cell) for cell in row] for row in rows]
    natural = [
        max([column.least, len(column.header), *(len(row[index]) for row in cells)])
        for index, column in enumerate(columns)
    ]
    fitted = [index for index, column in enumerate(columns) if column.fit]
    if fitted:
        others = sum(w for index, w in enumerate(natural) if index not in fitted) + len(columns) - 1
        share = max(MIN_FIT, (width - others) // len(fitted))
        for index in fitted:
            natural[index] = min(natural[index], share)

    def line(values: Sequence[str]) -> str:
        parts = []
        for index, (column, value) in enumerate(zip(columns, values, strict=True)):
            if column.fit:
                value = shorten(value, natural[index])
            parts.append(value.rjust(natural[index]) if column.right else value.ljust(natural[index]))
        return " ".join(parts).rstrip()

    return [line([column.header for column in columns]), *(line(row) for row in cells)]
