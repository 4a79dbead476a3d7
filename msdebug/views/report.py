"""One report model, two renderers: a :class:`Report` is a list of sections, and :func:`html`
and :func:`text` turn the same list into escaped, bounded HTML and into plain text.

A feature's view builds its report once (``views.nan.build``, ``views.profile.build_profile``)
and renders it both ways, so the two forms cannot drift apart. Every string in a section is
plain text (escaped here, never by the caller) except a :class:`Figure`'s picture, which
:mod:`msdebug.views.svg` drew (and escaped) itself. Where the two forms show a fact in
different shapes (a table in HTML, one line per row in a terminal) a section says which form it
belongs to with ``only``; everything else is shown by both.

Inline pieces of a line (:data:`Inline`): a plain ``str``, a :class:`Span` (a look: strong,
good, bad, code, a scope name...), a :class:`Bar` (a share drawn as a bar in HTML, a percentage
in text), a :class:`Sep` (a separator that differs between the forms, `` · `` and ``, ``), a
:class:`Break` (a line break in an HTML cell) and a :class:`Block` (sections inside a table cell).
A ``grid`` table's rows and cells may carry attributes of their own (:class:`Row`, :class:`Cell`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Union

from ._html import BREAK_ANYWHERE, CHANGED_MARK, FADED, LEFT, NOTE, STRONG, esc, hover, scope, tag
from ._text import Column, current_width, fit_table, shorten

__all__ = [
    "Bar",
    "Block",
    "Break",
    "Cell",
    "Col",
    "Figure",
    "Fold",
    "Items",
    "KeyValues",
    "Line",
    "Pre",
    "Report",
    "Row",
    "Sep",
    "Span",
    "Table",
    "ends",
    "html",
    "renderers",
    "text",
]

MAX_ROWS = 2000  # rows of one table, items of one list (a hostile dump may hold millions); a cut says so
MAX_CHARS = 20_000  # characters of one string or preformatted block, kept from its end for a log

GOOD = "color:#1b7f3b"
BAD = "color:#b00020;font-weight:700"
_PATH = "word-break:break-all"
_NOWRAP = "white-space:nowrap"
_BAR = "display:inline-block;height:.8em;background:#4a90d9;vertical-align:middle"
_COMPACT_CELL = f"{LEFT};padding:1px 8px;vertical-align:top;{BREAK_ANYWHERE}"
_FULL_CELL = "text-align:left;vertical-align:top;overflow-wrap:anywhere;word-break:normal"
_FULL_TABLE = "table-layout:fixed;width:100%;border-collapse:collapse;margin:2px 0"
_GRID_CELL = "text-align:left;vertical-align:top;overflow-wrap:anywhere"
_GRID_TABLE = "table-layout:fixed;width:100%;border-collapse:collapse"
# A value never breaks mid-word (PYNATIVE_MODE (1)); a long one is cut, the whole of it on hover.
_VALUE = "text-align:left;vertical-align:top;white-space:nowrap;overflow:hidden;text-overflow:ellipsis"
_BOX = "max-width:100%;overflow-wrap:anywhere"
_SCROLL = "max-height:560px;overflow-y:auto;overflow-x:hidden"
# The looks a line, a list or a span may have, as the inline styles of msdebug's HTML.
LOOKS = {
    "": "",
    "strong": STRONG,
    "note": NOTE,
    "aside": NOTE,
    "good": GOOD,
    "good-strong": f"{GOOD};{STRONG}",
    "bad": BAD,
    "title": f"{STRONG};{_PATH}",
    "path": _PATH,
    "faded": FADED,
    "faded-note": f"{NOTE};{FADED}",
    "partial": "background:#fdecea;border-left:4px solid #cf222e;padding:4px 8px;margin:4px 0",
    "tight": "margin:2px 0",
    "boxed-note": f"{NOTE};{_BOX}",  # a note that wraps inside the output area
    "boxed-strong": f"{STRONG};{_BOX}",
    "warning": "color:#9a6700",
    "appeared": "color:#1a7f37",  # a diff's sides
    "vanished": "color:#cf222e",
    "changed": "color:#9a6700",
    "source": "margin:0;font-family:monospace;white-space:pre-wrap;overflow-wrap:anywhere",  # code in a cell
    "source-cell": "margin:0;font-family:monospace;white-space:pre-wrap;overflow-wrap:anywhere;"
    "border-left:3px solid #4a90d9;padding-left:4px",  # a notebook cell's code in a cell
    # The cells of a ``grid`` table (:class:`Cell`) and its heading rows (:class:`Row`).
    "cell": _GRID_CELL,
    "cell-marked": f"{_GRID_CELL};{CHANGED_MARK}",
    "value": f"{_VALUE};",
    "value-strong": f"{_VALUE};{STRONG}",
    "value-plain": _VALUE,
    "group": f"{LEFT};{STRONG};padding-top:6px;border-bottom:1px solid #ccc",
    # A Print log (views.print): its summary, printed text, a scalar's line, a tensor's fold.
    "summary": f"{STRONG};{NOTE}",
    "printed": "margin:0;white-space:pre-wrap;overflow-wrap:anywhere",
    "scalar": "font-family:monospace;white-space:pre-wrap;overflow-wrap:anywhere",
    "hidden": "color:#777;border-top:1px dashed #bbb;border-bottom:1px dashed #bbb;margin:2px 0;padding:1px 0",
    "b-bad": "color:#cf222e",
    "small-note": f"{NOTE};font-size:90%",
    "left": LEFT,
    "tensor": "padding-left:7px",
    "tensor-partial": "border-left:3px solid #c0392b;padding-left:4px",
}


def _bounded(value: object) -> str:
    value = str(value)
    return value if len(value) <= MAX_CHARS else value[: MAX_CHARS - 1] + "…"


# --------------------------------------------------------------------------- inline pieces


@dataclass(frozen=True)
class Span:
    """A piece of a line with a look: ``strong``, ``good``, ``bad`` (styles); ``code`` (``<code>``
    in HTML, in backticks in text); ``name`` (``<code>``, bare in text); ``scope`` (a scope name:
    ``<code>`` wrapping at its ``/``); ``scope-plain`` (wrapping at ``/``, no ``<code>``);
    ``fit`` (a scope name in ``<code>`` that text shortens so that the line fits the width, to
    no fewer than ``width`` characters, 32 by default);
    ``hover`` (text shortened to ``width``, the whole on hover). A look that is a style may hold
    runs (a tuple) instead of one text: one ``<span>`` around them in HTML."""

    text: object
    look: str = ""
    width: int = 0


@dataclass(frozen=True)
class Bar:
    """A share in 0..1: a bar and its percentage in HTML, the percentage in text."""

    share: float


@dataclass(frozen=True)
class Sep:
    """A separator between parts of a line that differs between the forms."""

    html: str = " · "
    text: str = ", "


@dataclass(frozen=True)
class Break:
    """A line break inside a cell in HTML (``<br>``); ``text`` in text."""

    text: str = "; "


@dataclass(frozen=True)
class Block:
    """Sections inside a table cell (a note above a block of code): their HTML in the cell, their
    text lines joined by ``; `` in text."""

    sections: Sequence[Section]


Inline = Union[str, Span, Bar, Sep, Break, Block]  # noqa: UP007 (a runtime alias)
Runs = Union[str, Span, Bar, Sep, Break, Block, Sequence[Inline]]  # noqa: UP007
_INLINE = (str, Span, Bar, Sep, Break, Block)


def _runs(value: Runs) -> tuple[Inline, ...]:
    return (value,) if isinstance(value, _INLINE) else tuple(value)


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"


def _inline_html(run: Inline) -> str:
    if isinstance(run, str):
        return esc(_bounded(run))
    if isinstance(run, Sep):
        return esc(run.html)
    if isinstance(run, Break):
        return "<br>"
    if isinstance(run, Bar):
        width = max(0.0, min(1.0, run.share)) * 120
        return f'<span style="{_BAR};width:{width:.0f}px"></span> {esc(_pct(run.share))}'
    if isinstance(run, Block):
        return "".join(_html_section(s) for s in run.sections if s.only != "text")
    if isinstance(run.text, tuple):
        return tag("span", runs_html(run.text), style=LOOKS[run.look])
    value = _bounded(run.text)
    look = run.look
    if look in ("code", "name"):
        return tag("code", esc(value))
    if look in ("scope", "fit"):
        return tag("code", scope(value))
    if look in ("b", "b-bad"):  # bold; ``b-bad`` in red
        return tag("b", esc(value), style=LOOKS.get(look, ""))
    if look == "scope-plain":
        return scope(value)
    if look == "hover":
        return hover(value, run.width)
    return tag("span", esc(value), style=LOOKS[look])


def _inline_text(run: Inline) -> str:
    if isinstance(run, str):
        return _bounded(run)
    if isinstance(run, (Sep, Break)):
        return run.text
    if isinstance(run, Bar):
        return _pct(run.share)
    if isinstance(run, Block):
        return "; ".join(line for s in run.sections if s.only != "html" for line in _text_section(s))
    if isinstance(run.text, tuple):
        return runs_text(run.text)
    value = _bounded(run.text)
    if run.look == "code":
        return f"`{value}`"
    if run.look == "hover":
        return shorten(value, run.width)
    return value


def runs_html(value: Runs) -> str:
    return "".join(_inline_html(run) for run in _runs(value))


def runs_text(value: Runs, indent: int = 0) -> str:
    """The runs as one line; a ``fit`` span gives way (shortened in the middle) so that the line
    fits :func:`current_width` (``indent`` columns are taken already), never below its ``width``."""
    runs = _runs(value)
    fitted = [i for i, run in enumerate(runs) if isinstance(run, Span) and run.look == "fit"]
    parts = [_inline_text(run) for run in runs]
    if fitted:
        used = indent + sum(len(part) for i, part in enumerate(parts) if i not in fitted)
        room = (current_width() - used) // len(fitted)
        for i in fitted:
            parts[i] = shorten(parts[i], max(runs[i].width or 32, room))
    return "".join(parts)


# --------------------------------------------------------------------------- sections


@dataclass(frozen=True)
class Line:
    """A paragraph of one line: ``look`` styles it in HTML (``note``, ``strong``, ``partial``...;
    ``aside`` is a note that text puts in parentheses), ``indent`` moves it right in text,
    ``title`` is its hover text in HTML."""

    runs: Runs
    look: str = ""
    indent: int = 0
    title: str = ""
    cls: str = ""  # HTML: the class of its ``<div>``
    only: str = ""


@dataclass(frozen=True)
class Items:
    """A list under an optional heading: ``<ul>`` in HTML; in text the heading (indented by
    ``indent``), then one line per item (``prefix`` before each, indented by ``indent``, two more
    under a heading). At most ``MAX_ROWS`` items, and ``more``
    (when given) says how many were left out."""

    items: Sequence[Runs]
    head: Runs = ()
    text_head: Runs = ()  # the heading's wording in text, when it differs
    look: str = ""
    prefix: str = ""
    indent: int = 0
    more: str = ""
    only: str = ""


@dataclass(frozen=True)
class KeyValues:
    """``key: value`` pairs, one a line in both forms; ``look`` ``table``: in HTML a ``<table>``
    of them, the key a row's ``<th>``, the value its ``<td>``."""

    pairs: Sequence[tuple[str, Runs]]
    indent: int = 0
    look: str = ""
    only: str = ""


@dataclass(frozen=True)
class Col:
    """A table column: its HTML head, and its text column (``None``: the column is HTML only)."""

    head: str
    text: Column | None = None
    left: bool = False
    width: int = 0  # percent of a full-width table
    mono: bool = False  # a monospace column (a full-width table)


@dataclass(frozen=True)
class Cell:
    """A cell of a ``grid`` table with attributes of its own in HTML: its style (a look), the
    whole of its value on hover (``title``) and a class. Text shows its runs."""

    runs: Runs
    look: str = "cell"
    title: str = ""
    cls: str = ""


@dataclass(frozen=True)
class Row:
    """A row of a ``grid`` table with a class and a look in HTML; ``heading``: its one cell
    spans every column (a group's title; HTML only, text leaves it out)."""

    cells: Sequence[Runs | Cell]
    cls: str = ""
    look: str = ""
    heading: bool = False


@dataclass(frozen=True)
class Table:
    """A table: at most ``MAX_ROWS`` rows of :data:`Inline` cells. In HTML the ``left`` columns
    (from the first) align left and the first of them wraps anywhere; ``look`` ``compact``: every
    column does, with padding; ``full``: as wide as the output area, every column left-aligned;
    ``grid``: as ``full``, its rows may be :class:`Row` and its cells :class:`Cell`.
    In text the columns with a :class:`Col.text` go through ``fit_table``."""

    columns: Sequence[Col]
    rows: Sequence[Sequence[Runs] | Row]
    look: str = ""
    indent: int = 0  # text: the table moves right, and fits what is left of the width
    head: bool = True  # HTML, ``full``: False hides the head row (a table of fields and values)
    only: str = ""


@dataclass(frozen=True)
class Pre:
    """A preformatted block (a log, code): ``summary`` folds it in a ``<details>`` in HTML;
    in text its lines, indented by ``indent``; without a summary ``look`` styles the ``<pre>``.
    At most ``MAX_CHARS`` characters, its end kept (a mark says how many went), or with
    ``lines`` its head and its tail."""

    body: str
    summary: str = ""
    look: str = ""
    indent: int = 0
    scroll: bool = False  # HTML: at most 20 lines high, scrolled
    # A log whose start and end both matter (printed output): its first and last ``lines // 2``
    # lines with a mark between them, and in text no other cut (the lines as they are, split at
    # "\n" only). ``whole`` says in the mark where the whole of it is.
    lines: int = 0
    whole: str = ""
    only: str = ""


@dataclass(frozen=True)
class Figure:
    """A picture drawn by :mod:`msdebug.views.svg` (already escaped there: the one raw HTML a
    report carries), a caption under it in HTML, and the lines that stand for it in text. A
    callable ``svg`` draws only when HTML is rendered: text never pays for a drawing."""

    svg: str | Callable[[], str]  # or what draws it: called only when HTML is rendered
    caption: str = ""
    text: Sequence[str] = ()
    scroll: bool = False  # HTML: a tall drawing scrolls inside 560 pixels
    only: str = ""


@dataclass(frozen=True)
class Fold:
    """Sections folded under a summary line: a ``<details>`` (``open``: unfolded) in HTML; in
    text the summary, then the sections."""

    summary: Runs
    sections: Sequence[Section]
    open: bool = False
    look: str = ""  # the summary line's
    box: str = ""  # HTML: the look of the ``<details>`` itself
    cls: str = ""  # HTML: the class of the ``<details>``
    only: str = ""


Section = Union[Line, Items, KeyValues, Table, Pre, Figure, Fold]  # noqa: UP007


@dataclass(frozen=True)
class Report:
    """A report: its sections, and the class and style of the HTML ``<div>`` around them."""

    sections: Sequence[Section] = field(default_factory=tuple)
    cls: str = ""
    style: str = ""


# --------------------------------------------------------------------------- HTML


def _cut(count: int, what: str) -> str:
    """What a table or a list cut at ``MAX_ROWS`` says under it."""
    return f"showing {MAX_ROWS} of {count} {what}" if count > MAX_ROWS else ""


def _html_cut(count: int, what: str) -> str:
    cut = _cut(count, what)
    return tag("div", esc(cut), style=NOTE) if cut else ""


def _html_table(table: Table) -> str:
    return _html_rows(table) + _html_cut(len(table.rows), "rows")


def _grid_cell(cell: Runs | Cell) -> str:
    if not isinstance(cell, Cell):
        return tag("td", runs_html(cell), style=_GRID_CELL)
    attrs = (f' class="{esc(cell.cls)}"' if cell.cls else "") + (
        f' title="{esc(_bounded(cell.title))}"' if cell.title else ""
    )
    return f'<td{attrs} style="{esc(LOOKS[cell.look])}">{runs_html(cell.runs)}</td>'


def _grid_row(row: Sequence[Runs] | Row, width: int) -> str:
    if not isinstance(row, Row):
        return tag("tr", "".join(_grid_cell(cell) for cell in row))
    if row.heading:
        body = f'<th colspan="{width}" style="{esc(LOOKS["group"])}">{runs_html(row.cells[0])}</th>'
    else:
        body = "".join(_grid_cell(cell) for cell in row.cells)
    return tag("tr", body, cls=row.cls, style=LOOKS[row.look])


def _html_rows(table: Table) -> str:
    columns = list(table.columns)
    rows = list(table.rows)[:MAX_ROWS]
    if table.look == "grid":
        head = "".join(tag("th", esc(c.head), style=_GRID_CELL) for c in columns)
        widths = "".join(f'<col style="width:{int(c.width)}%">' for c in columns)
        body = "".join(_grid_row(row, len(columns)) for row in rows)
        return (
            f'<table style="{_GRID_TABLE}"><colgroup>{widths}</colgroup><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>"
        )
    if table.look == "full":
        head = "".join(tag("th", esc(c.head), style=_FULL_CELL) for c in columns)
        styles = [_FULL_CELL + (";font-family:monospace" if c.mono else "") for c in columns]
        body = "".join(
            "<tr>"
            + "".join(tag("td", runs_html(cell), style=st) for cell, st in zip(row, styles, strict=True))
            + "</tr>"
            for row in rows
        )
        widths = (
            "".join(f'<col style="width:{int(c.width)}%">' for c in columns) if any(c.width for c in columns) else ""
        )
        group = f"<colgroup>{widths}</colgroup>" if widths else ""
        thead = "<thead>" if table.head else '<thead style="display:none">'
        return f'<table style="{_FULL_TABLE}">{group}{thead}<tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    if table.look == "compact":
        styles = [_COMPACT_CELL] * len(columns)
        top = "".join(tag("th", esc(c.head), style=s) for c, s in zip(columns, styles, strict=True))
        body = "".join(
            "<tr>" + "".join(tag("td", runs_html(cell), style=s) for cell, s in zip(row, styles, strict=True)) + "</tr>"
            for row in rows
        )
        return f'<table style="border-collapse:collapse;font-size:90%"><tr>{top}</tr>{body}</table>'
    styles = []
    for index, column in enumerate(columns):
        if column.left:
            styles.append(f"{LEFT};{BREAK_ANYWHERE}" if index == 0 else LEFT)
        else:
            styles.append(_NOWRAP)
    th = "".join(tag("th", esc(c.head), style=s) for c, s in zip(columns, styles, strict=True))
    body = "".join(
        tag("tr", "".join(tag("td", runs_html(cell), style=s) for cell, s in zip(row, styles, strict=True)))
        for row in rows
    )
    return tag("table", tag("thead", tag("tr", th)) + tag("tbody", body))


def _html_section(section: Section) -> str:
    if isinstance(section, Line):
        body = runs_html(section.runs)
        if section.title:
            style = f' style="{esc(LOOKS[section.look])}"' if LOOKS[section.look] else ""
            return f'<div title="{esc(_bounded(section.title))}"{style}>{body}</div>'
        return tag("div", body, cls=section.cls, style=LOOKS[section.look])
    if isinstance(section, Items):
        items = list(section.items)
        shown = "".join(tag("li", runs_html(item)) for item in items[:MAX_ROWS])
        more = tag("li", esc(section.more)) if section.more else ""
        head = _runs(section.head)
        cut = _html_cut(len(items), "items")
        if head:
            return tag("div", runs_html(head) + tag("ul", shown + more, style=LOOKS[section.look])) + cut
        return tag("ul", shown + more, style=LOOKS[section.look]) + cut
    if isinstance(section, KeyValues):
        pairs = list(section.pairs)
        if section.look == "table":
            rows = "".join(
                tag("tr", tag("th", esc(_bounded(key)), style=LEFT) + tag("td", runs_html(value), style=LEFT))
                for key, value in pairs[:MAX_ROWS]
            )
            return f"<table>{rows}</table>" + _html_cut(len(pairs), "items")
        lines = "".join(
            tag("div", esc(_bounded(key)) + esc(": ") + runs_html(value)) for key, value in pairs[:MAX_ROWS]
        )
        return lines + _html_cut(len(pairs), "items")
    if isinstance(section, Table):
        return _html_table(section)
    if isinstance(section, Pre):
        style = "max-height:20em;overflow:auto" if section.scroll else ""
        if not section.summary and section.look:
            style = LOOKS[section.look]
        pre = tag("pre", esc(_pre_body(section)), style=style)
        if section.summary:
            return tag("details", tag("summary", esc(section.summary)) + pre, style=LOOKS[section.look])
        return pre
    if isinstance(section, Fold):
        body = tag("summary", runs_html(section.summary), style=LOOKS[section.look]) + "".join(
            _html_section(s) for s in section.sections if s.only != "text"
        )
        attrs = (f' class="{esc(section.cls)}"' if section.cls else "") + (
            f' style="{esc(LOOKS[section.box])}"' if section.box else ""
        )
        return f"<details{' open' if section.open else ''}{attrs}>{body}</details>"
    if isinstance(section, Figure):
        svg = section.svg() if callable(section.svg) else section.svg
        picture = tag("div", svg, style=_SCROLL) if section.scroll else svg
        return picture + (tag("div", esc(section.caption), style=NOTE) if section.caption else "")
    raise TypeError(f"not a report section: {type(section).__name__}")


def ends(count: int, limit: int) -> tuple[range, range]:
    """The indices of ``count`` things that a view bounded to ``limit`` shows: all of them
    (and an empty tail), or the first and the last ``limit // 2``."""
    if count <= limit:
        return range(count), range(0)
    half = limit // 2
    return range(half), range(count - half, count)


def _head_and_tail(lines: list[str], limit: int, whole: str) -> list[str]:
    """``lines`` whole, or their first and last ``limit // 2`` with a mark between them."""
    head, tail = ends(len(lines), limit)
    if not tail:
        return lines
    where = f" (all of them are in {whole})" if whole else ""
    hidden = len(lines) - len(head) - len(tail)
    return [*lines[: len(head)], f"… {hidden} lines hidden{where} …", *lines[tail.start :]]


def _pre_body(section: Pre) -> str:
    """A block's text as HTML shows it: its head and tail lines (``lines``), at most
    ``MAX_CHARS`` characters, its end kept, and a mark that says what went."""
    body = section.body
    if section.lines:
        body = "\n".join(_head_and_tail(body.split("\n"), section.lines, section.whole))
    if len(body) <= MAX_CHARS:
        return body
    where = f" (all of them are in {section.whole})" if section.whole else ""
    return f"… {len(body) - MAX_CHARS} characters before{where} …\n" + body[-MAX_CHARS:]


def html(report: Report) -> str:
    """The report as one escaped HTML fragment: a ``<div>`` around its sections."""
    body = "".join(_html_section(s) for s in report.sections if s.only != "text")
    return tag("div", body, cls=report.cls, style=report.style)


# --------------------------------------------------------------------------- text


def _text_section(section: Section) -> list[str]:
    if isinstance(section, Line):
        line = runs_text(section.runs, section.indent + (2 if section.look == "aside" else 0))
        return [" " * section.indent + (f"({line})" if section.look == "aside" else line)]
    if isinstance(section, Items):
        head = _runs(section.text_head) or _runs(section.head)
        lines = [" " * section.indent + runs_text(head, section.indent)] if head else []
        indent = section.indent + (2 if head else 0)
        pad = " " * indent
        items = list(section.items)
        lines += [pad + section.prefix + runs_text(item, indent + len(section.prefix)) for item in items[:MAX_ROWS]]
        if section.more:
            lines.append(pad + section.more)
        cut = _cut(len(items), "items")
        return lines + ([f"{pad}({cut})"] if cut else [])
    if isinstance(section, KeyValues):
        pad = " " * section.indent
        pairs = list(section.pairs)
        cut = _cut(len(pairs), "items")
        lines = [f"{pad}{_bounded(key)}: {runs_text(value)}" for key, value in pairs[:MAX_ROWS]]
        return lines + ([f"{pad}({cut})"] if cut else [])
    if isinstance(section, Table):
        kept = [i for i, column in enumerate(section.columns) if column.text is not None]
        columns = [section.columns[i].text for i in kept]
        cells = [
            [c.runs if isinstance(c, Cell) else c for c in (row.cells if isinstance(row, Row) else row)]
            for row in list(section.rows)[:MAX_ROWS]
            if not (isinstance(row, Row) and row.heading)
        ]
        rows = [[runs_text(row[i]) for i in kept] for row in cells]
        cut = _cut(len(section.rows), "rows")
        pad = " " * section.indent
        lines = [pad + line for line in fit_table(columns, rows, current_width() - section.indent)]
        return lines + ([f"{pad}({cut})"] if cut else [])
    if isinstance(section, Pre):
        pad = " " * section.indent
        if section.lines:  # the lines as they are, however long: only their number is bounded
            return [pad + line for line in _head_and_tail(section.body.split("\n"), section.lines, section.whole)]
        return [pad + line for line in section.body[-MAX_CHARS:].splitlines()]
    if isinstance(section, Fold):
        return [runs_text(section.summary)] + [
            line for s in section.sections if s.only != "html" for line in _text_section(s)
        ]
    if isinstance(section, Figure):
        return list(section.text)
    raise TypeError(f"not a report section: {type(section).__name__}")


def text(report: Report) -> str:
    """The report as plain text, its lines fitted to :func:`current_width` where a name can give way."""
    lines: list[str] = []
    for section in report.sections:
        if section.only != "html":
            lines.extend(_text_section(section))
    return "\n".join(lines)


def renderers(build: Callable[..., Report]) -> tuple[Callable[..., str], Callable[..., str]]:
    """The ``(html, text)`` view functions of a report builder: ``build``'s report rendered
    each way, with whatever arguments ``build`` takes."""

    def as_html(*args) -> str:
        return html(build(*args))

    def as_text(*args) -> str:
        return text(build(*args))

    return as_html, as_text
