"""msdebug's magics: one module per group, each declaring one :class:`._parse.Spec` per magic.

:data:`MAGICS` is the one list: loading registers these classes, unloading removes what they
registered, and completion reads their ``SPECS``.
"""

from __future__ import annotations

from .context import ContextMagics
from .dumps import DumpMagics
from .nan import NanMagics
from .prints import PrintMagics
from .profile import ProfileMagics

__all__ = ["MAGICS"]

MAGICS = (ContextMagics, PrintMagics, DumpMagics, NanMagics, ProfileMagics)
