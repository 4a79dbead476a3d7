"""Pure functions from msdebug's models to escaped HTML and plain text.

The context table's renderers (``views.context``) are imported on first use: importing one
view module (the status bar's ``views.status`` when msdebug loads in a kernel) must not
import the key catalog behind them.
"""

from typing import Any

__all__ = [
    "html_change_report",
    "html_key_info",
    "html_state",
    "text_change_report",
    "text_key_info",
    "text_state",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import context

        return getattr(context, name)
    raise AttributeError(f"module 'msdebug.views' has no attribute {name!r}")
