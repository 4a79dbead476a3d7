"""Renderers for a data dump: its explorer (summary, execution order, one tensor, a tensor
compared across ranks or iterations) and ``%msdump``'s status, in HTML and text.

Pure: models come in by duck typing (:mod:`msdebug.dumps.datadump_explorer`, :mod:`msdebug.recorders.datadump`);
everything from a dump is escaped and every table is bounded. The tensor statistics' cells are
shared with the first-NaN report (:mod:`msdebug.views.nan`).
"""

from __future__ import annotations

from .report import (
    Break,
    Col,
    Figure,
    Items,
    KeyValues,
    Line,
    Pre,
    Report,
    Span,
    Table,
    renderers,
    runs_text,
)

__all__ = [
    "build_compare",
    "build_dump_status",
    "build_exec",
    "build_summary",
    "build_tensor",
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

_MAX_NOTES = 20


def _num(value) -> str:
    return "-" if value is None else f"{value:.6g}"


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


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


_STAT_HEAD = ["values", "first non-finite", "min", "max", "mean", "shape / dtype", "elements"]


def _stat_text(stats) -> str:
    return "unreadable" if stats is None else stats.summary()


# --------------------------------------------------------------------------- the explorer


def build_summary(summary) -> Report:
    """A data dump's summary: its ranks, nets, graphs and iterations."""
    meta = ", ".join(f"{k} {v}" for k, v in summary.metadata.items())
    meta = f"; {meta}" if meta else ""
    rows = [
        (str(x.rank), str(x.net), str(x.graph_id), str(x.iteration), str(x.ops), str(x.tensors), _size(x.size),
         Span(x.bad_names, "bad") if x.bad_names else "0")
        for x in summary.rows
    ]  # fmt: skip
    heads = ["rank", "net", "graph", "iteration", "ops", "tensors", "size", "odd names"]
    lines = [
        f"rank {x.rank} {x.net} graph {x.graph_id} iteration {x.iteration}: {x.ops} ops, {x.tensors} tensors, "
        f"{_size(x.size)}" + (f", {x.bad_names} odd file names" if x.bad_names else "")
        for x in summary.rows
    ]
    shown = f"showing {len(summary.rows)} of {summary.total_rows} iterations"
    more = summary.total_rows > len(summary.rows)
    totals = f"{summary.tensors} tensors, {_size(summary.size)}"
    return Report(
        [
            Line((Span("Data dump", "b"), f" {summary.root}: ranks {list(summary.ranks)}{meta}")),
            Table([Col(h) for h in heads], rows, look="compact", only="html"),
            Items(lines, indent=2, only="text"),
            Line(
                ((shown + "; ") if more else "") + totals + ". .exec_order(), .tensor(op), .compare(op), .nan()",
                look="note",
                only="html",
            ),
            *((Line(shown, look="aside", indent=2, only="text"),) if more else ()),
            Line(totals, only="text"),
        ]
    )


html_summary, text_summary = renderers(build_summary)


html_explorer, text_explorer = renderers(lambda explorer: build_summary(explorer.summary()))


def _outputs(row) -> list:
    """An op row's output statistics, one a line in HTML, ``; `` between them in text."""
    if not row.outputs:
        return ["(no output dumped)"]
    runs: list = []
    for stats in row.outputs:
        if runs:
            runs.append(Break())
        if stats is None:
            runs.append(Span("unreadable", "bad"))
        elif stats.finite:
            runs.append(f"{stats.shape} min {_num(stats.min)} max {_num(stats.max)} mean {_num(stats.mean)}")
        else:
            finite = (
                f"finite min {_num(stats.min)} max {_num(stats.max)}" if stats.min is not None else "no finite value"
            )
            runs.append(Span(f"{stats.shape} {stats.kinds}; {finite}", "bad"))
    return runs


_INPUTS = {None: "?", True: Span("finite", "good"), False: Span("not finite", "bad")}


def build_exec(view) -> Report:
    """The execution order: one op a row, its inputs' and outputs' statistics."""
    rows, lines = [], []
    for row in view.rows:
        outputs = _outputs(row)
        code = Span(row.code.splitlines()[0], "name") if row.code else ""
        rows.append(
            (str(row.index), Span(row.name, "scope"), str(row.op_type), _INPUTS[row.inputs_finite], outputs, code)
        )
        inputs = {None: "?", True: "finite", False: "NOT FINITE"}[row.inputs_finite]
        rest = f" ({row.op_type}) inputs {inputs}; outputs {runs_text(outputs)}"
        lines.append((f"{row.index:>4} ", Span(row.name, "fit"), rest))
    what = "ops with a non-finite value" if view.nonfinite_only else "ops"
    heads = ["#", "op", "type", "inputs", "outputs", "code"]
    sections = [
        Line((Span("Execution order", "b"), f" ({view.where}): {view.matched} {what} of {view.total}")),
        Table([Col(h) for h in heads], rows, look="compact", only="html"),
        Items(lines, indent=2, only="text"),
    ]
    if view.matched > len(view.rows):
        sections.append(Line(f"showing {len(view.rows)} of {view.matched}", look="aside", indent=2))
    return Report(sections)


html_exec, text_exec = renderers(build_exec)


def build_tensor(view) -> Report:
    """One tensor: its statistics, a histogram of its finite values, the values themselves."""
    from . import svg

    if view.counts:
        drawn = Figure(
            lambda: svg.histogram(list(view.counts), list(view.edges), title=f"finite values of {view.slot}"),
            only="html",
        )
    else:
        drawn = Line("no finite value to draw", look="note", only="html")
    return Report(
        [
            Line((Span(f"{view.op} {view.slot}", "b"), f" ({view.where})")),
            Table([Col(h) for h in ("tensor", *_STAT_HEAD)], [(view.slot, *_stat_runs(view.stats))], look="compact",
                  only="html"),
            Line(view.stats.summary(), indent=2, only="text"),
            drawn,
            Pre(view.values, summary="values", scroll=True),
            Line(view.path, look="faded-note", only="html"),
        ]
    )  # fmt: skip


html_tensor, text_tensor = renderers(build_tensor)


def build_compare(view) -> Report:
    """One tensor across ranks or iterations, each against the first."""
    rows = [(x.label, _num(x.max_abs), _num(x.max_rel), *_stat_runs(x.stats)[:5], x.note) for x in view.rows]
    heads = [view.across[:-1], "max |diff|", "max rel diff", *_STAT_HEAD[:5], ""]
    lines = [
        f"{x.label}: max |diff| {_num(x.max_abs)}, max rel diff {_num(x.max_rel)}; {_stat_text(x.stats)}"
        + (f" ({x.note})" if x.note else "")
        for x in view.rows
    ]
    return Report(
        [
            Line((Span(f"{view.op} {view.slot}", "b"), f" across {view.across}, against the first")),
            Table([Col(h) for h in heads], rows, look="compact", only="html"),
            Items(lines, indent=2, only="text"),
        ]
    )


html_compare, text_compare = renderers(build_compare)


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


html_dump_status, text_dump_status = renderers(build_dump_status)
