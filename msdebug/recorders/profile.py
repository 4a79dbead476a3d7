"""Profile code from a notebook: the ``%%msprofile`` session and the ``Model.train`` callbacks.

* :func:`profile`: ``with msdebug.profile(steps="2:5") as prof:`` (and ``%%msprofile``); steps are
  marked by :func:`step` / ``prof.step()``; ``prof.report`` is the inline report;
* :class:`ProfileSteps` / :class:`ProfileEpochs`: ``Model.train`` callbacks for a step or epoch range;
* :func:`open_profile`, :func:`compare_profiles`: any profiler output directory, and two side by side.

The other two ways of MindSpore's profiler guide have modules of their own:
:mod:`.profile_options` (``MS_PROFILER_OPTIONS`` and ``profiler_config.json``, validated) and
:mod:`.profile_dynamic` (``DynamicProfilerMonitor``); the report models are in :mod:`msdebug.dumps.profile`.

MindSpore's profiler prints (a progress bar from a forked child, log lines through a handler bound
to the stderr of ``import mindspore``); while msdebug starts and stops it, fds 1 and 2, ``sys.stdout``,
``sys.stderr`` and MindSpore's log handler all go into one buffer, kept in ``report.log``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .. import interrupts
from ..dumps.profile import (
    _TOP,
    STEPS_FILE,
    ComparisonReport,
    ProfileData,
    ProfileReport,
    _check_order,
    _check_top,
    compare,
    find_runs,
    read_profile,
)
from ..errors import InvalidValueError, ProfilerError
from .profile_options import ProfilerOptions, profiler_options
from .profile_options import check_config as check_config  # re-exported: read here by callers and tests
from .profile_options import config_fields as config_fields
from .profile_options import option_fields as option_fields
from .profile_options import read_config as read_config

__all__ = [
    "ComparisonReport",
    "Profile",
    "ProfileEpochs",
    "ProfileReport",
    "ProfileSteps",
    "ProfilerOptions",
    "compare_profiles",
    "open_profile",
    "parse_steps",
    "profile",
    "profiler_options",
    "step",
]


# --------------------------------------------------------------------------- entry points


def _as_data(profile: Any) -> ProfileData:
    if isinstance(profile, ProfileReport):
        return profile.data
    if isinstance(profile, Profile):
        if profile.report is None:
            raise InvalidValueError("this profile has not finished yet; compare it after its block or cell.")
        return profile.report.data
    if isinstance(profile, ProfileData):
        return profile
    if isinstance(profile, (str, os.PathLike)):
        return read_profile(profile)
    raise InvalidValueError(
        f"cannot compare a {type(profile).__name__}; give a profile directory, a report or a msdebug.profile()."
    )


def open_profile(path: str | os.PathLike, top: int = _TOP, order: str = "time") -> ProfileReport:
    """The report of any profiler output directory (also a cluster copy with ``rank_*`` inside)."""
    return ProfileReport(read_profile(path), top=_check_top(top), order=order)


def compare_profiles(before: Any, after: Any, top: int = _TOP, order: str = "change") -> ComparisonReport:
    """Per op type and per op: time before and after, speed-up, new and vanished ops.

    ``before`` and ``after`` are directories, reports or finished :func:`profile` objects;
    rows come biggest change first, or by name with ``order="name"``.
    """
    if order not in ("change", "name"):
        raise InvalidValueError(f"order must be 'change' or 'name', got {order!r}.")
    return ComparisonReport(compare(_as_data(before), _as_data(after)), top=_check_top(top), order=order)


# --------------------------------------------------------------------------- steps


def parse_steps(steps: Any) -> tuple[int, int] | None:
    """``"2:5"``, ``(2, 5)`` or ``range(2, 5)`` -> ``(2, 5)``: steps 2, 3 and 4 (counted from 0)."""
    if steps is None or steps == "":
        return None
    if isinstance(steps, range) and steps.step == 1:
        start, stop = steps.start, steps.stop
    elif isinstance(steps, (tuple, list)) and len(steps) == 2:
        start, stop = steps
    elif isinstance(steps, str) and re.fullmatch(r"\s*\d*\s*:\s*\d+\s*", steps):
        head, tail = steps.split(":")
        start, stop = int(head or 0), int(tail)
    else:
        raise InvalidValueError(
            f"steps must be START:STOP (steps START .. STOP-1, counted from 0), e.g. 2:5; got {steps!r}."
        )
    if any(isinstance(v, bool) or not isinstance(v, int) for v in (start, stop)) or not 0 <= start < stop:
        raise InvalidValueError(f"steps needs 0 <= START < STOP, got {start!r}:{stop!r}.")
    return start, stop


_active: list[Profile] = []  # the innermost running profile(), for msdebug.step()


def step() -> None:
    """Mark the end of a step of the innermost running :func:`profile` (no-op outside one)."""
    if _active:
        _active[-1].step()


# --------------------------------------------------------------------------- silence


@contextlib.contextmanager
def _silenced(keep: list[str], verbose: bool) -> Iterator[None]:
    """Everything MindSpore's profiler prints while inside goes to ``keep`` instead of the cell."""
    if verbose:
        yield
        return
    import wurlitzer

    from ..backend.profile import quiet_logs

    sink = tempfile.TemporaryFile()
    logs = io.StringIO()
    saved = sys.stdout, sys.stderr
    for stream in saved:
        with contextlib.suppress(Exception):
            stream.flush()
    # A forked parser child writes through its copy of sys.stdout: make that fd 1, which the
    # child inherits, so its progress bar lands in the sink as well.
    text = io.TextIOWrapper(open(os.dup(sink.fileno()), "wb"), encoding="utf-8", write_through=True)
    try:
        with wurlitzer.pipes(stdout=sink, stderr=sink, encoding=None), quiet_logs(logs):
            sys.stdout = sys.stderr = text
            try:
                yield
            finally:
                sys.stdout, sys.stderr = saved
                text.flush()
    finally:
        text.close()
        sink.seek(0)
        keep.append(sink.read().decode("utf-8", "replace") + logs.getvalue())
        sink.close()


# --------------------------------------------------------------------------- profile()


def _new_output(output: str | os.PathLike | None) -> Path:
    """A new or empty folder for one profile. Under msrun it is ``rank_<R>`` inside the folder
    asked for, so every rank can be given the same one and ``msdebug profile DIR`` opens them
    together (by default, ranks that start in the same second share ``msprofile/<time>``)."""
    from ..backend.process import msrun_rank

    rank = msrun_rank()
    leaf = f"rank_{rank}" if rank is not None else ""
    if output is None:
        base = Path("msprofile").absolute()
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for number in range(1000):
            candidate = base / (stamp if number == 0 else f"{stamp}-{number}") / leaf
            if not candidate.exists():
                break
    else:
        candidate = Path(output).expanduser().absolute() / leaf
        if candidate.exists() and (not candidate.is_dir() or any(candidate.iterdir())):
            raise InvalidValueError(
                f"output {candidate} exists and is not an empty directory; msdebug never writes over a profile: "
                "give a new directory."
            )
    try:
        candidate.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InvalidValueError(f"output {candidate}: cannot create it ({error.strerror}).") from None
    return candidate


class Profile:
    """A running profile; see :func:`profile`."""

    def __init__(
        self,
        steps: Any = None,
        output: str | os.PathLike | None = None,
        timeline: bool = False,
        top: int = _TOP,
        verbose: bool = False,
        busy: Callable[[str], Any] | None = None,
        order: str = "time",
    ) -> None:
        self.range = parse_steps(steps)
        self.order = _check_order(order)
        self.top = _check_top(top)
        self.timeline, self.verbose = bool(timeline), bool(verbose)
        self._output_arg = output
        self._busy = busy
        self.output: Path | None = None
        self.report: ProfileReport | None = None
        self.note = ""  # the one line shown before the run, if any
        self._log: list[str] = []
        self._session = None
        self._number = 0
        self._begin = 0
        self._marks: list[tuple[int, int, int]] = []
        self._mode = ""
        self._first_of_process = False
        self._extra_notes: list[str] = []

    # ---- lifecycle

    def __enter__(self) -> Profile:
        # Ctrl-C keeps the kernel: while msdebug holds SIGINT, MindSpore's graph runs cannot
        # install their handler, which ends the process (see msdebug.backend.process).
        return interrupts.enter_held(self._enter, self._abandon)

    @interrupts.protected  # the profiler starts whole, with fds 1 and 2 switched around it
    def _enter(self) -> Profile:
        from ..backend import profile as ms_profiler

        self.output = _new_output(self._output_arg)
        if ms_profiler.env_profiler_running():
            self._extra_notes.append("MS_PROFILER_OPTIONS is profiling this whole process as well.")
        self.note = ms_profiler.device_note()
        self._first_of_process = bool(self.note)
        self._mode = ms_profiler.execution_mode()
        with _silenced(self._log, self.verbose):
            self._session = ms_profiler.open_session(str(self.output), analyse=self.timeline)
        self._number = 0
        if self.range is None or self.range[0] == 0:
            self._start()
        _active.append(self)
        self._begin = time.time_ns()
        return self

    def step(self) -> None:
        """End the current step (and start or stop recording at the range's edges)."""
        now = time.time_ns()
        if self._session is not None and self._session.running:
            self._marks.append((self._number, self._begin, now))
        self._number += 1
        if self.range is not None and self._session is not None:
            if self._number == self.range[1] and self._session.running:
                self._stop()
            elif self._number == self.range[0] and not self._session.running and not self._marks:
                self._start()
        self._begin = time.time_ns()

    @interrupts.protected
    def _abandon(self) -> None:
        """After a failed ``__enter__``: stop what was started, let SIGINT go."""
        try:
            if self._session is not None and self._session.running:
                self._stop()
        finally:
            if self in _active:
                _active.remove(self)
            interrupts.let_go()

    @interrupts.protected  # SIGINT is held: an interrupt on this line waits for the profiler's stop
    def __exit__(self, kind, error, tb) -> bool:
        now = time.time_ns()
        try:
            if self._session is not None and self._session.running:
                # Unmarked code is one step, and so is a step cut short by an error; after marked
                # steps, the tail past the last mark is no step.
                if self._number == 0 or kind is not None:
                    self._marks.append((self._number, self._begin, now))
                self._stop()
        finally:
            interrupts.let_go()
            if self in _active:
                _active.remove(self)
            self._finish(kind, error)
        return False

    def _start(self) -> None:
        with _silenced(self._log, self.verbose):
            try:
                self._session.start()
            except (RuntimeError, TypeError, ValueError) as error:
                raise ProfilerError(f"MindSpore's profiler did not start: {str(error).splitlines()[0]}") from None

    def _stop(self) -> None:
        busy = self._busy("analysing the profile for the timeline") if self._busy and self.timeline else None
        with busy if busy is not None else contextlib.nullcontext(), _silenced(self._log, self.verbose):
            self._session.stop()

    @interrupts.interruptible  # reading what the profiler wrote: Ctrl-C may stop it
    def _finish(self, kind, error) -> None:
        partial = kind is not None
        reason = ""
        if partial:
            reason = "interrupted" if issubclass(kind, KeyboardInterrupt) else f"{kind.__name__}: {error}"
        marks = {
            "steps": self._marks,
            "partial": partial,
            "error": reason.splitlines()[0] if reason else "",
            "mode": self._mode,
            "first_of_process": self._first_of_process,
        }
        with open(self.output / STEPS_FILE, "x", encoding="utf-8") as handle:
            json.dump(marks, handle)
        notes = list(self._extra_notes)
        if partial:
            notes.insert(0, f"partial: the profiled code stopped early ({marks['error']}); showing what was recorded.")
        if self.range is not None and len(self._marks) < self.range[1] - self.range[0]:
            notes.append(
                f"asked for steps {self.range[0]}:{self.range[1]} but the code ran {self._number + 1} step(s) "
                f"({len(self._marks)} recorded); mark steps with msdebug.step() or prof.step()."
            )
        if not find_runs(self.output):
            self.report = None
            if not partial:
                raise ProfilerError(
                    f"the profiler wrote nothing under {self.output}: no recorded step ran an op "
                    f"({len(self._marks)} step(s) recorded)."
                )
            return
        self.report = ProfileReport(
            read_profile(self.output),
            top=self.top,
            log="".join(self._log),
            notes=tuple(notes),
            timeline=self.timeline,
            order=self.order,
        )


def profile(
    steps: Any = None,
    output: str | os.PathLike | None = None,
    timeline: bool = False,
    top: int = _TOP,
    verbose: bool = False,
    order: str = "time",
) -> Profile:
    """Profile the ops a block runs; ``prof.report`` is the inline report afterwards.

    Parameters
    ----------
    steps : str, tuple or range, optional
        ``"2:5"`` records steps 2, 3 and 4 (counted from 0); steps end at each :func:`step` /
        ``prof.step()``. Without it the whole block is recorded, as one step when unmarked.
    output : path, optional
        A new (or empty) directory for MindSpore's files; default ``./msprofile/<time>``.
    timeline : bool
        Also analyse, which writes the Chrome trace (``trace_view.json``; about a second more).
    top : int
        How many single ops the report lists before folding the rest.
    verbose : bool
        Let MindSpore's own output (progress bar, log lines) through instead of keeping it in ``report.log``.
    order : {"time", "name"}
        Table rows longest first, or by name (stable between runs).
    """
    return Profile(steps=steps, output=output, timeline=timeline, top=top, verbose=verbose, order=order)


# --------------------------------------------------------------------------- callbacks


def _callback_base() -> type:
    from ..backend.profile import callback_class

    return callback_class()


class _RangeCallback:
    """Shared body of :class:`ProfileSteps` and :class:`ProfileEpochs` (a Callback once built)."""

    unit = "step"

    def __init__(
        self, start: int, stop: int, output=None, timeline: bool = False, top: int = _TOP, verbose: bool = False
    ) -> None:
        super().__init__()  # MindSpore's Callback, the base the class is built on
        # 1-based and inclusive, like Model.train's cur_step_num and the guide's StopAtStep.
        for name, value in (("start", start), ("stop", stop)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidValueError(f"{name} must be a {self.unit} number from 1 (Model.train counts from 1).")
        if stop < start:
            raise InvalidValueError(f"stop ({stop}) must be >= start ({start}): {self.unit}s start..stop are recorded.")
        self.start, self.stop = start, stop
        self.profile = Profile(output=output, timeline=timeline, top=_check_top(top), verbose=verbose)
        self.report: ProfileReport | None = None
        self._entered = False
        self._holding = False
        self._count = 0

    def _begin(self, number: int) -> None:
        if number == self.start and not self._entered:
            self._entered = True
            self.profile.__enter__()
            self._holding = True
        elif self._entered and self.profile._session.running:
            self.profile._begin = time.time_ns()

    def _end(self, number: int) -> None:
        if not self._entered or self.profile._session is None or not self.profile._session.running:
            return
        if number == self.stop:
            self.profile._marks.append((number - 1, self.profile._begin, time.time_ns()))
            self.profile._number = number - 1
            self._close(None, None)
        else:
            self.profile._marks.append((number - 1, self.profile._begin, time.time_ns()))

    def _close(self, kind, error) -> None:
        try:
            if self.profile._session.running:
                self.profile._stop()
        finally:
            if self._holding:  # the SIGINT hold the profile's __enter__ took, let go once
                self._holding = False
                interrupts.let_go()
            if self.profile in _active:
                _active.remove(self.profile)
        self.profile._finish(kind, error)
        self.report = self.profile.report

    def on_train_end(self, run_context) -> None:  # noqa: D102 - MindSpore's Callback protocol
        # Training ended inside the range (fewer steps than asked): report what was recorded.
        if self._entered and self.report is None and self.profile._session is not None:
            self._close(None, None)


def _build(kind: str):
    base = _callback_base()

    class ProfileStepsCallback(_RangeCallback, base):
        """Record training steps ``start`` .. ``stop`` (1-based, inclusive) of ``Model.train``
        (non-sink mode; for sink mode use :class:`ProfileEpochs`). ``cb.report`` afterwards."""

        unit = "step"

        def on_train_step_begin(self, run_context) -> None:  # noqa: D102
            self._begin(run_context.original_args().cur_step_num)

        def on_train_step_end(self, run_context) -> None:  # noqa: D102
            self._end(run_context.original_args().cur_step_num)

    class ProfileEpochsCallback(_RangeCallback, base):
        """Record epochs ``start`` .. ``stop`` (1-based, inclusive): the only boundary data-sink
        mode offers. ``cb.report`` afterwards."""

        unit = "epoch"

        def on_train_epoch_begin(self, run_context) -> None:  # noqa: D102
            self._begin(run_context.original_args().cur_epoch_num)

        def on_train_epoch_end(self, run_context) -> None:  # noqa: D102
            self._end(run_context.original_args().cur_epoch_num)

    return ProfileStepsCallback if kind == "steps" else ProfileEpochsCallback


def ProfileSteps(start: int, stop: int, output=None, timeline: bool = False, top: int = _TOP, verbose: bool = False):
    """A ``Model.train`` callback recording steps ``start`` .. ``stop`` (1-based, inclusive).

    A factory, because its class derives from MindSpore's ``Callback``, imported only when asked.
    """
    return _build("steps")(start, stop, output=output, timeline=timeline, top=top, verbose=verbose)


def ProfileEpochs(start: int, stop: int, output=None, timeline: bool = False, top: int = _TOP, verbose: bool = False):
    """A ``Model.train`` callback recording epochs ``start`` .. ``stop`` (1-based, inclusive), for sink mode."""
    return _build("epochs")(start, stop, output=output, timeline=timeline, top=top, verbose=verbose)
