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


def build(report) -> r.Report:
    """The first-NaN report's sections."""
    sections: list = []
    checked = _checked(report)
    culprit = report.culprit
    if culprit is None:
        sections.append(r.Line((r.Span("All finite", "good-strong"), f": {checked}.")))
    else:
        sections.append(
            r.Line(
                (
                    r.Span(f"First non-finite value: {culprit.kind}", "bad"),
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
