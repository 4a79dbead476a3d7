"""Pure functions from msdebug's models to escaped HTML and plain text."""

from . import context as _context
from .context import *  # noqa: F403 - the public names are context.__all__

__all__ = _context.__all__
