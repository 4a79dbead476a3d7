"""``%%msprofile``: profile a cell's ops and show the report in that cell."""

from __future__ import annotations

import contextlib
import shlex
import sys
from collections.abc import Iterator
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class, no_var_expand

from ...errors import MsDebugError, did_you_mean

__all__ = ["MAGIC_NAMES", "ProfileMagics", "parse_profile_line"]

MAGIC_NAMES = ("msprofile",)
OPTIONS = {
    "--steps": "START:STOP",
    "--timeline": "",
    "--top": "N",
    "--output": "DIR",
    "--verbose": "",
}
USAGE = "%%msprofile [--steps START:STOP] [--timeline] [--top N] [--output DIR] [--verbose]"


def parse_profile_line(line: str) -> dict[str, Any]:
    """``--steps 2:5 --top 10`` -> ``{"steps": "2:5", "top": 10}``; one-line errors."""
    try:
        words = shlex.split(line)
    except ValueError as error:
        raise UsageError(f"%%msprofile: {error} in {line!r}; usage: {USAGE}") from None
    values: dict[str, Any] = {}
    position = 0
    while position < len(words):
        word = words[position]
        name, _, inline = word.partition("=")
        if name not in OPTIONS:
            raise UsageError(f"%%msprofile: unknown option {word!r}{did_you_mean(name, OPTIONS)}; usage: {USAGE}")
        key = name[2:]
        if key in values:
            raise UsageError(f"%%msprofile: {name} given twice.")
        if not OPTIONS[name]:
            if inline:
                raise UsageError(f"%%msprofile: {name} takes no value.")
            values[key] = True
        else:
            if inline:
                value = inline
            elif position + 1 < len(words):
                position += 1
                value = words[position]
            else:
                raise UsageError(f"%%msprofile: {name} needs {OPTIONS[name]}; usage: {USAGE}")
            values[key] = value
        position += 1
    if "top" in values:
        if not str(values["top"]).isdigit():
            raise UsageError(f"%%msprofile: --top needs a whole number, got {values['top']!r}.")
        values["top"] = int(values["top"])
    return values


@contextlib.contextmanager
def _busy(what: str) -> Iterator[None]:
    """A progress bar while MindSpore analyses (a widget in a notebook, a line in a terminal)."""
    from IPython.display import HTML, display

    handle = None
    try:
        import ipywidgets

        bar = ipywidgets.IntProgress(value=1, max=2, description="profile", bar_style="info")
        label = ipywidgets.Label(what)
        box = ipywidgets.HBox([bar, label])
        handle = display(box, display_id=True)
    except ImportError:
        print(f"msprofile: {what} ...", file=sys.stderr, flush=True)
    try:
        yield
    finally:
        if handle is not None:
            # Replace the bar by nothing: a saved notebook keeps no dead widget.
            handle.update(HTML(""))
            box.close()


class _ShowOnError:
    """Runs the profile; when the cell fails, shows the partial report before the traceback."""

    def __init__(self, recorder) -> None:
        self.recorder = recorder

    def __enter__(self):
        entered = self.recorder.__enter__()
        if entered.note:
            print(f"%%msprofile {entered.note}")
        return entered

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

    @no_var_expand
    @cell_magic
    def msprofile(self, line: str, cell: str) -> Any:
        """Profile the ops this cell runs and show the report here.

        Usage::

            %%msprofile [--steps START:STOP] [--timeline] [--top N] [--output DIR] [--verbose]
            for step in range(8):
                train_step(x, y)
                msdebug.step()          # marks steps; without it the whole cell is one step

        --steps 2:5     record steps 2, 3 and 4 only (counted from 0)
        --timeline      also write the Chrome trace (MindSpore analyses for about a second)
        --top N         single ops listed before the rest is folded (default 15)
        --output DIR    a new or empty directory for MindSpore's files (default ./msprofile/<time>)
        --verbose       let MindSpore's own output (progress bar, log lines) into the cell

        The report is the cell's value (op types, top ops, time per step); a cell that fails
        or is interrupted shows what was recorded, marked partial, then the error.
        """
        from ...recorders.profile import Profile
        from .context import run_body

        options = parse_profile_line(line)
        try:
            recorder = Profile(
                steps=options.get("steps"),
                output=options.get("output"),
                timeline=options.get("timeline", False),
                top=options.get("top", 15),
                verbose=options.get("verbose", False),
                busy=_busy,
            )
            guard = _ShowOnError(recorder)

            def after(entered) -> str:
                return "%%msprofile: the profiler was stopped; what it recorded is shown above"

            run_body(self.shell, "msprofile", line, cell, guard, after)
        except MsDebugError as error:
            raise UsageError(f"%%msprofile: {error}") from None
        return recorder.report
