"""PrintLog -> its report (views.report), rendered as escaped HTML and as plain text.

Bounded: a long log shows its first and its last items with "N items hidden" between them
(the end is where a run went wrong). A scalar printed after its name (``Print("loss:", x)``)
reads as one line, ``loss: 0.25``, and a name printed with a scalar in most steps gets a line
chart of its values. Duck-typed: a tensor is an item with ``shape`` and ``dtype``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from . import report as r
from ._html import tag

__all__ = ["MAX_ITEMS", "MAX_LINES", "build", "html_print_log", "scalar_series", "tensor_summary", "text_print_log"]

MAX_ITEMS = 200  # items shown in HTML: the first and the last half of them
MAX_LINES = 2000  # lines of text/plain: the same, for the text form
_MAX_TENSOR_CHARS = 4000
_OPEN_BELOW = 12  # tensors printed in fewer lines are shown open
_MAX_SERIES = 6
_NAME = re.compile(r"^\s*([A-Za-z_][\w .\-/]{0,40}?)\s*[:=]?\s*$")
_SERIES_LINE_MAX = 1000
_DIGIT = re.compile(r"\d")
_PAIR = re.compile(
    r"([A-Za-z_][\w.]{0,30})(?:\s+is|\s*[:=])?\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf|-inf)(?=[\s,;)]|$)"
)


def _is_tensor(item: Any) -> bool:
    return hasattr(item, "shape") and hasattr(item, "dtype")


def _number(value) -> str:
    if not isinstance(value, float):
        return str(value)
    text = f"{value:.6g}"
    return text if any(c in text for c in ".enia") else text + ".0"  # a float still reads as one


def _scalar(item: Any) -> Any:
    """The value of a fully printed scalar tensor, else None."""
    if not _is_tensor(item) or item.shape != () or item.partial:
        return None
    values = item.values if item.values is not None else (item.shown[0] if item.shown else None)
    value = getattr(values, "item", lambda: values)()
    return value if isinstance(value, (int, float, bool, complex, str)) else None


def tensor_summary(tensor) -> str:
    """``Float32 [2, 3] · min 0 · max 5 · mean 2.5`` (+ NaN / Inf counts, partial marker)."""
    stats = tensor.stats()
    if tensor.shape == () and not tensor.partial:
        return f"{tensor.dtype} scalar"
    parts = [f"{tensor.dtype} {list(tensor.shape)}"]
    for name in ("min", "max", "mean"):
        if name in stats:
            parts.append(f"{name} {_number(stats[name])}")
    for name in ("nan", "inf"):
        if stats.get(name):
            parts.append(f"{stats[name]} {name.upper() if name == 'nan' else 'Inf'}")
    if tensor.partial:
        parts.append(f"partial: MindSpore printed {stats['over']} of {tensor.size} elements")
    return " · ".join(parts)


def _label(item: Any) -> str | None:
    """``loss`` for a text item ``"loss:"`` that names the value printed after it."""
    if _is_tensor(item):
        return None
    match = _NAME.match(str(item))
    return match.group(1) if match else None


def _lines(items) -> list[tuple[str, Any]]:
    """Items grouped into what one line shows: ``("scalar", (label, item))`` for a name and
    its scalar, ``("tensor", item)``, ``("text", item)``."""
    out: list[tuple[str, Any]] = []
    index = 0
    while index < len(items):
        item = items[index]
        following = items[index + 1] if index + 1 < len(items) else None
        if _is_tensor(item):
            out.append(("scalar", ("", item)) if _scalar(item) is not None else ("tensor", item))
        elif following is not None and _scalar(following) is not None and _label(item) is not None:
            out.append(("scalar", (str(item).rstrip(), following)))
            index += 1
        else:
            out.append(("text", item))
        index += 1
    return out


def scalar_series(items) -> dict[str, list[float]]:
    """Scalars printed under one name in order: ``{"loss": [1.0, 0.5, ...]}``, from
    ``Print("loss:", x)`` pairs and from text such as ``step 3 loss 0.25``. Names seen fewer
    than three times, counters (0, 1, 2 ...) and constants are left out."""
    series: dict[str, list[float]] = {}
    for kind, content in _lines(items):
        if kind == "scalar" and content[0]:
            value = _scalar(content[1])
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                series.setdefault(_label(content[0]) or content[0], []).append(float(value))
        elif kind == "text":
            for line in str(content).splitlines():
                # A line worth a chart is short ("step 3 loss 0.25"); the pattern backtracks on
                # each character, so a megabyte line without one would take a minute.
                if len(line) <= _SERIES_LINE_MAX and _DIGIT.search(line):
                    for name, number in _PAIR.findall(line):
                        series.setdefault(name, []).append(float(number))
    return {
        name: values
        for name, values in series.items()
        if len(values) >= 3 and not _counter(values) and len(set(values)) > 1
    }


def _counter(values: list[float]) -> bool:
    """A step or epoch number (0, 1, 2 ...): it is the x axis, not worth a chart of its own."""
    return all(b - a == 1 for a, b in zip(values, values[1:], strict=False))


def _header(log, shown: int, lines: int) -> str:
    items = log.items
    tensors = [item for item in items if _is_tensor(item)]
    partial = sum(1 for t in tensors if t.partial)
    texts = len(items) - len(tensors)
    text = f"{texts} text line{'s' * (texts != 1)} · {len(tensors)} tensor{'s' * (len(tensors) != 1)}"
    if partial:
        text += f" ({partial} partial)"
    if log.source != "captured":
        text += f" · {log.source} {log.path}"
    elif log.path:
        text += f" · also written to {log.path}"
    if shown < lines:
        text += f" · showing the first and last {shown // 2} of {lines} lines (all of them are in .items and .text)"
    return text


def _tensor_fold(tensor) -> r.Fold:
    printed = tensor.text or str(tensor.values)
    if len(printed) > _MAX_TENSOR_CHARS:
        printed = printed[:_MAX_TENSOR_CHARS] + f"\n… ({len(printed) - _MAX_TENSOR_CHARS} more characters in .items)"
    return r.Fold(
        r.Span(tensor_summary(tensor), "code"),
        [r.Pre(printed, look="printed")],
        open=printed.count("\n") < _OPEN_BELOW,
        look="left",
        box="tensor-partial" if tensor.partial else "tensor",
        cls="ms-tensor",
        only="html",
    )


def _scalar_line(label: str, tensor) -> r.Line:
    value = _scalar(tensor)
    bad = isinstance(value, float) and not math.isfinite(value)
    runs = (
        label + " " if label else "",
        r.Span(_number(value), "b-bad" if bad else "b"),
        r.Span(f"  {tensor.dtype}", "small-note"),
    )
    return r.Line(runs, look="scalar", cls="ms-scalar", only="html")


def _chart(items) -> str:
    series = scalar_series(items)
    if not series:
        return ""
    from .svg import line_chart

    names = sorted(series, key=lambda name: -len(series[name]))[:_MAX_SERIES]
    # Each name on its own scale: a loss near 0.1 next to a step counter near 1000 is a flat line.
    charts = [
        line_chart(
            {name: series[name]},
            width=460,
            height=110,
            title=f"{name} ({len(series[name])} values)",
            x_label="printed in order",
        )
        for name in names
    ]
    return tag(
        "div",
        "".join(tag("div", chart, style="display:inline-block;max-width:100%;margin:0 8px 4px 0") for chart in charts),
        cls="ms-print-chart",
        style="max-width:100%",
    )


def _html_sections(log, lines: list[tuple[str, Any]]) -> list[r.Section]:
    """What HTML shows: a summary line, a chart of the scalar series, and the first and the last
    ``MAX_ITEMS // 2`` lines of items, runs of text in one block, a scalar on its line, a
    tensor folded under its summary."""
    head, tail = r.ends(len(lines), MAX_ITEMS)
    sections: list[r.Section] = [
        r.Line(_header(log, len(head) + len(tail), len(lines)), look="summary", cls="ms-summary", only="html"),
        r.Figure(lambda: _chart(log.items), only="html"),
    ]
    run: list[str] = []

    def flush() -> None:
        if run:
            sections.append(r.Pre("\n".join(run), look="printed", whole=".text", only="html"))
            run.clear()

    for numbers in (head, tail):
        if numbers is tail and tail:
            flush()
            hidden = len(lines) - len(head) - len(tail)
            line = f"… {hidden} items hidden (all of them are in .items and .text) …"
            sections.append(r.Line(line, look="hidden", cls="ms-hidden", only="html"))
        for number in numbers:
            kind, content = lines[number]
            if kind == "text":
                run.append(str(content))
                continue
            flush()
            sections.append(_scalar_line(*content) if kind == "scalar" else _tensor_fold(content))
    flush()
    return sections


def _text_body(log, lines: list[tuple[str, Any]]) -> str:
    """The text form's body: captured output exactly as printed (its last newline aside); a
    binary file one line per item, a scalar on the line of its name."""
    if log.source != "binary file":
        return log.text[:-1] if log.text.endswith("\n") else log.text
    body = []
    for kind, content in lines:
        if kind == "scalar":
            label, item = content
            body.append(f"{label} {_number(_scalar(item))}".strip())
        elif kind == "tensor":
            body.append(f"{tensor_summary(content)}\n{content.values!s}")
        else:
            body.append(str(content))
    return "\n".join(body)


def build(log) -> r.Report:
    """The Print log's report. HTML: a summary line, a chart of the scalar series, the items
    (their head and tail). Text: captured output exactly as printed, a binary file's items one
    a line under the summary; both bounded to their first and last lines."""
    lines = _lines(log.items)
    sections = _html_sections(log, lines)
    if log.source == "binary file":
        sections.append(r.Line(_header(log, len(lines), len(lines)), only="text"))
    sections.append(r.Pre(_text_body(log, lines), lines=MAX_LINES, whole=".text", only="text"))
    if log.note:
        sections.append(r.Line(f"msdebug: {log.note}", look="aside"))
    return r.Report(sections, cls="msdebug ms-print", style="max-width:100%")


html_print_log, text_print_log = r.renderers(build)
