"""The first NaN or Inf: tensor statistics, chunked scans of a data dump, and the report model.

The rule (both for a dump scan and for the PyNative hooks of ``%%msnan``): the culprit is the
first op that *made* a non-finite value, a NaN from inputs that hold none, or an infinity from
finite inputs, or the first NaN that came in (a NaN in the data or a parameter: no mask is a
NaN). Infinities that came in as data (a ``-inf`` attention mask, a padding) are listed as
such, never blamed, and so are the infinities ops pass on from them; when nothing was made, the
answer is where the first non-finite value came in. ``inf=True`` (``%%msnan --inf``,
``msdebug dump --nan --inf``) is the rule before it: the first non-finite value of any kind.

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
from typing import Any

import numpy as np

from ..errors import DumpError, DumpFormatError
from . import cells
from .datadump import (
    CHUNK,
    DataDump,
    DumpIteration,
    DumpOp,
    DumpRank,
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
    "Entered",
    "FINITE",
    "INF",
    "MAX_ENTERED",
    "NAN",
    "NanReport",
    "Reached",
    "SlotStats",
    "holds_nan",
    "scan_dump",
    "source_text",
]

MAX_DOWNSTREAM = 12
MAX_ENTERED = 5  # infinities that came in as data, listed in a report; the rest are counted
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


class _Located:
    """``place``, ``first_code`` and ``line`` of something with ``source``, ``code`` and ``cell``."""

    source: str
    code: str
    cell: str

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


@dataclass(frozen=True)
class Entered(_Located):
    """An infinity that came in as data (a mask, a ``-inf`` padding): an op's input that no op
    made (the hooks saw none make it; a dump's graph input, parameter or constant), which the
    default rule lists and does not blame."""

    name: str  # the op that received it
    op_type: str
    slot: str  # ``input 1``
    stats: TensorStats | None
    value: str = ""  # what it is, where known: a variable or parameter name, a graph input (%para3_mask)
    source: str = ""
    code: str = ""
    cell: str = ""
    where: str = ""  # rank / iteration / graph, for dumps

    @property
    def kinds(self) -> str:
        """``-Inf ×5`` (``non-finite`` when its values could not be read again)."""
        return self.stats.kinds if self.stats is not None and self.stats.kinds else "non-finite"


@dataclass(frozen=True)
class Culprit(_Located):
    """The first op at which a value is not finite (under the report's rule)."""

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
    came_in: bool = False  # no op made a non-finite value: this is where the first one came in as data

    @property
    def kind(self) -> str:
        return self.stats.kind

    @property
    def verdict(self) -> str:
        """Whether the op made the value or received it, in words."""
        if self.made_here:
            held = [s.stats for s in self.inputs if s.stats is not None and not s.stats.finite]
            if not held:
                return f"{self.op_type} made it: its inputs are finite and its {self.slot} is not"
            kinds = ", ".join(sorted({k for stats in held for k in stats.kind.split(" and ")}))
            return f"{self.op_type} made it: its inputs hold no NaN (they hold {kinds}) and its {self.slot} does"
        return (
            f"{self.op_type} received it: its {self.slot} is already not finite, so it comes from upstream or the data"
        )


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
    rule: str = "made"  # "made": the first value an op made (or NaN that came in); "any": --inf
    # Infinities that came in as data: the first MAX_ENTERED + 1 (one of them may be the culprit,
    # when nothing was made), and how many places they came in at, listed or not.
    entered: tuple[Entered, ...] = ()
    entered_count: int = 0

    def others_entered(self) -> tuple[tuple[Entered, ...], int]:
        """The infinities that came in as data other than the culprit, at most MAX_ENTERED, and
        how many more there are."""
        culprit = self.culprit
        own = culprit is not None and culprit.came_in
        shown = tuple(e for e in self.entered if not (own and (e.name, e.slot) == (culprit.name, culprit.slot)))[
            :MAX_ENTERED
        ]
        return shown, max(0, self.entered_count - len(shown) - (1 if own else 0))

    @property
    def found(self) -> bool:
        return self.culprit is not None


def _cell_label(path: str, line: int) -> str:
    """:func:`.cells.place` for a line of a notebook cell; '' for other files."""
    return cells.place(path, line) if cells.is_cell(path) else ""


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
    inf: bool = False,
) -> NanReport:
    """Scan a data dump in execution order and report the culprit (the rule: the module's doc).

    Iterations are taken in the order they ran (their global number, then time); within
    one, ops in execution order, each op's inputs before its outputs. An op made a value when
    its output holds a NaN and its inputs none, or an infinity and its inputs are finite; a NaN
    in an op's input before any op made one came in. An infinity in an input came in as data
    when the IR names a graph input, parameter or constant there, or when no earlier op's output
    held one; it is listed, and the scan goes on. ``Parameter`` files hold end-of-step values, so
    a parameter is judged by the input of the op that used it (its value before the update); a
    parameter file is reported only when every op was finite (a NaN: when no op made one), and
    then said to be the updated value. With ``inf=True`` the first non-finite tensor of any
    kind is the answer.
    """
    started = time.perf_counter()
    data = dump if isinstance(dump, DataDump) else read_data_dump(dump)
    ranks = [data.rank(rank)] if rank is not None else data.ranks
    total = sum(t.size for r in ranks for it in r.iterations for t in it.tensors())
    scanner = _Scanner(total, progress)
    notes: list[str] = []
    found: list[tuple[int, DumpIteration, DumpOp | None, TensorFile, bool]] = []
    entries = _Entries(scanner)
    input_dumped = any(op.inputs for r in ranks for it in r.iterations for op in it.ops)
    ops = 0
    for where in ranks:
        ir = _Ir(where)
        for iteration in where.iterations:
            notes.extend(f"rank {where.rank} iteration {iteration.iteration}: {note}" for note in iteration.notes)
            if iteration.unmatched:
                notes.append(
                    f"rank {where.rank} iteration {iteration.iteration}: {len(iteration.unmatched)} files match no op "
                    "of the execution order; scanned after the ops"
                )
            if inf:
                hit, visited = _first_in_iteration(iteration, scanner)
            else:
                hit, visited = _first_made_in_iteration(iteration, scanner, entries, ir, input_dumped)
            ops += visited
            if hit is not None:
                found.append((hit[1].timestamp, iteration, *hit))
                break
    if not any(it.ops for r in ranks for it in r.iterations):
        notes.append("the dump holds no tensors (PyNative writes none on 2.10; only GRAPH and @jit are dumped)")
    culprit = None
    if found:
        _, iteration, op, tensor, made = min(found, key=lambda f: (f[1].iteration, f[0]))
        culprit = _culprit(data, iteration, op, tensor, scanner, made=made, nan_only=not inf)
        if len(ranks) > 1:
            others = sorted({f[1].rank for f in found} - {iteration.rank})
            if others:
                notes.append(f"ranks {', '.join(map(str, others))} also hold non-finite values; shown: the earliest")
    elif entries.first is not None:
        iteration, op, tensor = entries.first
        culprit = _culprit(data, iteration, op, tensor, scanner, made=False, came_in=True)
    if not input_dumped and any(it.parameters for r in ranks for it in r.iterations):
        notes.append(
            "op inputs are not in this dump (input_output 2), so parameters are judged by their end-of-step "
            "value only; dump inputs too to see the value an op used"
        )
    entered, count = entries.listed()
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
        "any" if inf else "made",
        entered,
        count,
    )


def _first_in_iteration(
    iteration: DumpIteration, scanner: _Scanner
) -> tuple[tuple[DumpOp | None, TensorFile, bool] | None, int]:
    """``--inf``: the first non-finite tensor of one iteration (and whether it is an output an op
    made), and how many ops were looked at."""
    for op in iteration.ops:
        for tensor in op.tensors:
            if scanner.finite(tensor) is False:
                return (op, tensor, tensor.io == "output"), op.index + 1
    for tensor in iteration.parameters + iteration.unmatched:
        if scanner.finite(tensor) is False:
            return (None, tensor, True), len(iteration.ops)
    return None, len(iteration.ops)


# What a tensor holds, ordered: an op made a value when its output holds more than its inputs.
FINITE, INF, NAN = 0, 1, 2


def holds_nan(array: np.ndarray) -> bool:
    """Whether a non-finite array holds a NaN (else only infinities), a chunk at a time."""
    flat = array.reshape(-1) if array.flags.c_contiguous else np.ravel(array)
    return any(np.isnan(flat[start : start + CHUNK]).any() for start in range(0, flat.size, CHUNK))


def _held(tensor: TensorFile) -> int | None:
    """FINITE, INF (infinities, no NaN) or NAN (a NaN, and maybe infinities); None when unreadable.
    Read without the scan's tally: the scan has counted the tensor already."""
    try:
        array = open_tensor(tensor)
        if is_finite(array):
            return FINITE
        return NAN if holds_nan(array) else INF
    except (DumpFormatError, DumpError):
        return None


def _first_made_in_iteration(
    iteration: DumpIteration, scanner: _Scanner, entries: _Entries, ir: _Ir, input_dumped: bool
) -> tuple[tuple[DumpOp | None, TensorFile, bool] | None, int]:
    """The first value an op of one iteration made, or NaN that came in (and whether an op made
    it), and how many ops were looked at; infinities that came in as data go to ``entries``."""
    inf_out = False  # an op's output held an infinity: a later input's infinity may come from it
    inf_any = False  # an op's tensor held one: a Parameter file's infinity is then no finding
    params_inf: bool | None = None  # inputs not dumped: whether a graph input or parameter holds one
    for op in iteration.ops:
        held = FINITE
        for tensor in op.inputs:
            if scanner.finite(tensor) is not False:
                continue
            state = _held(tensor)
            if state == NAN:
                return (op, tensor, False), op.index + 1  # a NaN came in: no mask is a NaN
            held, inf_any = INF, True
            ref = ir.input_ref(iteration.graph_id, op.name, tensor.slot)
            if not inf_out or _is_data(ref):
                entries.add(iteration, op, tensor, ir, ref)
        for tensor in op.outputs:
            if scanner.finite(tensor) is not False:
                continue
            state = _held(tensor)
            if state == NAN and held < NAN:
                return (op, tensor, True), op.index + 1
            if state == INF and held == FINITE:
                if input_dumped or op.inputs:
                    return (op, tensor, True), op.index + 1
                # Outputs only: its inputs are unknown. The first infinity of the iteration is made
                # here unless a graph input or parameter holds one (a mask), which it then came from.
                if not inf_out:
                    if params_inf is None:
                        params_inf = any(_held(t) == INF for t in iteration.parameters)
                    if not params_inf:
                        return (op, tensor, True), op.index + 1
                    entries.add(iteration, op, tensor, ir, "")
            if state is not None and state >= INF:
                inf_out = inf_any = True
    for tensor in iteration.parameters + iteration.unmatched:
        if scanner.finite(tensor) is False and (_held(tensor) == NAN or not inf_any):
            return (None, tensor, True), len(iteration.ops)
    return None, len(iteration.ops)


def _is_data(ref: str) -> bool:
    """Whether an IR input reference is a graph input or parameter (``%para3_mask``) or a
    constant, rather than another node's output (``%5``)."""
    return ref.startswith("%para") or (bool(ref) and not ref.startswith("%"))


def _value_name(ref: str) -> str:
    """``mask`` for ``%para3_mask``; a constant's text, shortened; '' for a node's output."""
    if ref.startswith("%para"):
        return ref[5:].lstrip("0123456789").lstrip("_") or ref
    if ref and not ref.startswith("%"):
        return ref if len(ref) <= 40 else ref[:39] + "…"
    return ""


class _Ir:
    """The IR a rank's dump saved for each graph (``graphs/ms_output_trace_code_graph_<id>.ir``),
    read once, when first asked: an op's input references and source line, by its name."""

    def __init__(self, rank: DumpRank) -> None:
        self.rank = rank
        self._nodes: dict[int, dict[str, Any]] = {}

    def node(self, graph_id: int, name: str) -> Any:
        if graph_id not in self._nodes:
            nodes: dict[str, Any] = {}
            path = self.rank.ir_path(graph_id)
            if path is not None:
                from .ir import read_ir

                try:
                    for node in read_ir(path).nodes():
                        nodes.setdefault(node.scope, node)
                except (DumpError, DumpFormatError):
                    pass
            self._nodes[graph_id] = nodes
        return self._nodes[graph_id].get(name)

    def input_ref(self, graph_id: int, name: str, position: int) -> str:
        """``%para3_mask``, ``%5`` or a constant's text; '' when unknown."""
        node = self.node(graph_id, name)
        refs = node.inputs if node is not None else ()
        return refs[position] if position < len(refs) else ""

    def located(self, graph_id: int, name: str) -> tuple[str, str, str]:
        node = self.node(graph_id, name)
        location = node.source if node is not None else None
        return source_text(location.path, location.line, location.code) if location is not None else ("", "", "")


class _Entries:
    """Infinities that came in as data, in the order the scan met them: each place (op and
    slot) once, the first few with their statistics and line, the rest counted."""

    def __init__(self, scanner: _Scanner) -> None:
        self.scanner = scanner
        self.places: set[tuple[str, str]] = set()
        self.kept: list[Entered] = []
        self.first: tuple[DumpIteration, DumpOp, TensorFile] | None = None

    def add(self, iteration: DumpIteration, op: DumpOp, tensor: TensorFile, ir: _Ir, ref: str) -> None:
        place = (op.name, tensor.label)
        if place in self.places:
            return
        self.places.add(place)
        if self.first is None:
            self.first = (iteration, op, tensor)
        if len(self.kept) > MAX_ENTERED:  # one more than listed: the first may be the answer itself
            return
        source, code, cell = ir.located(iteration.graph_id, op.name)
        where = f"rank {iteration.rank}, iteration {iteration.iteration}"
        value = _value_name(ref) or ("a graph input or parameter (inputs not dumped)" if tensor.io == "output" else "")
        self.kept.append(
            Entered(op.name, op.op_type, tensor.label, self.scanner.stats(tensor), value, source, code, cell, where)
        )

    def listed(self) -> tuple[tuple[Entered, ...], int]:
        return tuple(self.kept), len(self.places)


def _slot_stats(scanner: _Scanner, tensors: Sequence[TensorFile], note: Callable[[TensorFile], str]):
    return tuple(SlotStats(t.label, t.path.name, scanner.stats(t), note(t)) for t in tensors)


def _culprit(
    data: DataDump,
    iteration: DumpIteration,
    op: DumpOp | None,
    tensor: TensorFile,
    scanner: _Scanner,
    *,
    made: bool,
    came_in: bool = False,
    nan_only: bool = False,
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
    made_here = made
    inputs = _slot_stats(scanner, op.inputs, lambda t: "")
    outputs = _slot_stats(scanner, op.outputs, lambda t: "")
    ir = _Ir(data.rank(iteration.rank))
    source, code, cell = ir.located(iteration.graph_id, op.name)
    note = ""
    if not made_here and tensor.io == "input":
        ref = ir.input_ref(iteration.graph_id, op.name, tensor.slot)
        if ref.startswith("%para"):
            note = f"input {tensor.slot} is {ref}: a graph input or parameter (its value before the step)"
    if not made_here and not note:
        note = (
            "its inputs are not in this dump, and a graph input or parameter holds an infinity: it came from there"
            if tensor.io == "output"
            else "no earlier op's output was non-finite: the value comes from a graph input, a parameter or an op "
            "the dump does not record"
        )
    if came_in:
        note = f"no op made a NaN, or an infinity from finite values: the first non-finite value came in here; {note}"
    nan = nan_only and stats is not None and stats.nan > 0
    reached = _reached(iteration, op, scanner, nan_only=nan)
    return Culprit(
        op.name, op.op_type, tensor.label, stats, made_here, inputs, outputs, source, code, cell, where, reached, note,
        tensor.timestamp, came_in,
    )  # fmt: skip


def _reached(
    iteration: DumpIteration, culprit: DumpOp, scanner: _Scanner, nan_only: bool = False
) -> tuple[Reached, ...]:
    """Later ops of the same iteration whose inputs are not finite (``nan_only``: hold a NaN, the
    culprit's kind, not a mask's infinity), and whether they masked it."""
    worst = NAN if nan_only else INF
    found = []
    for op in iteration.ops[culprit.index + 1 :]:
        if not any((_held(t) or FINITE) >= worst for t in op.inputs):
            continue
        outs = [_held(t) for t in op.outputs]
        masked = bool(outs) and all(state is not None and state < worst for state in outs)
        if not masked:
            outcome = "passed it on"
        elif all(state == FINITE for state in outs):
            outcome = "masked it: its output is finite"
        else:
            outcome = "masked it: its output holds no NaN"
        found.append(Reached(op.name, op.op_type, outcome))
        if len(found) >= MAX_DOWNSTREAM:
            break
    return tuple(found)
