"""Where two runs part ways (``%%msdiff``, ``msdebug.diff``, ``msdebug diff``): one
:class:`~msdebug.views.report.Report`, rendered as HTML and as text.

Pure: the report comes in by duck typing (:mod:`msdebug.dumps.diff`); every name, value and
path from a run is escaped and every list is bounded (by :mod:`msdebug.views.report`).
"""

from __future__ import annotations

import math

from . import report as r

__all__ = ["build", "build_saved", "html_report", "html_saved", "text_report", "text_saved"]

_MAX_LISTED = 12  # unaligned ops named per side; then how many more
_MAX_NOTES = 6


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.6g}"


def _side_label(run) -> str:
    return f"{run.label} ({run.kind})"


def _place(op) -> tuple:
    if not op.place:
        return ()
    code = op.code.strip().splitlines()[0] if op.code.strip() else ""
    return (r.Span(op.place, "strong"), *((": ", r.Span(code, "code")) if code else ()))


def _metrics_rows(first) -> list[tuple]:
    """One row per tensor pair of the op: slot, verdict, the metrics."""
    rows = []
    for tensor in first.tensors:
        metrics = tensor.metrics
        verdict = (
            r.Span("agrees", "good") if tensor.agrees else r.Span(_verdict(tensor), "bad" if tensor.decides else "")
        )
        if metrics is None:
            rows.append((tensor.slot, verdict, tensor.summary, "", "", ""))
            continue
        if not metrics.same_shape:
            rows.append((tensor.slot, verdict, metrics.summary, "", "", ""))
            continue
        cosine = "n/a" if metrics.cosine is None else f"{metrics.cosine:.6g}"
        rows.append((tensor.slot, verdict, _num(metrics.max_abs), _num(metrics.max_rel), cosine,
                     f"{100 * metrics.share_within:.4g}%"))  # fmt: skip
    return rows


def _verdict(tensor) -> str:
    return "differs" if tensor.decides else "differs, unused (no later op read it)"


def _first_values(tensor) -> str:
    metrics = tensor.metrics
    if metrics is None or metrics.first_index is None:
        return ""
    where = f"at [{', '.join(str(i) for i in metrics.first_index)}]" if metrics.first_index else "(a scalar)"
    return f"first difference {where}: {_num(metrics.first_a)} against {_num(metrics.first_b)}"


def build(report) -> r.Report:
    """The diff report's sections."""
    a, b = report.a, report.b
    sections: list = [
        r.Line((r.Span(_side_label(a), "strong"), " against ", r.Span(_side_label(b), "strong"))),
    ]
    # What the verdict does not cover comes first: a recording cut at its cap.
    sections.extend(r.Line((r.Span("Only part was recorded", "bad"), f": {why}")) for why in report.partial)
    if report.restored_nothing:
        sections.append(r.Line((r.Span("Nothing was put back", "bad"), f": {report.restored}.")))
    elif report.restored:
        sections.append(r.Line(f"{report.restored}, before the second run", look="note"))
    first = report.first
    if first is None and report.nothing_compared:
        sections.append(r.Line((r.Span("Nothing compared", "bad"), f": {report.nothing_compared}.")))
    elif first is None:
        sections.append(
            r.Line((r.Span("They agree", "good-strong"),
                    f": {report.compared_ops} aligned ops, {report.compared_tensors} tensor pairs, all within the tolerance"
                    + (" (what was recorded)." if report.partial else ".")))
        )  # fmt: skip
    else:
        differing = first.first_difference
        culprit, why = report.culprit
        if culprit is not first.a:
            sections.append(
                r.Line(
                    (
                        r.Span("First difference", "bad"),
                        " at ",
                        r.Span(culprit.name, "scope"),
                        f" ({culprit.op_type}): {why}",
                    )
                )  # fmt: skip
            )
            if _place(culprit):
                sections.append(r.Line(_place(culprit), indent=2, title=culprit.source))
            sections.append(
                r.Line(
                    (
                        f"the first aligned op after it, {first.a.name} ({first.a.op_type}), differs in its "
                        f"{differing.slot}",
                    ),
                    look="note",
                    indent=2,
                )  # fmt: skip
            )
        else:
            sections.append(
                r.Line(
                    (
                        r.Span("First difference", "bad"),
                        " at ",
                        r.Span(first.a.name, "scope"),
                        f" ({first.a.op_type}), {differing.slot}",
                    )
                )  # fmt: skip
            )
        if first.b.name != first.a.name:
            sections.append(r.Line(f"aligned with {first.b.name} of {b.label}", look="note", indent=2))
        where = _place(first.a) or _place(first.b)
        if where and culprit is first.a:
            sections.append(r.Line(where, indent=2, title=first.a.source or first.b.source))
        if differing.slot.startswith("input") and culprit is first.a:
            sections.extend(r.Line(text, look="note", indent=2) for text in _input_notes(report.differing_inputs))
        if report.entered_by:
            items = [(r.Span(op.name, "fit"), f" ({op.op_type})", *((" at ", op.place) if op.place else ()))
                     for op in report.entered_by[:_MAX_LISTED]]  # fmt: skip
            sections.append(
                r.Items(
                    items,
                    head="Just before it, ops that only one run has:",
                    text_head="just before it, ops that only one run has:",
                    indent=2,
                )  # fmt: skip
            )
        shown = _first_values(differing)
        if shown:
            sections.append(r.Line(shown, indent=2))
        # A table in HTML; a line per tensor pair in text.
        columns = [r.Col(head) for head in ("tensor", "verdict", "max abs", "max rel", "cosine", "within")]
        sections.append(r.Table(columns, _metrics_rows(first), look="compact", only="html"))
        sections.append(
            r.Items(
                [f"{t.slot}: {'agrees' if t.agrees else _verdict(t)}, {t.summary}" for t in first.tensors],
                indent=2,
                only="text",
            )  # fmt: skip
        )
        sections.append(r.Items(_stats_items(report), head="Statistics of each side:", text_head="statistics:",
                                indent=2, look="tight"))  # fmt: skip
    spread = [(index, name, rel) for index, name, rel in report.spread]
    if spread and report.first is not None:
        start = next(i for i, (index, _, _) in enumerate(spread) if index == report.first.a.index)
        after = spread[start:]
        values = [rel for _, _, rel in spread]
        sections.append(
            r.Figure(
                lambda: _spread_svg(values, start),
                caption=f"max relative error of each aligned op's outputs, in execution order ({len(spread)} ops; "
                f"the first difference is op {start + 1})",
                only="html",
            )
        )
        sections.append(
            r.Items(
                _spread_text(after),
                text_head="how the difference spread (max rel error of each op's outputs):",
                indent=2,
                only="text",
            )  # fmt: skip
        )
    sections.append(r.Line(f"tolerance: {report.tolerance_text}", look="note"))
    for label, ops in ((a.label, report.unaligned_a), (b.label, report.unaligned_b)):
        if ops:
            more = f"(showing {_MAX_LISTED} of {len(ops)})" if len(ops) > _MAX_LISTED else ""
            sections.append(
                r.Items(
                    [(r.Span(op.name, "fit"), f" ({op.op_type})") for op in ops[:_MAX_LISTED]],
                    head=f"Only in {label} ({len(ops)} ops, not compared):",
                    text_head=f"only in {label} ({len(ops)} ops, not compared):",
                    more=more,
                    look="tight",
                )  # fmt: skip
            )
    sections.extend(r.Line(note, look="note") for note in report.notes[:_MAX_NOTES])
    return r.Report(sections, cls="msdebug-diff", style="font-size:95%")


def _input_notes(origins: list[str]) -> list[str]:
    """Why the first differing op's input differs, from where the runs say it came."""
    gradients = [o for o in origins if o.startswith("gradient of ")]
    values = [o for o in origins if not o.startswith("gradient of ")]
    notes = []
    if gradients:
        notes.append(
            f"{', '.join(gradients[:_MAX_LISTED])}: the backward pass made it, which the hooks do not see, so "
            "the backward pass is the likely source; to look there, run the cell in GRAPH mode with "
            "%%msdiff --repeat, whose data dump records the backward kernels"
        )
    if values:
        named = ", ".join("an unnamed value" if o == "a value" else o for o in values[:_MAX_LISTED])
        notes.append(
            f"the cell's inputs differ between the runs: {named}; no op of the cell made it, so it changed "
            "outside the ops recorded (data, an iterator or a counter, numpy's random state, or a Parameter "
            "not put back)"
        )
    if not origins:
        notes.append(
            "its input already differs: the value comes into this op from the data, a parameter, "
            "a constant, or an op only one run has"
        )
    return notes


def _stats_items(report) -> list:
    """Each side's tensors of the first differing op: dtype, shape and statistics."""
    first = report.first
    items = []
    for side, label, op in (("a", report.a.label, first.a), ("b", report.b.label, first.b)):
        for tensor in op.tensors[:8]:
            stats = tensor.stats or report.first_stats.get((side, tensor.slot))
            items.append(f"{label}, {tensor.slot}: {_describe(tensor, stats)}")
    return items


def _describe(ref, stats: dict | None = None) -> str:
    shape = "×".join(str(n) for n in ref.shape) if ref.shape else ""
    parts = [part for part in (ref.dtype, shape) if part]
    stats = stats or ref.stats
    if stats:
        parts.append(", ".join(f"{key.lower()} {_num(value)}" for key, value in stats.items()))
    return " ".join(parts) or "values in " + (ref.path.name if ref.path is not None else "no file")


def _spread_svg(values: list[float], first: int) -> str:
    from .svg import line_chart

    return line_chart({"max rel error": values}, title="how the difference spread", x_label="op (execution order)",
                      marks=[(first, "first")])  # fmt: skip


def _spread_text(rows: list[tuple[int, str, float]]) -> list[str]:
    """From the first difference on: each op's largest relative error (the first eight, and the last)."""
    shown = rows[:8]
    lines = [f"{name}: max rel {_num(rel)}" for _, name, rel in shown]
    if len(rows) > len(shown):
        lines.append(f"... {len(rows) - len(shown)} more ops, the last: max rel {_num(rows[-1][2])}")
    return lines


html_report, text_report = r.renderers(build)


def build_saved(saved) -> r.Report:
    """``%%msdiff --save NAME``: what was kept and how to compare against it."""
    run = saved.run
    sections = [
        r.Line(
            (
                r.Span("Saved", "good-strong"),
                f" {len(run.ops)} ops and {run.tensor_count} tensors as ",
                r.Span(str(run.root), "path"),
            )
        ),  # fmt: skip
        r.Line(f"compare a later run with: %%msdiff --against {saved.name}", look="note"),
        r.Line(f"or in a terminal: msdebug diff {run.root} OTHER", look="note"),
    ]
    sections.extend(r.Line(note, look="note") for note in run.notes[:_MAX_NOTES])
    return r.Report(sections, cls="msdebug-diff")


html_saved, text_saved = r.renderers(build_saved)


# --------------------------------------------------------------------------- the walker's pieces


def op_label(op) -> str:
    """One entry of the walker's list: verdict, name, type, the largest relative error."""
    mark = "✗" if op.first_difference is not None else "✓"
    name = op.a.name if len(op.a.name) <= 60 else op.a.name[:28] + "…" + op.a.name[-31:]
    return f"{mark} {op.a.index}: {name} ({op.a.op_type})  max rel {_num(op.max_rel)}"


def count_html(shown: int, chosen: int, total: int) -> str:
    from ._html import esc

    more = f", showing {shown}" if shown < chosen else ""
    return esc(f"{chosen} of {total} aligned ops{more}")


def html_op(op, histograms: dict, label_a: str, label_b: str) -> str:
    """One aligned op, its tensors side by side: each side's shape and statistics, the metrics,
    and a histogram of each side's values."""
    from .svg import histogram

    sections: list = [
        r.Line((r.Span(op.a.name, "scope"), f" ({op.a.op_type})", *((" — ", op.a.place) if op.a.place else ()))),
    ]
    if op.b.name != op.a.name:
        sections.append(r.Line(f"aligned with {op.b.name} of {label_b}", look="note"))
    by_slot = {t.slot: t for t in op.tensors}
    refs_b = {ref.slot: ref for ref in op.b.tensors}
    for ref in op.a.tensors:
        tensor = by_slot.get(ref.slot)
        verdict = "" if tensor is None else ("agrees" if tensor.agrees else "differs")
        sections.append(
            r.Line((r.Span(ref.slot, "strong"), f": {verdict}", *((", ", tensor.summary) if tensor else ())))
        )
        if tensor is not None and tensor.metrics is not None and tensor.metrics.first_index is not None:
            sections.append(r.Line(_first_values(tensor), indent=2))
        pictures = []
        for side, label, side_ref in (("a", label_a, ref), ("b", label_b, refs_b.get(ref.slot))):
            found = histograms.get((side, ref.slot))
            if side_ref is None or not found or not found[0]:
                continue
            counts, edges = found
            pictures.append(histogram(counts, edges, width=300, height=100, title=f"{label}: {_describe(side_ref)}"))
        if pictures:
            sections.append(r.Figure("".join(pictures), caption="values of each side (the first 4 Mi)", only="html"))
    return r.html(r.Report(sections, cls="msdebug-diff-op", style="font-size:95%"))
