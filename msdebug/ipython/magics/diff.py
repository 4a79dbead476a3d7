"""``%%msdiff``: run a cell twice, or against a saved run, and show the first op where they differ."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, cell_magic, magics_class, no_var_expand

from ._cellbody import run_body
from ._parse import Form, Option, Parsed, Spec, magic_spec

__all__ = ["DIFF", "DiffMagics"]

DIFF = Spec(
    "msdiff",
    cell=Form(
        options=(
            Option("--repeat", help="the same cell twice: the first op that is not deterministic"),
            Option("--modes", help="PyNative (hooks) against GRAPH (a data dump)"),
            Option(
                "--dtype",
                "float16|bfloat16",
                "as it is, against the networks in that dtype",
                choices=("float16", "bfloat16"),
            ),  # fmt: skip
            Option("--save", "NAME", "keep this run as msdiff_runs/NAME"),
            Option("--against", "NAME|PATH", "this run against a saved run, a data dump or an msprobe dump"),
            Option("--rank", "R", "with --against: that rank of it (inside %%msrun: each rank's own)"),
            Option("--iteration", "N", "with --against: that iteration of a data dump (step of an msprobe dump)"),
            Option("--graph", "G", "with --against: that graph of a data dump (default: the most kernels)"),
            Option("--seed", "N", "MindSpore's global seed, set before each run"),
            Option(
                "--restore",
                "NAME[,NAME]",
                "the Cells, Models or Parameters put back before the second run (default: every network "
                "bound to a top-level name)",
            ),
            Option("--rtol", "X", "relative tolerance (default per dtype, see the README)"),
            Option("--atol", "X", "absolute tolerance (default per dtype)"),
            Option("--rule", "allclose|msprobe", "the verdict per tensor", choices=("allclose", "msprobe")),
        )
    ),
)

_HOWS = ("--repeat", "--modes", "--dtype", "--against")
_CHOICES = ("--rank", "--iteration", "--graph")


def _number(args: Parsed, name: str, kind: type) -> Any:
    from ...errors import InvalidValueError

    text = args.get(name)
    if text is None:
        return None
    try:
        value = kind(text)
    except ValueError:
        raise InvalidValueError(f"%%msdiff: {name} needs a number, got {text!r}.") from None
    return value


def _whole(args: Parsed, name: str) -> int | None:
    from ...errors import InvalidValueError

    text = args.get(name)
    if text is None:
        return None
    if not text.isascii() or not text.isdigit():
        raise InvalidValueError(f"%%msdiff: {name} needs a whole number from 0, got {text!r}.")
    return int(text)


@magics_class
class DiffMagics(Magics):
    """``%%msdiff``."""

    SPECS = (DIFF,)

    @no_var_expand
    @cell_magic
    @magic_spec(DIFF)
    def msdiff(self, args: Parsed) -> Any:
        """Run the cell twice (or once, against a saved run) and show the first op whose values differ.

        Usage::

            %%msdiff --repeat | --modes | --dtype float16|bfloat16 | --against NAME|PATH
                     [--rank R] [--iteration N] [--graph G]
                     [--save NAME] [--seed N] [--restore NAME[,NAME]] [--rtol X] [--atol X]
                     [--rule allclose|msprobe]

        --repeat        the same cell twice: the first op that is not deterministic (a dropout)
        --modes         PyNative under hooks, then GRAPH from a data dump
        --dtype X       the cell as it is, then with its networks in float16 or bfloat16 (Cell.to_float)
        --against NAME  this run against one saved with --save NAME, or a directory: a saved run,
                        a MindSpore data dump (GRAPH) or an msprobe dump
        --rank R, --iteration N, --graph G
                        with --against: which rank, iteration and graph of it. A data dump
                        without them gives rank 0, the graph with the most kernels and its
                        first iteration, and the report's notes say what else there is
        --save NAME     keep this run as msdiff_runs/NAME (alone: only save it)
        --restore NAMES what is put back before the second run: Cells, Models or Parameters, by
                        name (net,opt or trainer.net); by default every Cell or Model bound to a
                        top-level name. The report says what was restored, and warns when nothing was.

        Inside %%msrun, --save NAME writes each rank's run to msdiff_runs/NAME/rank_<R>, and
        --against NAME compares each rank with its own; outside, --against a run saved that way
        takes rank 0 unless --rank says, and the notes say so.

        "First" is in execution order, inputs before outputs. Ops are aligned by scope, type and
        order, then by type and order; ops only one run has are named. Parameters are put back
        before the second run, so both start from the same values. When the first difference is
        in a value no op of the cell made, the report names it (a notebook name, a Parameter, or
        a gradient, which the backward pass made). The report is the cell's value.
        """
        from ...errors import MagicUsageError
        from ...recorders.diff import DiffSession

        chosen = [name for name in _HOWS if args.get(name) not in (None, False)]
        if len(chosen) > 1:
            raise MagicUsageError(f"%%msdiff: choose one of {', '.join(_HOWS)}; got {' and '.join(chosen)}.")
        if not chosen and args.get("--save") is None:
            raise MagicUsageError(
                f"%%msdiff: say what to compare: {', '.join(_HOWS)} (or --save NAME to keep this run for later)."
            )
        how = chosen[0][2:] if chosen else "save"
        choices = [name for name in _CHOICES if args.get(name) is not None]
        if choices and how != "against":
            raise MagicUsageError(
                f"%%msdiff: {' and '.join(choices)} choose{'s' if len(choices) == 1 else ''} in what --against "
                "names; add --against NAME|PATH."
            )
        seed = _number(args, "--seed", int)
        session = DiffSession(
            args.cell,
            self.shell.user_ns,
            how,
            dtype=args.get("--dtype"),
            against=args.get("--against"),
            save=args.get("--save"),
            seed=seed,
            rtol=_number(args, "--rtol", float),
            atol=_number(args, "--atol", float),
            rule=args.get("--rule", "allclose"),
            restore=args.get("--restore"),
            rank=_whole(args, "--rank"),
            iteration=_whole(args, "--iteration"),
            graph=_whole(args, "--graph"),
        )

        def after(entered) -> str:
            return f"%%msdiff: the cell failed in its {entered.label} run; nothing was compared"

        try:
            for side in session.sides:
                run_body(self.shell, "msdiff", args.line, args.cell, side, after)
        except BaseException:
            session.discard()  # a side that failed has discarded already; this is for an interrupt between sides
            raise
        return session.report()
