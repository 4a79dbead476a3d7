"""Renderers for a data dump: its explorer (summary, execution order, one tensor, a tensor
compared across ranks or iterations) and ``%msdump``'s status, in HTML and text.

Pure: models come in by duck typing (:mod:`msdebug.dumps.datadump_explorer`, :mod:`msdebug.recorders.datadump`);
everything from a dump is escaped and every table is bounded. The tensor statistics' cells are
shared with the first-NaN report (:mod:`msdebug.views.nan`).
"""

from __future__ import annotations

from ._html import BREAK_ANYWHERE, FADED, LEFT, NOTE, esc, scope, tag
from ._text import MIN_FIT, current_width, shorten
from .report import Col, KeyValues, Line, Report, Span, Table, html, runs_html, text

__all__ = [
    "build_dump_status",
    "html_compare",
    "html_dump_status",
    "html_exec",
    "html_explorer",
    "html_summary",
    "html_tensor",
    "text_compare",
    "text_dump_status",
    "text_exec",
    "text_explorer",
    "text_summary",
    "text_tensor",
]

BAD = "color:#b00020;font-weight:700"
GOOD = "color:#1b7f3b"
_CELL = f"{LEFT};padding:1px 8px;vertical-align:top;{BREAK_ANYWHERE}"
_MAX_NOTES = 20


def _num(value) -> str:
    return "-" if value is None else f"{value:.6g}"


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _table(head: list[str], rows: list[list[str]]) -> str:
    """``rows`` hold escaped HTML already."""
    top = "".join(tag("th", esc(h), style=_CELL) for h in head)
    body = "".join("<tr>" + "".join(tag("td", cell, style=_CELL) for cell in row) + "</tr>" for row in rows)
    return f'<table style="border-collapse:collapse;font-size:90%"><tr>{top}</tr>{body}</table>'


def _stat_runs(stats) -> list:
    """A tensor's statistics as table cells of :mod:`msdebug.views.report`."""
    if stats is None:
        return [Span("unreadable", "bad")] + ["-"] * 6
    finite = Span("finite", "good") if stats.finite else Span(stats.kinds, "bad")
    first = f"{stats.first_kind} at {stats.first_index}" if stats.first_index is not None else "-"
    return [
        finite,
        first,
        _num(stats.min),
        _num(stats.max),
        _num(stats.mean),
        f"{stats.shape} {stats.dtype}",
        f"{stats.size}",
    ]


def _stat_cells(stats) -> list[str]:
    return [runs_html(cell) for cell in _stat_runs(stats)]


_STAT_HEAD = ["values", "first non-finite", "min", "max", "mean", "shape / dtype", "elements"]


def _fit(name: str, used: int) -> str:
    """An op's name shortened in the middle to what is left of the line once ``used`` columns are taken."""
    return shorten(name, max(MIN_FIT * 2, current_width() - used))


def _stat_text(stats) -> str:
    return "unreadable" if stats is None else stats.summary()


# --------------------------------------------------------------------------- the explorer


def html_summary(summary) -> str:
    meta = ", ".join(f"{k} {v}" for k, v in summary.metadata.items())
    meta = f"; {meta}" if meta else ""
    head = tag("div", tag("b", esc("Data dump")) + esc(f" {summary.root}: ranks {list(summary.ranks)}{meta}"))
    rows = [
        [esc(r.rank), esc(r.net), esc(r.graph_id), esc(r.iteration), esc(r.ops), esc(r.tensors), esc(_size(r.size)),
         tag("span", esc(r.bad_names), style=BAD) if r.bad_names else "0"]
        for r in summary.rows
    ]  # fmt: skip
    table = _table(["rank", "net", "graph", "iteration", "ops", "tensors", "size", "odd names"], rows)
    more = (
        f"showing {len(summary.rows)} of {summary.total_rows} iterations; "
        if summary.total_rows > len(summary.rows)
        else ""
    )
    foot = tag(
        "div",
        esc(f"{more}{summary.tensors} tensors, {_size(summary.size)}. ")
        + esc(".exec_order(), .tensor(op), .compare(op), .nan()"),
        style=NOTE,
    )
    return tag("div", head + table + foot)


def text_summary(summary) -> str:
    meta = ", ".join(f"{k} {v}" for k, v in summary.metadata.items())
    meta = f"; {meta}" if meta else ""
    lines = [f"Data dump {summary.root}: ranks {list(summary.ranks)}{meta}"]
    for r in summary.rows:
        odd = f", {r.bad_names} odd file names" if r.bad_names else ""
        lines.append(
            f"  rank {r.rank} {r.net} graph {r.graph_id} iteration {r.iteration}: {r.ops} ops, "
            f"{r.tensors} tensors, {_size(r.size)}{odd}"
        )
    if summary.total_rows > len(summary.rows):
        lines.append(f"  (showing {len(summary.rows)} of {summary.total_rows} iterations)")
    lines.append(f"{summary.tensors} tensors, {_size(summary.size)}")
    return "\n".join(lines)


def html_explorer(explorer) -> str:
    return html_summary(explorer.summary())


def text_explorer(explorer) -> str:
    return text_summary(explorer.summary())


def _outputs(row) -> tuple[str, str]:
    """HTML and text of an op row's output statistics."""
    if not row.outputs:
        return esc("(no output dumped)"), "(no output dumped)"
    html, text = [], []
    for stats in row.outputs:
        if stats is None:
            html.append(tag("span", "unreadable", style=BAD))
            text.append("unreadable")
        elif stats.finite:
            line = f"{stats.shape} min {_num(stats.min)} max {_num(stats.max)} mean {_num(stats.mean)}"
            html.append(esc(line))
            text.append(line)
        else:
            finite = (
                f"finite min {_num(stats.min)} max {_num(stats.max)}" if stats.min is not None else "no finite value"
            )
            line = f"{stats.shape} {stats.kinds}; {finite}"
            html.append(tag("span", esc(line), style=BAD))
            text.append(line)
    return "<br>".join(html), "; ".join(text)


def html_exec(view) -> str:
    rows = []
    for row in view.rows:
        out_html, _ = _outputs(row)
        inputs = {None: "?", True: tag("span", "finite", style=GOOD), False: tag("span", "not finite", style=BAD)}
        code = tag("code", esc(row.code.splitlines()[0])) if row.code else ""
        rows.append(
            [esc(row.index), tag("code", scope(row.name)), esc(row.op_type), inputs[row.inputs_finite],
             out_html, code]
        )  # fmt: skip
    what = "ops with a non-finite value" if view.nonfinite_only else "ops"
    head = tag("div", tag("b", esc("Execution order")) + esc(f" ({view.where}): {view.matched} {what} of {view.total}"))
    more = (
        tag("div", esc(f"showing {len(view.rows)} of {view.matched}"), style=NOTE)
        if view.matched > len(view.rows)
        else ""
    )
    return tag("div", head + _table(["#", "op", "type", "inputs", "outputs", "code"], rows) + more)


def text_exec(view) -> str:
    what = "ops with a non-finite value" if view.nonfinite_only else "ops"
    lines = [f"Execution order ({view.where}): {view.matched} {what} of {view.total}"]
    for row in view.rows:
        _, out = _outputs(row)
        inputs = {None: "?", True: "finite", False: "NOT FINITE"}[row.inputs_finite]
        rest = f" ({row.op_type}) inputs {inputs}; outputs {out}"
        lines.append(f"  {row.index:>4} {_fit(row.name, 7 + len(rest))}{rest}")
    if view.matched > len(view.rows):
        lines.append(f"  (showing {len(view.rows)} of {view.matched})")
    return "\n".join(lines)


def html_tensor(view) -> str:
    from . import svg

    head = tag("div", tag("b", esc(f"{view.op} {view.slot}")) + esc(f" ({view.where})"))
    stats = _table(["tensor", *_STAT_HEAD], [[esc(view.slot), *_stat_cells(view.stats)]])
    picture = (
        svg.histogram(list(view.counts), list(view.edges), title=f"finite values of {view.slot}")
        if view.counts
        else tag("div", esc("no finite value to draw"), style=NOTE)
    )
    values = tag(
        "details", tag("summary", esc("values")) + tag("pre", esc(view.values), style="max-height:20em;overflow:auto")
    )
    foot = tag("div", esc(view.path), style=NOTE + ";" + FADED)
    return tag("div", head + stats + picture + values + foot)


def text_tensor(view) -> str:
    return "\n".join([f"{view.op} {view.slot} ({view.where})", f"  {view.stats.summary()}", view.values])


def html_compare(view) -> str:
    rows = [
        [esc(r.label), esc(_num(r.max_abs)), esc(_num(r.max_rel)), *_stat_cells(r.stats)[:5], esc(r.note)]
        for r in view.rows
    ]
    head = tag("div", tag("b", esc(f"{view.op} {view.slot}")) + esc(f" across {view.across}, against the first"))
    return tag("div", head + _table([view.across[:-1], "max |diff|", "max rel diff", *_STAT_HEAD[:5], ""], rows))


def text_compare(view) -> str:
    lines = [f"{view.op} {view.slot} across {view.across}, against the first"]
    for r in view.rows:
        note = f" ({r.note})" if r.note else ""
        lines.append(
            f"  {r.label}: max |diff| {_num(r.max_abs)}, max rel diff {_num(r.max_rel)}; {_stat_text(r.stats)}{note}"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------- %msdump


def _dump_lines(status) -> list[tuple[str, str]]:
    rows = [("state", status.state), ("MINDSPORE_DUMP_CONFIG", status.config_file or "(not set)")]
    if status.error:
        rows.append(("problem", status.error))
    if status.config is not None:
        common = status.config.get("common_dump_settings", {})
        io = {0: "inputs and outputs", 1: "inputs", 2: "outputs"}.get(common.get("input_output"), "?")
        kernels = ", ".join(common.get("kernels") or []) or "every op"
        rows.append(("dump path", status.dump_path))
        rows.append(("what", f"{kernels}; {io}; iterations {common.get('iteration')}"))
    rows.append(("graph compiled", "yes" if status.compiled else "not yet"))
    if status.dump_path:
        rows.append(("written", f"{status.iterations} iterations, {status.tensors} tensors, {_size(status.size)}"))
    return rows


def build_dump_status(status) -> Report:
    """``%msdump``'s status's sections."""
    pairs = _dump_lines(status)
    return Report(
        [
            Line(Span("Data dump", "b")),
            Table([Col(""), Col("")], [(Span(k, "b"), v) for k, v in pairs], look="compact", only="html"),
            KeyValues(pairs, indent=2, only="text"),
            *(Line(note, look="note") for note in status.notes[:_MAX_NOTES]),
        ]
    )


def html_dump_status(status) -> str:
    return html(build_dump_status(status))


def text_dump_status(status) -> str:
    return text(build_dump_status(status))
