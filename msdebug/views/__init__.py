"""Pure functions from msdebug's models to escaped HTML and plain text."""

from .context import (
    html_change_report,
    html_key_info,
    html_state,
    text_change_report,
    text_key_info,
    text_state,
)

__all__ = [
    "html_change_report",
    "html_key_info",
    "html_state",
    "text_change_report",
    "text_key_info",
    "text_state",
]
