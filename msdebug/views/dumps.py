"""Dump models (summary, graph IR, execution order, memory, diff) -> escaped HTML and text.

Everything in a dump is untrusted: names, IR text and paths go through ``esc``. Tables
are bounded by the models (``limit``) and say "showing N of M".
"""

from __future__ import annotations

from ._html import FADED, LEFT, NOTE, STRONG, esc, tag

__all__ = [
    "html_diff",
    "html_exec_order",
    "html_graph",
    "html_memory",
    "html_pb",
    "html_rdr_status",
    "html_save_graphs",
    "html_summary",
    "size_text",
    "text_diff",
    "text_exec_order",
    "text_graph",
    "text_memory",
    "text_pb",
    "text_rdr_status",
    "text_save_graphs",
    "text_summary",
]

_MONO = "font-family:monospace;white-space:pre-wrap;text-align:left"
_CELL = "border-left:3px solid #4a90d9;padding-left:4px"
_MAX_STAGES = 60
_MAX_OPS = 30
_TEXT_WIDTH = 100


def size_text(size: int) -> str:
    """``1.2 MB``; bytes under a kilobyte stay exact."""
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{size} B"


def _clip(text: str, width: int = _TEXT_WIDTH) -> str:
    text = text.replace("\n", " ⏎ ")
    return text if len(text) <= width else text[: width - 1] + "…"


def _showing(shown: int, total: int, what: str) -> str:
    return f"showing {shown} of {total} {what}" if shown < total else f"{total} {what}"


def _table(headers: list[str], rows: list[list[str]], styles: list[str] | None = None) -> str:
    """``rows`` hold escaped HTML; ``styles`` one inline style per column."""
    styles = styles or [LEFT] * len(headers)
    head = "".join(tag("th", esc(h), style=LEFT) for h in headers)
    body = "".join(
        "<tr>" + "".join(tag("td", cell, style=s) for cell, s in zip(row, styles, strict=True)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _note(text: str) -> str:
    return tag("div", esc(text), style=NOTE)


def _code_html(code: str, in_cell: bool) -> str:
    if not code:
        return ""
    if in_cell:
        return tag("div", tag("code", esc(code)), style=_MONO + ";" + _CELL)
    return tag("code", esc(code), style=_MONO)


def _source_text(source: str, code: str, in_cell: bool) -> str:
    if not source:
        return ""
    return f"{source}{' (notebook cell)' if in_cell else ''}: {_clip(code, 60)}" if code else source


# --------------------------------------------------------------------------- summary


def _summary_lines(summary) -> list[str]:
    kind = {"rdr": "RDR tree", "graphs": "saved IR graphs", "ir": "IR file"}[summary.kind]
    ranks = [r for r in summary.ranks if r.rank is not None]
    first = f"{kind} {summary.path}: {summary.files} files, {size_text(summary.size)}"
    if ranks:
        first += f", {len(ranks)} rank{'s' if len(ranks) != 1 else ''}"
    return [first]


def text_summary(summary) -> str:
    lines = _summary_lines(summary)
    for rank in summary.ranks:
        if rank.rank is not None:
            when = (
                f", recorded {rank.first}" + (f" to {rank.last}" if rank.last != rank.first else "")
                if rank.first
                else ""
            )
            lines += ["", f"rank {rank.rank} ({rank.path}){when}"]
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
    parts = [tag("div", esc(_summary_lines(summary)[0]), style=STRONG)]
    for hint in summary.hints:
        parts.append(_note(hint))
    for rank in summary.ranks:
        if rank.rank is not None:
            when = (
                f" · recorded {rank.first}" + (f" to {rank.last}" if rank.last != rank.first else "")
                if rank.first
                else ""
            )
            parts.append(tag("div", esc(f"rank {rank.rank}") + tag("span", esc(f" {rank.path}{when}"), style=NOTE)))
        rows = [[esc(g.title), esc(g.count), esc(size_text(g.size))] for g in rank.groups]
        parts.append(_table(["files", "count", "size"], rows))
        if rank.graph_ids:
            parts.append(_note(f"kernel graphs: {', '.join(map(str, rank.graph_ids))}"))
        if rank.stages and summary.kind != "ir":
            shown = rank.stages[:_MAX_STAGES]
            rows = [
                [esc(s.index if s.index is not None else ""), esc(s.label), esc(s.file), esc(size_text(s.size))]
                for s in shown
            ]
            parts.append(
                tag(
                    "details",
                    tag(
                        "summary",
                        esc(f"pipeline stages in pipeline order ({_showing(len(shown), len(rank.stages), 'stages')})"),
                    )
                    + _table(["#", "stage", "file", "size"], rows),
                )
            )
        if rank.unknown:
            parts.append(_note(f"not RDR files: {', '.join(rank.unknown[:10])}"))
    return tag("div", "".join(parts), cls="msdebug-dump")


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
        lines.append(f"  line {row.lineno:>6}  @{_clip(row.graph, 40)} {row.id}({row.name}) = {row.op}  [{row.scope}]")
        if row.output_type:
            lines.append(f"               -> {_clip(row.output_type, 80)}")
        if row.source:
            lines.append(f"               {_source_text(row.source, row.code, row.in_cell)}")
    return "\n".join(lines)


def html_graph(view) -> str:
    ops = ", ".join(f"{esc(op)}×{n}" for op, n in view.op_counts[:_MAX_OPS])
    parts = [
        tag("div", esc(_graph_head(view)), style=STRONG),
        tag("div", "ops: " + ops + (" …" if len(view.op_counts) > _MAX_OPS else ""), style=NOTE),
        _note(_filter_text(view)),
    ]
    rows = [
        [
            esc(row.lineno),
            tag("span", esc(f"@{row.graph}"), style=FADED) + " " + esc(f"{row.id}({row.name})"),
            tag("b", esc(row.op)),
            esc(row.scope),
            esc(", ".join(row.inputs)),
            esc(row.output_type),
            esc(row.source) + (tag("span", " notebook cell", style=NOTE) if row.in_cell else ""),
            _code_html(row.code, row.in_cell),
        ]
        for row in view.rows
    ]
    mono = _MONO
    parts.append(
        _table(
            ["line", "node", "op", "scope", "inputs", "output", "source", "code"],
            rows,
            [LEFT, mono, LEFT, mono, mono, mono, mono, LEFT],
        )
    )
    return tag("div", "".join(parts), cls="msdebug-dump")


# --------------------------------------------------------------------------- execution order


def _exec_head(view) -> str:
    ir = f"; IR: {view.ir_file}" if view.ir_file else ""
    return f"execution order of graph {view.graph_id} ({view.file}){ir}"


def text_exec_order(view) -> str:
    lines = [_exec_head(view), _showing(len(view.rows), view.total, "kernels")]
    for row in view.rows:
        memory = f"  {size_text(row.memory)}" if row.memory is not None else ""
        ir = f"  IR line {row.ir_line}" if row.ir_line else ""
        lines.append(f"  {row.index:>4}  {row.op:<24} {row.fullname or row.name}{ir}{memory}")
        if row.source:
            lines.append(f"        {_source_text(row.source, row.code, row.in_cell)}")
    return "\n".join(lines)


def html_exec_order(view) -> str:
    rows = [
        [
            esc(row.index),
            tag("b", esc(row.op)),
            esc(row.fullname or row.name),
            esc(f"{row.ir_file}:{row.ir_line}") if row.ir_line else "",
            esc(row.source) + (tag("span", " notebook cell", style=NOTE) if row.in_cell else ""),
            _code_html(row.code, row.in_cell),
            esc(size_text(row.memory)) if row.memory is not None else "",
        ]
        for row in view.rows
    ]
    return tag(
        "div",
        tag("div", esc(_exec_head(view)), style=STRONG)
        + _note(_showing(len(view.rows), view.total, "kernels"))
        + _table(
            ["#", "op", "kernel", "IR node", "source", "code", "memory"],
            rows,
            [LEFT, LEFT, _MONO, _MONO, _MONO, LEFT, LEFT],
        ),
        cls="msdebug-dump",
    )


# --------------------------------------------------------------------------- memory


def _memory_head(view) -> str:
    inputs, workspaces, outputs = view.totals
    return (
        f"memory per kernel ({view.file}): inputs {size_text(inputs)}, workspaces {size_text(workspaces)}, "
        f"outputs {size_text(outputs)}, total {size_text(sum(view.totals))}"
    )


def text_memory(view) -> str:
    lines = [_memory_head(view), _showing(len(view.rows), view.total, "kernels") + ", largest first"]
    lines.append(f"  {'kernel':<48} {'inputs':>10} {'workspace':>10} {'outputs':>10} {'total':>10}")
    for row in view.rows:
        lines.append(
            f"  {_clip(row.name, 48):<48} {size_text(row.inputs):>10} {size_text(row.workspaces):>10} "
            f"{size_text(row.outputs):>10} {size_text(row.total):>10}"
        )
    return "\n".join(lines)


def html_memory(view) -> str:
    rows = [
        [
            esc(row.name),
            esc(f"{size_text(row.inputs)} ({row.count[0]})"),
            esc(f"{size_text(row.workspaces)} ({row.count[1]})"),
            esc(f"{size_text(row.outputs)} ({row.count[2]})"),
            tag("b", esc(size_text(row.total))),
        ]
        for row in view.rows
    ]
    return tag(
        "div",
        tag("div", esc(_memory_head(view)), style=STRONG)
        + _note(_showing(len(view.rows), view.total, "kernels") + ", largest first; (n) = number of addresses")
        + _table(["kernel", "inputs", "workspaces", "outputs", "total"], rows),
        cls="msdebug-dump",
    )


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
        lines.append(f"  {marks[row.change]} {row.op:<24} {_clip(row.key, 60)}")
        if row.change == "changed":
            lines += [f"      before: {_clip(row.before)}", f"      after:  {_clip(row.after)}"]
    return "\n".join(lines)


def html_diff(diff) -> str:
    colour = {"appeared": "color:#1a7f37", "vanished": "color:#cf222e", "changed": "color:#9a6700"}
    rows = [
        [
            tag("span", esc(row.change), style=colour[row.change]),
            tag("b", esc(row.op)),
            esc(row.key),
            esc(row.before),
            esc(row.after),
        ]
        for row in diff.rows
    ]
    ops = ", ".join(f"{esc(op)} {a}→{b}" for op, a, b in diff.op_changes[:_MAX_OPS])
    total = sum(diff.counts.values())
    return tag(
        "div",
        tag("div", esc(_diff_head(diff)), style=STRONG)
        + (tag("div", "ops: " + ops, style=NOTE) if ops else "")
        + _note(_showing(len(diff.rows), total, "differences"))
        + _table(["change", "op", "scope", "before", "after"], rows, [LEFT, LEFT, _MONO, _MONO, _MONO]),
        cls="msdebug-dump",
    )


# --------------------------------------------------------------------------- pb


def text_pb(pb) -> str:
    if not pb.available:
        return f"{pb.file}: reading .pb files needs MindSpore (its anf_ir_pb2 module) in this environment"
    lines = [f"{pb.file}: graph {pb.graph}, {len(pb.nodes)} nodes"]
    lines.append("ops: " + ", ".join(f"{op}×{n}" for op, n in pb.op_counts[:_MAX_OPS]))
    for name, op, full in pb.nodes[:200]:
        lines.append(f"  {op:<24} {full or name}")
    if len(pb.nodes) > 200:
        lines.append(f"showing 200 of {len(pb.nodes)} nodes")
    return "\n".join(lines)


def html_pb(pb) -> str:
    if not pb.available:
        return _note(text_pb(pb))
    rows = [[tag("b", esc(op)), esc(full or name)] for name, op, full in pb.nodes[:200]]
    return tag(
        "div",
        tag("div", esc(f"{pb.file}: graph {pb.graph}, {len(pb.nodes)} nodes"), style=STRONG)
        + _note(_showing(len(rows), len(pb.nodes), "nodes"))
        + _table(["op", "full name"], rows),
        cls="msdebug-dump",
    )


# --------------------------------------------------------------------------- RDR status


def _rdr_lines(status) -> list[str]:
    if status.version is None:
        head = "RDR: MindSpore is not installed"
    elif not status.supported:
        head = f"RDR: ignored by MindSpore {status.version} (it exists up to 2.7.0)"
    else:
        enabled = status.value("rdr.enable")
        mode = status.value("rdr.mode")
        head = f"RDR: {'on' if enabled else 'off'}, mode {mode} (MindSpore {status.version})"
        if status.compiled:
            head += "; a graph was compiled already, so these settings are fixed for this process"
    lines = [head]
    for setting in status.settings:
        lines.append(f"  {setting.key:<14} {setting.value!s:<40} from {setting.source}")
    if status.config_file:
        lines.append(f"  env_config_path: {status.config_file}")
    lines.append(f"  exported so far under {status.output}: {len(status.exported)} files")
    return lines


def text_rdr_status(status) -> str:
    lines = _rdr_lines(status)
    for path in status.exported[:10]:
        lines.append(f"    {path}")
    if len(status.exported) > 10:
        lines.append(f"    showing 10 of {len(status.exported)} files")
    lines += [f"note: {note}" for note in status.notes]
    return "\n".join(lines)


def html_rdr_status(status) -> str:
    lines = _rdr_lines(status)
    rows = [[esc(s.key), esc(s.value), esc(s.source)] for s in status.settings]
    parts = [tag("div", esc(lines[0]), style=STRONG), _table(["setting", "value", "from"], rows)]
    if status.config_file:
        parts.append(_note(f"env_config_path: {status.config_file}"))
    parts.append(_note(lines[-1]))
    if status.exported:
        shown = status.exported[:10]
        items = "".join(tag("li", esc(p)) for p in shown)
        parts.append(
            tag("ul", items)
            + (
                _note(f"showing {len(shown)} of {len(status.exported)} files")
                if len(shown) < len(status.exported)
                else ""
            )
        )
    for note in status.notes:
        parts.append(tag("div", esc(f"note: {note}"), style="color:#9a6700"))
    return tag("div", "".join(parts), cls="msdebug-dump")


# --------------------------------------------------------------------------- save_graphs


def _save_graphs_head(status) -> str:
    state = f"level {status.level} ({status.level_name})" if status.level else "off"
    return f"save_graphs: {state}, into {status.path} (set through the {status.via})"


def text_save_graphs(status) -> str:
    lines = [_save_graphs_head(status), f"  {status.files} IR files there so far"]
    lines += [f"    {count:>5}  {family}" for family, count in status.families]
    if status.files:
        lines.append(f"  read them with msdebug.open_dump({status.path!r})")
    lines += [f"note: {note}" for note in status.notes]
    return "\n".join(lines)


def html_save_graphs(status) -> str:
    rows = [[esc(family), esc(count)] for family, count in status.families]
    parts = [tag("div", esc(_save_graphs_head(status)), style=STRONG), _note(f"{status.files} IR files there so far")]
    if rows:
        parts.append(_table(["family", "files"], rows))
        parts.append(tag("div", tag("code", esc(f"msdebug.open_dump({status.path!r})")), style=NOTE))
    for note in status.notes:
        parts.append(tag("div", esc(f"note: {note}"), style="color:#9a6700"))
    return tag("div", "".join(parts), cls="msdebug-dump")
