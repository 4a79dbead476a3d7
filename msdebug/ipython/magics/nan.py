"""``%%msnan``: find the first NaN/Inf of a cell."""

from __future__ import annotations

import time
from typing import Any

from IPython.core.magic import Magics, cell_magic, magics_class, no_var_expand

from ._cellbody import run_body
from ._parse import Form, Option, Parsed, Spec, magic_spec

__all__ = ["NAN", "NanMagics", "WidgetProgress"]

NAN = Spec(
    "msnan",
    cell=Form(
        options=(
            Option(
                "--pynative", help="run the cell in PyNative mode under hooks (GRAPH cells after the first compile)"
            ),
            Option(
                "--inf",
                help="blame the first non-finite value of any kind, also an infinity that came in as data (a -inf mask)",
            ),
        ),
    ),
)


class WidgetProgress:
    """A progress bar (ipywidgets) for scans of ``at_least`` bytes that last more than ``after`` seconds.

    The bar stays in the saved notebook (as its text form), so whether it appears must not
    depend on the machine's speed alone: a dump smaller than ``at_least`` never shows one.
    """

    def __init__(self, after: float = 2.0, at_least: int = 64 << 20) -> None:
        self.started = time.monotonic()
        self.after = after
        self.at_least = at_least
        self.bar: Any = None
        self.shown = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if self.bar is False or total < self.at_least or now - self.started < self.after or now - self.shown < 0.1:
            return
        self.shown = now
        if self.bar is None:
            try:
                import ipywidgets
                from IPython.display import display
            except ImportError:
                self.bar = False
                return
            self.bar = ipywidgets.FloatProgress(min=0.0, max=1.0, description="scanning")
            display(self.bar)
        self.bar.value = done / total if total else 1.0

    def close(self) -> None:
        if self.bar:
            self.bar.close()


@magics_class
class NanMagics(Magics):
    """``%%msnan``."""

    SPECS = (NAN,)

    @no_var_expand
    @cell_magic
    @magic_spec(NAN)
    def msnan(self, args: Parsed) -> Any:
        """Run the cell and show the first op that made a value not finite (NaN, +Inf, -Inf).

        Usage::

            %%msnan [--pynative] [--inf]

        The culprit is the first op that made a NaN (its inputs hold none) or an infinity (its
        inputs are finite), or the first NaN that came in with the data. Infinities that came
        in as data (a -inf attention mask, a padding) are listed, not blamed; when no op made
        anything, the answer is where the first non-finite value came in. --inf blames the
        first non-finite value of any kind.

        PyNative: hooks on primitive calls, Tensor operators and Cells (removed when the cell
        ends, also after an error); the culprit is the primitive that made the value, with the
        cell line behind it, its inputs' and outputs' statistics and the ops it reached.
        GRAPH mode and @jit: from a data dump of the cell's graphs. MindSpore reads the dump
        config at the first graph compile only: before it, %%msnan sets up a dump itself;
        after it, it says how to get one (a fresh kernel's first cell), or rerun the cell
        with --pynative where the code allows it (not @jit functions or sink mode).
        The cell's own output and value are kept.
        """
        from IPython.display import display

        from ...recorders.nan import NanSession

        progress = WidgetProgress()  # the cell's In [N] comes from dumps.cells, named at %load_ext
        session = NanSession(
            args.cell,
            pynative=bool(args.get("--pynative")),
            progress=progress,
            inf=bool(args.get("--inf")),
            namespace=self.shell.user_ns,
        )

        def after(entered) -> str:
            return "%%msnan: the report above covers the ops that ran before the error"

        try:
            return run_body(self.shell, "msnan", args.line, args.cell, session, after)
        finally:
            progress.close()
            if session.report is not None:
                display(session.report)
