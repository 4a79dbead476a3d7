"""``%%mswatch``'s pictures: the live table of watched tensors and the report after the run.

Pure functions of a watch history (:mod:`msdebug.dumps.watch`, read by duck typing): the
live table has one row per watched tensor (name, kind, shape) and, per statistic, its last
value over a sparkline of every recorded step; the first tripping step is highlighted (its
row, and a red mark on each sparkline). The report says the condition and its thresholds,
the tensor, the step, the values against the thresholds, where the Cell or the loss is
defined, and draws the tripped tensor's history. Everything from the history is escaped (a
parameter's name may be anything) and bounded: at most ``MAX_ROWS`` tensors, the tripped
ones first, and a line says how many were left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from . import report as r
from ._text import Column
from .svg import line_chart, sparkline

__all__ = [
    "MAX_ROWS",
    "build_live",
    "build_ranks",
    "build_report",
    "html_live",
    "html_ranks",
    "html_report",
    "text_live",
    "text_ranks",
    "text_report",
]

MAX_ROWS = 40  # tensors in the table; a net may have thousands
_MAX_TRIPS = 20  # other trips listed under the first
_MAX_CONDITIONS = 30
_SPARK_W, _SPARK_H = 96, 22
# The statistics' column order (dumps.watch.STATS), with the head each column shows.
_HEADS = {
    "max": "max",
    "min": "min",
    "mean": "mean",
    "abs_mean": "|mean|",
    "l2": "L2",
    "zero_share": "zeros",
    "nonfinite": "non-finite",
}
_STATS = tuple(_HEADS)
# A trip's compared value -> the columns it comes from (dumps.watch names a few values of its own).
_COMPARED = {
    "zero_percentage": ("zero_share",),
    "max_min": ("max", "min"),
    "range_percentage": ("max", "min"),
    "update_abs_mean": ("abs_mean",),
    "prev_abs_mean": ("abs_mean",),
    "abs_mean_update_ratio": ("abs_mean",),
    "steps_since_best": ("mean",),
    "best": ("mean",),
}
_KIND_WORDS = {"weight": "parameter", "grad": "gradient of", "act": "activation of Cell", "loss": "loss"}
_MARK = '<line x1="{x}" y1="0" x2="{x}" y2="{h}" stroke="#cf222e" stroke-width="1.5" stroke-dasharray="2 1"/>'


def _num(value: Any) -> str:
    """A statistic as a person reads it: 4 significant digits, ``nan``/``inf`` as such."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == int(value) and abs(value) < 1e6:
        return str(int(value))
    return f"{value:.4g}"


def _stats_of(history: Any) -> Sequence[str]:
    return tuple(getattr(history, "STATS", None) or _STATS)


def _shape(watched: Any) -> str:
    shape = tuple(getattr(watched, "shape", ()) or ())
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def _first_trip(history: Any) -> Any:
    first = getattr(history, "first_trip", None)
    trips = list(getattr(history, "trips", ()) or ())
    return first if first is not None else (trips[0] if trips else None)


def _tripped_names(history: Any) -> dict[tuple[str, str], Any]:
    """Each tripped tensor's first trip by ``(kind, name)`` (a weight and its gradient share a
    name), in the order they tripped."""
    found: dict[tuple[str, str], Any] = {}
    for trip in getattr(history, "trips", ()) or ():
        found.setdefault((trip.kind, trip.name), trip)
    return found


def _compared(trip: Any) -> set[str]:
    """The statistics (columns) a trip compared: its values, named as the table's columns."""
    found: set[str] = set()
    for key in getattr(trip, "values", {}) or {}:
        found.update(_COMPARED.get(key, (key,)))
    return found


def _stats_table(history: Any, watched: Any) -> Any:
    """The tensor's statistics per recorded step, or None when the history has none for it."""
    try:
        return history.stats(watched.name, watched.kind)
    except (LookupError, ValueError):
        return None


def _shown(history: Any) -> tuple[list[Any], int]:
    """The tensors the table shows: the loss, the tripped ones, then the rest in the order they
    are watched, at most ``MAX_ROWS``; and how many were left out."""
    watched = list(history.watched)
    tripped = _tripped_names(history)
    order = {name: index for index, name in enumerate(tripped)}

    def rank(item: tuple[int, Any]) -> tuple[int, int, int]:
        index, w = item
        if w.kind == "loss":
            return (0, 0, index)
        if (w.kind, w.name) in order:
            return (1, order[(w.kind, w.name)], index)
        return (2, 0, index)

    ordered = [w for _, w in sorted(enumerate(watched), key=rank)]
    return ordered[:MAX_ROWS], max(0, len(ordered) - MAX_ROWS)


def _columns(history: Any) -> list[r.Col]:
    stats = _stats_of(history)
    share = max(4, 63 // max(1, len(stats)))  # percent of the output area's width per statistic
    columns = [
        r.Col("tensor", Column("tensor", 16, fit=True), left=True, width=100 - 17 - share * len(stats)),
        r.Col("kind", Column("kind", 4), left=True, width=7),
        r.Col("shape", Column("shape", 5), left=True, width=10),
    ]
    columns += [r.Col(_HEADS.get(s, s), Column(_HEADS.get(s, s), 8, right=True), width=share) for s in stats]
    return columns


def _spark(values: Sequence[float], title: str, mark: int | None) -> str:
    """A sparkline, with a red mark at index ``mark`` (the first tripping step)."""
    svg = sparkline(values, width=_SPARK_W, height=_SPARK_H, title=title)
    if mark is None or not values:
        return svg
    # The same x as the sparkline's own points (svg.sparkline: 1 px margins, index over the span).
    x = 1 + (_SPARK_W - 2) * mark / max(1, len(values) - 1)
    line = _MARK.format(x=f"{x:.1f}", h=_SPARK_H)
    return svg[: -len("</svg>")] + line + "</svg>"


def _row(history: Any, watched: Any, steps: Sequence[int], trip: Any) -> r.Row:
    stats = _stats_of(history)
    table = _stats_table(history, watched)
    count = 0 if table is None else len(table)
    mark = None
    if trip is not None:
        where = [i for i, step in enumerate(steps) if int(step) == int(trip.step)]
        mark = where[0] if where else None
    compared = _compared(trip) if trip is not None else set()
    scope = getattr(watched, "scope", "") or ""
    # HTML: the name, its Cell scope and the trip under it; text: the name, a star when it tripped.
    first: list = [
        r.Line(r.Span(watched.name, "scope"), only="html"),
        r.Line(("* " if trip is not None else "") + str(watched.name), only="text"),
    ]
    if scope and scope != watched.name:
        first.append(r.Line(f"in {scope}", look="faded-note", only="html"))
    if trip is not None:
        first.append(r.Line(f"tripped at step {trip.step}", look="bad", only="html"))
    cells: list = [
        r.Cell(r.Block(first)),
        r.Cell(watched.kind),
        r.Cell(_shape(watched), title=f"{_shape(watched)} {getattr(watched, 'dtype', '')}".strip()),
    ]
    # a statistic a step did not compute (a GRAPH step's hooks count an activation's zeros alone
    # when that is all the conditions ask): its non-finite count is NaN too, and it shows as "-"
    computed = not count or "nonfinite" not in stats or not math.isnan(float(table[-1, stats.index("nonfinite")]))
    for column, stat in enumerate(stats):
        values = [float(v) for v in table[:, column]] if count else []
        last = _num(values[-1]) if values and (computed or not math.isnan(values[-1])) else "-"
        title = f"{watched.name} {stat}"
        sections: list = [r.Line(r.Span(last, "b-bad") if stat in compared else last)]
        if len(values) > 1:
            sections.append(r.Figure(lambda v=values, t=title: _spark(v, t, mark)))
        cells.append(r.Cell(r.Block(sections), look="cell-marked" if stat in compared else "cell"))
    return r.Row(cells, look="partial" if trip is not None else "")


def _table(history: Any) -> list:
    shown, left_out = _shown(history)
    steps = [int(s) for s in getattr(history, "steps", ())]
    tripped = _tripped_names(history)
    rows = [_row(history, w, steps, tripped.get((w.kind, w.name))) for w in shown]
    sections: list = [r.Table(_columns(history), rows, look="grid")] if rows else []
    if tripped and rows:
        sections.append(r.Line("(* tripped)", only="text"))
    if left_out:
        total = len(list(history.watched))
        sections.append(
            r.Line(
                f"showing {len(shown)} of {total} tensors (the loss and the tripped ones first); "
                f"{left_out} left out: msdebug.last_watch() has them all",
                look="note",
            )
        )
    return sections


def _counts(history: Any) -> str:
    """``3 weights, 3 grads, 2 acts, the loss``."""
    kinds: dict[str, int] = {}
    for w in history.watched:
        kinds[w.kind] = kinds.get(w.kind, 0) + 1
    parts = []
    for kind, word in (("weight", "weight"), ("grad", "grad"), ("act", "act")):
        if kinds.get(kind):
            parts.append(f"{kinds[kind]} {word}{'s' if kinds[kind] != 1 else ''}")
    if kinds.get("loss"):
        parts.append("the loss")
    return ", ".join(parts) or "no tensor"


def _conditions(history: Any) -> str:
    conditions = [str(c) for c in getattr(history, "conditions", ()) or ()]
    shown = ", ".join(conditions[:_MAX_CONDITIONS])
    more = f" and {len(conditions) - _MAX_CONDITIONS} more" if len(conditions) > _MAX_CONDITIONS else ""
    return (shown + more) or "none"


def _status(history: Any) -> str:
    steps = len(getattr(history, "steps", ()))
    every = getattr(history, "every", None)
    each = f" every {every} steps" if isinstance(every, int) and every > 1 else ""
    last = f", last step {int(history.steps[-1])}" if steps else ""
    return f"watching {_counts(history)}{each}: {steps} step{'s' if steps != 1 else ''} recorded{last}"


def _notes(history: Any) -> list:
    """What the session said about the run (what it could not see), at most a few."""
    notes = [str(n) for n in getattr(history, "notes", ()) or ()]
    return [r.Line(note, look="boxed-note") for note in notes[:_MAX_CONDITIONS]]


def build_live(history: Any) -> r.Report:
    """The table while the run goes on: one line of status, the first trip, the table."""
    sections: list = [r.Line(_status(history), look="strong")]
    trip = _first_trip(history)
    if trip is not None:
        sections.append(r.Line((r.Span("Tripped: ", "bad"), trip.message), look="boxed-strong"))
    sections.extend(_table(history))
    return r.Report(sections, cls="msdebug-watch", style="font-size:95%")


def _tensor_words(watched: Any, trip: Any) -> tuple:
    kind = getattr(watched, "kind", None) or trip.kind
    word = _KIND_WORDS.get(kind, kind)
    if kind == "loss":
        return ("the loss",)
    scope = getattr(watched, "scope", "") if watched is not None else ""
    runs: tuple = (f"{word} ", r.Span(trip.name, "scope"))
    if scope and scope != trip.name:
        runs += (" (scope ", r.Span(scope, "scope"), ")")
    if watched is not None:
        runs += (f", shape {_shape(watched)} {getattr(watched, 'dtype', '')}".rstrip(),)
    return runs


def _against(trip: Any) -> str:
    """``abs_mean 3e-09 against abs_mean_lt 1e-07``."""
    values = ", ".join(f"{k} {_num(v)}" for k, v in (getattr(trip, "values", {}) or {}).items())
    limits = ", ".join(f"{k} {_num(v)}" for k, v in (getattr(trip, "thresholds", {}) or {}).items())
    return f"{values or '-'} against {limits or '-'}"


def _chart(history: Any, watched: Any, trip: Any) -> list:
    """The tripped tensor's history: the compared statistics (or all) over the steps."""
    stats = _stats_of(history)
    table = _stats_table(history, watched)
    steps = [int(s) for s in history.steps]
    if table is None or len(table) == 0:
        return []
    compared = [s for s in stats if s in _compared(trip)] or [s for s in ("max", "min", "mean", "l2") if s in stats]
    series = {_HEADS.get(s, s): [float(v) for v in table[:, stats.index(s)]] for s in compared}
    marks = [(i, f"tripped: step {trip.step}") for i, step in enumerate(steps) if step == int(trip.step)][:1]
    first, last = (steps[0], steps[-1]) if steps else (0, 0)
    return _history_figure(
        series, steps, marks, f"history of {trip.name} over steps {first}..{last}:",
        f"{trip.name}: {', '.join(series)} per step",
        f"{len(steps)} recorded steps; the red line is the first tripping step",
    )  # fmt: skip


def _history_figure(series: dict, steps: list[int], marks: list, heading: str, title: str, caption: str) -> list:
    """One line chart of ``series`` over ``steps`` (a red mark at ``marks``), and its text form:
    ``heading``, then the last 12 values of each series."""
    text = [heading]
    for name, values in series.items():
        tail = values[-12:]
        text.append(
            f"  {name}: " + " ".join(_num(v) for v in tail) + (f" (last {len(tail)})" if len(values) > 12 else "")
        )
    first, last = (steps[0], steps[-1]) if steps else (0, 0)
    return [
        r.Figure(
            lambda: line_chart(
                series, width=720, height=160, title=title, x_label=f"step {first}..{last}", marks=marks
            ),
            caption=caption,
            text=text,
        )
    ]


def build_report(history: Any, note: str = "") -> r.Report:
    """After the run: what tripped first, with its values, thresholds and history; or how many
    steps were watched and that nothing tripped (never "all good" when nothing was watched).
    ``note`` says why the report is partial (``interrupted``)."""
    watched = list(history.watched)
    steps = len(getattr(history, "steps", ()))
    trip = _first_trip(history)
    conditions = _conditions(history)
    sections: list = [r.Line(f"partial watch: {note}", look="partial")] if note else []
    if trip is None:
        if not watched:
            sections.append(
                r.Line(
                    (r.Span("Nothing watched", "bad"), f": no tensor matched the conditions ({conditions})."),
                )
            )
        elif steps == 0:
            sections.append(
                r.Line(
                    (
                        r.Span("0 steps watched", "bad"),
                        f": {_counts(history)} watched, but no step ended (a loop needs msdebug.step(); "
                        f"Model.train needs the watch's callback); nothing was checked.",
                    )
                )
            )
        else:
            plural = "s" if steps != 1 else ""
            sections.append(
                r.Line(
                    (
                        r.Span(f"{steps} step{plural} watched, nothing tripped", "good-strong"),
                        f": conditions {conditions}; {_counts(history)}.",
                    )
                )
            )
        sections.extend(_notes(history))
        sections.extend(_table(history))
        return r.Report(sections, cls="msdebug-watch", style="font-size:95%")
    by_key = {(w.kind, w.name): w for w in watched}
    w = by_key.get((trip.kind, trip.name))
    stopped = bool(getattr(history, "stopped", False))
    sections.append(r.Line((r.Span(f"Tripped at step {trip.step}: ", "bad"), trip.message), look="boxed-strong"))
    limits = ", ".join(f"{k}={_num(v)}" for k, v in (getattr(trip, "thresholds", {}) or {}).items())
    pairs: list = [
        ("condition", r.Span(trip.condition, "code")),
        ("threshold", limits or "-"),
        ("tensor", _tensor_words(w, trip)),
        ("step", str(trip.step)),
        ("values", _against(trip)),
    ]
    defined = getattr(w, "defined_at", "") if w is not None else ""
    pairs.append(
        (
            "defined at",
            r.Span(defined, "strong") if defined else "unknown (not defined in a notebook cell or file msdebug saw)",
        )
    )
    pairs.append(
        (
            "training",
            f"stopped at the end of step {trip.step}: the model and the optimizer are as that step left them"
            if stopped
            else f"went on (--no-stop); {steps} steps watched in all",
        )
    )
    # HTML: a full-width table of fields, whose cells wrap a long name anywhere; text: key: value lines.
    sections.append(
        r.Table(
            (r.Col("", width=14), r.Col("", width=86)), [list(p) for p in pairs], look="full", head=False, only="html"
        )
    )
    sections.append(r.KeyValues(pairs, only="text"))
    if w is not None:
        sections.extend(_chart(history, w, trip))
    trips = list(getattr(history, "trips", ()) or ())
    others = [t for t in trips if t is not trip]
    if others:
        more = f"and {len(others) - _MAX_TRIPS} more" if len(others) > _MAX_TRIPS else ""
        sections.append(
            r.Items(
                [t.message for t in others[:_MAX_TRIPS]],
                head=f"Also tripped ({len(others)}):",
                text_head=f"also tripped ({len(others)}):",
                look="boxed-note",
                more=more,
            )
        )
    sections.append(r.Line(f"conditions: {conditions}", look="note"))
    sections.extend(_notes(history))
    sections.append(r.Line(_status(history), look="note"))
    sections.extend(_table(history))
    return r.Report(sections, cls="msdebug-watch", style="font-size:95%")


# --------------------------------------------------------------------------- on ranks

_MAX_FINDINGS = 20  # divergences listed; the first has its chart
_MAX_RANK_LINES = 20  # ranks named one a line in the trips


def _listed(ranks: Sequence[int]) -> str:
    """``0-3, 6``: ranks as runs of consecutive numbers."""
    runs: list[list[int]] = []
    for rank in sorted(ranks):
        if runs and rank == runs[-1][1] + 1:
            runs[-1][1] = rank
        else:
            runs.append([rank, rank])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _rank_word(ranks: Sequence[int]) -> str:
    return f"rank{'s' if len(ranks) != 1 else ''} {_listed(ranks)}"


def _trips_section(merged: Any) -> list:
    histories = merged.histories
    tripped = {rank: _first_trip(h) for rank, h in sorted(histories.items()) if _first_trip(h) is not None}
    quiet = [rank for rank in sorted(histories) if rank not in tripped]
    if not tripped:
        conditions = _conditions(next(iter(histories.values()))) if histories else "none"
        return [
            r.Line(
                (r.Span("no rank tripped", "good-strong"), f": {_rank_word(quiet)} watched; conditions {conditions}.")
            )
        ]
    steps = {rank: trip.step for rank, trip in tripped.items()}
    head = f"{_rank_word(list(tripped))} tripped" + (
        f" at step {next(iter(steps.values()))}" if len(set(steps.values())) == 1 else ""
    )
    items = []
    for rank, trip in list(tripped.items())[:_MAX_RANK_LINES]:
        stopped = "stopped" if getattr(histories[rank], "stopped", False) else "went on"
        items.append((f"rank {rank}: step {trip.step}: ", trip.message, f" ({stopped})"))
    if quiet:
        counts = {len(getattr(histories[rank], "steps", ())) for rank in quiet}
        many = f"{counts.pop()} steps" if len(counts) == 1 else "their steps"
        items.append(f"{_rank_word(quiet)}: nothing tripped in {many}")
    more = f"and {len(tripped) - _MAX_RANK_LINES} more ranks" if len(tripped) > _MAX_RANK_LINES else ""
    sections: list = [
        r.Line((r.Span(head, "bad"), f" (of {_rank_word(sorted(histories))} watched)"), look="boxed-strong"),
        r.Items(items, look="", more=more),
    ]
    went_on = [rank for rank in quiet if not getattr(histories[rank], "stopped", False)]
    stopped = [rank for rank in tripped if getattr(histories[rank], "stopped", False)]
    if stopped and went_on:
        sections.append(
            r.Line(
                f"{_rank_word(stopped)} stopped on a trip while {_rank_word(went_on)} went on: data-parallel ranks "
                "wait for each other in AllReduce, so those may wait in their next step for a rank that stopped; "
                "on ranks, %%mswatch --no-stop lets every rank go on.",
                look="boxed-note",
            )
        )
    return sections


def _divergence_words(d: Any) -> tuple:
    word = _KIND_WORDS.get(d.kind, d.kind)
    head = _HEADS.get(d.stat, d.stat)
    apart = ", ".join(f"{_num(d.values[rank])} on rank {rank}" for rank in d.ranks[:_MAX_RANK_LINES])
    agree = f"{_num(d.values[d.agree[0]])} on {_rank_word(d.agree)}"
    return (
        f"{word} ",
        r.Span(d.name, "scope"),
        f": {head} {apart}, against {agree} (relative difference {d.ratio:.3g})",
    )


def _divergence_chart(merged: Any, d: Any) -> list:
    series: dict[str, list[float]] = {}
    for rank in (*d.agree[:1], *d.ranks[:3]):
        history = merged.histories[rank]
        table = history.stats(d.name, d.kind)
        series[f"rank {rank}"] = [float(v) for v in table[:, _STATS.index(d.stat)]]
        steps = [int(s) for s in history.steps]
    marks = [(i, f"diverged: step {d.step}") for i, step in enumerate(steps) if step == d.step][:1]
    head = _HEADS.get(d.stat, d.stat)
    return _history_figure(
        series, steps, marks, f"{head} of {d.name} ({d.kind}) per step:", f"{d.name} ({d.kind}): {head} per rank",
        "the red line is the first step where the ranks differ",
    )  # fmt: skip


def _divergence_section(merged: Any) -> list:
    watched = sorted(merged.histories)
    if len(watched) < 2:
        return [r.Line(f"{_rank_word(watched)} watched: no other rank to compare with.", look="note")]
    found = list(merged.divergences)
    if not merged.compared:
        return [r.Line("no weight or gradient was watched on two ranks: nothing to compare.", look="note")]
    if not found:
        return [
            r.Line(
                (
                    r.Span("ranks agree", "good-strong"),
                    f": {merged.compared} weights and gradients equal on {_rank_word(watched)} "
                    f"at each of {merged.common_steps} common steps.",
                )
            )
        ]
    first = found[0]
    sections: list = [
        r.Line((r.Span(f"Ranks diverge at step {first.step}: ", "bad"), *_divergence_words(first)), look="boxed-strong")
    ]
    rows = [
        [
            str(d.step),
            _KIND_WORDS.get(d.kind, d.kind),
            d.name,
            _HEADS.get(d.stat, d.stat),
            _listed(d.ranks),
            ", ".join(f"{rank}: {_num(v)}" for rank, v in list(d.values.items())[:8]),
        ]
        for d in found[:_MAX_FINDINGS]
    ]
    columns = [
        r.Col("step", Column("step", 4, right=True), width=7),
        r.Col("kind", Column("kind", 8), left=True, width=12),
        r.Col("tensor", Column("tensor", 12, fit=True), left=True, width=30),
        r.Col("stat", Column("stat", 5), left=True, width=8),
        r.Col("ranks apart", Column("apart", 5), left=True, width=11),
        r.Col("values by rank", Column("values by rank", 14), left=True, width=32),
    ]
    sections.append(r.Table(columns, rows, look="grid"))
    if len(found) > _MAX_FINDINGS:
        sections.append(r.Line(f"showing {_MAX_FINDINGS} of {len(found)} tensors that diverge", look="note"))
    sections.extend(_divergence_chart(merged, first))
    return sections


def build_ranks(merged: Any) -> r.Report:
    """One report of a watch on ranks (:class:`msdebug.ranks.watch.RanksWatch`, by duck typing):
    which ranks tripped and at which step, where data-parallel ranks' weights and gradients
    diverge, and the first tripping rank's own report."""
    histories = merged.histories
    watched = sorted(histories)
    counts = {len(getattr(h, "steps", ())) for h in histories.values()}
    steps = (
        f"{counts.pop()} steps recorded on each"
        if len(counts) == 1
        else "steps recorded: "
        + ", ".join(f"{len(histories[rank].steps)} on rank {rank}" for rank in watched[:_MAX_RANK_LINES])
    )
    sections: list = [r.Line(f"watch on {_rank_word(watched) if watched else 'no rank'}: {steps}", look="strong")]
    sections.extend(_trips_section(merged))
    sections.extend(_divergence_section(merged))
    if merged.missing:
        sections.append(
            r.Line(
                f"{_rank_word(merged.missing)}: no watch saved (the cell raised before one ended, or ran none).",
                look="boxed-note",
            )
        )
    for rank, why in list(merged.unreadable.items())[:_MAX_RANK_LINES]:
        sections.append(r.Line(f"rank {rank}: its saved watch could not be read: {why}", look="boxed-note"))
    sections.append(
        r.Line(
            "compared between ranks: weights and gradients (equal on data-parallel ranks after AllReduce); "
            "activations and the loss are each rank's own data.",
            look="note",
        )
    )
    tripped = sorted((_first_trip(h).step, rank) for rank, h in histories.items() if _first_trip(h) is not None)
    if tripped:
        rank = tripped[0][1]
        sections.append(r.Line(f"rank {rank}'s watch:", look="strong"))
        sections.extend(build_report(histories[rank]).sections)
    return r.Report(sections, cls="msdebug-watch", style="font-size:95%")


html_live, text_live = r.renderers(build_live)
html_report, text_report = r.renderers(build_report)
html_ranks, text_ranks = r.renderers(build_ranks)
