"""The explorer of an RDR or save_graphs tree (:mod:`msdebug.dumps.explorer`: summary, graph IR,
execution order, memory, diff, .pb and .dot files) -> escaped HTML and text.

Each view builds one :class:`~msdebug.views.report.Report` (``build_summary``, ``build_graph``...)
and renders it both ways. Everything in a dump is untrusted: names, IR text and paths are plain
text in the report, which escapes them. Tables are bounded by the models (``limit``) and say
"showing N of M".
"""

from __future__ import annotations

import re

from . import report as r
from ._html import hover
from ._text import MIN_FIT, Column, shorten

_LINE = re.compile(r"[0-9]{1,18}")

__all__ = [
    "build_diff",
    "build_dot",
    "build_exec_order",
    "build_exec_row",
    "build_graph",
    "build_memory",
    "build_pb",
    "build_stage_nodes",
    "build_summary",
    "graph_picture",
    "html_diff",
    "html_dot",
    "html_exec_row",
    "html_explorer",
    "html_stage_nodes",
    "html_exec_order",
    "html_graph",
    "html_memory",
    "html_pb",
    "html_summary",
    "middle",
    "size_text",
    "source_html",
    "source_label",
    "text_diff",
    "text_dot",
    "text_exec_row",
    "text_stage_nodes",
    "text_exec_order",
    "text_graph",
    "text_memory",
    "text_pb",
    "text_summary",
]

_BOX = "max-width:100%;overflow-wrap:anywhere"
_MAX_STAGES = 60
_MAX_DRAWN = 200  # boxes in a drawing; the rest are counted under it
_MAX_OPS = 30
_TEXT_WIDTH = 100
_SHORT = 44
_MEMORY_COLUMNS = (
    Column("kernel", 48, fit=True),
    Column("inputs", 10, right=True),
    Column("workspace", 10, right=True),
    Column("outputs", 10, right=True),
    Column("total", 10, right=True),
)


def size_text(size: int) -> str:
    """``1.2 MB``; bytes under a kilobyte stay exact."""
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{size} B"


def _clip(text: str, width: int = _TEXT_WIDTH) -> str:
    text = text.replace("\n", " ⏎ ")
    return text if len(text) <= width else text[: width - 1] + "…"


def middle(text: str, width: int = _SHORT) -> str:
    """``text`` escaped, shortened in the middle to ``width`` characters, the whole of it on hover."""
    return hover(text, width)


def _base(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1] or path


def _showing(shown: int, total: int, what: str) -> str:
    return f"showing {shown} of {total} {what}" if shown < total else f"{total} {what}"


def source_label(path: str, line: int, cell: int | None, in_cell: bool) -> str:
    """``cell [14], line 12`` for a notebook cell this process ran, ``notebook cell, line 12``
    for one it did not, else ``file.py:12``."""
    if cell is not None:
        return f"cell [{cell}], line {line}"
    if in_cell:
        return f"notebook cell, line {line}"
    return f"{_base(path.rsplit(':', 1)[0]) if ':' in path else _base(path)}:{line}" if path else ""


def _row_source(row) -> str:
    line = getattr(row, "line", 0) or _line_of(row.source)
    return source_label(row.source, line, getattr(row, "cell", None), row.in_cell) if row.source else ""


def _line_of(source: str) -> int:
    tail = source.rsplit(":", 1)[-1].split("~")[0]
    # ASCII digits only, as msdebug.files.ascii_number reads them (views may not import it):
    # isdigit() takes "²", which int() refuses.
    return int(tail) if _LINE.fullmatch(tail) else 0


def _source_block(row) -> r.Block | str:
    """The source label (the full path on hover) above the code it points at, in a table cell."""
    if not row.source:
        return ""
    where = f"notebook cell: {row.source}" if row.in_cell else row.source
    sections: list = [r.Line(_row_source(row), look="note", title=where)]
    if row.code:
        sections.append(r.Pre(row.code, look="source-cell" if row.in_cell else "source"))
    return r.Block(sections)


def source_html(row) -> str:
    """The source label (the full path on hover) above the code it points at."""
    return r.runs_html(_source_block(row))


def _source_text(row) -> str:
    if not row.source:
        return ""
    label = _row_source(row)
    if not row.in_cell:
        label = row.source
    return f"{label}: {_clip(row.code, 60)}" if row.code else label


# --------------------------------------------------------------------------- summary


def _summary_lines(summary) -> list[str]:
    kind = {"rdr": "RDR tree", "graphs": "saved IR graphs", "ir": "IR file"}[summary.kind]
    ranks = [r for r in summary.ranks if r.rank is not None]
    first = f"{kind} {summary.path}: {summary.files} files, {size_text(summary.size)}"
    if ranks:
        first += f", {len(ranks)} rank{'s' if len(ranks) != 1 else ''}"
    return [first]


def _recorded(rank, separator: str) -> str:
    """``<separator>recorded <first>[ to <last>]`` for a rank with recording times, else ''."""
    if not rank.first:
        return ""
    return f"{separator}recorded {rank.first}" + (f" to {rank.last}" if rank.last != rank.first else "")


def build_summary(summary) -> r.Report:
    """A dump's summary: its files per kind and rank, kernel graphs and pipeline stages."""
    kind = {"rdr": "RDR tree", "graphs": "saved IR graphs", "ir": "IR file"}[summary.kind]
    ranks = [x for x in summary.ranks if x.rank is not None]
    tail = f": {summary.files} files, {size_text(summary.size)}"
    if ranks:
        tail += f", {len(ranks)} rank{'s' if len(ranks) != 1 else ''}"
    sections: list = [
        r.Line((f"{kind} ", r.Span(summary.path, "hover", 70), tail), look="boxed-strong", only="html"),
        *(r.Line(hint, look="boxed-note", only="html") for hint in summary.hints),
        *(r.Line(line, only="text") for line in _summary_lines(summary)),
    ]
    for rank in summary.ranks:
        if rank.rank is not None:
            sections += [
                r.Line((f"rank {rank.rank} ", r.Span((r.Span(rank.path, "hover", 60), _recorded(rank, " · ")), "note")),
                       only="html"),
                r.Line("", only="text"),
                r.Line(f"rank {rank.rank} ({rank.path}){_recorded(rank, ', ')}", only="text"),
            ]  # fmt: skip
        columns = [r.Col("files", width=70), r.Col("count", width=15), r.Col("size", width=15)]
        rows = [(g.title, str(g.count), size_text(g.size)) for g in rank.groups]
        sections.append(r.Table(columns, rows, look="full", only="html"))
        sections += [r.Line(f"  {g.count:>5}  {size_text(g.size):>9}  {g.title}", only="text") for g in rank.groups]
        if rank.graph_ids:
            graphs = f"kernel graphs: {', '.join(map(str, rank.graph_ids))}"
            sections += [r.Line(graphs, look="boxed-note", only="html"), r.Line(f"  {graphs}", only="text")]
        if rank.stages and summary.kind != "ir":
            shown = rank.stages[:_MAX_STAGES]
            showing = _showing(len(shown), len(rank.stages), "stages")
            columns = [r.Col("#", width=6), r.Col("stage", width=38), r.Col("file", width=44), r.Col("size", width=12)]
            rows = [
                (str(x.index) if x.index is not None else "", x.label, r.Span(x.file, "hover", 48), size_text(x.size))
                for x in shown
            ]
            sections.append(
                r.Fold(f"pipeline stages in pipeline order ({showing})", [r.Table(columns, rows, look="full")],
                       only="html")
            )  # fmt: skip
            sections.append(r.Line(f"  pipeline stages, in pipeline order ({showing}):", only="text"))
            for stage in shown:
                counter = f"  (dump #{stage.counter})" if stage.counter is not None else ""
                sections.append(r.Line(f"    {stage.label:<48} {size_text(stage.size):>9}{counter}", only="text"))
        elif summary.kind == "ir" and rank.stages:
            sections.append(r.Line(f"  entry graph @{rank.stages[0].label}", only="text"))
        if rank.unknown:
            unknown = f"not RDR files: {', '.join(rank.unknown[:10])}"
            sections += [r.Line(unknown, look="boxed-note", only="html"), r.Line(f"  {unknown}", only="text")]
    sections += [r.Line(f"note: {hint}", only="text") for hint in summary.hints]
    return r.Report(sections, cls="msdebug-dump", style=_BOX)


html_summary, text_summary = r.renderers(build_summary)


def html_explorer(summary, stage_nodes) -> str:
    """The summary with the chart of nodes per pipeline stage under its first line."""
    html = html_summary(summary)
    chart = html_stage_nodes(stage_nodes) if stage_nodes.stages else ""
    return html.replace("</div>", "</div>" + chart, 1) if chart else html


# --------------------------------------------------------------------------- stage chart


def _stage_label(label: str) -> str:
    return label.split(".", 1)[1] if label.startswith("PIPELINE.") else label


def build_stage_nodes(view) -> r.Report:
    """Nodes per pipeline stage: a small line chart in HTML, each stage that changed the count
    marked; a bar of ``#`` per stage in text."""
    from .svg import line_chart

    labels = [_stage_label(n) for n, _ in view.stages]
    counts = [c for _, c in view.stages]
    changes = [
        (i, f"{labels[i]} {counts[i - 1]}→{counts[i]}") for i in range(1, len(counts)) if counts[i] != counts[i - 1]
    ]
    width = max((len(label) for label in labels), default=0)
    peak = max(counts, default=0) or 1
    text = [f"nodes per pipeline stage ({_showing(len(view.stages), view.total, 'stages')})"]
    text += [
        f"  {label:<{width}}  {count:>6}  {'#' * max(1, round(30 * count / peak))}"
        for label, count in zip(labels, counts, strict=True)
    ]
    title = f"nodes per pipeline stage, {labels[0]} to {labels[-1]}" if labels else "nodes per pipeline stage"
    lines = "; ".join(text for _, text in changes[:8])
    sections: list = [
        r.Line(title, look="note", only="html"),
        r.Figure(
            lambda: line_chart(
                {"nodes": counts}, width=640, height=150, x_label="pipeline stage (first to last)", marks=changes[:8]
            ),
            text=text,
        ),
    ]
    if lines:
        sections.append(r.Line(f"changed at: {lines}", look="boxed-note", only="html"))
    if len(labels) < view.total:
        sections.append(r.Line(_showing(len(labels), view.total, "stages"), look="boxed-note", only="html"))
    return r.Report(sections, cls="msdebug-stages", style=_BOX)


html_stage_nodes, text_stage_nodes = r.renderers(build_stage_nodes)


# --------------------------------------------------------------------------- graph


def _graph_head(view) -> str:
    graphs = ", ".join(f"@{name} ({count})" for name, count in view.graphs[:8])
    more = f" and {len(view.graphs) - 8} more" if len(view.graphs) > 8 else ""
    return f"{view.file}: entry @{view.entry}; {len(view.graphs)} graphs, {view.total_nodes} nodes: {graphs}{more}"


def _filter_text(view) -> str:
    parts = []
    if view.search:
        parts.append(f"matching {view.search!r}")
    if view.op:
        parts.append(f"op {view.op}")
    return f"{_showing(len(view.rows), view.matched, 'nodes')}" + (f" ({', '.join(parts)})" if parts else "")


def _scope_parent(scope: str) -> str:
    return scope.rsplit("/", 1)[0] if "/" in scope else ""


_ABSTRACT_TENSOR = re.compile(r"<(?:Ref\[)?Tensor\[(\w+)\]\]?, \(([^)]*)\)[^<>]*>")
_ABSTRACT_PLAIN = re.compile(r"<([\w\[\]]+), (?:NoShape|TupleShape\(\)|ListShape\(\))>")


def _short_type(text: str) -> str:
    """``(<Tensor[Float32], (1, 2)>, <Bool, NoShape>)`` -> ``Float32 (1, 2), Bool``: what a reader scans for."""
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        text = text[1:-1]
    text = _ABSTRACT_TENSOR.sub(r"\1 (\2)", text)
    text = _ABSTRACT_PLAIN.sub(r"\1", text)
    return text.replace("<", "").replace(">", "")


def graph_picture(rows, title: str = "", max_nodes: int = _MAX_DRAWN) -> str:
    """A drawing of ``rows`` (IR nodes): boxes per node, edges from their ``%N`` inputs,
    clusters by scope."""
    from .svg import GraphBox, graph_drawing

    boxes, edges = [], []
    for row in rows:
        key = f"{row.graph}:{row.id}"
        shape = _short_type(row.output_type) if row.output_type else ""
        tip = f"{row.id} = {row.op}\n{row.scope}\n-> {shape}" + (f"\n{_row_source(row)}" if row.source else "")
        boxes.append(
            GraphBox(
                key,
                row.op.removeprefix("PrimFunc_"),
                sub=f"{row.id} {shape}",
                op=row.op,
                scope=_scope_parent(row.scope),
                tip=tip,
            )
        )
        edges += [
            (f"{row.graph}:{name}", key) for name in row.inputs if name.startswith("%") and not name.startswith("%para")
        ]
    return graph_drawing(boxes, edges, max_nodes=max_nodes, title=title)


def build_graph(view) -> r.Report:
    """One IR graph: its nodes (filtered), drawn and listed."""
    ops = ", ".join(f"{op}×{n}" for op, n in view.op_counts[:_MAX_OPS]) + (
        " …" if len(view.op_counts) > _MAX_OPS else ""
    )
    graphs = ", ".join(f"@{name} ({count})" for name, count in view.graphs[:8])
    more = f" and {len(view.graphs) - 8} more" if len(view.graphs) > 8 else ""
    sections: list = [
        r.Line((r.Span(_base(view.file), "hover", 80), f": entry @{view.entry}"), look="boxed-strong", only="html"),
        r.Line(f"{len(view.graphs)} graphs, {view.total_nodes} nodes: {graphs}{more}", look="boxed-note", only="html"),
        r.Line(f"ops: {ops}", look="boxed-note", only="html"),
        r.Line(_filter_text(view), look="boxed-note", only="html"),
        r.Line(_graph_head(view), only="text"),
        r.Line(f"ops: {ops}", only="text"),
        r.Line(_filter_text(view), only="text"),
    ]
    if view.rows:
        drawing = r.Figure(lambda: graph_picture(view.rows), scroll=True)
        sections.append(r.Fold(f"drawing ({min(len(view.rows), _MAX_DRAWN)} nodes)", [drawing], open=True,
                               only="html"))  # fmt: skip
    several = len(view.graphs) > 1
    rows = [
        (
            str(row.lineno),
            (f"{row.id}({row.name})", r.Block([r.Line(r.Span(f"@{row.graph}", "hover", 24), look="faded")]))
            if several
            else f"{row.id}({row.name})",
            r.Span(row.op, "b"),
            r.Span(row.scope, "hover", 40),
            ", ".join(row.inputs),
            _short_type(row.output_type),
            _source_block(row),
        )
        for row in view.rows
    ]
    heads_widths = (
        ("line", 6),
        ("node", 13),
        ("op", 15),
        ("scope", 17),
        ("inputs", 13),
        ("output", 12),
        ("source", 24),
    )
    columns = [r.Col(h, width=w, mono=i in (1, 4, 5)) for i, (h, w) in enumerate(heads_widths)]
    sections.append(r.Table(columns, rows, look="full", only="html"))
    for row in view.rows:
        line = f"  line {row.lineno:>6}  @{shorten(row.graph, 40)} {row.id}({row.name}) = {row.op}  ["
        sections.append(r.Line((line, r.Span(row.scope, "fit", MIN_FIT), "]"), only="text"))
        if row.output_type:
            sections.append(r.Line(f"               -> {_clip(row.output_type, 80)}", only="text"))
        if row.source:
            sections.append(r.Line(f"               {_source_text(row)}", only="text"))
    return r.Report(sections, cls="msdebug-dump", style=_BOX)


html_graph, text_graph = r.renderers(build_graph)


# --------------------------------------------------------------------------- execution order


def _exec_head(view) -> str:
    ir = f"; IR: {view.ir_file}" if view.ir_file else ""
    return f"execution order of graph {view.graph_id} ({view.file}){ir}"


def build_exec_order(view) -> r.Report:
    """A kernel graph's execution order: one kernel a row, its IR line, source and memory."""
    showing = _showing(len(view.rows), view.total, "kernels")
    # The IR file is the same for every kernel: named once above the table, a line per row.
    files: list = ["order: ", r.Span(_base(view.file), "hover", 60)]
    if view.ir_file:
        files += [" · IR nodes in ", r.Span(_base(view.ir_file), "hover", 60)]
    rows = [
        (
            str(row.index),
            r.Span(row.op, "b"),
            r.Span(row.fullname or row.name, "hover", 40),
            f"line {row.ir_line}" if row.ir_line else "",
            _source_block(row),
            size_text(row.memory) if row.memory is not None else "",
        )
        for row in view.rows
    ]
    heads_widths = (("#", 5), ("op", 18), ("kernel", 22), ("IR", 9), ("source", 36), ("memory", 10))
    sections: list = [
        r.Line(f"execution order of graph {view.graph_id}", look="strong", only="html"),
        r.Line(files, look="boxed-note", only="html"),
        r.Line(showing, look="boxed-note", only="html"),
        r.Table([r.Col(h, width=w, mono=i == 2) for i, (h, w) in enumerate(heads_widths)], rows, look="full",
                only="html"),
        r.Line(_exec_head(view), only="text"),
        r.Line(showing, only="text"),
    ]  # fmt: skip
    for row in view.rows:
        memory = f"  {size_text(row.memory)}" if row.memory is not None else ""
        ir = f"  IR line {row.ir_line}" if row.ir_line else ""
        line = f"  {row.index:>4}  {row.op:<24} "
        sections.append(r.Line((line, r.Span(row.fullname or row.name, "fit", MIN_FIT), ir + memory), only="text"))
        if row.source:
            sections.append(r.Line(f"        {_source_text(row)}", only="text"))
    return r.Report(sections, cls="msdebug-dump", style=_BOX)


html_exec_order, text_exec_order = r.renderers(build_exec_order)


def build_exec_row(row) -> r.Report:
    """One kernel and its IR node (inputs, output shape, source line and code), as the explorer
    shows it when the row is clicked."""
    name = row.fullname or row.name
    fields = [
        ("kernel", (f"{row.index}: ", r.Span(row.op, "b"), " ", r.Span(name, "hover", 80))),
        (
            "IR node",
            (f"{row.node} at line {row.ir_line} of ", r.Span(row.ir_file, "hover", 60))
            if row.ir_line
            else "not found in the IR",
        ),
        ("inputs", ", ".join(row.inputs)),
        ("input types", _short_type(row.input_types)),
        ("output", r.Span(_short_type(row.output_type), "b") if _short_type(row.output_type) else ""),
        ("memory", size_text(row.memory) if row.memory is not None else ""),
        ("source", _source_block(row)),
    ]
    rows = [(field, value) for field, value in fields if value]
    lines = [f"kernel {row.index}: {row.op}  {name}"]
    if row.ir_line:
        lines.append(f"IR node {row.node} at {row.ir_file}:{row.ir_line}")
    if row.inputs:
        lines.append(f"inputs: {', '.join(row.inputs)}")
    if row.input_types:
        lines.append(f"input types: {_short_type(row.input_types)}")
    if row.output_type:
        lines.append(f"output: {_short_type(row.output_type)}")
    if row.memory is not None:
        lines.append(f"memory: {size_text(row.memory)}")
    if row.source:
        lines.append(f"source: {_row_source(row) if row.in_cell else row.source}")
        if row.code:
            lines += [f"  {line}" for line in row.code.splitlines()[:12]]
    return r.Report(
        [
            r.Table([r.Col("", width=16), r.Col("", width=84)], rows, look="full", head=False, only="html"),
            *(r.Line(line, only="text") for line in lines),
        ],
        cls="msdebug-dump msdebug-node-detail",
        style=_BOX,
    )


# The IR node behind one kernel: inputs, output shape, source line and code.
html_exec_row, text_exec_row = r.renderers(build_exec_row)


# --------------------------------------------------------------------------- memory


def _memory_head(view) -> str:
    inputs, workspaces, outputs = view.totals
    return (
        f"memory per kernel ({view.file}): inputs {size_text(inputs)}, workspaces {size_text(workspaces)}, "
        f"outputs {size_text(outputs)}, total {size_text(sum(view.totals))}"
    )


def build_memory(view) -> r.Report:
    """Memory per kernel, largest first: a bar chart of the largest and a table."""
    inputs, workspaces, outputs = view.totals
    totals = (
        f"inputs {size_text(inputs)}, workspaces {size_text(workspaces)}, "
        f"outputs {size_text(outputs)}, total {size_text(sum(view.totals))}"
    )
    showing = _showing(len(view.rows), view.total, "kernels") + ", largest first"
    sections: list = [
        r.Line("memory per kernel", look="strong", only="html"),
        r.Line((r.Span(_base(view.file), "hover", 60), f": {totals}"), look="boxed-note", only="html"),
        r.Line(f"memory per kernel ({view.file}): {totals}", only="text"),
        r.Line(showing + "; (n) = number of addresses", look="boxed-note", only="html"),
        r.Line(showing, only="text"),
    ]
    if len(view.rows) > 4:  # a handful of rows read fine as a table; dozens want bars
        from .svg import bar_chart

        top = view.rows[:20]
        sections.append(
            r.Figure(
                lambda: bar_chart(
                    [_short_kernel(x.name) for x in top],
                    [x.total / 1e3 for x in top],
                    width=560,
                    title=f"largest {len(top)} kernels",
                    unit="kB",
                ),
                only="html",
            )
        )
    # Sizes with the number of addresses behind them in HTML; sizes alone in text, the kernel's
    # name shortened in the middle to fit the line.
    rows = [
        (
            r.Span(x.name, "hover", 48),
            f"{size_text(x.inputs)} ({x.count[0]})",
            f"{size_text(x.workspaces)} ({x.count[1]})",
            f"{size_text(x.outputs)} ({x.count[2]})",
            r.Span(size_text(x.total), "b"),
        )
        for x in view.rows
    ]
    columns = [
        r.Col("kernel", width=36, mono=True),
        *(r.Col(h, width=16) for h in ("inputs", "workspaces", "outputs", "total")),
    ]
    sections.append(r.Table(columns, rows, look="full", only="html"))
    rows = [
        (x.name, size_text(x.inputs), size_text(x.workspaces), size_text(x.outputs), size_text(x.total))
        for x in view.rows
    ]
    sections.append(r.Table([r.Col(c.header, c) for c in _MEMORY_COLUMNS], rows, indent=2, only="text"))
    return r.Report(sections, cls="msdebug-dump", style=_BOX)


html_memory, text_memory = r.renderers(build_memory)


def _short_kernel(name: str) -> str:
    return name.rsplit("/", 1)[-1] if "/" in name else name


# --------------------------------------------------------------------------- diff


def _diff_head(diff) -> str:
    c = diff.counts
    return (
        f"{diff.before} ({diff.nodes[0]} nodes) -> {diff.after} ({diff.nodes[1]} nodes): "
        f"{c['appeared']} appeared, {c['vanished']} vanished, {c['changed']} changed"
    )


_MARKS = {"appeared": "+", "vanished": "-", "changed": "~"}


def build_diff(diff) -> r.Report:
    """Two IR graphs compared: the nodes that appeared, vanished or changed."""
    c = diff.counts
    total = sum(c.values())
    showing = _showing(len(diff.rows), total, "differences")

    def sides(row) -> r.Block:
        # Before above after, in one column: the "after" side is never pushed off-screen.
        before = [r.Line((r.Span("− ", "vanished"), row.before))] if row.before else []
        after = [r.Line((r.Span("+ ", "appeared"), row.after))] if row.after else []
        return r.Block(before + after)

    rows = [
        (r.Span(row.change, row.change), r.Span(row.op, "b"), r.Span(row.key, "hover", 48), sides(row))
        for row in diff.rows
    ]
    heads_widths = (("change", 9), ("op", 16), ("scope", 25), ("before / after", 50))
    sections: list = [
        r.Line(
            (r.Span(_base(diff.before), "hover", 50), f" ({diff.nodes[0]} nodes) → ",
             r.Span(_base(diff.after), "hover", 50), f" ({diff.nodes[1]} nodes)"),
            look="boxed-strong",
            only="html",
        ),
        r.Line(
            (r.Span(f"{c['appeared']} appeared", "appeared"), ", ", r.Span(f"{c['vanished']} vanished", "vanished"),
             ", ", r.Span(f"{c['changed']} changed", "changed")),
            only="html",
        ),
    ]  # fmt: skip
    if diff.op_changes:
        ops = ", ".join(f"{op} {a}→{b}" for op, a, b in diff.op_changes[:_MAX_OPS])
        sections.append(r.Line(f"ops: {ops}", look="boxed-note", only="html"))
    sections += [
        r.Line(showing, look="boxed-note", only="html"),
        r.Table([r.Col(h, width=w, mono=i == 3) for i, (h, w) in enumerate(heads_widths)], rows, look="full",
                only="html"),
        r.Line(_diff_head(diff), only="text"),
    ]  # fmt: skip
    if diff.op_changes:
        ops = ", ".join(f"{op} {a}->{b}" for op, a, b in diff.op_changes[:_MAX_OPS])
        sections.append(r.Line(f"ops: {ops}", only="text"))
    sections.append(r.Line(showing, only="text"))
    for row in diff.rows:
        line = f"  {_MARKS[row.change]} {row.op:<24} "
        sections.append(r.Line((line, r.Span(row.key, "fit", MIN_FIT)), only="text"))
        if row.change == "changed":
            sections += [
                r.Line(f"      before: {_clip(row.before)}", only="text"),
                r.Line(f"      after:  {_clip(row.after)}", only="text"),
            ]
    return r.Report(sections, cls="msdebug-dump", style=_BOX)


html_diff, text_diff = r.renderers(build_diff)


# --------------------------------------------------------------------------- .dot


def _dot_head(view) -> str:
    return f"{view.file}: Graphviz file, {len(view.nodes)} nodes, {len(view.edges)} edges, {size_text(view.size)}"


def build_dot(view) -> r.Report:
    """A Graphviz file: drawn by msdebug in HTML, its nodes listed in text."""
    from .svg import GraphBox, graph_drawing

    clusters = dict(view.clusters)

    def draw() -> str:
        boxes = []
        order = {cluster: number for number, (cluster, _) in enumerate(view.clusters, 1)}
        kinds = ("Primitive", "NameSpace", "Symbol")
        for node_id, texts, cluster in view.nodes:
            # MindSpore's labels say the kind first ("Primitive", "Return"): the name is what to read.
            kind, name = (
                (texts[0], texts[1]) if len(texts) > 1 and texts[0] in kinds else ("", texts[0] if texts else node_id)
            )
            scope = f"{clusters[cluster]} #{order[cluster]}" if cluster in clusters else ""
            boxes.append(
                GraphBox(
                    node_id, name, sub=kind, op=kind or name.split("(")[0], scope=scope, tip="\n".join(texts) or node_id
                )
            )
        return graph_drawing(boxes, list(view.edges), max_nodes=_MAX_DRAWN)

    listing = [_dot_head(view)]
    for node_id, texts, cluster in view.nodes[:200]:
        where = f"  [{clusters.get(cluster, '')}]" if clusters.get(cluster) else ""
        listing.append(f"  {' · '.join(texts) or node_id}{where}")
    if len(view.nodes) > 200:
        listing.append(f"  showing 200 of {len(view.nodes)} nodes")
    if view.truncated:
        listing.append("  (only the first 8 MiB were read)")
    note = (
        f"Graphviz file (save_graphs level 3): {len(view.nodes)} nodes, {len(view.edges)} edges, "
        f"{size_text(view.size)}; drawn by msdebug, no Graphviz needed"
        + ("; only the first 8 MiB were read" if view.truncated else "")
    )
    return r.Report(
        [
            r.Line(r.Span(_base(view.file), "hover", 80), look="boxed-strong", only="html"),
            r.Line(note, look="boxed-note", only="html"),
            r.Figure(draw, text=listing, scroll=True),
        ],
        cls="msdebug-dump",
        style=_BOX,
    )


html_dot, text_dot = r.renderers(build_dot)


# --------------------------------------------------------------------------- pb


def build_pb(pb) -> r.Report:
    """A .pb graph: its nodes, op and full name."""
    if not pb.available:
        return r.Report(
            [r.Line(f"{pb.file}: reading .pb files needs MindSpore (its anf_ir_pb2 module) in this environment",
                    look="boxed-note")]
        )  # fmt: skip
    shown = pb.nodes[:200]
    sections: list = [
        r.Line(f"{pb.file}: graph {pb.graph}, {len(pb.nodes)} nodes", look="strong"),
        r.Line(_showing(len(shown), len(pb.nodes), "nodes"), look="boxed-note", only="html"),
        r.Line("ops: " + ", ".join(f"{op}×{n}" for op, n in pb.op_counts[:_MAX_OPS]), only="text"),
        r.Table([r.Col("op"), r.Col("full name")], [(r.Span(op, "b"), full or name) for name, op, full in shown],
                look="full", only="html"),
        r.Items([(f"{op:<24} ", r.Span(full or name, "fit", MIN_FIT)) for name, op, full in shown], indent=2,
                only="text"),
    ]  # fmt: skip
    if len(pb.nodes) > 200:
        sections.append(r.Line(f"showing 200 of {len(pb.nodes)} nodes", only="text"))
    return r.Report(sections, cls="msdebug-dump")


html_pb, text_pb = r.renderers(build_pb)
