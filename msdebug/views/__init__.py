"""Pure functions from msdebug's models to escaped HTML and plain text.

The context table's renderers (``views.context``) are imported on first use: importing one
view module (the status bar's ``views.status`` when msdebug loads in a kernel) must not
import the key catalog behind them.
"""

from typing import Any

# views.context's renderers: an HTML and a text one for each of its models.
__all__ = [f"{form}_{model}" for model in ("change_report", "key_info", "state") for form in ("html", "text")]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import context

        return getattr(context, name)
    raise AttributeError(f"module 'msdebug.views' has no attribute {name!r}")
