"""Profile code from a notebook: the three ways of MindSpore's profiler guide, with the result inline.

* :func:`profile`: ``with msdebug.profile(steps="2:5") as prof:`` (and ``%%msprofile``); steps are
  marked by :func:`step` / ``prof.step()``; ``prof.report`` is the inline report;
* :class:`ProfileSteps` / :class:`ProfileEpochs`: ``Model.train`` callbacks for a step or epoch range;
* :func:`profiler_options`: ``MS_PROFILER_OPTIONS``, validated, with the first cell it needs;
* :func:`dynamic_profile`: ``DynamicProfilerMonitor`` and its ``profiler_config.json``, validated;
* :func:`open_profile`, :func:`compare_profiles`: any profiler output directory, and two side by side.

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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import interrupts
from ..dumps.profile import STEPS_FILE, Comparison, ProfileData, RankMark, compare, find_runs, rank_marks, read_profile
from ..dumps.rendered import Rendered, rendered_by
from ..errors import InvalidValueError, ProfilerError, ProfilerOptionsError
from ..files import read_regular, refuse_special
from ..schema import Field, validate

__all__ = [
    "ComparisonReport",
    "DynamicProfile",
    "Profile",
    "ProfileEpochs",
    "ProfileReport",
    "ProfileSteps",
    "ProfilerOptions",
    "compare_profiles",
    "dynamic_profile",
    "open_profile",
    "parse_steps",
    "profile",
    "profiler_options",
    "step",
]

_TOP = 15


# --------------------------------------------------------------------------- reports


class ProfileReport(Rendered):
    """The inline report of a profile: op types, top ops, per-step times, ranks, notes."""

    _views = rendered_by(lambda v: (v.profile.html_profile, v.profile.text_profile))

    def __init__(
        self,
        data: ProfileData,
        top: int = _TOP,
        log: str = "",
        notes: tuple[str, ...] = (),
        timeline: bool = False,
        order: str = "time",
    ) -> None:
        self.data, self.top, self.log, self.timeline = data, top, log, timeline
        self.order = _check_order(order)
        self.notes = tuple(notes) + tuple(data.problems) + tuple(p for run in data.runs for p in run.problems)

    @property
    def path(self) -> Path:
        return self.data.root

    @property
    def partial(self) -> bool:
        return self.data.partial

    @property
    def steps(self):
        return self.data.steps

    @property
    def runs(self):
        return self.data.runs

    @property
    def trace(self) -> Path | None:
        return next((run.trace for run in self.data.runs if run.trace), None)

    @property
    def total_ms(self) -> float:
        return sum(run.total_ms for run in self.data.runs)

    def op_types(self, rank: int | None = None) -> list:
        """Op-type rows of one rank (the first when None), longest total first (or by name)."""
        run = self._run(rank)
        if run is None:
            return []
        if self.order == "name":
            return sorted(run.op_types, key=lambda row: row.op_type)
        return sorted(run.op_types, key=lambda row: (-row.total_ms, row.op_type))

    def ops(self, rank: int | None = None) -> list:
        """Op rows of one rank (the first when None), longest total first (or by name)."""
        run = self._run(rank)
        if run is None:
            return []
        if self.order == "name":
            return sorted(run.ops, key=lambda row: row.full_name)
        return sorted(run.ops, key=lambda row: (-row.total_ms, row.full_name))

    def rank_marks(self, limit: int | None = None) -> list[RankMark]:
        """Per op type, its time on each rank (the first ``limit`` ranks) and the rank to look
        at: the slowest in a compute op, the straggler (least time) in a collective."""
        return rank_marks(self.data.runs[:limit])

    def _run(self, rank: int | None):
        if not self.data.runs:
            return None
        if rank is None:
            return self.data.runs[0]
        return next((run for run in self.data.runs if run.rank == rank), None)


class ComparisonReport:
    """Two profiles side by side: per op type and per op, before / after and the speed-up."""

    def __init__(self, comparison: Comparison, top: int = _TOP, order: str = "change") -> None:
        self.comparison, self.top = comparison, top
        if order == "name":
            comparison.op_types.sort(key=lambda change: change.name)
            comparison.ops.sort(key=lambda change: change.name)

    def __repr__(self) -> str:
        from ..views.profile import text_comparison

        return text_comparison(self.comparison, self.top)

    def _repr_html_(self) -> str:
        from ..views.profile import html_comparison

        return html_comparison(self.comparison, self.top)


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


def _check_order(order: Any) -> str:
    if order not in ("time", "name"):
        raise InvalidValueError(f"order must be 'time' (longest first) or 'name', got {order!r}.")
    return order


def _check_top(top: Any) -> int:
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 1000:
        raise InvalidValueError(f"top must be a whole number from 1 to 1000, got {top!r}.")
    return top


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
        self._count = 0

    def _begin(self, number: int) -> None:
        if number == self.start and not self._entered:
            self._entered = True
            self.profile.__enter__()
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
        if self.profile._session.running:
            self.profile._stop()
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


# --------------------------------------------------------------------------- option tables


# Which settings apply only on Ascend (MindSpore's profiler guide): a note, not a refusal, on CPU.
_ASCEND = {
    "profile_memory", "aic_metrics", "l2_cache", "mstx", "hbm_ddr", "pcie", "sys_io", "sys_interconnection",
    "host_sys", "mstx_domain_include", "mstx_domain_exclude",
}  # fmt: skip
# The list fields EnvProfiler converts item by item, and to which enum (envprofiler.py,
# _convert_options_to_profiler_params); DynamicProfilerConfigContext converts the same ones.
_LIST_ENUMS = {"activities": "ProfilerActivity", "host_sys": "HostSystem", "export_type": "ExportType"}
# Fields of the profiler guide before 2.5 that 2.10 no longer reads (EnvProfiler and the
# dynamic monitor drop them silently); what replaces them is ProfilerParameters' deprecation text.
_RETIRED = {
    "op_time": 'use activities ["NPU"] (and ["CPU"] for the host side)',
    "profile_communication": 'use profiler_level "Level1" or "Level2"',
    "aicore_metrics": "use aic_metrics",
    "timeline_limit": "it has no effect",
    "profile_framework": 'use activities ["CPU"]',
}
# Still read, but MindSpore warns on true (ProfilerParameters._check_deprecated_params).
_DEPRECATED = {"hbm_ddr": "use profile_memory", "pcie": "use sys_interconnection"}
_STEP = "a step number from 1, or -1 for never"


def _field(name: str, kind: str, enums: Mapping[str, tuple]) -> Field:
    """The field for a MindSpore parameter of type ``kind`` (its name in ProfilerParameters.PARAMS)."""
    ascend = name in _ASCEND
    if kind in enums:
        return Field("enum", enums[kind], ascend=ascend)
    if name in _LIST_ENUMS:
        return Field("list", enums[_LIST_ENUMS[name]], nonempty=name != "host_sys", ascend=ascend)
    if kind == "list":
        return Field("list", items="str", ascend=ascend)
    if kind == "str":
        return Field("str", rule=_absolute) if name == "output_path" else Field("str")
    return Field(kind, ascend=ascend)  # bool


def _absolute(value: str, name: str) -> None:
    if not os.path.isabs(value):
        raise ProfilerOptionsError(
            f"{name} must be an absolute path (MindSpore resolves it in the training process, not here), got {value!r}."
        )


def _retired(version: str | None) -> dict[str, Field]:
    return {
        name: Field("retired", says=f"MindSpore {version or '2.10'} no longer reads it; {instead}.")
        for name, instead in _RETIRED.items()
    }


def option_fields() -> dict[str, Field]:
    """What ``MS_PROFILER_OPTIONS`` takes: ``start`` and ``output_path``, which EnvProfiler reads
    itself, then every ``ProfilerParameters.PARAMS`` entry that JSON can hold (not ``schedule``
    nor ``on_trace_ready``), with the enums of the installed MindSpore."""
    from ..backend import installed_version
    from ..backend.profile import profiler_tables

    tables = profiler_tables()
    fields = {"start": Field("bool", required=True)}
    for name, kind in tables["params"].items():
        if kind in ("bool", "str", "list") or kind in tables["enums"]:
            fields[name] = _field(name, kind, tables["enums"])
    return {**fields, **_retired(installed_version())}


def config_fields() -> dict[str, Field]:
    """What ``profiler_config.json`` takes: the keys DynamicProfilerConfigContext writes, typed
    as in ProfilerParameters, and its own (steps, analyse_mode, analyse, prof_path, is_valid)."""
    from ..backend import installed_version
    from ..backend.profile import profiler_tables

    tables = profiler_tables()
    enums = tables["enums"]
    own = {
        "start_step": Field("int", low=-1, says=_STEP, required=True),
        "stop_step": Field("int", low=-1, says=_STEP, required=True),
        "analyse_mode": Field("int", choices=(-1, 0, 1)),  # _convert_analyse_mode: -1 none, 0 sync, 1 async
        # _convert_aic_metrics takes "AiCoreNone" beside AicoreMetrics' values
        "aic_metrics": Field("enum", ("AiCoreNone", *enums["AicoreMetrics"]), ascend=True),
        "analyse": Field("bool", note="true also writes the Chrome trace"),
        "prof_path": Field("str"),
        "is_valid": Field("bool", note="MindSpore ignores the file until this is true"),
    }
    fields = {}
    for name in tables["config"]:
        kind = tables["params"].get(name)
        fields[name] = own.get(name) or _field(name, kind or "bool", enums)
    return {**fields, **_retired(installed_version())}


def _check_fields(where: str, values: Any, table: Mapping[str, Field]) -> list[str]:
    """Raise on the first bad field or a combination MindSpore would reset (its
    ProfilerParameters._handle_compatibility); return the notes on fields that apply only on Ascend."""
    validate(table, values, where, ProfilerOptionsError)

    def fail(text: str) -> None:
        raise ProfilerOptionsError(f"{where}: {text}")

    level = values.get("profiler_level", "Level0")
    for name, instead in _DEPRECATED.items():
        if values.get(name) is True:
            fail(f"{name} true is deprecated in MindSpore (it warns each time); {instead}.")
    if values.get("mstx") is not True:
        for name in ("mstx_domain_include", "mstx_domain_exclude"):
            if values.get(name):
                fail(f"{name} needs mstx true (without it MindSpore resets it to []).")
        if level in ("LevelNone", -1):
            fail('profiler_level "LevelNone" needs mstx true (without it MindSpore uses "Level0").')
    if values.get("mstx_domain_include") and values.get("mstx_domain_exclude"):
        fail("mstx_domain_include and mstx_domain_exclude cannot be set together (MindSpore drops the exclude).")
    if values.get("aic_metrics") not in (None, "None", "AiCoreNone") and level not in ("Level1", "Level2", 1, 2):
        fail('aic_metrics needs profiler_level "Level1" or "Level2" (at other levels MindSpore resets it).')
    if values.get("aic_metrics") in ("None", "AiCoreNone") and level in ("Level1", "Level2", 1, 2):
        fail(f"profiler_level {level!r} needs an aic_metrics other than 'None' (MindSpore uses 'PipeUtilization').")
    if values.get("record_shapes") is True and "CPU" not in values.get("activities", ["CPU"]):
        fail('record_shapes needs "CPU" in activities (without it MindSpore resets it to false).')
    start, stop = values.get("start_step"), values.get("stop_step")
    if isinstance(start, int) and isinstance(stop, int) and -1 not in (start, stop) and stop < start:
        fail(f"stop_step ({stop}) must be >= start_step ({start}).")
    if (start == -1) != (stop == -1) and start is not None and stop is not None:
        fail("start_step and stop_step must both be -1 (off) or both be steps.")
    if start == 0 or stop == 0:
        fail("steps count from 1 (the first training step is 1); 0 never matches.")
    return [
        f"{name} applies only on Ascend; on CPU it is ignored."
        for name, spec in table.items()
        if spec.ascend and name in values and values[name] not in (False, None, [], "AiCoreNone", "None")
    ]


# --------------------------------------------------------------------------- MS_PROFILER_OPTIONS


@dataclass(repr=False)
class ProfilerOptions(Rendered):
    """A validated ``MS_PROFILER_OPTIONS`` and what it does in this process."""

    _views = rendered_by(lambda v: (v.profile.html_options, v.profile.text_options))

    values: dict
    applied: bool
    notes: list[str] = field(default_factory=list)

    @property
    def json(self) -> str:
        return json.dumps(self.values, separators=(", ", ": "))

    @property
    def first_cell(self) -> str:
        """The first cell of a fresh kernel that profiles it from the start."""
        return f"%env MS_PROFILER_OPTIONS={self.json}\nimport mindspore"


def profiler_options(apply: bool = True, **values: Any) -> ProfilerOptions:
    """Validate ``MS_PROFILER_OPTIONS`` (method 2 of the profiler guide) and set it.

    MindSpore reads it once, at ``import mindspore``, and then profiles until the process exits;
    when MindSpore is already imported here the result says so and gives the first cell of a
    fresh kernel instead. ``apply=False`` only validates.
    """
    from ..backend import is_imported

    notes = _check_fields("MS_PROFILER_OPTIONS", values, option_fields())
    result = ProfilerOptions(values=dict(values), applied=False, notes=notes)
    if apply:
        os.environ["MS_PROFILER_OPTIONS"] = result.json
        result.applied = True
        if is_imported():
            result.notes.insert(
                0,
                "MindSpore is already imported in this process and reads MS_PROFILER_OPTIONS only at import: "
                "it takes effect in a fresh kernel whose first cell is shown below.",
            )
    result.notes.append(
        "it profiles from import mindspore to the end of the process; the files appear when the kernel shuts down."
    )
    return result


# --------------------------------------------------------------------------- dynamic profile


def check_config(values: Any, where: str = "profiler_config.json") -> list[str]:
    """Validate a ``profiler_config.json`` dictionary; returns the Ascend-only notes."""
    return _check_fields(where, values, config_fields())


def read_config(path: str | os.PathLike) -> dict:
    """A ``profiler_config.json``, parsed and validated."""
    path = Path(path)
    # Through the opener: a FIFO there would block open() forever, /dev/zero never ends.
    text = read_regular(path, 1 << 20, ProfilerOptionsError, what="profiler_config.json")
    try:
        values = json.loads(text)
    except json.JSONDecodeError as error:
        raise ProfilerOptionsError(f"{path.name}: not JSON ({error.msg} at line {error.lineno}).") from None
    except (ValueError, RecursionError) as error:  # not UTF-8, nested past Python's stack
        raise ProfilerOptionsError(f"{path.name}: not JSON ({str(error)[:200]}).") from None
    check_config(values, path.name)
    return values


_WATCHED = ("start_step", "stop_step", "is_valid")  # what must have reached the monitor for dp.wait_read()


class DynamicProfile:
    """MindSpore's ``DynamicProfilerMonitor`` (method 3 of the guide) with its config file at hand.

    ``dp.callback`` goes into ``Model.train(callbacks=[...])``; in a hand-written loop call
    ``dp.step()`` once per step. ``dp.edit(start_step=2, stop_step=3)`` validates and rewrites
    ``profiler_config.json``; the monitor's poller picks it up within ``poll_interval`` seconds.
    ``dp.report()`` reads what it recorded.
    """

    def __init__(self, cfg_path: str, output_path: str, poll_interval: int, verbose: bool) -> None:
        from ..backend.profile import dynamic_monitor

        self.cfg_path, self.output_path, self.poll_interval = Path(cfg_path), Path(output_path), poll_interval
        self.verbose = verbose
        self.log: list[str] = []
        with _silenced(self.log, verbose):
            self.callback = dynamic_monitor(str(self.cfg_path), str(self.output_path), poll_interval)
        self._wrap_callback()

    @property
    def config_path(self) -> Path:
        return self.cfg_path / "profiler_config.json"

    @property
    def config(self) -> dict:
        return read_config(self.config_path)

    def _wrap_callback(self) -> None:
        # MindSpore prints "[Dynamic Profiler] ..." at every start and stop: keep it in dp.log.
        monitor = self.callback
        for name in ("step_begin", "step_end", "on_train_step_begin", "on_train_step_end", "step"):
            original = getattr(monitor, name, None)
            if original is None:
                continue

            def quiet(*args, _original=original, **kwargs):
                with _silenced(self.log, self.verbose):
                    return _original(*args, **kwargs)

            setattr(monitor, name, quiet)

    def edit(self, **changes: Any) -> dict:
        """Validate the config with ``changes`` applied and write it (``is_valid`` defaults to true).
        The monitor reads it within ``poll_interval`` seconds: :meth:`wait_read` waits for that."""
        values = read_config(self.config_path) if self.config_path.exists() else {}
        values.update(changes)
        values.setdefault("is_valid", True)
        if "is_valid" not in changes:
            values["is_valid"] = True
        check_config(values, self.config_path.name)
        temporary = self.config_path.with_name(self.config_path.name + ".msdebug-new")
        refuse_special(temporary, ProfilerOptionsError)  # a FIFO there would block the write
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(values, handle, indent=4)
        # One rename: the poller never reads a half-written file.
        os.replace(temporary, self.config_path)
        return values

    def step(self) -> None:
        """Mark one step of a hand-written loop."""
        self.callback.step()

    def wait_read(self, timeout: float = 60.0) -> dict:
        """Wait until the monitor's poller has read the config as it is on disk now (after
        :meth:`edit`, it does so within ``poll_interval`` seconds); returns what it read."""
        from ..backend.profile import monitor_config

        wanted = {key: value for key, value in read_config(self.config_path).items() if key in _WATCHED}
        deadline = time.monotonic() + timeout
        while True:
            seen = monitor_config(self.callback)
            if all(seen.get(key) == value for key, value in wanted.items()):
                return seen
            if time.monotonic() > deadline:
                raise ProfilerError(
                    f"the monitor has not read {self.config_path} in {timeout:g} s (its poll interval is "
                    f"{self.poll_interval} s); is its poller process running?"
                )
            time.sleep(0.05)

    def runs(self) -> list[Path]:
        """The ``rank<N>_start<a>_stop<b>`` folders written so far."""
        if not self.output_path.is_dir():
            return []
        return sorted(path for path in self.output_path.iterdir() if path.is_dir() and find_runs(path))

    def report(self, top: int = _TOP) -> ProfileReport:
        """The report of the latest recorded range."""
        runs = self.runs()
        if not runs:
            raise ProfilerError(
                f"nothing recorded under {self.output_path} yet: set start_step/stop_step with dp.edit(), call "
                f"dp.wait_read() (the monitor reads the file every {self.poll_interval} s), then run those steps."
            )
        latest = max(runs, key=lambda path: path.stat().st_mtime)
        return ProfileReport(read_profile(latest), top=_check_top(top), log="".join(self.log))

    def close(self) -> None:
        """Stop the monitor's poller process."""
        clean = getattr(self.callback, "_clean_resource", None)
        if clean is not None:
            with _silenced(self.log, self.verbose):
                clean()

    def __repr__(self) -> str:
        return f"DynamicProfile(config={str(self.config_path)!r}, output={str(self.output_path)!r})"


def dynamic_profile(
    cfg_path: str | os.PathLike = "./dyn_cfg",
    output_path: str | os.PathLike = "./dyn_profile_data",
    poll_interval: int = 2,
    verbose: bool = False,
) -> DynamicProfile:
    """Start MindSpore's ``DynamicProfilerMonitor`` with its ``profiler_config.json`` in ``cfg_path``."""
    if isinstance(poll_interval, bool) or not isinstance(poll_interval, int) or poll_interval < 1:
        raise InvalidValueError(f"poll_interval must be a whole number of seconds from 1, got {poll_interval!r}.")
    cfg = Path(cfg_path).expanduser().absolute()
    config = cfg / "profiler_config.json"
    if os.path.lexists(config):
        read_config(config)  # a bad file is reported now, not silently ignored by the monitor
    return DynamicProfile(str(cfg), str(Path(output_path).expanduser().absolute()), poll_interval, verbose)
