"""Readers for MindSpore's dump files: pure data, no IPython, no HTML.

* :mod:`.print`: what the Print operator printed (captured text, binary print files);
* :mod:`.ir`: the ``.ir`` text format (RDR and save_graphs);
* :mod:`.rdr`: a Running Data Recorder tree (``rank_*/rdr/``);
* :mod:`.graphs`: a save_graphs directory;
* :mod:`.explorer`: both behind one object, for :func:`msdebug.open_dump`;
* :mod:`.datadump`: a data dump (``MINDSPORE_DUMP_CONFIG``), :mod:`.datadump_explorer` its explorer,
  :mod:`.nan`: the first non-finite tensor in execution order.
"""

from __future__ import annotations

from typing import Any

from ..errors import DumpError, DumpFormatError

__all__ = [
    "DumpError",
    "DumpFormatError",
    "IrFile",
    "IrGraph",
    "IrNode",
    "SourceLocation",
    "parse_ir",
    "read_ir",
]


def __getattr__(name: str) -> Any:
    # The .ir reader is imported on first use: importing one light module of this package
    # (``cells``, which %load_ext msdebug needs to name notebook cells) must not import it.
    if name in __all__:
        from . import ir

        return getattr(ir, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
