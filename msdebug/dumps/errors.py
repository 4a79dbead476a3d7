"""Errors of the dump readers; every message names the file."""

from __future__ import annotations

from ..errors import MsDebugError

__all__ = ["DumpError", "DumpFormatError"]


class DumpError(MsDebugError, OSError):
    """A dump path that does not exist, cannot be read, or holds no dump msdebug knows."""


class DumpFormatError(MsDebugError, ValueError):
    """A dump file that is not what its name says: binary garbage, or cut short."""
