"""``%msdump``: MindSpore's data dump from a notebook: switch it on, see what it wrote."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class, no_var_expand

from ...errors import MagicUsageError
from ._parse import Form, Option, Parsed, Spec, magic_spec

__all__ = ["DUMP", "DataDumpMagics"]

DUMP = Spec(
    "msdump",
    line=Form(
        words=("on", "off"),
        options=(
            Option("--dir", "DIR", "where MindSpore writes rank_<id>/ (letters, digits, _ - / only; default ./dump)"),
            Option("--kernels", "NAMES", "only these ops, comma-separated: Default/Sqrt-op0, relu, name-regex(...)"),
            Option("--iteration", "STEPS", '"all" (default), or steps and ranges such as 0|2-4'),
            Option("--inputs", help="dump op inputs too (the value a parameter had before the step)"),
        ),
    ),
)


@magics_class
class DataDumpMagics(Magics):
    """``%msdump``."""

    SPECS = (DUMP,)

    @no_var_expand
    @line_magic
    @magic_spec(DUMP)
    def msdump(self, args: Parsed) -> Any:
        """MindSpore's data dump: switch it on before the first graph compile, see what it wrote.

        Usage::

            %msdump                           what is configured, what MindSpore took, what it wrote
            %msdump on [--dir DIR] [--kernels NAMES] [--iteration STEPS] [--inputs]
            %msdump off

        The dump config is checked with MindSpore's own rules, written into DIR (another
        file there is never overwritten) and named by MINDSPORE_DUMP_CONFIG. MindSpore reads
        it at the first graph compile of the process and keeps it: after that, this says so
        and gives the first cell for a fresh kernel. Read the dump with msdebug.open_dump(DIR),
        or `msdebug dump DIR --nan` in a terminal.
        """
        from ...recorders import datadump

        options = args.options
        if not args.word:
            if options:
                raise MagicUsageError("%msdump: options go with on, e.g. %msdump on --dir ./dump --inputs")
            return datadump.dump_status()
        if args.word == "off":
            if options:
                raise MagicUsageError("%msdump off takes no options.")
            return datadump.disable()
        return datadump.enable(
            options.get("--dir", "./dump"),
            kernels=options.get("--kernels", ()),
            iteration=options.get("--iteration", "all"),
            inputs=bool(options.get("--inputs")),
        )
