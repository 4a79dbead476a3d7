"""Profile reports as escaped, bounded HTML and plain text.

Pure functions of the report objects of :mod:`msdebug.recorders.profile` (read by duck typing):
op types with their share drawn as a bar, the top single ops with the rest folded, the time of
each recorded step as an inline SVG, the ranks of a cluster profile with one rank per op type
marked (the slowest in a compute op, the straggler in a collective), and where the Chrome trace is.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from ._html import BREAK_ANYWHERE, FADED, LEFT, NOTE, STRONG, esc, scope, tag
from ._text import Column, fit_table
from .svg import line_chart

__all__ = [
    "first_step_note",
    "html_comparison",
    "html_options",
    "html_profile",
    "text_comparison",
    "text_options",
    "text_profile",
]

_MAX_TYPES = 40  # op types shown; a profile rarely has more, a hostile one might
_MAX_NOTES = 20
_MAX_LOG = 4000  # characters of MindSpore's own output kept in the HTML
_MAX_RANKS = 64
_BAR = "display:inline-block;height:.8em;background:#4a90d9;vertical-align:middle"
_TRACE_HELP = "open it at https://ui.perfetto.dev (Open trace file) or in chrome://tracing"
_NOWRAP = "white-space:nowrap"  # a time and its unit stay on one line
_PATH = "word-break:break-all"  # long paths wrap inside the output area
# Text tables: op types whole, the scope name shortened in the middle to fit the width.
_TYPE_COLUMNS = (
    Column("op type", 24),
    Column("count", 8, right=True),
    Column("total", 12, right=True),
    Column("average", 12, right=True),
    Column("share", 7, right=True),
)
_OP_COLUMNS = (
    Column("op (full scope name)", 60, fit=True),
    Column("count", 8, right=True),
    Column("total", 12, right=True),
    Column("share", 7, right=True),
)
_CHANGE_COLUMNS = (Column("before", 12, right=True), Column("after", 12, right=True), Column("speed-up", 9, right=True))
_PARTIAL = "background:#fdecea;border-left:4px solid #cf222e;padding:4px 8px;margin:4px 0"


def _ms(value: float | None) -> str:
    """A time with its unit, ``12.345 ms`` (one form everywhere, which notebook tests sanitise)."""
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.1f} ms"
    if value >= 1:
        return f"{value:.3f} ms"
    return f"{value:.4f} ms"


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"


def first_step_note(report: Any) -> str:
    """Why the first recorded step is slow, when it is: it ran one-off initialisation."""
    steps = report.steps
    run = report.runs[0] if report.runs else None
    if steps is None or run is None or run.executions is None or len(steps.numbers) < 2:
        return ""
    times = run.executions.per_step_ms
    rest = statistics.median(times[1:]) if len(times) > 1 else 0.0
    if steps.numbers[0] == 0 and (steps.first_of_process or times[0] > 3 * max(rest, 1e-9)):
        return f"step {steps.numbers[0]} includes one-off initialisation (kernel set-up, first allocation)"
    return ""


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """Cells must be escaped already (a scope name through ``scope``); the first ``left``
    columns align left, and the first of them may wrap: a long scope name never widens the
    table past the output area."""
    styles = [f"{LEFT};{BREAK_ANYWHERE}", *([LEFT] * (left - 1))]
    styles += [_NOWRAP] * (len(head) - len(styles))
    th = "".join(tag("th", esc(name), style=style) for name, style in zip(head, styles, strict=True))
    body = "".join(
        tag("tr", "".join(tag("td", cell, style=style) for cell, style in zip(row, styles, strict=True)))
        for row in rows
    )
    return tag("table", tag("thead", tag("tr", th)) + tag("tbody", body))


def _bar(share: float) -> str:
    width = max(0.0, min(1.0, share)) * 120
    return f'<span style="{_BAR};width:{width:.0f}px"></span> {esc(_pct(share))}'


def _steps_block(report: Any) -> tuple[str, list[str]]:
    steps = report.steps
    run = report.runs[0] if report.runs else None
    if steps is None or not steps.numbers:
        return "", ["steps: not marked (msdebug.step() / prof.step() mark them); the profile is one span."]
    wall = steps.wall_ms
    series = {"wall time (ms)": wall}
    if run is not None and run.executions is not None and len(run.executions.per_step_ms) == len(wall):
        series["op time (ms)"] = run.executions.per_step_ms
    note = first_step_note(report)
    text = [f"steps: {len(wall)} recorded ({steps.numbers[0]}..{steps.numbers[-1]}), wall time per step:"]
    text.append("  " + " ".join(_ms(value) for value in wall[:50]) + (" ..." if len(wall) > 50 else ""))
    if note:
        text.append("  " + note)
    if len(wall) < 2:
        return tag("div", esc(f"1 step recorded: {_ms(wall[0])} wall time"), style=NOTE), text
    marks = ((0, "init"),) if note else ()
    picture = line_chart(series, title="time per recorded step", x_label="step", y_label="ms", marks=marks)
    caption = tag("div", esc(note), style=NOTE) if note else ""
    return picture + caption, text


def _types_rows(report: Any, rank: int | None = None) -> tuple[list, int]:
    rows = report.op_types(rank)
    return rows[:_MAX_TYPES], len(rows)


def _ops_rows(report: Any) -> tuple[list, list]:
    rows = report.ops()
    return rows[: report.top], rows[report.top :]


_RANKS_HELP = (
    "compute ops: the slowest rank is marked; collectives (AllReduce, AllGather, Broadcast, ...): the straggler, "
    "the rank with the least time in it, since it arrived last and the others waited for it"
)


def _rank_marks(report: Any) -> list:
    marks = report.rank_marks(_MAX_RANKS)
    if getattr(report, "order", "time") == "name":
        return sorted(marks, key=lambda mark: mark.op_type)
    return sorted(marks, key=lambda mark: (-max(mark.per_rank.values()), mark.op_type))


def _mark_line(mark: Any) -> str:
    rank = mark.rank
    if mark.collective:
        return (
            f"{mark.op_type}: straggler rank {rank} (least time in the collective, {_ms(mark.per_rank[rank])}: "
            "it arrived last, the others waited)"
        )
    return f"{mark.op_type}: slowest rank {rank} ({_ms(mark.per_rank[rank])})"


def _summary(report: Any) -> list[str]:
    """The report's one-line summary, in parts: op time, steps recorded, mode, ranks."""
    steps = report.steps
    summary = [f"{_ms(report.total_ms)} op time"]
    if steps is not None:
        summary.append(f"{len(steps.numbers)} step(s) recorded")
        if steps.mode:
            summary.append(steps.mode)
    if len(report.runs) > 1:
        summary.append(f"{len(report.runs)} ranks")
    return summary


def html_profile(report: Any) -> str:
    """The whole report as one escaped HTML fragment."""
    parts = [tag("div", esc(f"Profile {report.path}"), style=f"{STRONG};{_PATH}")]
    steps = report.steps
    parts.append(tag("div", esc(" · ".join(_summary(report)))))
    if report.partial:
        parts.append(tag("div", esc(f"partial profile: {steps.error or 'stopped early'}"), style=_PARTIAL))
    notes = list(report.notes)
    if notes:
        shown = "".join(tag("li", esc(note)) for note in notes[:_MAX_NOTES])
        more = f"<li>... {len(notes) - _MAX_NOTES} more</li>" if len(notes) > _MAX_NOTES else ""
        parts.append(tag("ul", shown + more, style=NOTE))
    picture, _ = _steps_block(report)
    parts.append(picture)
    if len(report.runs) > 1:
        parts.append(_html_ranks(report))
    types, count = _types_rows(report)
    head = "Op types" + (f" (rank {report.runs[0].rank})" if len(report.runs) > 1 else "")
    parts.append(tag("div", esc(head), style=STRONG))
    parts.append(
        _table(
            ("op type", "occurrences", "total", "average", "share"),
            [
                (esc(row.op_type), esc(row.occurrences), esc(_ms(row.total_ms)), esc(_ms(row.avg_ms)), _bar(row.share))
                for row in types
            ],
        )
    )
    if count > len(types):
        parts.append(tag("div", esc(f"showing {len(types)} of {count} op types"), style=NOTE))
    top, rest = _ops_rows(report)
    parts.append(tag("div", esc(f"Top {len(top)} ops by total time"), style=STRONG))
    rows = [
        (
            scope(row.full_name),
            esc(row.op_type),
            esc(row.occurrences),
            esc(_ms(row.total_ms)),
            esc(_ms(row.avg_ms)),
            _bar(row.share),
        )
        for row in top
    ]
    if rest:
        rows.append(
            (
                esc(f"... {len(rest)} more ops"),
                "",
                esc(sum(row.occurrences for row in rest)),
                esc(_ms(sum(row.total_ms for row in rest))),
                "",
                _bar(sum(row.share for row in rest)),
            )
        )
    parts.append(_table(("op (full scope name)", "type", "count", "total", "average", "share"), rows, left=2))
    parts.append(_html_trace(report))
    if report.log:
        log = report.log[-_MAX_LOG:]
        cut = f" (last {_MAX_LOG} of {len(report.log)} characters)" if len(report.log) > _MAX_LOG else ""
        parts.append(
            tag("details", tag("summary", esc(f"MindSpore's own output{cut}")) + tag("pre", esc(log)), style=FADED)
        )
    return tag("div", "".join(parts), cls="msdebug-profile")


def _html_trace(report: Any) -> str:
    if report.trace is not None:
        return tag("div", esc(f"Chrome trace: {report.trace}; {_TRACE_HELP}."), style=_PATH)
    if report.timeline:
        return tag("div", esc("no Chrome trace was written (see the notes)."), style=NOTE)
    return tag(
        "div", esc("For a timeline, profile with --timeline (timeline=True): it writes a Chrome trace."), style=NOTE
    )


def _html_ranks(report: Any) -> str:
    ranks = [run.rank for run in report.runs[:_MAX_RANKS]]
    rows = []
    for mark in _rank_marks(report)[:_MAX_TYPES]:
        marked = mark.rank
        cells = [esc(mark.op_type)]
        for rank in ranks:
            text = esc(_ms(mark.per_rank.get(rank)))
            cells.append(tag("span", text + esc(f" ◀ {mark.label}"), style=STRONG) if rank == marked else text)
        rows.append(cells)
    head = ["op type", *(f"rank {rank}" for rank in ranks)]
    totals_row = " · ".join(f"rank {run.rank}: {_ms(run.total_ms)}" for run in report.runs[:_MAX_RANKS])
    more = f" (showing {_MAX_RANKS} of {len(report.runs)} ranks)" if len(report.runs) > _MAX_RANKS else ""
    return (
        tag("div", esc("Ranks" + more), style=STRONG)
        + tag("div", esc(_RANKS_HELP), style=NOTE)
        + tag("div", esc(totals_row))
        + _table(head, rows)
    )


def text_profile(report: Any) -> str:
    """The report as plain text (the same tables, for a terminal)."""
    lines = [f"Profile {report.path}"]
    steps = report.steps
    lines.append(", ".join(_summary(report)))
    if report.partial:
        lines.append(f"PARTIAL: {steps.error or 'stopped early'}")
    lines.extend(f"note: {note}" for note in list(report.notes)[:_MAX_NOTES])
    _, step_lines = _steps_block(report)
    lines.extend(step_lines)
    if len(report.runs) > 1:
        lines.append("ranks: " + ", ".join(f"{run.rank}={_ms(run.total_ms)}" for run in report.runs[:_MAX_RANKS]))
        lines.append(f"  ({_RANKS_HELP})")
        lines.extend(f"  {_mark_line(mark)}" for mark in _rank_marks(report)[:15] if mark.rank is not None)
    types, count = _types_rows(report)
    lines.append("")
    lines.extend(
        fit_table(
            _TYPE_COLUMNS,
            [(row.op_type, row.occurrences, _ms(row.total_ms), _ms(row.avg_ms), _pct(row.share)) for row in types],
        )
    )
    if count > len(types):
        lines.append(f"(showing {len(types)} of {count} op types)")
    top, rest = _ops_rows(report)
    lines.append("")
    rows = [(row.full_name, row.occurrences, _ms(row.total_ms), _pct(row.share)) for row in top]
    if rest:
        rows.append(
            (
                f"... {len(rest)} more ops",
                sum(r.occurrences for r in rest),
                _ms(sum(r.total_ms for r in rest)),
                _pct(sum(r.share for r in rest)),
            )
        )
    lines.extend(fit_table(_OP_COLUMNS, rows))
    if report.trace is not None:
        lines.append(f"Chrome trace: {report.trace} ({_TRACE_HELP})")
    return "\n".join(lines)


# --------------------------------------------------------------------------- comparison


def _speedup(change: Any) -> str:
    if change.status != "both":
        return change.status
    value = change.speedup
    return "-" if value is None else f"{value:.2f}x"


def html_comparison(comparison: Any, top: int) -> str:
    """Before / after per op type and per op, biggest change first."""
    total = comparison.before_ms / comparison.after_ms if comparison.after_ms else None
    parts = [
        tag("div", esc(f"Before: {comparison.before}"), style=STRONG),
        tag("div", esc(f"After: {comparison.after}"), style=STRONG),
        tag(
            "div",
            esc(
                f"op time {_ms(comparison.before_ms)} -> {_ms(comparison.after_ms)}"
                + (f" ({total:.2f}x)" if total else "")
            ),
        ),
    ]
    for title, changes in (("Op types", comparison.op_types), ("Ops", comparison.ops)):
        shown = changes[:top]
        rows = [
            (scope(change.name), esc(_ms(change.before_ms)), esc(_ms(change.after_ms)), esc(_speedup(change)))
            for change in shown
        ]
        parts.append(tag("div", esc(title), style=STRONG))
        parts.append(_table(("name", "before", "after", "speed-up"), rows))
        if len(changes) > len(shown):
            parts.append(tag("div", esc(f"showing {len(shown)} of {len(changes)}, biggest change first"), style=NOTE))
    return tag("div", "".join(parts), cls="msdebug-profile-compare")


def text_comparison(comparison: Any, top: int) -> str:
    """The comparison as plain text."""
    lines = [
        f"before: {comparison.before}",
        f"after:  {comparison.after}",
        f"op time {_ms(comparison.before_ms)} -> {_ms(comparison.after_ms)}",
    ]
    for title, changes in (("op types", comparison.op_types), ("ops", comparison.ops)):
        lines.append("")
        columns = (Column(title, 60, fit=title == "ops"), *_CHANGE_COLUMNS)
        rows = [(c.name, _ms(c.before_ms), _ms(c.after_ms), _speedup(c)) for c in changes[:top]]
        lines.extend(fit_table(columns, rows))
        if len(changes) > top:
            lines.append(f"(showing {top} of {len(changes)}, biggest change first)")
    return "\n".join(lines)


# --------------------------------------------------------------------------- options


def text_options(options: Any) -> str:
    """``MS_PROFILER_OPTIONS`` as set, its notes, and the first cell of a fresh kernel."""
    lines = [f"MS_PROFILER_OPTIONS={options.json}" + ("" if options.applied else "  (validated, not set)")]
    lines.extend(f"note: {note}" for note in options.notes)
    lines.append("first cell of a fresh kernel:")
    lines.extend("    " + line for line in options.first_cell.splitlines())
    return "\n".join(lines)


def html_options(options: Any) -> str:
    """The same as :func:`text_options`, as HTML."""
    head = tag(
        "div",
        tag("code", esc(f"MS_PROFILER_OPTIONS={options.json}"))
        + ("" if options.applied else esc("  (validated, not set)")),
    )
    notes = tag("ul", "".join(tag("li", esc(note)) for note in options.notes), style=NOTE) if options.notes else ""
    cell = tag("div", esc("First cell of a fresh kernel:")) + tag("pre", esc(options.first_cell))
    return tag("div", head + notes + cell)
