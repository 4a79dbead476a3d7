"""Small inline SVG pictures: line and bar charts, histograms, sparklines and graph drawings.

Pure functions from plain Python values to one ``<svg>`` element as a string. Every label is
escaped (it may come from a dump), every picture is bounded whatever it is given (series are
bucketed to at most two points per pixel, bars and bins are capped, a graph draws at most
``max_nodes`` boxes and says how many it left out), and styles are attributes, never a
``<style>`` element, which JupyterLab strips from untrusted notebooks. A picture is at most as
wide as the output area (``max-width:100%``) and keeps its aspect ratio when it shrinks.

The graph layout is msdebug's own layered (Sugiyama-style) layout: cycles broken by a depth
first search, layers by longest path with sources pulled down next to their first user,
one barycenter pass inside each layer, and each scope packed as one rectangle (a cluster)
into the leftmost columns free over the layers it spans.
"""

from __future__ import annotations

import math
import re
import sys
import zlib
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from ._html import esc

__all__ = [
    "PALETTE",
    "ChartLine",
    "ChartMark",
    "ChartScale",
    "Cluster",
    "Edge",
    "GraphBox",
    "GraphLayout",
    "Rect",
    "bar_chart",
    "chart_scale",
    "graph_drawing",
    "graph_layout",
    "histogram",
    "line_chart",
    "sparkline",
]

#: Series and box colours; readable on JupyterLab's light and dark themes.
PALETTE = ("#4a90d9", "#e69500", "#1a7f37", "#cf222e", "#8250df", "#0a7d8c", "#9a6700", "#bf3989")
_BOX_FILLS = ("#dbe9f8", "#fde9c8", "#d5efdc", "#f9d9dc", "#e6dcf8", "#d0eef1", "#f1e4c4", "#f6d8ea", "#e4e4e4")
_INK = "#333"
_GRID = "#ccc"
_BAD = "#cf222e"
_FONT = "font-family:sans-serif"
_MAX_SERIES = 8
_MAX_BARS = 40
_MAX_BINS = 120
_MAX_SIDE = 4000
_LABEL_CHARS = 28
_NUMBER = (int, float)


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _esc(value: object) -> str:
    """``esc`` for SVG, which is XML: characters XML cannot carry become U+FFFD."""
    return esc(_NOT_XML.sub("\ufffd", str(value)))


def _f(value: float) -> str:
    """A coordinate: one decimal, no trailing zeros."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _num(value: float) -> str:
    """A number as a person reads it on an axis: three significant digits."""
    if not math.isfinite(value):
        return str(value)
    if value == int(value) and abs(value) < 1e6:
        return str(int(value))
    return f"{value:.3g}"


def _clip(text: str, chars: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= chars else text[: max(1, chars - 1)] + "…"


def _side(value: float, low: int = 40) -> int:
    return int(min(max(value, low), _MAX_SIDE))


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, _NUMBER):
        try:
            value = float(value)  # numpy scalars and the like
        except (TypeError, ValueError):
            return None
    value = float(value)
    return value if math.isfinite(value) else None


def _text(x: float, y: float, body: str, *, size: int = 11, anchor: str = "start", fill: str = _INK, bold=False) -> str:
    """``body`` is plain text; it is escaped here."""
    weight = ' font-weight="700"' if bold else ""
    return (
        f'<text x="{_f(x)}" y="{_f(y)}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"'
        f' style="{_FONT}"{weight}>{_esc(body)}</text>'
    )


def _svg(width: int, height: int, body: str, title: str, cls: str) -> str:
    label = _esc(title)
    head = f"<title>{label}</title>" if title else ""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{cls}" width="{width}" height="{height}"'
        f' viewBox="0 0 {width} {height}" role="img" aria-label="{label}"'
        f' style="max-width:100%;height:auto;display:block;overflow:visible">{head}{body}</svg>'
    )


def _buckets(values: Sequence[object], count: int) -> tuple[list[tuple[int, float]], list[int]]:
    """At most ``2 * count`` (index, value) points that keep each bucket's lowest and highest
    value (a spike survives), and the indices of non-finite values, also bounded."""
    size = len(values)
    points: list[tuple[int, float]] = []
    bad: list[int] = []
    step = max(1, math.ceil(size / max(1, count)))
    for start in range(0, size, step):
        low = high = None
        flagged = False
        for index in range(start, min(size, start + step)):
            value = _finite(values[index])
            if value is None:
                flagged = True
                continue
            if low is None or value < low[1]:
                low = (index, value)
            if high is None or value > high[1]:
                high = (index, value)
        if flagged:
            bad.append(start)
            points.append((start, math.nan))  # a gap in the line
        if low is not None:
            points += sorted({low, high})
    return points, bad


class ChartLine(NamedTuple):
    """One series of a line chart in pixels: ``runs`` of points (a non-finite value breaks the
    line) and the ``x`` of each red tick under the axis for a non-finite value."""

    name: str
    runs: tuple[tuple[tuple[float, float], ...], ...]
    bad: tuple[float, ...]


class ChartMark(NamedTuple):
    """A vertical marker at ``x``; its (clipped) ``text`` starts at ``text_x`` with ``anchor`` in
    label row ``row``, or has no room (``row`` None: the label is only the line's tooltip)."""

    x: float
    label: str
    text: str
    anchor: str
    text_x: float
    row: int | None


class ChartScale(NamedTuple):
    """Everything a line chart's picture needs, computed, as plain data (no SVG)."""

    width: int
    height: int
    plot: Rect  # the plotting area, in pixels
    low: float  # the values at the bottom and the top of the plotting area
    high: float
    length: int  # values in the longest drawn series (the x axis runs 0 .. length - 1)
    names: tuple[str, ...]  # every series given
    lines: tuple[ChartLine, ...]  # the series drawn (at most 8)
    marks: tuple[ChartMark, ...]


def chart_scale(
    series: Mapping[str, Sequence[float]],
    *,
    width: int = 480,
    height: int = 140,
    title: str = "",
    x_label: str = "",
    marks: Sequence[tuple[int, str]] = (),
) -> ChartScale:
    """The scales of :func:`line_chart` and where each point, tick and marker goes."""
    width, height = _side(width, 120), _side(height, 60)
    names = tuple(series)
    drawn = names[:_MAX_SERIES]
    left, right = 48, 10
    top = 18 if title or len(drawn) > 1 else 8
    bottom = 30 if x_label else 18
    plot_w, plot_h = width - left - right, max(10, height - top - bottom)
    length = max((len(series[name]) for name in drawn), default=0)
    bucketed = {name: _buckets(series[name], plot_w) for name in drawn}
    finite = [v for points, _ in bucketed.values() for _, v in points if not math.isnan(v)]
    low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if high == low:
        pad = abs(high) * 0.1 or 1.0
        low, high = max(low - pad, -sys.float_info.max), min(high + pad, sys.float_info.max)
    span_x = max(1, length - 1)

    def x_at(index: float) -> float:
        return left + plot_w * index / span_x

    def y_at(value: float) -> float:
        # In halves: high - low overflows for values near the float's end (the same otherwise).
        return top + plot_h * (1 - (value / 2 - low / 2) / (high / 2 - low / 2))

    lines = []
    for name in drawn:
        points, bad = bucketed[name]
        runs: list[list[tuple[float, float]]] = [[]]
        for index, value in points:
            if math.isnan(value):
                runs.append([])
            else:
                runs[-1].append((x_at(index), y_at(value)))
        lines.append(ChartLine(name, tuple(tuple(run) for run in runs if run), tuple(x_at(index) for index in bad)))
    placed = []
    free = [float(left)] * 3  # where each of three label rows is free again: close marks stack
    for index, label in list(marks)[:_MAX_BARS]:
        if not isinstance(index, _NUMBER) or not 0 <= index <= span_x:
            continue
        x = x_at(index)
        text = _clip(label, 24)
        wide = 5.5 * len(text) + 6
        anchor, start = ("start", x + 3) if x + wide <= width - right else ("end", x - 3)
        begin = start if anchor == "start" else start - wide
        row = next((r for r in range(3) if free[r] <= begin), None)
        if row is not None:
            free[row] = begin + wide
        placed.append(ChartMark(x, str(label), text, anchor, start, row))
    return ChartScale(
        width, height, Rect(left, top, plot_w, plot_h), low, high, length, names, tuple(lines), tuple(placed)
    )


def line_chart(
    series: Mapping[str, Sequence[float]],
    *,
    width: int = 480,
    height: int = 140,
    title: str = "",
    x_label: str = "",
    y_label: str = "",
    marks: Sequence[tuple[int, str]] = (),
) -> str:
    """Lines of one or more series over their index (step 0, 1, 2 ...).

    Parameters
    ----------
    series
        Name -> values; at most 8 series are drawn (the picture says how many it left out).
        Non-finite values break the line and get a red tick under the axis.
    width, height
        Size in pixels before the picture shrinks to fit its output area.
    title, x_label, y_label
        Plain text.
    marks
        ``(x index, label)`` vertical markers, for example the step where a NaN first appeared.

    Returns
    -------
    str
        One ``<svg>`` element.
    """
    scale = chart_scale(series, width=width, height=height, title=title, x_label=x_label, marks=marks)
    return _draw_line_chart(scale, title, x_label, y_label)


def _draw_line_chart(scale: ChartScale, title: str, x_label: str, y_label: str) -> str:
    """The SVG of a computed :class:`ChartScale`."""
    width, height = scale.width, scale.height
    left, top, plot_w, plot_h = scale.plot
    right = width - left - plot_w
    bottom_y = _f(top + plot_h)
    parts = [
        f'<line x1="{left}" y1="{bottom_y}" x2="{left + plot_w}" y2="{bottom_y}" stroke="{_GRID}"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom_y}" stroke="{_GRID}"/>',
        _text(left - 4, top + 8, _num(scale.high), size=10, anchor="end"),
        _text(left - 4, top + plot_h, _num(scale.low), size=10, anchor="end"),
        _text(left, top + plot_h + 12, "0", size=10),
        _text(left + plot_w, top + plot_h + 12, _num(scale.length - 1) if scale.length else "", size=10, anchor="end"),
    ]
    if title:
        parts.append(_text(left, 12, _clip(title, width // 7), size=12, bold=True))
    if x_label:
        parts.append(_text(left + plot_w / 2, height - 4, _clip(x_label, plot_w // 6), size=10, anchor="middle"))
    if y_label:
        parts.append(
            f'<text x="0" y="0" font-size="10" text-anchor="middle" fill="{_INK}" style="{_FONT}"'
            f' transform="translate(11 {_f(top + plot_h / 2)}) rotate(-90)">{_esc(_clip(y_label, plot_h // 6))}</text>'
        )
    for number, line in enumerate(scale.lines):
        colour = PALETTE[number % len(PALETTE)]
        for run in line.runs:
            if len(run) == 1:
                parts.append(f'<circle cx="{_f(run[0][0])}" cy="{_f(run[0][1])}" r="2" fill="{colour}"/>')
            else:
                points = " ".join(f"{_f(x)},{_f(y)}" for x, y in run)
                parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        for x in line.bad:
            parts.append(
                f'<line x1="{_f(x)}" y1="{bottom_y}" x2="{_f(x)}" y2="{_f(top + plot_h + 5)}" stroke="{_BAD}"/>'
            )
    for mark in scale.marks:
        parts.append(
            f'<line x1="{_f(mark.x)}" y1="{top}" x2="{_f(mark.x)}" y2="{bottom_y}" stroke="{_BAD}"'
            f' stroke-dasharray="3 2"><title>{_esc(mark.label)}</title></line>'
        )
        if mark.row is not None:  # a label with no room left is still on the line's tooltip
            parts.append(_text(mark.text_x, top + 9 + 11 * mark.row, mark.text, size=10, anchor=mark.anchor, fill=_BAD))
    names, drawn = scale.names, scale.lines
    if len(drawn) > 1 or len(names) > len(drawn):
        legend, x = [], width - right
        more = f"+{len(names) - len(drawn)} more" if len(names) > len(drawn) else ""
        if more:
            legend.append(_text(x, 12, more, size=10, anchor="end"))
            x -= 7 * len(more) + 8
        for number, line in reversed(list(enumerate(drawn))):
            label = _clip(line.name, 16)
            legend.append(_text(x, 12, label, size=10, anchor="end", fill=PALETTE[number % len(PALETTE)]))
            x -= 6 * len(label) + 10
        parts += legend
    summary = title or ", ".join(names[:_MAX_SERIES])
    return _svg(width, height, "".join(parts), summary, "msdebug-chart")


def bar_chart(
    labels: Sequence[str], values: Sequence[float], *, width: int = 480, title: str = "", unit: str = ""
) -> str:
    """Horizontal bars, one row per label, in the order given (at most 40; the rest are counted).

    Parameters
    ----------
    labels, values
        One value per label; labels longer than 28 characters are shortened (the full text is
        the bar's tooltip). Non-finite values get an empty bar and their text.
    width
        Width in pixels; the height follows from the number of rows.
    title, unit
        Plain text; ``unit`` follows every value ("12 nodes", "3.2 MB").

    Returns
    -------
    str
        One ``<svg>`` element.
    """
    width = _side(width, 160)
    rows = list(zip(labels, values, strict=False))  # a missing value leaves its label out
    shown = rows[:_MAX_BARS]
    numbers = [_finite(v) for _, v in shown]
    finite = [v for v in numbers if v is not None]
    low, high = min([0.0, *finite]), max([0.0, *finite])
    if high == low:
        high = low + 1.0
    label_w = min(width // 3, 7 * max((len(_clip(label, _LABEL_CHARS)) for label, _ in shown), default=4) + 8)
    value_w = 70
    plot_x, plot_w = label_w, max(20, width - label_w - value_w)
    top = 18 if title else 4
    row_h = 18
    more = len(rows) - len(shown)
    height = top + row_h * len(shown) + (16 if more else 0) + 4
    zero = plot_x + plot_w * (0 - low) / (high - low)
    parts = [_text(0, 12, _clip(title, width // 7), size=12, bold=True)] if title else []
    for row, ((label, raw), value) in enumerate(zip(shown, numbers, strict=True)):
        y = top + row * row_h
        text = f"{_num(value)}{' ' + unit if unit else ''}" if value is not None else str(raw)
        parts.append(
            f"<g><title>{_esc(label)}: {_esc(text)}</title>"
            + _text(label_w - 6, y + 13, _clip(label, _LABEL_CHARS), anchor="end")
        )
        if value is not None:
            end = plot_x + plot_w * (value - low) / (high - low)
            x, bar_w = min(zero, end), abs(end - zero)
            parts.append(
                f'<rect x="{_f(x)}" y="{y + 3}" width="{_f(max(bar_w, 1))}" height="{row_h - 6}" fill="{PALETTE[0]}"/>'
            )
            parts.append(_text(max(zero, end) + 4, y + 13, _clip(text, 14), size=10))
        else:
            parts.append(_text(zero + 4, y + 13, _clip(text, 14), size=10, fill=_BAD))
        parts.append("</g>")
    if low < 0:
        parts.append(
            f'<line x1="{_f(zero)}" y1="{top}" x2="{_f(zero)}" y2="{top + row_h * len(shown)}" stroke="{_GRID}"/>'
        )
    if more:
        parts.append(_text(label_w - 6, height - 6, f"{more} more not shown", size=10, anchor="end", fill="#777"))
    return _svg(width, height, "".join(parts), title or f"{len(rows)} bars", "msdebug-chart")


def histogram(
    counts: Sequence[int], edges: Sequence[float], *, width: int = 320, height: int = 110, title: str = ""
) -> str:
    """Vertical bars of ``counts`` between ``edges`` (one more edge than counts).

    More than 120 bins are merged into neighbours so the picture stays small.

    Returns
    -------
    str
        One ``<svg>`` element.
    """
    width, height = _side(width, 80), _side(height, 50)
    counts = [max(0, int(c)) for c in counts]
    edges = [float(e) for e in edges]
    if len(edges) != len(counts) + 1:
        raise ValueError(f"histogram needs one more edge than counts, got {len(edges)} edges and {len(counts)} counts")
    if len(counts) > _MAX_BINS:
        step = math.ceil(len(counts) / _MAX_BINS)
        counts = [sum(counts[i : i + step]) for i in range(0, len(counts), step)]
        edges = edges[::step] + ([edges[-1]] if (len(edges) - 1) % step else [])
    top = 18 if title else 6
    left, bottom = 6, 16
    plot_w, plot_h = width - 2 * left, max(10, height - top - bottom)
    peak = max(counts, default=0) or 1
    parts = [_text(left, 12, _clip(title, width // 7), size=12, bold=True)] if title else []
    bar_w = plot_w / max(1, len(counts))
    for index, count in enumerate(counts):
        if not count:
            continue
        h = max(1.0, plot_h * count / peak)
        parts.append(
            f'<rect x="{_f(left + index * bar_w)}" y="{_f(top + plot_h - h)}" width="{_f(max(bar_w - 1, 1))}"'
            f' height="{_f(h)}" fill="{PALETTE[0]}"><title>{_esc(_num(edges[index]))} to'
            f" {_esc(_num(edges[index + 1]))}: {count}</title></rect>"
        )
    base = _f(top + plot_h)
    parts.append(f'<line x1="{left}" y1="{base}" x2="{left + plot_w}" y2="{base}" stroke="{_GRID}"/>')
    if edges:
        parts.append(_text(left, height - 3, _num(edges[0]), size=10))
        parts.append(_text(left + plot_w, height - 3, _num(edges[-1]), size=10, anchor="end"))
    parts.append(_text(left + plot_w, top + 9, f"max {peak}", size=10, anchor="end", fill="#777"))
    return _svg(width, height, "".join(parts), title or f"histogram of {sum(counts)} values", "msdebug-chart")


def sparkline(values: Sequence[float], *, width: int = 160, height: int = 28, title: str = "") -> str:
    """A word-sized line of ``values`` with its last point marked; the tooltip says the range.

    Returns
    -------
    str
        One ``<svg>`` element.
    """
    width, height = _side(width, 20), _side(height, 8)
    points, bad = _buckets(values, width)
    finite = [v for _, v in points if not math.isnan(v)]
    low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
    span = (high - low) or 1.0
    span_x = max(1, len(values) - 1)

    def xy(index: int, value: float) -> str:
        scaled = (height - 4) * (value - low)
        if math.isfinite(scaled):
            y = height - 2 - scaled / span
        else:  # values near the float's end: in halves, which cannot overflow
            y = height - 2 - (height - 4) * ((value / 2 - low / 2) / (high / 2 - low / 2))
        return f"{_f(1 + (width - 2) * index / span_x)},{_f(y)}"

    runs: list[list[str]] = [[]]
    for index, value in points:
        if math.isnan(value):
            runs.append([])
        else:
            runs[-1].append(xy(index, value))
    parts = [
        f'<polyline points="{" ".join(run)}" fill="none" stroke="{PALETTE[0]}" stroke-width="1.2"/>'
        for run in runs
        if len(run) > 1
    ]
    last = [p for p in points if not math.isnan(p[1])][-1:]
    for index, value in last:
        x, y = xy(index, value).split(",")
        parts.append(f'<circle cx="{x}" cy="{y}" r="2" fill="{PALETTE[1]}"/>')
    for index in bad:
        x = _f(1 + (width - 2) * index / span_x)
        parts.append(f'<line x1="{x}" y1="{height - 3}" x2="{x}" y2="{height}" stroke="{_BAD}"/>')
    summary = f"{len(values)} values" + (f", {_num(low)} to {_num(high)}" if finite else "")
    summary = f"{title}: {summary}" if title else summary
    return _svg(width, height, "".join(parts), summary, "msdebug-spark")


# --------------------------------------------------------------------------- graph drawing


class GraphBox(NamedTuple):
    """One operator to draw: ``id`` is what edges name, ``label`` the box's first line,
    ``sub`` its small second line, ``op`` picks the colour, ``scope`` the cluster (boxes with
    the same non-empty scope share one rectangle) and ``tip`` the tooltip."""

    id: str
    label: str
    sub: str = ""
    op: str = ""
    scope: str = ""
    tip: str = ""


_BOX_W, _BOX_H, _PITCH_X, _PITCH_Y, _PAD = 124, 32, 136, 62, 8


def _break_cycles(count: int, succ: list[list[int]]) -> set[tuple[int, int]]:
    """Edges that close a cycle (found by an iterative depth-first search in the given order)."""
    state = [0] * count  # 0 new, 1 on the stack, 2 done
    back: set[tuple[int, int]] = set()
    for root in range(count):
        if state[root]:
            continue
        stack = [(root, iter(succ[root]))]
        state[root] = 1
        while stack:
            node, children = stack[-1]
            for child in children:
                if state[child] == 1:
                    back.add((node, child))
                elif not state[child]:
                    state[child] = 1
                    stack.append((child, iter(succ[child])))
                    break
            else:
                state[node] = 2
                stack.pop()
    return back


def _layers(count: int, edges: list[tuple[int, int]]) -> list[int]:
    """Longest-path layers; a node without inputs sits right above its first user."""
    succ: list[list[int]] = [[] for _ in range(count)]
    pred: list[list[int]] = [[] for _ in range(count)]
    for a, b in edges:
        succ[a].append(b)
        pred[b].append(a)
    indegree = [len(p) for p in pred]
    order = [n for n in range(count) if not indegree[n]]
    layer = [0] * count
    for node in order:  # grows while it is walked: Kahn's topological order
        for child in succ[node]:
            layer[child] = max(layer[child], layer[node] + 1)
            indegree[child] -= 1
            if not indegree[child]:
                order.append(child)
    for node in range(count):
        if not pred[node] and succ[node]:
            layer[node] = max(0, min(layer[c] for c in succ[node]) - 1)
    return layer


class _Strip:
    """Rectangles (layers ``first..last``, ``width`` columns) packed into columns without overlap."""

    def __init__(self) -> None:
        self.placed: list[tuple[int, int, int, int]] = []  # first, last, column, width

    def _free_from(self, column: int, first: int, last: int, width: int) -> int:
        while True:
            clash = [
                c + w
                for f, la, c, w in self.placed
                if f <= last and first <= la and c < column + width and column < c + w
            ]
            if not clash:
                return column
            column = max(clash)

    def put(self, first: int, last: int, width: int, wanted: int) -> int:
        """The free column nearest ``wanted`` (under what feeds the rectangle), taken."""
        right = self._free_from(max(0, wanted), first, last, width)
        left = self._free_from(0, first, last, width)
        column = left if abs(left - wanted) < abs(right - wanted) else right
        self.placed.append((first, last, column, width))
        return column


class Rect(NamedTuple):
    """A rectangle in pixels: left, top, width, height."""

    x: float
    y: float
    width: float
    height: float


class Cluster(NamedTuple):
    """One scope's frame: ``scope`` is the full scope name; ``rect`` holds every box of the scope."""

    scope: str
    rect: Rect


class Edge(NamedTuple):
    """One drawn edge between ``nodes[source]`` and ``nodes[target]``, from ``start`` to ``end``
    (pixels); ``back`` when it closes a cycle (drawn upwards); ``bow`` pixels sideways when it
    would otherwise run through the boxes between."""

    source: int
    target: int
    start: tuple[float, float]
    end: tuple[float, float]
    back: bool
    bow: float


class GraphLayout(NamedTuple):
    """Where everything of a graph drawing goes, as plain data (no SVG).

    Coordinates are pixels from the top left of the graph area (below the title); ``width`` and
    ``height`` are that area's size.
    """

    nodes: tuple[str, ...]  # the ids drawn, each once, in the order given
    layers: tuple[int, ...]  # per node: its layer, 0 at the top
    boxes: tuple[Rect, ...]  # per node
    edges: tuple[Edge, ...]
    clusters: tuple[Cluster, ...]  # one per non-empty scope
    width: int
    height: int
    left_out: int  # nodes not drawn (beyond max_nodes)
    hidden: int  # edges between a drawn node and one left out


_MARGIN = 12
_HEAD = 18  # room above the first layer for a cluster's name


def graph_layout(
    boxes: Sequence[GraphBox], edges: Sequence[tuple[str, str]], *, max_nodes: int = 150, max_edges: int = 600
) -> GraphLayout:
    """Lay out a data-flow graph: layers top to bottom, scopes packed as clusters.

    A pure function of its input (same input, same layout). Only ``id`` and ``scope`` of each box
    matter here: the first ``max_nodes`` boxes are laid out (a repeated id counts once), and at
    most ``max_edges`` distinct edges between them; self loops and edges naming other ids are
    left out.
    """
    max_nodes = max(1, min(int(max_nodes), 1000))
    given = list(boxes)
    ids: list[str] = []
    scopes: list[str] = []
    position: dict[str, int] = {}
    for box in given[:max_nodes]:
        if box.id not in position:
            position[box.id] = len(ids)
            ids.append(box.id)
            scopes.append(box.scope)
    count = len(ids)
    left_out = {box.id for box in given[max_nodes:]} - position.keys()
    pairs: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    hidden = 0
    for source, target in edges:
        a, b = position.get(source), position.get(target)
        if a is None or b is None:
            # Only edges that leave the drawing count; unknown ids (parameters, constants) do not.
            hidden += (a is None and source in left_out and b is not None) or (
                b is None and target in left_out and a is not None
            )
        elif a != b and (a, b) not in seen and len(pairs) < max_edges:
            seen.add((a, b))
            pairs.append((a, b))
    succ: list[list[int]] = [[] for _ in range(count)]
    pred: list[list[int]] = [[] for _ in range(count)]
    for a, b in pairs:
        succ[a].append(b)
        pred[b].append(a)
    back = _break_cycles(count, succ)
    layer = _layers(count, [(b, a) if (a, b) in back else (a, b) for a, b in pairs])
    column_of, frames = _pack(scopes, layer, pred)
    columns = int(max(column_of, default=0)) + 1
    rows = max(layer, default=0) + 1
    rects = tuple(
        Rect(
            _MARGIN + column_of[node] * _PITCH_X + (_PITCH_X - _BOX_W) / 2,
            _HEAD + layer[node] * _PITCH_Y,
            _BOX_W,
            _BOX_H,
        )
        for node in range(count)
    )
    clusters = tuple(
        Cluster(
            key,
            Rect(
                _MARGIN + column * _PITCH_X + 2,
                _HEAD + first * _PITCH_Y - 16,
                span * _PITCH_X - 4,
                (last - first) * _PITCH_Y + _BOX_H + 16 + _PAD / 2,
            ),
        )
        for key, column, (first, last, span) in frames
        if not key.startswith("\0")
    )
    drawn = []
    for a, b in pairs:
        start = (rects[a].x + _BOX_W / 2, rects[a].y + _BOX_H)
        end = (rects[b].x + _BOX_W / 2, rects[b].y)
        if (a, b) in back or end[1] <= start[1]:
            # A loop goes back up: from the top of one to the bottom of the other.
            start, end = (start[0], rects[a].y), (end[0], rects[b].y + _BOX_H)
        # An edge that skips layers in one column would run through the boxes between: bow it out.
        bow = _PITCH_X * 0.6 if start[0] == end[0] and abs(layer[a] - layer[b]) > 1 else 0.0
        drawn.append(Edge(a, b, start, end, (a, b) in back, bow))
    return GraphLayout(
        nodes=tuple(ids),
        layers=tuple(layer),
        boxes=rects,
        edges=tuple(drawn),
        clusters=clusters,
        width=max(160, _MARGIN * 2 + columns * _PITCH_X),  # not capped: max_nodes bounds it
        height=_HEAD + rows * _PITCH_Y,
        left_out=len(left_out),
        hidden=hidden,
    )


def _pack(scopes: list[str], layer: list[int], pred: list[list[int]]):
    """The column of each node, and each cluster as ``(key, column, (first layer, last layer,
    width))``: one cluster per scope, a node without a scope a cluster of its own (key ``"\\0N"``)."""
    count = len(scopes)
    groups: dict[str, list[int]] = {}
    for number, scope in enumerate(scopes):
        groups.setdefault(scope or f"\0{number}", []).append(number)
    keys = sorted(groups, key=lambda key: (min(layer[n] for n in groups[key]), min(groups[key])))
    column_of = [0.0] * count
    placed = [False] * count
    strip, frames = _Strip(), []
    for key in keys:
        per_layer: dict[int, list[int]] = {}
        for node in groups[key]:
            per_layer.setdefault(layer[node], []).append(node)
        feeding = [column_of[p] for n in groups[key] for p in pred[n] if placed[p]]
        wanted = round(sum(feeding) / len(feeding)) if feeding else 0
        span = (min(per_layer), max(per_layer), max(len(v) for v in per_layer.values()))
        column = strip.put(*span, wanted)
        frames.append((key, column, span))
        for _, nodes in sorted(per_layer.items()):
            # Barycenter of the inputs already placed: a box sits under what feeds it.
            nodes.sort(key=lambda n: (sum(column_of[p] for p in pred[n]) / len(pred[n]) if pred[n] else n, n))
            for offset, node in enumerate(nodes):
                column_of[node] = column + offset
                placed[node] = True
    return column_of, frames


def graph_drawing(
    boxes: Sequence[GraphBox],
    edges: Sequence[tuple[str, str]],
    *,
    max_nodes: int = 150,
    max_edges: int = 600,
    title: str = "",
) -> str:
    """A drawing of a data-flow graph: operators as boxes, edges as curves, scopes as clusters.

    Parameters
    ----------
    boxes
        The operators, in a sensible order (file order is one); the first ``max_nodes`` are
        drawn and the picture says how many were left out.
    edges
        ``(from id, to id)`` data edges; edges to or from boxes not drawn are counted, not drawn.
    max_nodes, max_edges
        Bounds on what is drawn, so the picture stays small whatever the graph.
    title
        Plain text.

    Returns
    -------
    str
        One ``<svg>`` element; each box is a ``<g data-node="ID">`` with a tooltip.
    """
    layout = graph_layout(boxes, edges, max_nodes=max_nodes, max_edges=max_edges)
    first: dict[str, GraphBox] = {}
    for box in boxes:  # a drawn id's first box is among the first max_nodes
        first.setdefault(box.id, box)
    return _draw_graph(layout, [first[node] for node in layout.nodes], title)


def _draw_graph(layout: GraphLayout, boxes: Sequence[GraphBox], title: str) -> str:
    """The SVG of ``layout``; ``boxes`` give each node's label, colour and tooltip."""
    top = 22 if title else 6
    note_h = 18 if layout.left_out or layout.hidden else 0
    width, height = layout.width, top + layout.height + note_h
    parts = [_text(_MARGIN, 14, _clip(title, width // 7), size=12, bold=True)] if title else []
    for key, (x, y, w, h) in layout.clusters:
        y += top
        name = key.rstrip("/").rsplit("/", 1)[-1] or key
        parts.append(
            f'<g class="msdebug-scope"><title>{_esc(key)}</title><rect x="{_f(x)}" y="{_f(y)}" width="{_f(w)}"'
            f' height="{_f(h)}" rx="6" fill="#f6f8fa" stroke="#c8ccd0" stroke-dasharray="4 2"/>'
            + _text(x + 5, y + 11, _clip(name, int(w // 6)), size=9, fill="#666")
            + "</g>"
        )
    for edge in layout.edges:
        (x1, y1), (x2, y2), bow = edge.start, edge.end, edge.bow
        y1, y2 = y1 + top, y2 + top
        bend = max(18.0, abs(y2 - y1) / 2)
        sign = 1 if y2 >= y1 else -1
        parts.append(
            f'<path d="M{_f(x1)},{_f(y1)} C{_f(x1 + bow)},{_f(y1 + sign * bend)} {_f(x2 + bow)},{_f(y2 - sign * bend)}'
            f' {_f(x2)},{_f(y2)}" fill="none" stroke="#8c959f" stroke-width="1.2"/>'
            f'<path d="M{_f(x2 - 4)},{_f(y2 - sign * 6)} L{_f(x2)},{_f(y2)} L{_f(x2 + 4)},{_f(y2 - sign * 6)}"'
            ' fill="none" stroke="#8c959f" stroke-width="1.2"/>'
        )
    for box, (x, y, w, h) in zip(boxes, layout.boxes, strict=True):
        y += top
        fill = _BOX_FILLS[zlib.crc32(box.op.encode("utf-8", "replace")) % len(_BOX_FILLS)] if box.op else "#eee"
        tip = box.tip or f"{box.label} {box.sub}".strip()
        parts.append(
            f'<g class="msdebug-node" data-node="{_esc(box.id)}"><title>{_esc(tip)}</title>'
            f'<rect x="{_f(x)}" y="{_f(y)}" width="{_f(w)}" height="{_f(h)}" rx="4" fill="{fill}" stroke="#57606a"/>'
            + _text(x + w / 2, y + (13 if box.sub else 20), _clip(box.label, 19), size=11, anchor="middle", bold=True)
            + (_text(x + w / 2, y + 26, _clip(box.sub, 22), size=9, anchor="middle", fill="#555") if box.sub else "")
            + "</g>"
        )
    if note_h:
        count = len(layout.nodes)
        words = [f"showing {count} of {count + layout.left_out} nodes"] if layout.left_out else []
        words += [f"{layout.hidden} edges to nodes not drawn"] if layout.hidden else []
        parts.append(_text(_MARGIN, height - 6, "; ".join(words), size=10, fill="#777"))
    summary = title or f"graph of {len(layout.nodes)} nodes"
    return _svg(width, height, "".join(parts), summary, "msdebug-graph")
