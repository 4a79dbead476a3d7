"""Shared pieces of msdebug's HTML: escaping, and the few inline styles it uses."""

from __future__ import annotations

import html
from typing import Any

__all__ = ["CHANGED_MARK", "FADED", "LEFT", "NOTE", "STRONG", "esc", "tag"]

# Inline styles only: JupyterLab strips <style> elements from the outputs of untrusted
# notebooks (every notebook opened from disk) but keeps these properties, and its own
# table style (right-aligned cells) would otherwise win.
LEFT = "text-align:left"
STRONG = "font-weight:700"
CHANGED_MARK = "border-left:3px solid #e69500"
FADED = "opacity:.55"
NOTE = "color:#777"


def esc(value: Any) -> str:
    """``html.escape(str(value))``: every interpolated string goes through here."""
    return html.escape(str(value), quote=True)


def tag(name: str, body: str, cls: str = "", style: str = "") -> str:
    """``<name class="cls" style="style">body</name>``; ``body`` must already be escaped."""
    attrs = (f' class="{esc(cls)}"' if cls else "") + (f' style="{esc(style)}"' if style else "")
    return f"<{name}{attrs}>{body}</{name}>"
