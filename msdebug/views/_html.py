"""Shared pieces of msdebug's HTML: escaping, and the few inline styles it uses."""

from __future__ import annotations

import html
from typing import Any

__all__ = ["BREAK_ANYWHERE", "CHANGED_MARK", "FADED", "LEFT", "NOTE", "STRONG", "esc", "hover", "scope", "tag"]

# Inline styles only: JupyterLab strips <style> elements from the outputs of untrusted
# notebooks (every notebook opened from disk) but keeps these properties, and its own
# table style (right-aligned cells) would otherwise win.
LEFT = "text-align:left"
STRONG = "font-weight:700"
CHANGED_MARK = "border-left:3px solid #e69500"
FADED = "opacity:.55"
NOTE = "color:#777"
# For a cell holding a scope name: it wraps at its "/" first (see scope()); a level longer than
# the column breaks anywhere, so a name never widens a table past the output area.
BREAK_ANYWHERE = "overflow-wrap:anywhere"


def esc(value: Any) -> str:
    """``html.escape(str(value))``: every interpolated string goes through here."""
    return html.escape(str(value), quote=True)


def tag(name: str, body: str, cls: str = "", style: str = "") -> str:
    """``<name class="cls" style="style">body</name>``; ``body`` must already be escaped."""
    attrs = (f' class="{esc(cls)}"' if cls else "") + (f' style="{esc(style)}"' if style else "")
    return f"<{name}{attrs}>{body}</{name}>"


def scope(name: Any) -> str:
    """A scope name escaped, with a line-break opportunity (``<wbr>``) after each ``/``: the
    whole name stays (and copies as it is), and a narrow column wraps it level by level."""
    return esc(name).replace("/", "/<wbr>")


def hover(text: Any, width: int) -> str:
    """``text`` escaped and shortened in the middle to ``width`` characters, the whole of it on hover."""
    from ._text import shorten

    text = str(text)
    short = shorten(text, width)
    return esc(text) if short == text else f'<span title="{esc(text)}">{esc(short)}</span>'
