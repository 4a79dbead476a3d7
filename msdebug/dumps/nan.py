"""The first NaN or Inf: tensor statistics, chunked scans of a data dump, and the report model.

Pure: numpy only. A scan reads each tensor as a memory map (a small one at once), a chunk at
a time, so a dump larger than memory is scanned in bounded memory; a file that is not a
readable ``.npy`` is reported and skipped. The same :class:`NanReport` describes a data-dump scan and the
PyNative hooks of ``%%msnan`` (:mod:`msdebug.recorders.nan`), so both render alike.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import DumpError, DumpFormatError
from . import cells
from .datadump import (
    DataDump,
    DumpIteration,
    DumpOp,
    TensorFile,
    TensorStats,
    is_finite,
    open_tensor,
    read_data_dump,
    tensor_stats,
)
from .rendered import Rendered, rendered_by

__all__ = [
    "Culprit",
    "NanReport",
    "Reached",
    "SlotStats",
    "scan_dump",
    "source_text",
]

MAX_DOWNSTREAM = 12
ProgressFn = Callable[[int, int], None]


# --------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class SlotStats:
    """One input or output of the culprit op."""

    label: str
    name: str
    stats: TensorStats | None
    note: str = ""


@dataclass(frozen=True)
class Reached:
    """An op after the culprit that received a non-finite value, and what it did with it."""

    name: str
    op_type: str
    outcome: str  # "passed it on" or "masked it: its output is finite"


@dataclass(frozen=True)
class Culprit:
    """The first op at which a value is not finite."""

    name: str
    op_type: str
    slot: str
    stats: TensorStats
    made_here: bool
    inputs: tuple[SlotStats, ...]
    outputs: tuple[SlotStats, ...]
    source: str = ""
    code: str = ""
    cell: str = ""
    where: str = ""  # rank / iteration / graph, for dumps
    reached: tuple[Reached, ...] = ()
    note: str = ""
    when_us: int = 0  # when the value was made (µs since the epoch), to order hooks and dumps

    @property
    def kind(self) -> str:
        return self.stats.kind

    @property
    def verdict(self) -> str:
        """Whether the op made the value or received it, in words."""
        if self.made_here:
            return f"{self.op_type} made it: its inputs are finite and its {self.slot} is not"
        return (
            f"{self.op_type} received it: its {self.slot} is already not finite, so it comes from upstream or the data"
        )

    @property
    def place(self) -> str:
        """``cell [14], line 3`` or ``file.py:3``; empty when unknown."""
        return self.cell or self.source

    @property
    def first_code(self) -> str:
        """The first line of the code at :attr:`place`, stripped."""
        return self.code.strip().splitlines()[0] if self.code.strip() else ""

    @property
    def line(self) -> str:
        """``cell [14], line 3: `d = ops.sqrt(h - 1)``` or ``file.py:3: `code```."""
        place, code = self.place, self.first_code
        if not place:
            return ""
        return f"{place}: `{code}`" if code else place


@dataclass(repr=False)
class NanReport(Rendered):
    """What ``%%msnan`` or a dump scan found: the culprit, or that everything is finite."""

    _views = rendered_by(lambda v: (v.nan.html_report, v.nan.text_report))

    mode: str
    culprit: Culprit | None
    checked_ops: int
    checked_tensors: int
    checked_bytes: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    path: str = ""

    @property
    def found(self) -> bool:
        return self.culprit is not None


def _cell_label(path: str, line: int) -> str:
    """``cell [14], line 3`` for a line of a notebook cell (``cell, line 3`` when :mod:`.cells`
    does not know which ``In [N]`` it was); '' for other files."""
    if not cells.is_cell(path):
        return ""
    number = cells.cell_number(path)
    return f"cell [{number}], line {line}" if number is not None else f"cell, line {line}"


def source_text(path: str, line: int, code: str) -> tuple[str, str, str]:
    """``(source, code, cell)`` for a location: the cell's own code where ``path`` is a
    notebook cell (``cell [14], line 3``), else the file's line and the dumped code."""
    label = _cell_label(path, line)
    own = cells.cell_code(path, line)
    if label:
        return f"{path}:{line}", (own if own is not None else code).strip(), label
    return f"{path}:{line}", code.strip(), ""


# --------------------------------------------------------------------------- scanning a dump


class _Scanner:
    """Opens and judges tensors, keeping the tally and the files it had to skip."""

    def __init__(self, total: int, progress: ProgressFn | None) -> None:
        self.total = total
        self.done = 0
        self.tensors = 0
        self.skipped: list[tuple[str, str]] = []
        self.progress = progress

    def _advance(self, tensor: TensorFile) -> None:
        self.done += tensor.size
        self.tensors += 1
        if self.progress is not None:
            self.progress(self.done, self.total)

    def finite(self, tensor: TensorFile) -> bool | None:
        """True or False, or None when the file is skipped."""
        try:
            array = open_tensor(tensor)
            result = is_finite(array)
        except (DumpFormatError, DumpError) as error:
            self.skipped.append((tensor.path.name, str(error).split(": ", 1)[-1]))
            result = None
        finally:
            self._advance(tensor)
        return result

    def stats(self, tensor: TensorFile) -> TensorStats | None:
        try:
            return tensor_stats(open_tensor(tensor))
        except (DumpFormatError, DumpError):
            return None


def scan_dump(
    dump: DataDump | str | os.PathLike,
    *,
    rank: int | None = None,
    progress: ProgressFn | None = None,
) -> NanReport:
    """Scan a data dump in execution order and report the first non-finite tensor.

    Iterations are taken in the order they ran (their global number, then time); within
    one, ops in execution order, each op's inputs before its outputs. ``Parameter`` files
    hold end-of-step values, so a parameter is judged by the input of the op that used it
    (its value before the update); a parameter file is reported only when every op was
    finite, and then said to be the updated value.
    """
    started = time.perf_counter()
    data = dump if isinstance(dump, DataDump) else read_data_dump(dump)
    ranks = [data.rank(rank)] if rank is not None else data.ranks
    total = sum(t.size for r in ranks for it in r.iterations for t in it.tensors())
    scanner = _Scanner(total, progress)
    notes: list[str] = []
    found: list[tuple[int, DumpIteration, DumpOp | None, TensorFile]] = []
    ops = 0
    for where in ranks:
        for iteration in where.iterations:
            notes.extend(f"rank {where.rank} iteration {iteration.iteration}: {note}" for note in iteration.notes)
            if iteration.unmatched:
                notes.append(
                    f"rank {where.rank} iteration {iteration.iteration}: {len(iteration.unmatched)} files match no op "
                    "of the execution order; scanned after the ops"
                )
            hit, visited = _first_in_iteration(iteration, scanner)
            ops += visited
            if hit is not None:
                found.append((hit[1].timestamp, iteration, hit[0], hit[1]))
                break
    if not any(it.ops for r in ranks for it in r.iterations):
        notes.append("the dump holds no tensors (PyNative writes none on 2.10; only GRAPH and @jit are dumped)")
    culprit = None
    if found:
        _, iteration, op, tensor = min(found, key=lambda f: (f[1].iteration, f[0]))
        culprit = _culprit(data, iteration, op, tensor, scanner)
        if len(ranks) > 1:
            others = sorted({f[1].rank for f in found} - {iteration.rank})
            if others:
                notes.append(f"ranks {', '.join(map(str, others))} also hold non-finite values; shown: the earliest")
    input_dumped = any(op.inputs for r in ranks for it in r.iterations for op in it.ops)
    if not input_dumped and any(it.parameters for r in ranks for it in r.iterations):
        notes.append(
            "op inputs are not in this dump (input_output 2), so parameters are judged by their end-of-step "
            "value only; dump inputs too to see the value an op used"
        )
    return NanReport(
        "data dump",
        culprit,
        ops,
        scanner.tensors,
        scanner.done,
        scanner.skipped,
        notes,
        time.perf_counter() - started,
        str(data.root),
    )


def _first_in_iteration(
    iteration: DumpIteration, scanner: _Scanner
) -> tuple[tuple[DumpOp | None, TensorFile] | None, int]:
    """The first non-finite tensor of one iteration and how many ops were looked at."""
    for op in iteration.ops:
        for tensor in op.tensors:
            if scanner.finite(tensor) is False:
                return (op, tensor), op.index + 1
    for tensor in iteration.parameters + iteration.unmatched:
        if scanner.finite(tensor) is False:
            return (None, tensor), len(iteration.ops)
    return None, len(iteration.ops)


def _slot_stats(scanner: _Scanner, tensors: Sequence[TensorFile], note: Callable[[TensorFile], str]):
    return tuple(SlotStats(t.label, t.path.name, scanner.stats(t), note(t)) for t in tensors)


def _culprit(
    data: DataDump,
    iteration: DumpIteration,
    op: DumpOp | None,
    tensor: TensorFile,
    scanner: _Scanner,
) -> Culprit:
    stats = scanner.stats(tensor)
    where = f"rank {iteration.rank}, net {iteration.net}, graph {iteration.graph_id}, iteration {iteration.iteration}"
    if op is None:
        what = "parameter" if tensor.is_parameter else "tensor"
        note = (
            "a Parameter file holds the value after the step's update; every op's inputs and outputs were finite, "
            "so the update itself made it"
            if tensor.is_parameter
            else "this file matches no op of the execution order"
        )
        return Culprit(
            tensor.flat_name, "Parameter" if tensor.is_parameter else tensor.op_type, what, stats, True,
            (), (SlotStats(tensor.label, tensor.path.name, stats),), where=where, note=note, when_us=tensor.timestamp,
        )  # fmt: skip
    made_here = tensor.io == "output"
    inputs = _slot_stats(scanner, op.inputs, lambda t: "")
    outputs = _slot_stats(scanner, op.outputs, lambda t: "")
    source = code = cell = ""
    rank = data.rank(iteration.rank)
    ir_path = rank.ir_path(iteration.graph_id)
    note = ""
    if ir_path is not None:
        from .ir import read_ir

        try:
            node = next((n for n in read_ir(ir_path).nodes() if n.scope == op.name), None)
        except (DumpError, DumpFormatError):
            node = None
        location = node.source if node is not None else None
        if location is not None:
            source, code, cell = source_text(location.path, location.line, location.code)
        if not made_here and node is not None:
            position = tensor.slot
            refs = node.inputs
            if position < len(refs) and refs[position].startswith("%para"):
                note = f"input {position} is {refs[position]}: a graph input or parameter (its value before the step)"
    if not made_here and not note:
        note = "no earlier op's output was non-finite: the value comes from a graph input, a parameter or an op the dump does not record"
    reached = _reached(iteration, op, scanner)
    return Culprit(
        op.name, op.op_type, tensor.label, stats, made_here, inputs, outputs, source, code, cell, where, reached, note,
        tensor.timestamp,
    )  # fmt: skip


def _quiet_finite(tensor: TensorFile) -> bool | None:
    try:
        return is_finite(open_tensor(tensor))
    except (DumpFormatError, DumpError):
        return None


def _reached(iteration: DumpIteration, culprit: DumpOp, scanner: _Scanner) -> tuple[Reached, ...]:
    """Later ops of the same iteration whose inputs are not finite, and whether they masked it."""
    found = []
    for op in iteration.ops[culprit.index + 1 :]:
        if all(_quiet_finite(t) is not False for t in op.inputs):
            continue
        outs = [_quiet_finite(t) for t in op.outputs]
        masked = bool(outs) and all(outs)
        found.append(Reached(op.name, op.op_type, "masked it: its output is finite" if masked else "passed it on"))
        if len(found) >= MAX_DOWNSTREAM:
            break
    return tuple(found)
