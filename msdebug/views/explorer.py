"""The explorer of an RDR or save_graphs tree (:mod:`msdebug.dumps.explorer`: summary, graph IR,
execution order, memory, diff, .pb and .dot files) -> escaped HTML and text.

Everything in a dump is untrusted: names, IR text and paths go through ``esc``. Tables
are bounded by the models (``limit``) and say "showing N of M".
"""

from __future__ import annotations

import re

from . import report as r
from ._html import FADED, NOTE, STRONG, esc, hover, tag
from ._text import MIN_FIT, Column, current_width, shorten

_LINE = re.compile(r"[0-9]{1,18}")

__all__ = [
    "build_dot",
    "build_memory",
    "build_pb",
    "build_stage_nodes",
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

_MONO = "font-family:monospace;white-space:pre-wrap;text-align:left"
_CELL = "border-left:3px solid #4a90d9;padding-left:4px"
# Every cell may break anywhere as a last resort: a long scope or path never widens a table
# past the output area (JupyterLab scrolls an output sideways, hiding the right-hand columns).
_FIT = "text-align:left;vertical-align:top;overflow-wrap:anywhere;word-break:normal"
_TABLE = "table-layout:fixed;width:100%;border-collapse:collapse;margin:2px 0"
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


def _fit(name: str, used: int) -> str:
    """``name`` shortened in the middle to what is left of the line once ``used`` columns are taken."""
    return shorten(name, max(MIN_FIT, current_width() - used))


def middle(text: str, width: int = _SHORT) -> str:
    """``text`` escaped, shortened in the middle to ``width`` characters, the whole of it on hover."""
    return hover(text, width)


def _base(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1] or path


def _showing(shown: int, total: int, what: str) -> str:
    return f"showing {shown} of {total} {what}" if shown < total else f"{total} {what}"


def _table(
    headers: list[str], rows: list[list[str]], widths: list[int] | None = None, mono: set[int] = frozenset()
) -> str:
    """A table as wide as the output area and no wider; ``rows`` hold escaped HTML, ``widths``
    are column widths in percent, columns in ``mono`` are set in a monospace font."""
    cols = "".join(f'<col style="width:{w}%">' for w in widths) if widths else ""
    styles = [_FIT + (";font-family:monospace" if i in mono else "") for i in range(len(headers))]
    head = "".join(tag("th", esc(h), style=_FIT) for h in headers)
    body = "".join(
        "<tr>" + "".join(tag("td", cell, style=st) for cell, st in zip(row, styles, strict=True)) + "</tr>"
        for row in rows
    )
    colgroup = f"<colgroup>{cols}</colgroup>" if cols else ""
    return f'<table style="{_TABLE}">{colgroup}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _note(text: str) -> str:
    return tag("div", esc(text), style=NOTE + ";" + _BOX)


def _head(text: str) -> str:
    return tag("div", esc(text), style=STRONG + ";" + _BOX)


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


def _code_html(code: str, in_cell: bool) -> str:
    if not code:
        return ""
    style = "margin:0;font-family:monospace;white-space:pre-wrap;overflow-wrap:anywhere"
    return tag("pre", esc(code), style=style + (";" + _CELL if in_cell else ""))


def source_html(row) -> str:
    """The source label (the full path on hover) above the code it points at."""
    if not row.source:
        return ""
    label = _row_source(row)
    where = f"notebook cell: {row.source}" if row.in_cell else row.source
    return f'<div title="{esc(where)}" style="{NOTE}">{esc(label)}</div>' + _code_html(row.code, row.in_cell)


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


def text_summary(summary) -> str:
    lines = _summary_lines(summary)
    for rank in summary.ranks:
        if rank.rank is not None:
            lines += ["", f"rank {rank.rank} ({rank.path}){_recorded(rank, ', ')}"]
        for group in rank.groups:
            lines.append(f"  {group.count:>5}  {size_text(group.size):>9}  {group.title}")
        if rank.graph_ids:
            lines.append(f"  kernel graphs: {', '.join(map(str, rank.graph_ids))}")
        if rank.stages and summary.kind != "ir":
            shown = rank.stages[:_MAX_STAGES]
            lines.append(f"  pipeline stages, in pipeline order ({_showing(len(shown), len(rank.stages), 'stages')}):")
            for stage in shown:
                counter = f"  (dump #{stage.counter})" if stage.counter is not None else ""
                lines.append(f"    {stage.label:<48} {size_text(stage.size):>9}{counter}")
        elif summary.kind == "ir" and rank.stages:
            lines.append(f"  entry graph @{rank.stages[0].label}")
        if rank.unknown:
            lines.append(f"  not RDR files: {', '.join(rank.unknown[:10])}")
    lines += [f"note: {hint}" for hint in summary.hints]
    return "\n".join(lines)


def html_summary(summary) -> str:
    kind = {"rdr": "RDR tree", "graphs": "saved IR graphs", "ir": "IR file"}[summary.kind]
    ranks = [r for r in summary.ranks if r.rank is not None]
    first = f"{kind} " + middle(summary.path, 70) + esc(f": {summary.files} files, {size_text(summary.size)}")
    if ranks:
        first += esc(f", {len(ranks)} rank{'s' if len(ranks) != 1 else ''}")
    parts = [tag("div", first, style=STRONG + ";" + _BOX)]
    for hint in summary.hints:
        parts.append(_note(hint))
    for rank in summary.ranks:
        if rank.rank is not None:
            when = _recorded(rank, " · ")
            parts.append(
                tag("div", esc(f"rank {rank.rank} ") + tag("span", middle(rank.path, 60) + esc(when), style=NOTE))
            )
        rows = [[esc(g.title), esc(g.count), esc(size_text(g.size))] for g in rank.groups]
        parts.append(_table(["files", "count", "size"], rows, [70, 15, 15]))
        if rank.graph_ids:
            parts.append(_note(f"kernel graphs: {', '.join(map(str, rank.graph_ids))}"))
        if rank.stages and summary.kind != "ir":
            shown = rank.stages[:_MAX_STAGES]
            rows = [
                [esc(s.index if s.index is not None else ""), esc(s.label), middle(s.file, 48), esc(size_text(s.size))]
                for s in shown
            ]
            title = f"pipeline stages in pipeline order ({_showing(len(shown), len(rank.stages), 'stages')})"
            parts.append(
                tag(
                    "details",
                    tag("summary", esc(title)) + _table(["#", "stage", "file", "size"], rows, [6, 38, 44, 12]),
                )
            )
        if rank.unknown:
            parts.append(_note(f"not RDR files: {', '.join(rank.unknown[:10])}"))
    return tag("div", "".join(parts), cls="msdebug-dump", style=_BOX)


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


def text_stage_nodes(view) -> str:
    return r.text(build_stage_nodes(view))


def html_stage_nodes(view) -> str:
    return r.html(build_stage_nodes(view))


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


def text_graph(view) -> str:
    lines = [_graph_head(view)]
    ops = ", ".join(f"{op}×{n}" for op, n in view.op_counts[:_MAX_OPS])
    lines.append(f"ops: {ops}" + (" …" if len(view.op_counts) > _MAX_OPS else ""))
    lines.append(_filter_text(view))
    for row in view.rows:
        line = f"  line {row.lineno:>6}  @{shorten(row.graph, 40)} {row.id}({row.name}) = {row.op}  ["
        lines.append(line + _fit(row.scope, len(line) + 1) + "]")
        if row.output_type:
            lines.append(f"               -> {_clip(row.output_type, 80)}")
        if row.source:
            lines.append(f"               {_source_text(row)}")
    return "\n".join(lines)


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


def html_graph(view) -> str:
    ops = ", ".join(f"{esc(op)}×{n}" for op, n in view.op_counts[:_MAX_OPS])
    graphs = ", ".join(f"@{name} ({count})" for name, count in view.graphs[:8])
    more = f" and {len(view.graphs) - 8} more" if len(view.graphs) > 8 else ""
    parts = [
        tag("div", middle(_base(view.file), 80) + esc(f": entry @{view.entry}"), style=STRONG + ";" + _BOX),
        _note(f"{len(view.graphs)} graphs, {view.total_nodes} nodes: {graphs}{more}"),
        tag("div", "ops: " + ops + (" …" if len(view.op_counts) > _MAX_OPS else ""), style=NOTE + ";" + _BOX),
        _note(_filter_text(view)),
    ]
    if view.rows:
        picture = graph_picture(view.rows)
        parts.append(
            tag(
                "details",
                tag("summary", esc(f"drawing ({min(len(view.rows), _MAX_DRAWN)} nodes)"))
                + tag("div", picture, style="max-height:560px;overflow-y:auto;overflow-x:hidden"),
            ).replace("<details", "<details open", 1)
        )
    several = len(view.graphs) > 1
    rows = [
        [
            esc(row.lineno),
            esc(f"{row.id}({row.name})") + (tag("div", middle(f"@{row.graph}", 24), style=FADED) if several else ""),
            tag("b", esc(row.op)),
            middle(row.scope, 40),
            esc(", ".join(row.inputs)),
            esc(_short_type(row.output_type)),
            source_html(row),
        ]
        for row in view.rows
    ]
    parts.append(
        _table(
            ["line", "node", "op", "scope", "inputs", "output", "source"], rows, [6, 13, 15, 17, 13, 12, 24], {1, 4, 5}
        )
    )
    return tag("div", "".join(parts), cls="msdebug-dump", style=_BOX)


# --------------------------------------------------------------------------- execution order


def _exec_head(view) -> str:
    ir = f"; IR: {view.ir_file}" if view.ir_file else ""
    return f"execution order of graph {view.graph_id} ({view.file}){ir}"


def text_exec_order(view) -> str:
    lines = [_exec_head(view), _showing(len(view.rows), view.total, "kernels")]
    for row in view.rows:
        memory = f"  {size_text(row.memory)}" if row.memory is not None else ""
        ir = f"  IR line {row.ir_line}" if row.ir_line else ""
        line = f"  {row.index:>4}  {row.op:<24} "
        lines.append(line + _fit(row.fullname or row.name, len(line) + len(ir) + len(memory)) + ir + memory)
        if row.source:
            lines.append(f"        {_source_text(row)}")
    return "\n".join(lines)


def html_exec_order(view) -> str:
    # The IR file is the same for every kernel: named once above the table, a line per row.
    head = tag("div", esc(f"execution order of graph {view.graph_id}"), style=STRONG)
    files = esc("order: ") + middle(_base(view.file), 60)
    if view.ir_file:
        files += esc(" · IR nodes in ") + middle(_base(view.ir_file), 60)
    rows = [
        [
            esc(row.index),
            tag("b", esc(row.op)),
            middle(row.fullname or row.name, 40),
            esc(f"line {row.ir_line}") if row.ir_line else "",
            source_html(row),
            esc(size_text(row.memory)) if row.memory is not None else "",
        ]
        for row in view.rows
    ]
    return tag(
        "div",
        head
        + tag("div", files, style=NOTE + ";" + _BOX)
        + _note(_showing(len(view.rows), view.total, "kernels"))
        + _table(["#", "op", "kernel", "IR", "source", "memory"], rows, [5, 18, 22, 9, 36, 10], {2}),
        cls="msdebug-dump",
        style=_BOX,
    )


def text_exec_row(row) -> str:
    """One kernel and its IR node, as the explorer shows it when the row is clicked."""
    lines = [f"kernel {row.index}: {row.op}  {row.fullname or row.name}"]
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
    return "\n".join(lines)


def html_exec_row(row) -> str:
    """The IR node behind one kernel: inputs, output shape, source line and code."""
    fields = [
        ("kernel", esc(f"{row.index}: ") + tag("b", esc(row.op)) + " " + middle(row.fullname or row.name, 80)),
        (
            "IR node",
            esc(f"{row.node} at line {row.ir_line} of ") + middle(row.ir_file, 60)
            if row.ir_line
            else "not found in the IR",
        ),
        ("inputs", esc(", ".join(row.inputs))),
        ("input types", esc(_short_type(row.input_types))),
        ("output", tag("b", esc(_short_type(row.output_type)))),
        ("memory", esc(size_text(row.memory)) if row.memory is not None else ""),
        ("source", source_html(row)),
    ]
    rows = [[esc(name), value] for name, value in fields if value]
    return tag(
        "div",
        _table(["", ""], rows, [16, 84]).replace("<thead><tr><th", '<thead style="display:none"><tr><th', 1),
        cls="msdebug-dump msdebug-node-detail",
        style=_BOX,
    )


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


def text_memory(view) -> str:
    return r.text(build_memory(view))


def html_memory(view) -> str:
    return r.html(build_memory(view))


def _short_kernel(name: str) -> str:
    return name.rsplit("/", 1)[-1] if "/" in name else name


# --------------------------------------------------------------------------- diff


def _diff_head(diff) -> str:
    c = diff.counts
    return (
        f"{diff.before} ({diff.nodes[0]} nodes) -> {diff.after} ({diff.nodes[1]} nodes): "
        f"{c['appeared']} appeared, {c['vanished']} vanished, {c['changed']} changed"
    )


def text_diff(diff) -> str:
    lines = [_diff_head(diff)]
    if diff.op_changes:
        lines.append("ops: " + ", ".join(f"{op} {a}->{b}" for op, a, b in diff.op_changes[:_MAX_OPS]))
    total = sum(diff.counts.values())
    lines.append(_showing(len(diff.rows), total, "differences"))
    marks = {"appeared": "+", "vanished": "-", "changed": "~"}
    for row in diff.rows:
        line = f"  {marks[row.change]} {row.op:<24} "
        lines.append(line + _fit(row.key, len(line)))
        if row.change == "changed":
            lines += [f"      before: {_clip(row.before)}", f"      after:  {_clip(row.after)}"]
    return "\n".join(lines)


_COLOUR = {"appeared": "color:#1a7f37", "vanished": "color:#cf222e", "changed": "color:#9a6700"}


def html_diff(diff) -> str:
    def sides(row) -> str:
        # Before above after, in one column: the "after" side is never pushed off-screen.
        before = tag("div", tag("span", "− ", style=_COLOUR["vanished"]) + esc(row.before)) if row.before else ""
        after = tag("div", tag("span", "+ ", style=_COLOUR["appeared"]) + esc(row.after)) if row.after else ""
        return before + after

    rows = [
        [
            tag("span", esc(row.change), style=_COLOUR[row.change]),
            tag("b", esc(row.op)),
            middle(row.key, 48),
            sides(row),
        ]
        for row in diff.rows
    ]
    ops = ", ".join(f"{esc(op)} {a}→{b}" for op, a, b in diff.op_changes[:_MAX_OPS])
    total = sum(diff.counts.values())
    c = diff.counts
    head = tag(
        "div",
        middle(_base(diff.before), 50)
        + esc(f" ({diff.nodes[0]} nodes) → ")
        + middle(_base(diff.after), 50)
        + esc(f" ({diff.nodes[1]} nodes)"),
        style=STRONG + ";" + _BOX,
    ) + tag(
        "div",
        tag("span", esc(f"{c['appeared']} appeared"), style=_COLOUR["appeared"])
        + ", "
        + tag("span", esc(f"{c['vanished']} vanished"), style=_COLOUR["vanished"])
        + ", "
        + tag("span", esc(f"{c['changed']} changed"), style=_COLOUR["changed"]),
    )
    return tag(
        "div",
        head
        + (tag("div", "ops: " + ops, style=NOTE + ";" + _BOX) if ops else "")
        + _note(_showing(len(diff.rows), total, "differences"))
        + _table(["change", "op", "scope", "before / after"], rows, [9, 16, 25, 50], {3}),
        cls="msdebug-dump",
        style=_BOX,
    )


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


def text_dot(view) -> str:
    return r.text(build_dot(view))


def html_dot(view) -> str:
    return r.html(build_dot(view))


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


def text_pb(pb) -> str:
    return r.text(build_pb(pb))


def html_pb(pb) -> str:
    return r.html(build_pb(pb))
