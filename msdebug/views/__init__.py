"""Pure functions from msdebug's models to escaped HTML and plain text.

The context table's renderers (``views.context``) are imported on first use: importing one
view module (the status bar's ``views.status`` when msdebug loads in a kernel) must not
import the key catalog behind them. So is a view module named as an attribute of this package
(``views.explorer.html_graph``): models pick their renderers that way (:mod:`msdebug.dumps.rendered`).
"""

import importlib
from typing import Any

# views.context's renderers: an HTML and a text one for each of its models.
__all__ = [f"{form}_{model}" for form in ("html", "text") for model in ("change_report", "key_info", "state")]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import context

        return getattr(context, name)
    if not name.startswith("_"):
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module 'msdebug.views' has no attribute {name!r}")
