"""Profile reports as escaped, bounded HTML and plain text.

Pure functions of the report objects of :mod:`msdebug.dumps.profile` (read by duck typing):
op types with their share drawn as a bar, the top single ops with the rest folded, the time of
each recorded step as an inline SVG, the ranks of a cluster profile with one rank per op type
marked (the slowest in a compute op, the straggler in a collective), and where the Chrome trace is.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from . import report as r
from ._text import Column
from .svg import line_chart

__all__ = [
    "build_comparison",
    "build_options",
    "build_profile",
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
_TRACE_HELP = "open it at https://ui.perfetto.dev (Open trace file) or in chrome://tracing"
# Tables: the HTML head of each column, and its text column (op types whole, the scope name
# shortened in the middle to fit the width; None: HTML only).
_TYPE_TABLE = (
    r.Col("op type", Column("op type", 24), left=True),
    r.Col("occurrences", Column("count", 8, right=True)),
    r.Col("total", Column("total", 12, right=True)),
    r.Col("average", Column("average", 12, right=True)),
    r.Col("share", Column("share", 7, right=True)),
)
_OP_TABLE = (
    r.Col("op (full scope name)", Column("op (full scope name)", 60, fit=True), left=True),
    r.Col("type", left=True),
    r.Col("count", Column("count", 8, right=True)),
    r.Col("total", Column("total", 12, right=True)),
    r.Col("average"),
    r.Col("share", Column("share", 7, right=True)),
)
_CHANGE_TABLE = (
    r.Col("before", Column("before", 12, right=True)),
    r.Col("after", Column("after", 12, right=True)),
    r.Col("speed-up", Column("speed-up", 9, right=True)),
)


def _ms(value: float | None) -> str:
    """A time with its unit, ``12.345 ms`` (one form everywhere, which notebook tests sanitise)."""
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.1f} ms"
    if value >= 1:
        return f"{value:.3f} ms"
    return f"{value:.4f} ms"


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


def _steps_sections(report: Any) -> list:
    """The time of each recorded step: a picture in HTML, the times in a line of text."""
    steps = report.steps
    run = report.runs[0] if report.runs else None
    if steps is None or not steps.numbers:
        return [
            r.Line("steps: not marked (msdebug.step() / prof.step() mark them); the profile is one span.", only="text")
        ]
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
        return [
            r.Line(f"1 step recorded: {_ms(wall[0])} wall time", look="note", only="html"),
            r.Pre("\n".join(text), only="text"),
        ]
    marks = ((0, "init"),) if note else ()
    return [
        r.Figure(
            lambda: line_chart(series, title="time per recorded step", x_label="step", y_label="ms", marks=marks),
            caption=note,
            text=text,
        )
    ]


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


def _joined(parts: Sequence[str]) -> list:
    """``parts`` with a separator between them: `` · `` in HTML, ``, `` in text."""
    runs: list = []
    for index, part in enumerate(parts):
        runs.extend((r.Sep(), part) if index else (part,))
    return runs


def build_profile(report: Any) -> r.Report:
    """The profile report's sections."""
    sections: list = [r.Line(f"Profile {report.path}", look="title"), r.Line(_joined(_summary(report)))]
    steps = report.steps
    if report.partial:
        error = steps.error or "stopped early"
        sections.append(r.Line(f"partial profile: {error}", look="partial", only="html"))
        sections.append(r.Line(f"PARTIAL: {error}", only="text"))
    notes = list(report.notes)
    if notes:
        more = f"... {len(notes) - _MAX_NOTES} more" if len(notes) > _MAX_NOTES else ""
        sections.append(r.Items(notes[:_MAX_NOTES], look="note", prefix="note: ", more=more))
    sections.extend(_steps_sections(report))
    if len(report.runs) > 1:
        sections.extend(_rank_sections(report))
    types, count = _types_rows(report)
    head = "Op types" + (f" (rank {report.runs[0].rank})" if len(report.runs) > 1 else "")
    sections += [r.Line(head, look="strong", only="html"), r.Line("", only="text")]
    rows = [(row.op_type, str(row.occurrences), _ms(row.total_ms), _ms(row.avg_ms), r.Bar(row.share)) for row in types]
    sections.append(r.Table(_TYPE_TABLE, rows))
    if count > len(types):
        sections.append(r.Line(f"showing {len(types)} of {count} op types", look="aside"))
    top, rest = _ops_rows(report)
    sections += [r.Line(f"Top {len(top)} ops by total time", look="strong", only="html"), r.Line("", only="text")]
    rows = [
        (
            r.Span(row.full_name, "scope-plain"),
            row.op_type,
            str(row.occurrences),
            _ms(row.total_ms),
            _ms(row.avg_ms),
            r.Bar(row.share),
        )
        for row in top
    ]
    if rest:
        rows.append(
            (
                f"... {len(rest)} more ops",
                "",
                str(sum(row.occurrences for row in rest)),
                _ms(sum(row.total_ms for row in rest)),
                "",
                r.Bar(sum(row.share for row in rest)),
            )
        )
    sections.append(r.Table(_OP_TABLE, rows))
    if report.trace is not None:
        sections.append(r.Line(f"Chrome trace: {report.trace}; {_TRACE_HELP}.", look="path", only="html"))
        sections.append(r.Line(f"Chrome trace: {report.trace} ({_TRACE_HELP})", only="text"))
    elif report.timeline:
        sections.append(r.Line("no Chrome trace was written (see the notes).", look="note", only="html"))
    else:
        sections.append(
            r.Line(
                "For a timeline, profile with --timeline (timeline=True): it writes a Chrome trace.",
                look="note",
                only="html",
            )
        )
    if report.log:
        cut = f" (last {_MAX_LOG} of {len(report.log)} characters)" if len(report.log) > _MAX_LOG else ""
        summary = f"MindSpore's own output{cut}"
        sections.append(r.Pre(report.log[-_MAX_LOG:], summary=summary, look="faded", only="html"))
    return r.Report(sections, cls="msdebug-profile")


def _rank_sections(report: Any) -> list:
    """The ranks of a cluster profile: a table with the marked rank of each op type in HTML,
    the marks in words in text."""
    runs = report.runs[:_MAX_RANKS]
    ranks = [run.rank for run in runs]
    marks = _rank_marks(report)
    rows = []
    for mark in marks[:_MAX_TYPES]:
        cells: list = [mark.op_type]
        for rank in ranks:
            value = _ms(mark.per_rank.get(rank))
            cells.append(r.Span(f"{value} ◀ {mark.label}", "strong") if rank == mark.rank else value)
        rows.append(cells)
    more = f" (showing {_MAX_RANKS} of {len(report.runs)} ranks)" if len(report.runs) > _MAX_RANKS else ""
    columns = [r.Col("op type", left=True), *(r.Col(f"rank {rank}") for rank in ranks)]
    return [
        r.Line("Ranks" + more, look="strong", only="html"),
        r.Line(_RANKS_HELP, look="note", only="html"),
        r.Line(_joined([f"rank {run.rank}: {_ms(run.total_ms)}" for run in runs]), only="html"),
        r.Table(columns, rows, only="html"),
        r.Line("ranks: " + ", ".join(f"{run.rank}={_ms(run.total_ms)}" for run in runs), only="text"),
        r.Line(_RANKS_HELP, look="aside", indent=2, only="text"),
        r.Items([_mark_line(mark) for mark in marks[:15] if mark.rank is not None], indent=2, only="text"),
    ]


html_profile, text_profile = r.renderers(build_profile)


# --------------------------------------------------------------------------- comparison


def _speedup(change: Any) -> str:
    if change.status != "both":
        return change.status
    value = change.speedup
    return "-" if value is None else f"{value:.2f}x"


def build_comparison(comparison: Any, top: int) -> r.Report:
    """Before / after per op type and per op, biggest change first."""
    total = comparison.before_ms / comparison.after_ms if comparison.after_ms else None
    op_time = f"op time {_ms(comparison.before_ms)} -> {_ms(comparison.after_ms)}"
    sections: list = [
        r.Line(f"Before: {comparison.before}", look="strong", only="html"),
        r.Line(f"After: {comparison.after}", look="strong", only="html"),
        r.Line(op_time + (f" ({total:.2f}x)" if total else ""), only="html"),
        r.Line(f"before: {comparison.before}", only="text"),
        r.Line(f"after:  {comparison.after}", only="text"),
        r.Line(op_time, only="text"),
    ]
    for title, changes in (("Op types", comparison.op_types), ("Ops", comparison.ops)):
        shown = changes[:top]
        name = title.lower()
        columns = (r.Col("name", Column(name, 60, fit=name == "ops"), left=True), *_CHANGE_TABLE)
        rows = [(r.Span(c.name, "scope-plain"), _ms(c.before_ms), _ms(c.after_ms), _speedup(c)) for c in shown]
        sections += [r.Line(title, look="strong", only="html"), r.Line("", only="text"), r.Table(columns, rows)]
        if len(changes) > len(shown):
            sections.append(r.Line(f"showing {len(shown)} of {len(changes)}, biggest change first", look="aside"))
    return r.Report(sections, cls="msdebug-profile-compare")


html_comparison, text_comparison = r.renderers(build_comparison)


# --------------------------------------------------------------------------- options


def build_options(options: Any) -> r.Report:
    """``MS_PROFILER_OPTIONS`` as set, its notes, and the first cell of a fresh kernel."""
    sections: list = [
        r.Line(
            (r.Span(f"MS_PROFILER_OPTIONS={options.json}", "name"), "" if options.applied else "  (validated, not set)")
        )
    ]
    if options.notes:
        sections.append(r.Items(options.notes, look="note", prefix="note: "))
    sections += [
        r.Line("First cell of a fresh kernel:", only="html"),
        r.Line("first cell of a fresh kernel:", only="text"),
        r.Pre(options.first_cell, indent=4),
    ]
    return r.Report(sections)


html_options, text_options = r.renderers(build_options)
