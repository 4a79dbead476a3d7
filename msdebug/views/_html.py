"""Shared pieces of msdebug's HTML: escaping and one style block."""

from __future__ import annotations

import html
from typing import Any

__all__ = ["CSS", "esc", "tag"]

# One small style block, scoped to .msdebug so it cannot leak into the notebook.
CSS = """<style>
.msdebug{font-family:var(--jp-ui-font-family,sans-serif);font-size:12.5px;line-height:1.45}
.msdebug .ms-summary{font-weight:600;margin:2px 0 6px}
.msdebug table{border-collapse:collapse;margin:2px 0 8px;font-size:inherit}
.msdebug th,.msdebug td{text-align:left;padding:1px 10px 1px 4px;vertical-align:top;font-size:inherit}
.msdebug th{font-weight:600}
.msdebug thead th{border-bottom:1px solid #999}
.msdebug code{font-family:var(--jp-code-font-family,monospace)}
.msdebug tr.ms-changed td.ms-value{font-weight:700}
.msdebug tr.ms-changed td:first-child{border-left:3px solid #e69500}
.msdebug tr.ms-inert td{opacity:.55}
.msdebug .ms-note{color:#777}
.msdebug .ms-warn{color:#a0522d}
.msdebug summary{cursor:pointer;font-weight:600}
</style>"""


def esc(value: Any) -> str:
    """``html.escape(str(value))``: every interpolated string goes through here."""
    return html.escape(str(value), quote=True)


def tag(name: str, body: str, cls: str = "") -> str:
    """``<name class="cls">body</name>``; ``body`` must already be escaped."""
    attr = f' class="{esc(cls)}"' if cls else ""
    return f"<{name}{attr}>{body}</{name}>"

