"""``%msrdr`` and ``%msgraphs``: configure RDR and save_graphs, see what they wrote."""

from __future__ import annotations

import os
import warnings
from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand

from ...errors import MagicUsageError
from ._parse import Form, Option, Parsed, Spec, magic_spec

__all__ = ["DumpMagics", "GRAPHS", "RDR"]

RDR = Spec(
    "msrdr",
    line=Form(
        words=("on", "off"),
        options=(
            Option("--mode", "1|2", "1 exports when a run fails, 2 after each compile too", choices=("1", "2"),
                   meaning="1 (export on failure) or 2 (also after each compile)"),
            Option("--path", "DIR", "where rank_<id>/rdr/ goes"),
            Option("--via", "env|file", "MS_RDR_* variables or an env_config.json file", choices=("env", "file")),
            Option("--file", "JSON", "the env_config.json to write with --via file"),
        ),
    ),
)  # fmt: skip

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


def _absolute(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


@magics_class
class DumpMagics(Magics):
    """``%msrdr`` and ``%msgraphs``."""

    SPECS = (RDR, GRAPHS)

    @no_var_expand
    @line_magic
    @magic_spec(RDR)
    def msrdr(self, args: Parsed) -> Any:
        """Configure the Running Data Recorder (MindSpore up to 2.7.0) and see its exports.

        Usage::

            %msrdr                              what RDR will do in this process, and its files so far
            %msrdr on [--mode 1|2] [--path DIR] [--via env|file] [--file JSON]
            %msrdr off

        --mode 1 exports when a run fails (MindSpore's default), 2 after each compile too.
        --path is where rank_<id>/rdr/ goes; a relative path is made absolute here
        (MindSpore itself would silently use the working directory).
        --via env (default) sets MS_RDR_*; --via file writes --file (default
        ./mindspore_config.json, never overwriting another file) and sets env_config_path.
        RDR is read once, at the first graph compile: run this in the first cells.
        """
        from ...recorders import envconfig

        options = args.options
        if not args.word:
            if options:
                raise MagicUsageError("%msrdr: options go with on, e.g. %msrdr on --mode 2 --path ./rdr")
            return envconfig.rdr_status()
        if args.word == "off" and set(options) - {"--via", "--file"}:
            raise MagicUsageError("%msrdr off takes no --mode or --path.")
        mode, path = options.get("--mode"), options.get("--path")
        config = envconfig.EnvConfig(
            rdr_enable=args.word == "on",
            rdr_mode=int(mode) if mode else None,
            rdr_path=_absolute(path) if path else None,
        )
        via = options.get("--via", "file" if "--file" in options else "env")
        # Shown in the status this returns, once, rather than as a warning that
        # Python's filters would show only the first time.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", envconfig.RdrWarning)
            if via == "file":
                config.write(_absolute(options.get("--file", "mindspore_config.json")))
            return config.apply(via=via)

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
        from ...recorders import savegraphs

        if not args.word:
            if args.options:
                raise MagicUsageError("%msgraphs: options go with on, e.g. %msgraphs on --level 2 --path ./graphs")
            return savegraphs.status()
        if args.word == "off":
            if args.options:
                raise MagicUsageError("%msgraphs off takes no options.")
            return savegraphs.configure(0)
        return savegraphs.configure(int(args.get("--level", "2")), _absolute(args.get("--path", "graphs")))
