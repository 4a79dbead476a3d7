"""``%mscontext`` and ``%%mscontext``: show, explain, set and scope MindSpore's context."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from ...errors import MagicUsageError
from ._cellbody import run_body
from ._parse import Form, Option, Parsed, Spec, magic_spec

__all__ = ["CONTEXT", "ContextMagics"]

CONTEXT = Spec(
    "mscontext",
    line=Form(
        options=(
            Option("--changed", help="only the keys that differ from their defaults"),
            Option("--reset", help="back to the context when msdebug was loaded"),
            Option("--panel", help="a settings panel (ipywidgets)"),
        ),
        settings=True,
    ),
    cell=Form(settings=True),
)


@magics_class
class ContextMagics(Magics):
    """``%mscontext`` and ``%%mscontext``."""

    SPECS = (CONTEXT,)

    @no_var_expand
    @line_cell_magic
    @magic_spec(CONTEXT)
    def mscontext(self, args: Parsed) -> Any:
        """Show, explain, set and scope MindSpore's context.

        Usage::

            %mscontext                      table of every key: value, default, platforms, status
            %mscontext --changed            only the keys that differ from their defaults
            %mscontext mode                 what one key means, its allowed values, default, status
            %mscontext mode=graph           set keys (validated first; all or nothing)
            %mscontext device=CPU:0         device_target and device_id together
            %mscontext --reset              back to the context when msdebug was loaded
            %mscontext --panel              a settings panel (ipywidgets), in sync with the context

            %%mscontext mode=pynative pynative_synchronize=true
            ...                             the cell runs with these settings; afterwards
                                            every key is as before, also after an error

        Values are literals: mode=graph|pynative|GRAPH_MODE|0|1; booleans true/false, on/off,
        yes/no, 1/0; quoted strings ("a b"); dicts as jit_config={"jit_level": "O1"}.
        ``$variables`` are not expanded: pass Python values with ``msdebug.set(...)``.

        Example::

            In [1]: %mscontext mdoe=graph
            UsageError: unknown context key 'mdoe'. Did you mean 'mode'? %mscontext lists every key.
        """
        from ... import settings  # imports the key catalog: only once a magic is used

        if args.cell is not None:
            return _run_scoped(self.shell, args)
        flags, names, assignments = list(args.options), args.names, args.settings
        if len(flags) > 1 or (flags and (assignments or names)):
            raise MagicUsageError(f"use {' or '.join(flags)} on its own.")
        if names and assignments:
            raise MagicUsageError(f"{names[0]}: write {names[0]}=VALUE to set it, or %mscontext {names[0]} for help.")
        if len(names) > 1:
            raise MagicUsageError(f"one key at a time for help, or write key=value to set: {' '.join(names)}")
        if names:
            return settings.describe(names[0])
        if assignments:
            return settings.apply(assignments)
        if flags == ["--reset"]:
            return settings.reset()
        if flags == ["--panel"]:
            from ..panel import panel

            return panel()
        return settings.state(changed_only=flags == ["--changed"])


def _run_scoped(shell, args: Parsed) -> Any:
    """Run a cell body under ``settings.context``; return its last expression's value."""
    from ... import settings

    def after(scope: settings.Scope) -> str:
        if scope.problem:
            return f"%%mscontext: {scope.problem}"
        return "%%mscontext: the MindSpore context was restored after this error"

    return run_body(shell, "mscontext", args.line, args.cell, settings.context(args.settings), after)
