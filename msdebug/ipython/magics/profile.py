"""``%%msprofile``: profile a cell's ops and show the report in that cell."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from IPython.core.magic import Magics, cell_magic, magics_class, no_var_expand

from ... import interrupts
from ._cellbody import run_body
from ._parse import Form, Option, Parsed, Spec, magic_spec

__all__ = ["PROFILE", "ProfileMagics"]

PROFILE = Spec(
    "msprofile",
    cell=Form(
        options=(
            Option("--steps", "START:STOP", "record only steps START .. STOP-1 (counted from 0)"),
            Option("--timeline", help="also write the Chrome trace (about a second of analysis)"),
            Option("--top", "N", "single ops listed before the rest is folded (default 15)"),
            Option("--output", "DIR", "a new or empty directory for MindSpore's files"),
            Option("--verbose", help="let MindSpore's own output into the cell"),
            Option("--order", "time|name", "table rows longest first (time) or by name", choices=("time", "name")),
        )
    ),
)


@contextlib.contextmanager
def _busy(what: str) -> Iterator[None]:
    """A progress bar while MindSpore analyses: a widget in a notebook, a line in a terminal."""
    from IPython import get_ipython
    from IPython.display import display

    shell = get_ipython()
    box = None
    if getattr(shell, "kernel", None) is not None:
        try:
            import ipywidgets

            bar = ipywidgets.IntProgress(value=1, max=2, description="profile", bar_style="info")
            box = ipywidgets.HBox([bar, ipywidgets.Label(what)])
            display(box)
        except ImportError:
            pass
    if box is None:
        print(f"%%msprofile: {what} ...", file=sys.stderr, flush=True)
    try:
        yield
    finally:
        if box is not None:
            # A closed widget's view disappears from the output area.
            box.close()


class _ShowOnError:
    """Runs the profile; when the cell fails, shows the partial report before the traceback."""

    def __init__(self, recorder) -> None:
        self.recorder = recorder

    def __enter__(self):
        entered = self.recorder.__enter__()
        try:
            if entered.note:
                print(f"%%msprofile {entered.note}")
        except BaseException:  # Ctrl-C: the profile holds SIGINT and runs until its __exit__
            self.recorder.__exit__(*sys.exc_info())
            raise
        return entered

    @interrupts.protected  # an interrupt on this line waits for the recorder's exit
    def __exit__(self, kind, error, tb) -> bool:
        try:
            self.recorder.__exit__(kind, error, tb)
        finally:
            if kind is not None and self.recorder.report is not None:
                from IPython.display import display

                display(self.recorder.report)
        return False


@magics_class
class ProfileMagics(Magics):
    """``%%msprofile``."""

    SPECS = (PROFILE,)

    @no_var_expand
    @cell_magic
    @magic_spec(PROFILE)
    def msprofile(self, args: Parsed) -> Any:
        """Profile the ops this cell runs and show the report here.

        Usage::

            %%msprofile [--steps START:STOP] [--timeline] [--top N] [--output DIR] [--verbose] [--order time|name]
            for step in range(8):
                train_step(x, y)
                msdebug.step()          # marks steps; without it the whole cell is one step

        --steps 2:5     record steps 2, 3 and 4 only (counted from 0)
        --timeline      also write the Chrome trace (MindSpore analyses for about a second)
        --top N         single ops listed before the rest is folded (default 15)
        --output DIR    a new or empty directory for MindSpore's files (default ./msprofile/<time>)
        --verbose       let MindSpore's own output (progress bar, log lines) into the cell
        --order name    table rows by name instead of longest first

        The report is the cell's value (op types, top ops, time per step); a cell that fails
        or is interrupted shows what was recorded, marked partial, then the error.
        """
        from ...errors import InvalidValueError
        from ...files import ascii_number
        from ...recorders.profile import Profile

        top = args.get("--top", "15")
        if ascii_number(top) is None:
            raise InvalidValueError(f"%%msprofile: --top needs a whole number, got {top!r}.")
        recorder = Profile(
            steps=args.get("--steps"),
            output=args.get("--output"),
            timeline=args.get("--timeline", False),
            top=int(top),
            verbose=args.get("--verbose", False),
            busy=_busy,
            order=args.get("--order", "time"),
        )

        def after(entered) -> str:
            return "%%msprofile: the profiler was stopped; what it recorded is shown above"

        run_body(self.shell, "msprofile", args.line, args.cell, _ShowOnError(recorder), after)
        return recorder.report
