"""The first-NaN report (``%%msnan``, ``.nan()``, ``msdebug dump --nan``): one
:class:`~msdebug.views.report.Report`, rendered as HTML and as text.

Pure: the report comes in by duck typing (:mod:`msdebug.dumps.nan`); everything from a dump is
escaped and every list is bounded (by :mod:`msdebug.views.report`).
"""

from __future__ import annotations

from . import report as r
from .datadump import _MAX_NOTES, _STAT_HEAD, _size, _stat_runs, _stat_text

__all__ = ["build", "html_report", "text_report"]


def _checked(report) -> str:
    """``checked N ops and M tensors (size) in S s (mode)``: the line both forms end with."""
    return (
        f"checked {report.checked_ops} ops and {report.checked_tensors} tensors"
        + (f" ({_size(report.checked_bytes)})" if report.checked_bytes else "")
        + f" in {report.seconds:.2f} s ({report.mode})"
    )


def _headline(report, culprit, entered: tuple) -> str:
    """The headline says the rule where it changed the answer: ``--inf`` took the first value of
    any kind; the default, after infinities that came in as data, the first value an op made
    (or the first NaN, when one came in)."""
    if getattr(report, "rule", "made") == "any":
        return f"First non-finite value of any kind: {culprit.kind}"
    if entered and not culprit.came_in:
        # Received and not made: a NaN that came in (a gradient or a parameter the backward pass
        # or the update made not finite is made, by code the hooks do not see).
        received = not culprit.made_here and culprit.kind.startswith("NaN")
        return f"First NaN: {culprit.kind}" if received else f"First non-finite value made: {culprit.kind}"
    return f"First non-finite value: {culprit.kind}"


def _entered(item) -> tuple:
    """``-Inf ×5 in input 1 (mask) of Default/Add-op0 (Add); rank 0, iteration 0: cell [3], line 4: `code```."""
    code = item.first_code
    return (
        f"{item.kinds} in {item.slot}" + (f" ({item.value})" if item.value else "") + " of ",
        r.Span(item.name, "scope"),
        f" ({item.op_type})" + (f"; {item.where}" if item.where else ""),
        *((": ", r.Span(item.place, "strong")) if item.place else ()),
        *((": ", r.Span(code, "code")) if item.place and code else ()),
    )


def build(report) -> r.Report:
    """The first-NaN report's sections."""
    sections: list = []
    checked = _checked(report)
    culprit = report.culprit
    others = getattr(report, "others_entered", None)  # duck typing: a report from before the rule has none
    entered, more = others() if others is not None else ((), 0)
    if culprit is None:
        sections.append(r.Line((r.Span("All finite", "good-strong"), f": {checked}.")))
    else:
        sections.append(
            r.Line(
                (
                    r.Span(_headline(report, culprit, entered), "bad"),
                    " at ",
                    r.Span(culprit.name, "scope"),
                    f" ({culprit.op_type}), {culprit.slot}" + (f"; {culprit.where}" if culprit.where else ""),
                )
            )
        )
        sections.append(r.Line(culprit.verdict, indent=2))
        if culprit.note:
            sections.append(r.Line(culprit.note, look="note", indent=2))
        if culprit.line:
            code = culprit.first_code
            where = (r.Span(culprit.place, "strong"), *((": ", r.Span(code, "code")) if code else ()))
            sections.append(r.Line(where, indent=2, title=culprit.source))
        slots = (*culprit.inputs, *culprit.outputs)
        if slots:
            # A table in HTML; a line per tensor in text, its statistics in words.
            columns = [r.Col(head) for head in ("tensor", *_STAT_HEAD)]
            rows = [(s.label, *_stat_runs(s.stats)) for s in slots]
            sections.append(r.Table(columns, rows, look="compact", only="html"))
            sections.append(r.Items([f"{s.label}: {_stat_text(s.stats)}" for s in slots], indent=2, only="text"))
        if culprit.reached:
            items = [(r.Span(x.name, "fit"), f" ({x.op_type}): {x.outcome}") for x in culprit.reached]
            sections.append(
                r.Items(
                    items,
                    head="Downstream ops it reached:",
                    text_head="downstream ops it reached:",
                    look="tight",
                    indent=2,
                )
            )
        if entered:
            rule = "not blamed (--inf blames the first non-finite value of any kind):"
            sections.append(
                r.Items(
                    [_entered(item) for item in entered],
                    head=f"Entered as data, {rule}",
                    text_head=f"entered as data, {rule}",
                    look="tight",
                    indent=2,
                    more=f"and {more} more" if more else "",
                )
            )
        sections.append(r.Line(checked[0].upper() + checked[1:] + ".", look="note", only="html"))
        sections.append(r.Line(f"{checked}.", indent=2, only="text"))
    sections.extend(r.Line(note, look="note") for note in report.notes[:_MAX_NOTES])
    skipped = report.skipped
    if skipped:
        more = f"(showing {_MAX_NOTES} of {len(skipped)})" if len(skipped) > _MAX_NOTES else ""
        sections.append(
            r.Items(
                [(r.Span(name, "name"), f": {why}") for name, why in skipped[:_MAX_NOTES]],
                head=f"Skipped {len(skipped)} unreadable files:",
                text_head=f"skipped {len(skipped)} unreadable files:",
                more=more,
            )
        )
    return r.Report(sections, cls="msdebug-nan", style="font-size:95%")


html_report, text_report = r.renderers(build)
