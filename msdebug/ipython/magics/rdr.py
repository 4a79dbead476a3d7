"""``%msrdr``: configure the Running Data Recorder (RDR), see what it wrote."""

from __future__ import annotations

import os
import warnings
from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand

from ...errors import MagicUsageError
from ._parse import Form, Option, Parsed, Spec, magic_spec

__all__ = ["RDR", "RdrMagics"]

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


def _absolute(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


@magics_class
class RdrMagics(Magics):
    """``%msrdr``."""

    SPECS = (RDR,)

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
