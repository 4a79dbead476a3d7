"""msdebug's magics: one module per feature, named after it, each declaring one :class:`._parse.Spec` per magic.

:data:`MAGICS` is the one list: loading registers these classes, unloading removes what they
registered, and completion reads their ``SPECS``.

``%load_ext msdebug`` imports none of them: :data:`DECLARED` names each magic, its kinds and
the class that provides it, so IPython can list and complete the names at once and import a
class the first time one of its magics is used (or its help is asked for).
``tests/test_extension.py`` checks that :data:`DECLARED` says exactly what the classes do.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DECLARED", "MAGICS"]

#: magic name -> (kinds, "module:Class") for IPython's ``MagicsManager.register_lazy``;
#: in the order of :data:`MAGICS`.
DECLARED: dict[str, tuple[tuple[str, ...], str]] = {
    "mscontext": (("line", "cell"), "msdebug.ipython.magics.context:ContextMagics"),
    "msprint": (("line", "cell"), "msdebug.ipython.magics.print:PrintMagics"),
    "msrdr": (("line",), "msdebug.ipython.magics.rdr:RdrMagics"),
    "msgraphs": (("line",), "msdebug.ipython.magics.graphs:GraphsMagics"),
    "msdump": (("line",), "msdebug.ipython.magics.datadump:DataDumpMagics"),
    "msnan": (("cell",), "msdebug.ipython.magics.nan:NanMagics"),
    "msprofile": (("cell",), "msdebug.ipython.magics.profile:ProfileMagics"),
    "msdiff": (("cell",), "msdebug.ipython.magics.diff:DiffMagics"),
    "msrun": (("line", "cell"), "msdebug.ipython.magics.ranks:MsrunMagics"),
    "mswatch": (("cell",), "msdebug.ipython.magics.watch:WatchMagics"),
}


def __getattr__(name: str) -> Any:
    if name == "MAGICS":
        from .context import ContextMagics
        from .datadump import DataDumpMagics
        from .diff import DiffMagics
        from .graphs import GraphsMagics
        from .nan import NanMagics
        from .print import PrintMagics
        from .profile import ProfileMagics
        from .ranks import MsrunMagics
        from .rdr import RdrMagics
        from .watch import WatchMagics

        found = (
            ContextMagics, PrintMagics, RdrMagics, GraphsMagics, DataDumpMagics, NanMagics, ProfileMagics, DiffMagics,
            MsrunMagics, WatchMagics,
        )  # fmt: skip
        globals()["MAGICS"] = found
        return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
