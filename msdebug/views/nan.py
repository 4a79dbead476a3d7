"""Renderers for the first-NaN report (``%%msnan``, ``.nan()``, ``msdebug dump --nan``): HTML and text.

Pure: the report comes in by duck typing (:mod:`msdebug.dumps.nan`); everything from a dump is
escaped and every list is bounded.
"""

from __future__ import annotations

from ._html import NOTE, STRONG, esc, scope, tag
from .datadump import _MAX_NOTES, _STAT_HEAD, BAD, GOOD, _fit, _size, _stat_cells, _stat_text, _table

__all__ = ["html_report", "text_report"]


# --------------------------------------------------------------------------- the report


def _checked(report) -> str:
    """``checked N ops and M tensors (size) in S s (mode)``: the line both renderers end with."""
    return (
        f"checked {report.checked_ops} ops and {report.checked_tensors} tensors"
        + (f" ({_size(report.checked_bytes)})" if report.checked_bytes else "")
        + f" in {report.seconds:.2f} s ({report.mode})"
    )


def html_report(report) -> str:
    parts = []
    checked = _checked(report)
    culprit = report.culprit
    if culprit is None:
        parts.append(tag("div", tag("span", "All finite", style=GOOD + ";" + STRONG) + esc(f": {checked}.")))
    else:
        head = (
            tag("span", esc(f"First non-finite value: {culprit.kind}"), style=BAD)
            + esc(" at ")
            + tag("code", scope(culprit.name))
            + esc(f" ({culprit.op_type}), {culprit.slot}")
            + (esc(f"; {culprit.where}") if culprit.where else "")
        )
        parts.append(tag("div", head))
        parts.append(tag("div", esc(culprit.verdict)))
        if culprit.note:
            parts.append(tag("div", esc(culprit.note), style=NOTE))
        if culprit.line:
            place, code = culprit.place, culprit.first_code
            line = tag("span", esc(place), style=STRONG) + (esc(": ") + tag("code", esc(code)) if code else "")
            title = esc(culprit.source)
            parts.append(f'<div title="{title}">{line}</div>')
        rows = [[esc(s.label), *_stat_cells(s.stats)] for s in (*culprit.inputs, *culprit.outputs)]
        if rows:
            parts.append(_table(["tensor", *_STAT_HEAD], rows))
        if culprit.reached:
            items = "".join(
                tag("li", tag("code", scope(r.name)) + esc(f" ({r.op_type}): {r.outcome}")) for r in culprit.reached
            )
            parts.append(tag("div", esc("Downstream ops it reached:") + tag("ul", items, style="margin:2px 0")))
        parts.append(tag("div", esc(checked[0].upper() + checked[1:] + "."), style=NOTE))
    for note in report.notes[:_MAX_NOTES]:
        parts.append(tag("div", esc(note), style=NOTE))
    if report.skipped:
        shown = "".join(tag("li", tag("code", esc(n)) + esc(f": {why}")) for n, why in report.skipped[:_MAX_NOTES])
        more = f" (showing {_MAX_NOTES} of {len(report.skipped)})" if len(report.skipped) > _MAX_NOTES else ""
        parts.append(tag("div", esc(f"Skipped {len(report.skipped)} unreadable files{more}:") + tag("ul", shown)))
    return tag("div", "".join(parts), cls="msdebug-nan", style="font-size:95%")


def text_report(report) -> str:
    lines = []
    checked = _checked(report)
    culprit = report.culprit
    if culprit is None:
        lines.append(f"All finite: {checked}.")
    else:
        where = f"; {culprit.where}" if culprit.where else ""
        lines.append(
            f"First non-finite value: {culprit.kind} at {culprit.name} ({culprit.op_type}), {culprit.slot}{where}"
        )
        lines.append(f"  {culprit.verdict}")
        if culprit.note:
            lines.append(f"  {culprit.note}")
        if culprit.line:
            lines.append(f"  {culprit.line}")
        for slot in (*culprit.inputs, *culprit.outputs):
            lines.append(f"  {slot.label}: {_stat_text(slot.stats)}")
        if culprit.reached:
            lines.append("  downstream ops it reached:")
            lines.extend(
                f"    {_fit(r.name, 4 + len(f' ({r.op_type}): {r.outcome}'))} ({r.op_type}): {r.outcome}"
                for r in culprit.reached
            )
        lines.append(f"  {checked}.")
    lines.extend(report.notes[:_MAX_NOTES])
    if report.skipped:
        lines.append(f"skipped {len(report.skipped)} unreadable files:")
        lines.extend(f"  {name}: {why}" for name, why in report.skipped[:_MAX_NOTES])
        if len(report.skipped) > _MAX_NOTES:
            lines.append(f"  (showing {_MAX_NOTES} of {len(report.skipped)})")
    return "\n".join(lines)
