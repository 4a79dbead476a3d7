"""Readers for MindSpore's dump files: pure data, no IPython, no HTML.

* :mod:`.ir`: the ``.ir`` text format (RDR and save_graphs);
* :mod:`.rdr`: a Running Data Recorder tree (``rank_*/rdr/``);
* :mod:`.graphs`: a save_graphs directory;
* :mod:`.explorer`: both behind one object, for :func:`msdebug.open_dump`;
* :mod:`.datadump`: a data dump (``MINDSPORE_DUMP_CONFIG``), :mod:`.dataexplorer` its explorer,
  :mod:`.nan`: the first non-finite tensor in execution order.
"""

from __future__ import annotations

from ..errors import DumpError, DumpFormatError
from .ir import IrFile, IrGraph, IrNode, SourceLocation, parse_ir, read_ir

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
