"""``%%mswatch``: watch a training cell's weights, gradients, activations and loss, step by step,
with a live table in the cell's output, and stop at the first step where a condition trips."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from IPython.core.magic import Magics, cell_magic, magics_class, no_var_expand

from ._cellbody import run_body
from ._parse import Form, Option, Parsed, Spec, magic_spec

__all__ = ["WATCH", "Live", "WatchMagics", "Watching"]

WATCH = Spec(
    "mswatch",
    cell=Form(
        free="CONDITION",
        options=(
            Option("--every", "N", "watch every Nth step (default 1)", whole=(1, 1_000_000)),
            Option("--stop", help="stop training at the end of the first tripping step (the default)"),
            Option("--no-stop", help="record every trip and let the training go on"),
            Option("--save", "DIR", "save the statistics there (msdebug watch-report DIR reads them)"),
        ),
    ),
)

UPDATES_PER_SECOND = 4


class Watching:
    """What the cell's output shows: the live table while the run goes on (``final`` False), the
    report after it; ``note`` says why a report is partial (an interrupt, an error)."""

    def __init__(self, history: Any, final: bool = False, note: str = "") -> None:
        self.history, self.final, self.note = history, final, note

    def _repr_html_(self) -> str:
        from ...views import watch

        return watch.html_report(self.history, self.note) if self.final else watch.html_live(self.history)

    def __repr__(self) -> str:
        from ...views import watch

        return watch.text_report(self.history, self.note) if self.final else watch.text_live(self.history)


class Live:
    """The session's ``on_update``: shows the history through ``show`` at most ``per_second``
    times a second, by the clock (a step that comes sooner is counted, not shown, and never
    waited for: the final report shows every step)."""

    def __init__(
        self,
        show: Callable[[Any], None],
        per_second: float = UPDATES_PER_SECOND,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.show, self.interval, self.clock = show, 1.0 / per_second, clock
        self.last = -float("inf")
        self.shown = self.skipped = 0

    def __call__(self, history: Any) -> None:
        now = self.clock()
        if now - self.last < self.interval:
            self.skipped += 1
            return
        self.last = now
        self.shown += 1
        self.show(history)


class _Output:
    """One output of the cell, replaced as the run goes on (a display handle); in a terminal,
    which cannot replace what it printed, only the final report is printed."""

    def __init__(self, shell) -> None:
        from ..ranks import on_a_rank

        # On a rank of %msrun the notebook shows one report of every rank's watch instead.
        self.quiet = on_a_rank()
        self.live = getattr(shell, "kernel", None) is not None and not self.quiet
        self.handle: Any = None

    def update(self, history: Any) -> None:
        if not self.live:
            return
        from IPython.display import display

        shown = Watching(history)
        if self.handle is None:
            self.handle = display(shown, display_id=True)
        else:
            self.handle.update(shown)

    def final(self, history: Any, note: str) -> None:
        from IPython.display import display

        if self.quiet:
            return

        report = Watching(history, final=True, note=note)
        if self.handle is not None:
            self.handle.update(report)
        else:
            display(report)


def _note(error: BaseException | None) -> str:
    if error is None:
        return ""
    if isinstance(error, KeyboardInterrupt):
        return "interrupted: what was recorded until then"
    return f"the cell failed ({type(error).__name__}): what was recorded until then"


@magics_class
class WatchMagics(Magics):
    """``%%mswatch``."""

    SPECS = (WATCH,)

    @no_var_expand
    @cell_magic
    @magic_spec(WATCH)
    def mswatch(self, args: Parsed) -> Any:
        """Watch the training this cell runs: weights, gradients, activations and the loss, every
        step, against conditions; a live table of their statistics; stop at the first trip.

        Usage::

            %%mswatch [CONDITION ...] [--every N] [--stop | --no-stop] [--save DIR]
            for x, y in data:
                loss = train_step(x, y)
                msdebug.step(loss)      # ends a step (Model.train steps are seen by themselves)

        A condition is KIND:PATTERN:NAME(PARAM=VALUE,...), as MindInsight's watchpoints:
            grads:*:vanishing(abs_mean_lt=1e-7)   weights:fc*:not_changed   acts:encoder/*:all_zero
            loss:not_finite   loss:not_decreasing(steps=20)
        No condition: the recommended set (weights not changed / change too large; gradients
        vanishing, exploding, overflow; activations all zero; loss not finite / not decreasing).

        --every N       check every Nth step only (the statistics of the others are not computed)
        --stop          stop at the end of the first step where a condition trips (the default)
        --no-stop       record every trip, let the training go on
        --save DIR      save the statistics (read them with `msdebug watch-report DIR`)

        The table updates at most 4 times a second; the report says what tripped, where, the
        values against the thresholds, the line that defines the Cell or the loss, and the
        history. msdebug.last_watch() gives the statistics as a table.
        """
        from ...errors import MagicUsageError

        if args.get("--stop") and args.get("--no-stop"):
            raise MagicUsageError("%%mswatch: --stop and --no-stop are given together; choose one.")
        save = args.get("--save")
        if save is not None:
            from pathlib import Path

            where = Path(save).expanduser()
            if where.exists() and (not where.is_dir() or any(where.iterdir())):
                # Checked before the run: the statistics are saved after it, when a refusal comes too late.
                raise MagicUsageError(f"%%mswatch: --save {save} exists and is not an empty directory; give a new one.")
        from ...recorders.watch import WatchSession

        output = _Output(self.shell)
        live = Live(output.update)
        session = WatchSession(
            conditions=list(args.names) or None,
            every=args.get("--every", 1),
            stop=not args.get("--no-stop", False),
            namespace=self.shell.user_ns,
            on_update=live,
            save=save,
        )
        self.last_live = live  # how many updates were shown and how many skipped (the tests read it)

        def after(entered) -> str:
            return "%%mswatch: the watch was stopped and its hooks removed; what it recorded is shown above"

        error: BaseException | None = None
        try:
            return run_body(self.shell, "mswatch", args.line, args.cell, session, after)
        except BaseException as caught:
            error = caught
            raise
        finally:
            # A hostile condition fails before the first step ends: nothing was watched, nothing to show.
            from ...errors import MsDebugError

            if not isinstance(error, MsDebugError) or len(session.history.steps):
                output.final(session.history, _note(error))
