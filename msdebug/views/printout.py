"""PrintLog -> escaped HTML and plain text. Bounded: at most ``MAX_ITEMS`` items in HTML."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._html import FADED, LEFT, NOTE, STRONG, esc, tag

if TYPE_CHECKING:
    from ..printfile import PrintedTensor, PrintLog

__all__ = ["html_print_log", "text_print_log", "tensor_summary", "MAX_ITEMS"]

MAX_ITEMS = 200
_MAX_TENSOR_CHARS = 4000
_OPEN_BELOW = 12  # tensors printed in fewer lines are shown open
_PRE = "margin:0;white-space:pre-wrap"


def _is_tensor(item) -> bool:
    """Items are strings or tensors (``PrintedTensor``): a tensor has a shape."""
    return hasattr(item, "shape")


def _number(value) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def tensor_summary(tensor: PrintedTensor) -> str:
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


def _header(log: PrintLog, shown: int) -> str:
    items = log.items
    tensors = [item for item in items if _is_tensor(item)]
    partial = sum(1 for t in tensors if t.partial)
    lines = sum(1 for item in items if not _is_tensor(item))
    text = f"{lines} text line{'s' * (lines != 1)} · {len(tensors)} tensor{'s' * (len(tensors) != 1)}"
    if partial:
        text += f" ({partial} partial)"
    if log.source != "captured":
        text += f" · {log.source} {log.path}"
    elif log.path:
        text += f" · also written to {log.path}"
    if shown < len(items):
        text += f" · showing {shown} of {len(items)} items (all of them are in .items and .text)"
    return text


def text_print_log(log: PrintLog) -> str:
    """Captured output: exactly the text printed. A binary file: one line per item."""
    if log.source == "binary file":
        body = "\n".join(
            f"{tensor_summary(item)}\n{item.values!s}" if _is_tensor(item) else str(item) for item in log.items
        )
        text = f"{_header(log, len(log.items))}\n{body}"
    else:
        text = log.text[:-1] if log.text.endswith("\n") else log.text
    if log.note:
        text += f"\n(msdebug: {log.note})"
    return text


def _tensor_html(tensor: PrintedTensor) -> str:
    printed = tensor.text or str(tensor.values)
    if len(printed) > _MAX_TENSOR_CHARS:
        printed = printed[:_MAX_TENSOR_CHARS] + f"\n… ({len(printed) - _MAX_TENSOR_CHARS} more characters in .items)"
    summary = tag("summary", tag("code", esc(tensor_summary(tensor))), style=LEFT)
    values = tag("pre", esc(printed), style=_PRE)
    opened = " open" if printed.count("\n") < _OPEN_BELOW else ""
    mark = "border-left:3px solid #c0392b;padding-left:4px" if tensor.partial else "padding-left:7px"
    return f'<details{opened} class="ms-tensor" style="{mark}">{summary}{values}</details>'


def html_print_log(log: PrintLog) -> str:
    items = log.items[:MAX_ITEMS]
    parts = [tag("div", esc(_header(log, len(items))), cls="ms-summary", style=f"{STRONG};{NOTE}")]
    run: list[str] = []
    for item in items:
        if _is_tensor(item):
            if run:
                parts.append(tag("pre", esc("\n".join(run)), style=_PRE))
                run = []
            parts.append(_tensor_html(item))
        else:
            run.append(str(item))
    if run:
        parts.append(tag("pre", esc("\n".join(run)), style=_PRE))
    if log.note:
        parts.append(tag("div", esc(f"msdebug: {log.note}"), style=FADED))
    return tag("div", "".join(parts), cls="msdebug ms-print")
