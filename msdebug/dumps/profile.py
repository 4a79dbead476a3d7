"""Read what MindSpore's CPU profiler wrote: op tables, op execution times, step marks, the trace.

A profile directory is the ``<host>_<pid>_<timestamp>_ascend_ms`` folder the profiler makes (the
suffix is the same on CPU), or any folder holding several of them (``rank_0 .. rank_N`` of a
cluster job, ``rank0_start2_stop3`` of a dynamic profile). Inside, ``FRAMEWORK/`` holds

* ``cpu_op_type_info_<rank>.csv``: one row per op type;
* ``cpu_op_detail_info_<rank>.csv``: one row per op, keyed by ``full_op_name`` (``op_name`` repeats);
* ``cpu_op_execute_timestamp_<rank>.txt``: ``<full name>;HostCpuOps;`` then ``<start ns>,<ms>,<tid>``
  triples, one per execution, space separated;

and ``ASCEND_PROFILER_OUTPUT/trace_view.json`` the Chrome trace (only when the profiler analysed).
msdebug adds ``msdebug_steps.json``: the wall-clock bounds of each recorded step.

Everything here is a pure reader: a missing, cut-short or malformed file gives a line in
``problems`` and whatever could be read, never an exception, except when the path holds no
profile at all. Files are streamed: a timestamp file of millions of executions is read in
blocks of a few MB. The report models (:class:`ProfileReport`, :class:`ComparisonReport`) close
the module: what a profile and a comparison show inline.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidValueError, ProfileReadError
from ..files import MiB, open_regular
from ..ranks import collectives
from .rendered import Rendered, rendered_by

__all__ = [
    "STEPS_FILE",
    "Comparison",
    "ComparisonReport",
    "Executions",
    "OpChange",
    "OpRow",
    "OpTypeRow",
    "ProfileData",
    "ProfileReport",
    "RankMark",
    "RankRun",
    "StepMarks",
    "TraceSummary",
    "compare",
    "find_runs",
    "is_collective",
    "rank_marks",
    "read_executions",
    "read_op_details",
    "read_op_types",
    "read_profile",
    "read_steps",
    "read_trace",
]

STEPS_FILE = "msdebug_steps.json"
_RUN_SUFFIX = "_ascend_ms"
_TYPE_CSV = re.compile(r"^cpu_op_type_info_(\d+)\.csv$")
_DETAIL_CSV = re.compile(r"^cpu_op_detail_info_(\d+)\.csv$")
_TIMESTAMPS = re.compile(r"^cpu_op_execute_timestamp_(\d+)\.txt$")
_RANK_DIR = re.compile(r"^rank_?(\d+)(?:_|$)")
_BLOCK = 1 << 22  # bytes per read of a timestamp or trace file
_BATCH = 1 << 21  # bytes of triples parsed by numpy at once: a few times this in memory
_MAX_JSON = 1 << 20  # msdebug_steps.json is a few KB; anything bigger is not ours
_MAX_DEPTH = 4  # rank_0/<run>_ascend_ms/FRAMEWORK sits three below a cluster copy's root
# The longest line (CSV row, timestamp header or triple) a reader gathers: real ones are under a
# few KB; a file with a longer one is not the profiler's, and it is read up to that line only.
_MAX_LINE = MiB
# The longest CSV field read: csv's own limit is process-wide and MindSpore raises it to 10 MB
# when it imports its order checker, so the readers keep their own.
_MAX_FIELD = 64 * 1024
_MAX_TRACE_ITEM = 16 * MiB  # one event of a Chrome trace
_INT64 = (1 << 63) - 1
_TOP = 15  # single ops a report lists before folding the rest


# --------------------------------------------------------------------------- models


@dataclass(frozen=True)
class OpTypeRow:
    """One row of ``cpu_op_type_info``: an op type over the recorded steps (times in ms)."""

    op_type: str
    occurrences: int
    total_ms: float
    avg_ms: float
    share: float  # of all op time, 0..1


@dataclass(frozen=True)
class OpRow:
    """One op of ``cpu_op_detail_info``, by its full scope name (times in ms)."""

    op_type: str
    op_name: str
    full_name: str
    occurrences: int
    total_ms: float
    avg_ms: float
    share: float


@dataclass
class Executions:
    """What the timestamp file says: every execution, summed per op and per step."""

    count: int = 0
    total_ms: float = 0.0
    first_ns: int | None = None
    last_ns: int | None = None
    per_op: dict[str, list] = field(default_factory=dict)  # full name -> [count, total ms]
    per_step_ms: list[float] = field(default_factory=list)  # op time inside each step window
    per_step_count: list[int] = field(default_factory=list)
    outside: int = 0  # executions outside every step window


@dataclass(frozen=True)
class StepMarks:
    """The wall-clock window of each recorded step, as msdebug marked them."""

    numbers: tuple[int, ...]  # the step numbers (0-based, as the cell counted them)
    bounds: tuple[tuple[int, int], ...]  # (start ns, end ns), time.time_ns() like the profiler
    partial: bool = False  # the profiled code raised or was interrupted
    error: str = ""
    mode: str = ""
    first_of_process: bool = False  # step 0 ran the first ops after the profiler started

    @property
    def wall_ms(self) -> list[float]:
        return [(end - start) / 1e6 for start, end in self.bounds]


@dataclass
class TraceSummary:
    """The Chrome trace: how many complete events, over how long, for which processes."""

    path: Path
    events: int = 0
    span_us: float = 0.0
    processes: tuple[str, ...] = ()
    complete: bool = True
    problem: str = ""  # why it stopped early, when not at the file's end


@dataclass
class RankRun:
    """One ``*_ascend_ms`` folder: one rank of one profiler run."""

    rank: int
    path: Path
    op_types: list[OpTypeRow] = field(default_factory=list)
    ops: list[OpRow] = field(default_factory=list)
    executions: Executions | None = None
    trace: Path | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def total_ms(self) -> float:
        if self.op_types:
            return math.fsum(row.total_ms for row in self.op_types)
        return self.executions.total_ms if self.executions else 0.0


@dataclass
class ProfileData:
    """Every rank of a profile directory, and msdebug's step marks when it made it."""

    root: Path
    runs: list[RankRun]
    steps: StepMarks | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        return bool(self.steps and self.steps.partial)


# --------------------------------------------------------------------------- files


def _framework_file(run: Path, pattern: re.Pattern[str]) -> Path | None:
    framework = run / "FRAMEWORK"
    try:
        names = sorted(entry.name for entry in os.scandir(framework))
    except OSError:
        return None
    return next((framework / name for name in names if pattern.match(name)), None)


def _is_run(path: Path) -> bool:
    return (path / "FRAMEWORK").is_dir() or path.name.endswith(_RUN_SUFFIX)


def find_runs(root: str | os.PathLike) -> list[Path]:
    """Every profiler run folder at or below ``root`` (a few levels deep), in path order."""
    base = Path(root)
    if _is_run(base):
        return [base]
    found: list[Path] = []

    def walk(directory: Path, depth: int) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:
            return
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            path = Path(entry.path)
            if _is_run(path):
                found.append(path)
            elif depth < _MAX_DEPTH:
                walk(path, depth + 1)

    walk(base, 1)
    return found


def _rank_of(run: Path, root: Path) -> int | None:
    """The rank a run belongs to: a ``rank_N`` folder above it wins over the file suffix, since
    runs assembled from single-machine jobs all carry suffix ``_0``."""
    for parent in run.relative_to(root).parents if run != root else ():
        match = _RANK_DIR.match(parent.name)
        if match:
            return int(match.group(1))
    for pattern in (_TYPE_CSV, _DETAIL_CSV, _TIMESTAMPS):
        path = _framework_file(run, pattern)
        if path is not None:
            return int(pattern.match(path.name).group(1))
    return None


# --------------------------------------------------------------------------- CSV tables


class _Unreadable(Exception):
    """The rest of a file cannot be read as its format: the message is the note."""


class _Lines:
    """The lines of a text file as ``csv.reader`` takes them, each gathered up to a bound.

    ``pending`` counts the bytes handed out since the caller last reset it (after each row), so a
    row spread over many lines by quotes is bounded too. A last line without its line end is a
    file cut short: it is not handed out, whatever byte the cut fell on.
    """

    def __init__(self, handle: io.BufferedReader, name: str, what: str) -> None:
        self.handle, self.name, self.what = handle, name, what
        self.number = 0
        self.pending = 0

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        line = self.handle.readline(_MAX_LINE + 1)
        if not line:
            raise StopIteration
        self.number += 1
        self.pending += len(line)
        if self.pending > _MAX_LINE:
            raise _Unreadable(
                f"{self.what}: {self.name}: line {self.number} is longer than {_MAX_LINE // MiB} MiB, which no "
                "profiler writes; not read from there on."
            )
        if not line.endswith(b"\n"):
            raise _Unreadable(
                f"{self.what}: {self.name} ends in the middle of a row (the file is cut short); its last row "
                "was not read."
            )
        return line.decode("utf-8", "replace")


def _rows(path: Path, columns: Sequence[str], what: str, problems: list[str]) -> Iterator[tuple[int, list[str]]]:
    """``(line number, row)`` of each data row of a CSV whose header must start with ``columns``;
    short rows are reported."""
    handle = open_regular(path, ProfileReadError, follow=False, problems=problems, what=what)
    if handle is None:
        return
    lines = _Lines(handle, path.name, what)
    reader = csv.reader(lines)
    bad = unparsable = 0
    first_unparsable = 0
    with handle:
        try:
            header = next(reader, None)
            if header is None:
                problems.append(f"{what}: {path.name} is empty.")
                return
            if [name.strip() for name in header[: len(columns)]] != list(columns):
                shown = ",".join(header)[:200]
                problems.append(f"{what}: {path.name} has the header {shown!r}, expected {','.join(columns)!r}.")
                return
            while True:
                lines.pending = 0
                number = lines.number + 1  # where the row starts; quotes may spread it over more lines
                try:
                    row = next(reader)
                    readable = all(len(cell) <= _MAX_FIELD for cell in row)
                except StopIteration:
                    break
                except csv.Error:  # a field over csv's own limit, a stray carriage return
                    readable = False
                if not readable:
                    unparsable += 1
                    first_unparsable = first_unparsable or lines.number
                    continue
                if len(row) < len(columns):
                    bad += 1
                    continue
                yield number, row
        except _Unreadable as stop:
            problems.append(str(stop))
        except OSError as error:
            problems.append(f"{what}: cannot read {path.name} ({error.strerror or error}); read up to there.")
    if bad:
        problems.append(f"{what}: {path.name} has {bad} row(s) with too few fields; skipped.")
    if unparsable:
        problems.append(
            f"{what}: {path.name}: {unparsable} row(s) with a field longer than {_MAX_FIELD // 1024} KiB or a stray "
            f"carriage return, the first at line {first_unparsable}; skipped."
        )


_TYPE_COLUMNS = (
    "op_type",
    "type_occurrences",
    "execution_frequency(per-step)",
    "total_compute_time",
    "avg_time(ms)",
    "percent",
)
_DETAIL_COLUMNS = (
    "op_side",
    "op_type",
    "op_name",
    "full_op_name",
    "op_occurrences",
    "op_total_time(ms)",
    "op_avg_time(ms)",
    "total_proportion",
)


# What every number of a profile file may look like: what numpy's own text parser reads (12, 0.5,
# 1e-3, 2.5E+06), finite; no time, count or share is below zero (such a row would make totals and
# shares lie) and a count is whole.
_NUMBER_HINT = "a finite number such as 12, 0.5 or 1e-3"


def _float_table(lines: list[str], width: int):
    """``lines`` of ``width`` comma-separated numbers, parsed by numpy at once.

    Returns ``(values, parsed)``: an ``(n, width)`` float array and an ``n`` mask. A line numpy
    cannot read (a word, a missing field) is found by halving the lines, and is NaN, not parsed.
    """
    import numpy as np

    # A line that numpy would skip (blank) or split (a line break inside a quoted field) cannot be
    # a row of numbers: "x" fails to parse and keeps the lines and the rows aligned.
    lines = ["x" if not line.strip() or "\n" in line or "\r" in line else line for line in lines]
    values = np.full((len(lines), width), np.nan)
    parsed = np.zeros(len(lines), dtype=bool)
    pending = [(0, len(lines))] if lines else []
    while pending:
        low, high = pending.pop()
        try:
            part = np.loadtxt(lines[low:high], dtype=np.float64, delimiter=",", comments=None, quotechar=None, ndmin=2)
        except ValueError:
            part = None
        if part is not None and part.shape == (high - low, width):
            values[low:high], parsed[low:high] = part, True
        elif high - low > 1:
            middle = (low + high) // 2
            pending += [(middle, high), (low, middle)]
    return values, parsed


def _field_problem(text: str, whole: bool) -> str:
    """Why one field is not a time, count or share ("" when it is one)."""
    import numpy as np

    values, parsed = _float_table([text], 1)
    value = float(values[0, 0])
    if not parsed[0] or not math.isfinite(value):
        return f"{_shown(text)} is not {_NUMBER_HINT}"
    if value < 0:
        return "is negative"  # (the value is left out: a negative time is shown nowhere)
    if whole and value != np.floor(value):
        return f"{_shown(text)} is not a whole number"
    return ""


def _shown(text: str | bytes) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return repr(text if len(text) <= 40 else text[:39] + "…")


def _table_numbers(
    path: Path, columns: Sequence[str], what: str, numeric: Sequence[int], whole: int, problems: list[str]
) -> Iterator[tuple[list[str], list[float]]]:
    """The rows of a profiler CSV and their ``numeric`` fields as numbers (the first ``whole`` of
    them counts); rows with a field that is no number, or a negative one, are skipped with a note
    naming the file, the first such row's line and its field."""
    import numpy as np

    rows = list(_rows(path, columns, what, problems))
    values, parsed = _float_table([",".join(row[index] for index in numeric) for _, row in rows], len(numeric))
    finite = parsed & np.isfinite(values).all(axis=1)
    negative = finite & (values < 0).any(axis=1)
    whole_numbers = (values[:, :whole] == np.floor(values[:, :whole])).all(axis=1)
    bad = ~finite | (~negative & ~whole_numbers)
    for flags, kind in (
        (bad, "a non-number where a time or count belongs"),
        (negative, "a negative time, count or share"),
    ):
        if not flags.any():
            continue
        line, row = rows[int(np.argmax(flags))]
        why = next(
            f"{columns[index]} {problem}"
            for place, index in enumerate(numeric)
            if (problem := _field_problem(row[index], place < whole))
            and (flags is bad or problem.endswith("is negative"))
        )
        problems.append(
            f"{what}: {path.name}: {int(flags.sum())} row(s) with {kind}, the first at line {line} ({why}); skipped."
        )
    for (_, row), good, numbers in zip(rows, ~(bad | negative), values.tolist(), strict=True):
        if good:
            yield row, numbers


def read_op_types(path: str | os.PathLike, problems: list[str] | None = None) -> list[OpTypeRow]:
    """``cpu_op_type_info_<rank>.csv``; unreadable rows are skipped and counted in ``problems``."""
    problems = [] if problems is None else problems
    return [
        OpTypeRow(row[0], int(count), total, avg, share)
        for row, (count, total, avg, share) in _table_numbers(
            Path(path), _TYPE_COLUMNS, "op types", (1, 3, 4, 5), 1, problems
        )
    ]


def read_op_details(path: str | os.PathLike, problems: list[str] | None = None) -> list[OpRow]:
    """``cpu_op_detail_info_<rank>.csv``, one row per full op name (repeats are summed)."""
    problems = [] if problems is None else problems
    merged: dict[str, OpRow] = {}
    for row, (count, total, _, share) in _table_numbers(Path(path), _DETAIL_COLUMNS, "ops", (4, 5, 6, 7), 1, problems):
        count = int(count)
        seen = merged.get(row[3])
        if seen is not None:
            count, total, share = count + seen.occurrences, total + seen.total_ms, share + seen.share
        merged[row[3]] = OpRow(row[1], row[2], row[3], count, total, total / count if count else 0.0, share)
    return list(merged.values())


# --------------------------------------------------------------------------- timestamps


def read_executions(
    path: str | os.PathLike,
    windows: Sequence[tuple[int, int]] = (),
    problems: list[str] | None = None,
) -> Executions:
    """Sum ``cpu_op_execute_timestamp_<rank>.txt`` per op and per step window.

    The file is read in blocks; the triples of a block are parsed by numpy all at once, so
    memory stays at a few blocks whatever the file's size.
    """
    import numpy as np

    problems = [] if problems is None else problems
    result = Executions()
    handle = open_regular(Path(path), ProfileReadError, follow=False, problems=problems, what="op executions")
    if handle is None:
        result.per_step_ms, result.per_step_count = [0.0] * len(windows), [0] * len(windows)
        return result
    starts = np.array([start for start, _ in windows], dtype=np.int64)
    ends = np.array([end for _, end in windows], dtype=np.int64)
    step_ms = np.zeros(len(windows))
    step_count = np.zeros(len(windows), dtype=np.int64)
    first, last = math.inf, -math.inf
    broken_lines: set[int] = set()
    dropped = 0
    first_broken = ""

    def add(pieces: list[tuple[str, bytes, int]]) -> None:
        nonlocal dropped, first_broken
        parsed = _parse_triples(b" ".join(payload for _, payload, _ in pieces))
        if parsed is None:
            # Something odd in this batch: parse it piece by piece, keeping the good ones.
            for piece in pieces:
                parsed_piece = _parse_triples(piece[1])
                if parsed_piece is None:
                    broken_lines.add(piece[2])
                    dropped += len(piece[1].split())
                    first_broken = first_broken or f"line {piece[2]}: {_first_bad_record(piece[1])}"
                    continue
                add_parsed([piece], *parsed_piece)
            return
        add_parsed(pieces, *parsed)

    def add_parsed(pieces: list[tuple[str, bytes, int]], begin, duration) -> None:
        nonlocal first, last
        if not len(begin):
            return
        counts = np.array([payload.count(b",") // 2 for _, payload, _ in pieces])
        owner = np.repeat(np.arange(len(pieces)), counts)
        sums = np.bincount(owner, weights=duration, minlength=len(pieces))
        for (name, _, _), count, total in zip(pieces, counts.tolist(), sums.tolist(), strict=True):
            if count:
                entry = result.per_op.setdefault(name, [0, 0.0])
                entry[0] += count
                entry[1] += total
        first = min(first, int(begin.min()))
        # In float: a start near int64's end plus a long duration would wrap in int64.
        last = max(last, float((begin.astype(np.float64) + duration * 1e6).max()))
        if len(windows):
            slot = np.searchsorted(starts, begin, side="right") - 1
            inside = (slot >= 0) & (begin <= ends[np.clip(slot, 0, None)])
            step_ms[:] += np.bincount(slot[inside], weights=duration[inside], minlength=len(windows))
            step_count[:] += np.bincount(slot[inside], minlength=len(windows))
            result.outside += int((~inside).sum())

    batch: list[tuple[str, bytes, int]] = []
    size = 0
    with handle:
        for piece in _timestamp_records(handle, Path(path).name, problems):
            batch.append(piece)
            size += len(piece[1])
            if size >= _BATCH:
                add(batch)
                batch, size = [], 0
        if batch:
            add(batch)
    if broken_lines:
        problems.append(
            f"op executions: {Path(path).name}: {len(broken_lines)} line(s) with a malformed record, the first at "
            f"{first_broken}; {dropped} record(s) around them not counted."
        )
    result.count = sum(entry[0] for entry in result.per_op.values())
    result.total_ms = math.fsum(entry[1] for entry in result.per_op.values())
    if result.count:
        result.first_ns, result.last_ns = int(first), int(last)
    result.per_step_ms = [float(value) for value in step_ms]
    result.per_step_count = [int(value) for value in step_count]
    return result


_TRIPLE_FIELDS = ("start ns", "duration ms", "thread id")
_WHOLE = re.compile(rb"\s*[+-]?[0-9]+\s*")


def _parse_triples(text: bytes):
    """``(start ns as int64, duration ms as float64)`` arrays of ``start,ms,tid`` triples separated
    by spaces, or None when the text is anything else (a word, a cut-off triple, a start that is
    not whole, a negative or non-finite time).

    numpy's own text parser reads the triples, one per line: durations may be written with an
    exponent (1e-3); starts are whole nanoseconds, read exactly as integers (a float would round
    a 19-digit start). The thread id is not read (nothing uses it); only its digits are checked.
    """
    import numpy as np

    chars = np.frombuffer(text, dtype=np.uint8)
    commas = np.flatnonzero(chars == 44)
    if not len(commas):
        return (np.zeros(0, dtype=np.int64), np.zeros(0)) if not text or text.isspace() else None
    if len(commas) % 2:
        return None
    # numpy reads "17.5", "1e3" or "-1" in an unsigned column through a float (rounding it, with a
    # DeprecationWarning), so a '.', '-', 'e' or 'E' may stand only in a duration: between a
    # triple's first and second comma, after an odd number of commas. Other letters are refused:
    # in a whole-number field they are wrong, in a duration they spell inf or nan. (Misplaced
    # commas make numpy refuse the text below, and then the pairing of commas does not matter.)
    if chars.max() > 57:
        letters = chars[chars > 57]
        if not ((letters == 101) | (letters == 69)).all():
            return None
        floaty = np.flatnonzero((chars == 46) | (chars == 45) | (chars == 101) | (chars == 69))
    else:
        floaty = np.flatnonzero((chars == 46) | (chars == 45))
    places = np.searchsorted(commas, floaty)
    if not (places & 1).all():
        return None
    # A start of 20 digits or more may not fit uint64, which would take the float path too.
    ends = commas[0::2]
    ends = ends[ends >= 20]
    suspects = ends[chars[ends - 20] - 48 < 10]  # a digit 20 places before the comma (uint8 wraps)
    if len(suspects) and (chars[suspects[:, None] - np.arange(1, 21)] - 48 < 10).all(axis=1).any():
        return None
    # What the profiler writes (one '.' in each duration, nothing else) is read faster as whole
    # numbers on both sides of the '.'; anything else (an exponent, no '.') as floats.
    count = len(commas) // 2
    decimal = len(floaty) == count and chars.min() >= 32 and (places == np.arange(1, 2 * count, 2)).all()
    decimal = decimal and (chars[floaty] == 46).all()  # no '-' either: numpy would read it as a float
    parsed = _decimal_triples(text, commas[1::2] - floaty - 1) if decimal else None
    if parsed is None:
        table = _records(text.replace(b" ", b"\n"), [("start", np.uint64), ("ms", np.float64)])
        if table is None:
            return None
        parsed = table["start"], table["ms"]
    start, duration = parsed
    # Each triple owns two commas: read-back pieces are attributed to their ops by that count.
    if len(commas) != 2 * len(start) or start.max() > _INT64:
        return None
    if not np.isfinite(duration).all() or duration.min() < 0:
        return None
    return start.astype(np.int64), duration


def _records(lines: bytes, fields: list[tuple[str, object]]):
    """Comma-separated records, one per line, as a numpy structured array of ``fields`` (the
    first columns of each line); None when numpy refuses one."""
    import numpy as np

    try:
        return np.loadtxt(
            io.BytesIO(lines),
            dtype=fields,
            usecols=tuple(range(len(fields))),
            delimiter=",",
            comments=None,
            quotechar=None,
            ndmin=1,
        )
    except ValueError:
        return None


def _decimal_triples(text: bytes, decimals):
    """:func:`_parse_triples` for durations that are digits, '.', digits (``decimals`` after the
    '.'): numpy reads the whole and the fractional digits as integers, and each duration is their
    one exact quotient (the float numpy's own float parser gives). None when numpy refuses, or a
    duration has more digits than a float holds exactly: the float path decides then."""
    import numpy as np

    if decimals.max() > 15:
        return None
    table = _records(
        text.replace(b" ", b"\n").replace(b".", b","), [("start", np.uint64), ("whole", np.uint64), ("part", np.uint64)]
    )
    if table is None:
        return None
    if len(table) != len(decimals):
        return None
    scale = np.power(10, decimals).astype(np.uint64)
    whole, part = table["whole"], table["part"]
    if (whole > (np.uint64(2**53 - 1) - part) // scale).any():  # whole * scale + part must stay exact
        return None
    return table["start"], (whole * scale + part).astype(np.float64) / scale.astype(np.float64)


def _first_bad_record(payload: bytes) -> str:
    """Which record of ``payload`` (that :func:`_parse_triples` refuses) is malformed, and why."""
    import numpy as np

    records = [record for record in payload.split(b" ") if record]
    low, high = 0, len(records)
    while high - low > 1:  # the first record that cannot be read, by halving
        middle = (low + high) // 2
        if _parse_triples(b" ".join(records[low:middle])) is None:
            high = middle
        else:
            low = middle
    if not records:
        return "no record"
    record = records[low]
    fields = record.split(b",")
    if len(fields) != 3:
        return f"record {_shown(record)} has {len(fields)} field(s), expected {','.join(_TRIPLE_FIELDS)}"
    start, duration, thread = fields
    if not _WHOLE.fullmatch(start) or int(start) > _INT64:
        return f"start ns {_shown(start)} is not a whole number in digits (int64)"
    if int(start) < 0:
        return "start ns is negative"
    value = None
    if duration.strip():  # (numpy warns on an empty input)
        try:
            value = np.loadtxt(io.BytesIO(duration), dtype=np.float64, comments=None, quotechar=None, ndmin=1)
        except ValueError:
            pass
    if value is None or value.shape != (1,) or not math.isfinite(value[0]):
        return f"duration ms {_shown(duration)} is not {_NUMBER_HINT}"
    if value[0] < 0 or duration.strip().startswith(b"-"):
        return "duration ms is negative"
    if not _WHOLE.fullmatch(thread):
        return f"thread id {_shown(thread)} is not a whole number in digits"
    if thread.strip().startswith(b"-"):
        return "thread id is negative"
    return f"record {_shown(record)} is not {','.join(_TRIPLE_FIELDS)}"


def _timestamp_records(handle, file_name: str, problems: list[str]) -> Iterator[tuple[str, bytes, int]]:
    """``(op name, payload, line number)`` pieces of the file; one long line may come in several
    pieces, each ending on a whole triple.

    Nothing is gathered beyond :data:`_MAX_LINE` bytes: a header or a triple longer than that
    ends the reading with a note. A last line without its line end is a file cut short (the
    profiler ends every line): its last, possibly partial triple is dropped, with one note that
    does not depend on where the cut fell.
    """
    name: str | None = None  # the op of the line being read, None at a line's start
    rest = b""
    done = False
    headless = 0
    line = 1
    cut_short = False
    while not done:
        block = handle.read(_BLOCK)
        done = not block
        data = rest + block
        rest = b""
        position = 0
        while position < len(data):
            newline = data.find(b"\n", position)
            end = newline if newline >= 0 else len(data)
            if name is None:
                semicolon = data.rfind(b";", position, end)
                # A header cut by the block's end: wait for the next block (triples hold no ';').
                if newline < 0 and not done and (semicolon < 0 or b" " not in data[semicolon:end]):
                    rest = data[position:]
                    if len(rest) > _MAX_LINE:
                        problems.append(
                            f"op executions: {file_name}: line {line} is longer than {_MAX_LINE // MiB} MiB before "
                            "its first record, which no profiler writes; not read from there on."
                        )
                        return
                    break
                if semicolon < 0:
                    if data[position:end].strip():
                        if newline < 0:
                            cut_short = True
                        else:
                            headless += 1
                    position = end + 1
                    line += 1
                    continue
                header = data[position:semicolon].decode("utf-8", "replace")
                name = header.rsplit(";", 1)[0] if ";" in header else header
                position = semicolon + 1
                continue
            if newline < 0:
                cut = data.rfind(b" ", position, end)
                if done:
                    cut_short = True
                    if cut >= 0:
                        yield name, data[position:cut], line
                    break
                if cut < 0:
                    rest = data[position:]
                    if len(rest) > _MAX_LINE:
                        problems.append(
                            f"op executions: {file_name}: line {line} has a record longer than {_MAX_LINE // MiB} "
                            "MiB, which no profiler writes; not read from there on."
                        )
                        return
                    break
                yield name, data[position:cut], line
                position = cut + 1
                continue
            yield name, data[position:end], line
            name = None
            position = end + 1
            line += 1
    if cut_short or name is not None:  # a line begun and not ended: its header, or records after it
        problems.append(
            f"op executions: {file_name} ends in the middle of a line (the file is cut short); "
            "the record at the cut was not counted."
        )
    if headless:
        problems.append(f"op executions: {headless} line(s) without an op name; skipped.")


# --------------------------------------------------------------------------- steps, trace


def _step(item: object) -> tuple[int, int, int]:
    """One ``[number, start ns, end ns]`` of the step file, checked."""
    if not isinstance(item, list) or len(item) != 3:
        raise ValueError(f"a step is [number, start ns, end ns], got {str(item)[:60]}")
    if not all(isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _INT64 for value in item):
        raise ValueError(f"step numbers and times are whole numbers from 0 to 2**63-1, got {str(item)[:60]}")
    number, start, end = item
    if end < start:
        raise ValueError(f"step {number} ends before it starts")
    return number, start, end


def read_steps(path: str | os.PathLike, problems: list[str] | None = None) -> StepMarks | None:
    """msdebug's ``msdebug_steps.json``, or None when the folder has none (not made by msdebug)."""
    problems = [] if problems is None else problems
    path = Path(path)
    if not os.path.lexists(path):
        return None
    handle = open_regular(path, ProfileReadError, follow=False, problems=problems, what="step marks")
    if handle is None:
        return None
    with handle:
        data = handle.read(_MAX_JSON + 1)
    try:
        if len(data) > _MAX_JSON:
            raise ValueError("too large")
        record = json.loads(data)
        if not isinstance(record, dict) or not isinstance(record.get("steps"), list):
            raise ValueError("no list of steps")
        steps = [_step(item) for item in record["steps"]]
        return StepMarks(
            numbers=tuple(number for number, _, _ in steps),
            bounds=tuple((start, end) for _, start, end in steps),
            partial=bool(record.get("partial", False)),
            error=str(record.get("error", ""))[:500],
            mode=str(record.get("mode", ""))[:40],
            first_of_process=bool(record.get("first_of_process", False)),
        )
    except (ValueError, RecursionError) as error:
        problems.append(
            f"step marks: {path.name} is not msdebug's step file ({str(error)[:200]}); per-step times not shown."
        )
        return None


def read_trace(path: str | os.PathLike, problems: list[str] | None = None) -> TraceSummary | None:
    """Count the complete (``"ph": "X"``) events of a Chrome trace, streaming its JSON array."""
    problems = [] if problems is None else problems
    path = Path(path)
    handle = open_regular(path, ProfileReadError, follow=False, problems=problems, what="trace")
    if handle is None:
        return None
    summary = TraceSummary(path)
    processes: dict[object, str] = {}
    low, high = math.inf, -math.inf
    with io.TextIOWrapper(handle, encoding="utf-8", errors="replace") as text:
        for event in _json_array(text, summary):
            if not isinstance(event, dict):
                continue
            if event.get("ph") == "X":
                try:
                    start, duration = float(event.get("ts", 0)), float(event.get("dur", 0))
                except (TypeError, ValueError):
                    continue
                summary.events += 1
                low, high = min(low, start), max(high, start + duration)
            elif event.get("ph") == "M" and event.get("name") == "process_name":
                processes[event.get("pid")] = str((event.get("args") or {}).get("name", ""))
    summary.span_us = high - low if summary.events else 0.0
    summary.processes = tuple(processes.values())
    if summary.problem:
        problems.append(
            f"trace: {path.name}: {summary.problem}; counted the {summary.events} event(s) before it, not read on."
        )
    elif not summary.complete:
        problems.append(f"trace: {path.name} ends early; counted the {summary.events} event(s) before the cut.")
    return summary


def _json_array(text: io.TextIOBase, summary: TraceSummary) -> Iterator[object]:
    """The items of a top-level JSON array, decoded one by one from blocks of text."""
    decoder = json.JSONDecoder()
    buffer = text.read(_BLOCK).lstrip()
    if not buffer.startswith("["):
        summary.complete = False
        return
    position = 1
    while True:
        while position < len(buffer) and buffer[position] in " \t\r\n,":
            position += 1
        if position < len(buffer) and buffer[position] == "]":
            return
        try:
            item, end = decoder.raw_decode(buffer, position)
        except json.JSONDecodeError:
            if len(buffer) - position > _MAX_TRACE_ITEM:
                summary.complete = False
                summary.problem = f"an item is longer than {_MAX_TRACE_ITEM // MiB} MiB"
                return
            more = text.read(_BLOCK)
            if not more:
                summary.complete = False
                return
            buffer = buffer[position:] + more
            position = 0
            continue
        yield item
        position = end
        if position > _BLOCK:
            buffer, position = buffer[position:], 0


# --------------------------------------------------------------------------- a whole profile


def _read_run(run: Path, rank: int, windows: Sequence[tuple[int, int]]) -> RankRun:
    result = RankRun(rank=rank, path=run)
    problems = result.problems
    for pattern, reader, what, attribute, name in (
        (_TYPE_CSV, read_op_types, "op types", "op_types", "cpu_op_type_info_<rank>.csv"),
        (_DETAIL_CSV, read_op_details, "ops", "ops", "cpu_op_detail_info_<rank>.csv"),
    ):
        path = _framework_file(run, pattern)
        if path is None:
            problems.append(f"{what}: no {name} in {run.name}/FRAMEWORK.")
            continue
        setattr(result, attribute, reader(path, problems))
    stamps = _framework_file(run, _TIMESTAMPS)
    if stamps is None:
        problems.append(f"op executions: no cpu_op_execute_timestamp_<rank>.txt in {run.name}/FRAMEWORK.")
    else:
        result.executions = read_executions(stamps, windows, problems)
    # The tables are the profiler's own sums; when they are missing, the executions stand in.
    if not result.ops and result.executions and result.executions.per_op:
        result.ops = _ops_from_executions(result.executions)
        problems.append("ops: rebuilt from the op executions.")
    if not result.op_types and result.ops:
        result.op_types = _types_from_ops(result.ops)
        problems.append("op types: rebuilt from the ops.")
    trace = run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    result.trace = trace if trace.is_file() else None
    return result


def _op_type(full_name: str) -> str:
    # Default/fc1-Dense/MatMul-op0 -> MatMul; PyNative's plain "MatMul" stays.
    return full_name.rsplit("/", 1)[-1].split("-op", 1)[0]


def _ops_from_executions(executions: Executions) -> list[OpRow]:
    total = executions.total_ms or 1.0
    return [
        OpRow(_op_type(name), name.rsplit("/", 1)[-1], name, count, ms, ms / count, ms / total)
        for name, (count, ms) in executions.per_op.items()
    ]


def _types_from_ops(ops: Sequence[OpRow]) -> list[OpTypeRow]:
    sums: dict[str, list] = {}
    for op in ops:
        entry = sums.setdefault(op.op_type, [0, 0.0])
        entry[0] += op.occurrences
        entry[1] += op.total_ms
    total = math.fsum(ms for _, ms in sums.values()) or 1.0
    return [OpTypeRow(name, count, ms, ms / count if count else 0.0, ms / total) for name, (count, ms) in sums.items()]


def read_profile(path: str | os.PathLike) -> ProfileData:
    """Every rank under ``path``; raises :class:`ProfileReadError` only when there is none."""
    root = Path(path).expanduser()
    if not root.exists():
        raise ProfileReadError(f"{path}: no such directory; give a profiler output directory.")
    if not root.is_dir():
        raise ProfileReadError(f"{path}: not a directory; give the folder the profiler wrote (or one above it).")
    runs = find_runs(root)
    if not runs:
        raise ProfileReadError(
            f"{path}: no profile inside (looked for *_ascend_ms folders with FRAMEWORK/cpu_op_*.csv, "
            f"{_MAX_DEPTH} levels deep)."
        )
    problems: list[str] = []
    steps = read_steps(root / STEPS_FILE, problems)
    if steps is None and len(runs) == 1 and runs[0] != root:
        steps = read_steps(runs[0].parent / STEPS_FILE, problems)
    windows = steps.bounds if steps else ()
    ranks = [_rank_of(run, root) for run in runs]
    # Runs without a rank, or two runs claiming one, are numbered in path order.
    if None in ranks or len(set(ranks)) != len(ranks):
        ranks = list(range(len(runs)))
    data = ProfileData(root=root, runs=[], steps=steps, problems=problems)
    for run, rank in sorted(zip(runs, ranks, strict=True), key=lambda pair: pair[1]):
        data.runs.append(_read_run(run, rank, windows if len(runs) == 1 else ()))
    return data


# --------------------------------------------------------------------------- ranks


def is_collective(op_type: str) -> bool:
    """Whether ``op_type`` is a collective communication op (AllReduce, AllGather, Broadcast,
    Ascend's Hcom* ...): every rank waits in it until the last one arrives, so its time is mostly
    waiting. Point-to-point Send/Receive, and compute ops whose names merely contain these words
    (BroadcastTo), are not (:mod:`msdebug.ranks.collectives`, the one list)."""
    return collectives.is_collective(op_type)


@dataclass(frozen=True)
class RankMark:
    """One op type on every rank that ran it, and the rank to look at.

    In a compute op that is the slowest rank. In a collective it is the straggler: every rank
    waits inside the collective for the last one to arrive, so the rank with the *least* time in
    it is the one that came last (the others' extra time is waiting for it).
    """

    op_type: str
    per_rank: dict[int, float]  # rank -> total ms
    collective: bool

    @property
    def rank(self) -> int | None:
        """The marked rank; None when fewer than two ranks ran the op type."""
        if len(self.per_rank) < 2:
            return None
        pick = min if self.collective else max
        return pick(self.per_rank, key=self.per_rank.__getitem__)

    @property
    def label(self) -> str:
        return "straggler" if self.collective else "slowest"


def rank_marks(runs: Sequence[RankRun]) -> list[RankMark]:
    """Per op type, its total time on each of ``runs`` and the rank to look at."""
    totals: dict[str, dict[int, float]] = {}
    for run in runs:
        for row in run.op_types:
            totals.setdefault(row.op_type, {})[run.rank] = row.total_ms
    return [RankMark(name, per_rank, is_collective(name)) for name, per_rank in totals.items()]


# --------------------------------------------------------------------------- comparison


@dataclass(frozen=True)
class OpChange:
    """One op type or op in two profiles (ms; None where it does not occur)."""

    name: str
    before_ms: float | None
    after_ms: float | None

    @property
    def speedup(self) -> float | None:
        if not self.before_ms or not self.after_ms:
            return None
        return self.before_ms / self.after_ms

    @property
    def status(self) -> str:
        if self.before_ms is None:
            return "new"
        if self.after_ms is None:
            return "vanished"
        return "both"


@dataclass
class Comparison:
    """Two profiles side by side, per op type and per op, biggest change first."""

    before: str
    after: str
    before_ms: float
    after_ms: float
    op_types: list[OpChange]
    ops: list[OpChange]


def _sums(data: ProfileData, kind: str) -> dict[str, float]:
    sums: dict[str, float] = {}
    for run in data.runs:
        rows = run.op_types if kind == "types" else run.ops
        for row in rows:
            key = row.op_type if kind == "types" else row.full_name
            sums[key] = sums.get(key, 0.0) + row.total_ms
    return sums


def _changes(before: dict[str, float], after: dict[str, float]) -> list[OpChange]:
    names = list(dict.fromkeys([*before, *after]))
    changes = [OpChange(name, before.get(name), after.get(name)) for name in names]
    return sorted(changes, key=lambda change: (-abs((change.after_ms or 0.0) - (change.before_ms or 0.0)), change.name))


def compare(before: ProfileData, after: ProfileData) -> Comparison:
    """Per op type and per full op name: time before and after, over all ranks."""
    types_before, types_after = _sums(before, "types"), _sums(after, "types")
    return Comparison(
        before=str(before.root),
        after=str(after.root),
        before_ms=math.fsum(types_before.values()),
        after_ms=math.fsum(types_after.values()),
        op_types=_changes(types_before, types_after),
        ops=_changes(_sums(before, "ops"), _sums(after, "ops")),
    )


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


def _check_order(order: Any) -> str:
    if order not in ("time", "name"):
        raise InvalidValueError(f"order must be 'time' (longest first) or 'name', got {order!r}.")
    return order


def _check_top(top: Any) -> int:
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 1000:
        raise InvalidValueError(f"top must be a whole number from 1 to 1000, got {top!r}.")
    return top
