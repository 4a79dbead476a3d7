"""``%msgraphs``: save_graphs for the next graph compiles, see what it wrote."""

from __future__ import annotations

import os
from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand

from ...errors import MagicUsageError
from ._parse import Form, Option, Parsed, Spec, magic_spec

__all__ = ["GRAPHS", "GraphsMagics"]

GRAPHS = Spec(
    "msgraphs",
    line=Form(
        words=("on", "off"),
        options=(
            Option("--level", "1|2|3", "1 compile stages, 2 also backend passes, 3 also .dot graphs",
                   choices=("1", "2", "3")),
            Option("--path", "DIR", "where the IR files go (default ./graphs)"),
        ),
    ),
)  # fmt: skip


@magics_class
class GraphsMagics(Magics):
    """``%msgraphs``."""

    SPECS = (GRAPHS,)

    @no_var_expand
    @line_magic
    @magic_spec(GRAPHS)
    def msgraphs(self, args: Parsed) -> Any:
        """save_graphs: dump the IR of the next graph compiles, and read what was dumped.

        Usage::

            %msgraphs                          the level and directory, and the files there so far
            %msgraphs on [--level 1|2|3] [--path DIR]
            %msgraphs off

        Level 1 dumps the compile stages, 2 adds backend passes (default), 3 adds .dot
        graphs (hundreds of files). --path defaults to ./graphs, made absolute here.
        Then: msdebug.open_dump(DIR).
        """
        from ...recorders import graphs

        if not args.word:
            if args.options:
                raise MagicUsageError("%msgraphs: options go with on, e.g. %msgraphs on --level 2 --path ./graphs")
            return graphs.status()
        if args.word == "off":
            if args.options:
                raise MagicUsageError("%msgraphs off takes no options.")
            return graphs.configure(0)
        path = os.path.abspath(os.path.expanduser(args.get("--path", "graphs")))
        return graphs.configure(int(args.get("--level", "2")), path)
