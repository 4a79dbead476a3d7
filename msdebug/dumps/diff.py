"""Where two runs part ways: a streaming tensor comparison, and the report.

Pure: numpy only. :func:`diff_runs` aligns the ops of two runs (:mod:`.align`) and walks
them in the first run's execution order, inputs before outputs, comparing each pair of
tensors a chunk at a time over memory maps: two dumps larger than memory are compared in
bounded memory. The first pair outside the tolerance names the op where the runs part ways.
The runs themselves are :mod:`.runs`; :func:`read_any_run` reads any of the three kinds
(a saved run, a MindSpore data dump, an msprobe dump).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..errors import DumpError, DumpFormatError, InvalidValueError
from .align import Alignment, align
from .msprobe import choose_msprobe_dump, find_msprobe_dump, read_msprobe_dump
from .rendered import Rendered, rendered_by
from .runs import (
    RUN_FILE,
    STAT_KEYS,
    Run,
    RunOp,
    TensorRef,
    dump_place,
    open_ref,
    read_ranked_run,
    read_run,
    run_from_dump,
    saved_ranks,
)

__all__ = [
    "CHOICES",
    "RUN_KINDS",
    "DiffReport",
    "Metrics",
    "OpDiff",
    "Tolerance",
    "array_stats",
    "compare_arrays",
    "diff_runs",
    "read_any_run",
    "run_kind",
    "tolerance_for",
]

# Elements per chunk of a comparison: 1 Mi elements is 8 MiB per float64 temporary.
CHUNK = 1 << 20
_MAX_SPREAD = 10_000


# --------------------------------------------------------------------------- tolerances


@dataclass(frozen=True)
class Tolerance:
    """When two values agree: ``|a - b| <= atol + rtol * |b|`` (``b`` is the reference side),
    or, with ``rule="msprobe"``, msprobe's verdict on the whole tensor."""

    rtol: float
    atol: float
    rule: str = "allclose"

    def __post_init__(self) -> None:
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or math.isinf(value):
                raise InvalidValueError(f"{name} must be a finite number from 0, got {value!r}.")
        if self.rule not in RULES:
            raise InvalidValueError(f"rule must be one of {', '.join(RULES)}, got {self.rule!r}.")

    def __str__(self) -> str:
        text = f"rtol={self.rtol:g}, atol={self.atol:g}"
        return text + (", msprobe's verdict" if self.rule == "msprobe" else "")


RULES = ("allclose", "msprobe")

# Per dtype, for the less precise side of a pair: about ten units in the last place of the
# format, so rounding noise between kernels agrees and a real change does not.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-9, 1e-12),
    "float32": (1e-4, 1e-6),
    "float16": (1e-2, 1e-3),
    "bfloat16": (5e-2, 1e-2),
}
_EXACT = (0.0, 0.0)  # integers and booleans


def tolerance_for(dtype_a: str, dtype_b: str, rtol: float | None = None, atol: float | None = None,
                  rule: str = "allclose") -> Tolerance:  # fmt: skip
    """The default tolerance for a pair of dtypes (the less precise one decides), with
    ``rtol``/``atol`` overriding it where given."""
    ranked = list(DEFAULT_TOLERANCES)
    known = [name for name in (_dtype_name(dtype_a), _dtype_name(dtype_b)) if name in DEFAULT_TOLERANCES]
    default = DEFAULT_TOLERANCES[max(known, key=ranked.index)] if known else _EXACT
    return Tolerance(default[0] if rtol is None else rtol, default[1] if atol is None else atol, rule)


def _dtype_name(dtype: str) -> str:
    name = str(dtype).lower().replace("mindspore.", "")
    return {"float": "float32", "half": "float16", "double": "float64", "bf16": "bfloat16", "fp16": "float16",
            "fp32": "float32"}.get(name, name)  # fmt: skip


# --------------------------------------------------------------------------- comparing two tensors


@dataclass(frozen=True)
class Metrics:
    """How two tensors differ. ``b`` is the reference: relative errors are ``|a - b| / |b|``
    (over the elements where ``b`` is not 0)."""

    shape_a: tuple[int, ...]
    shape_b: tuple[int, ...]
    dtype_a: str
    dtype_b: str
    tolerance: Tolerance
    count: int = 0
    within: int = 0  # elements within the tolerance (NaN against NaN, inf against the same inf count)
    max_abs: float = 0.0
    max_rel: float = 0.0
    cosine: float | None = None  # None where a side is all zeros or not finite
    first_index: tuple[int, ...] | None = None  # first element outside the tolerance, C order
    first_a: float | None = None
    first_b: float | None = None
    nonfinite: int = 0  # elements where one side is NaN/inf and the other is not the same

    @property
    def same_shape(self) -> bool:
        return self.shape_a == self.shape_b

    @property
    def share_within(self) -> float:
        return self.within / self.count if self.count else (1.0 if self.same_shape else 0.0)

    @property
    def agrees(self) -> bool:
        if not self.same_shape:
            return False
        if self.tolerance.rule == "msprobe":
            return _msprobe_pass(self)
        return self.within == self.count

    @property
    def summary(self) -> str:
        """``max abs 0.25, max rel 0.031, cosine 0.9998, 97.5% within rtol=0.0001, atol=1e-06``."""
        if not self.same_shape:
            return f"shape {list(self.shape_a)} against {list(self.shape_b)}"
        cosine = "n/a" if self.cosine is None else f"{self.cosine:.6g}"
        return (
            f"max abs {_g(self.max_abs)}, max rel {_g(self.max_rel)}, cosine {cosine}, "
            f"{100 * self.share_within:.4g}% within {self.tolerance}"
        )


def _msprobe_pass(metrics: Metrics) -> bool:
    """msprobe's "Accuracy Reached": not when cosine < 0.99 with max abs > 0.001, cosine < 0.9,
    max abs > 1, or a metric that is not finite."""
    cosine, max_abs = metrics.cosine, metrics.max_abs
    if metrics.nonfinite or not math.isfinite(max_abs):
        return False
    if cosine is None:  # a side all zeros: only equal values pass
        return max_abs == 0.0
    return not ((cosine < 0.99 and max_abs > 0.001) or cosine < 0.9 or max_abs > 1)


def _g(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.4g}"


def _flat(array: np.ndarray) -> np.ndarray:
    """A 1-D view of ``array`` in C order without reading it (a memory map stays one)."""
    if array.flags.c_contiguous:
        return array.reshape(-1)
    return np.ravel(array, order="C")  # Fortran-order files: read once, as np.load would


def _is_exact(dtype: np.dtype) -> bool:
    return dtype.kind in "biu"


def compare_arrays(a: np.ndarray, b: np.ndarray, tolerance: Tolerance, chunk: int = CHUNK) -> Metrics:
    """Compare ``a`` with the reference ``b`` a chunk at a time (``chunk`` elements): memory
    maps are read once and never whole.

    Floats are compared in their own precision (float64 data in float64, everything else in
    float32), with the expression of ``np.isclose``, so "within" is numpy's answer for the same
    arrays; integers and booleans are compared exactly.
    """
    base = Metrics(tuple(a.shape), tuple(b.shape), str(a.dtype), str(b.dtype), tolerance)
    if a.shape != b.shape:
        return base
    flat_a, flat_b = _flat(a), _flat(b)
    exact = _is_exact(a.dtype) and _is_exact(b.dtype)
    work = np.float64 if exact or np.float64 in (a.dtype, b.dtype) else np.float32
    count = int(flat_a.size)
    within = nonfinite = 0
    max_abs = max_rel = 0.0
    dot = norm_a = norm_b = 0.0
    first: int | None = None
    first_a = first_b = None
    for start in range(0, count, chunk):
        x_raw, y_raw = flat_a[start : start + chunk], flat_b[start : start + chunk]
        with np.errstate(over="ignore", invalid="ignore"):  # 3e38 - -3e38 is inf in float32: a difference
            x, y, ok, diff, special = _chunk(x_raw, y_raw, tolerance, exact, work)
        nonfinite += special
        # In the working precision, in BLAS's order: the cosine is the one approximate metric
        # (its last printed digits may follow the CPU); float64 sums here halved the throughput.
        dot += float(np.dot(x, y))
        norm_a += float(np.dot(x, x))
        norm_b += float(np.dot(y, y))
        within += int(np.count_nonzero(ok))
        if diff.size:
            max_abs = max(max_abs, float(diff.max()))
            magnitude = np.abs(y)
            with np.errstate(over="ignore"):
                rel = np.divide(diff, magnitude, out=np.zeros_like(diff), where=magnitude > 0)
            max_rel = max(max_rel, float(rel.max()))
        if first is None and within < start + x.size:  # every earlier chunk agreed: it is in this one
            offset = int(np.argmin(ok))
            first = start + offset
            first_a, first_b = _item(x_raw[offset]), _item(y_raw[offset])
    if nonfinite:
        max_abs = max_rel = math.inf
    cosine = None  # as msprobe's: not a number where a side is not finite, or all zeros against values
    if not nonfinite and norm_a > 0 and norm_b > 0 and math.isfinite(dot):
        cosine = max(-1.0, min(1.0, dot / math.sqrt(norm_a * norm_b)))
    elif not nonfinite and norm_a == 0 and norm_b == 0 and count:
        cosine = 1.0
    index = None if first is None else tuple(int(i) for i in np.unravel_index(first, a.shape))
    return Metrics(
        base.shape_a, base.shape_b, base.dtype_a, base.dtype_b, tolerance, count, within, max_abs, max_rel, cosine,
        index, first_a, first_b, nonfinite,
    )  # fmt: skip


def _chunk(x_raw: np.ndarray, y_raw: np.ndarray, tolerance: Tolerance, exact: bool, work: type) -> tuple:
    """One chunk of each side in the working type (non-finite values as 0, for the dot
    products), which elements are within the tolerance, the absolute differences, and how many
    elements are NaN or inf on one side only."""
    x = np.asarray(x_raw, dtype=work)
    y = np.asarray(y_raw, dtype=work)
    if exact:
        return x, y, np.asarray(x_raw == y_raw), np.abs(x - y), 0
    if np.isfinite(x).all() and np.isfinite(y).all():  # the common case: no masks at all
        diff = np.subtract(x, y)
        np.abs(diff, out=diff)
        return x, y, diff <= tolerance.atol + tolerance.rtol * np.abs(y), diff, 0
    finite = np.isfinite(x) & np.isfinite(y)
    both_nan = np.isnan(x) & np.isnan(y)
    same_inf = np.isinf(x) & (x == y)
    special = ~finite & ~both_nan & ~same_inf  # NaN against a number, inf against another value
    x, y = np.where(finite, x, 0).astype(work), np.where(finite, y, 0).astype(work)
    diff = np.abs(x - y)
    ok = (diff <= tolerance.atol + tolerance.rtol * np.abs(y)) | both_nan | same_inf
    return x, y, ok & ~special, diff, int(np.count_nonzero(special))


def _item(value) -> float:
    item = value.item() if hasattr(value, "item") else value
    return float(item) if isinstance(item, (int, float, bool, np.number)) else float("nan")


# --------------------------------------------------------------------------- what to compare


#: Each kind of run directory: in words, and what ``--rank``, ``--iteration`` and ``--graph`` choose in it.
RUN_KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "msdebug run": ("a run msdebug saved (one run)", ()),
    "msdebug runs by rank": ("runs msdebug saved by rank (rank_<R>/)", ("rank",)),
    "msprobe dump": ("an msprobe dump", ("rank", "iteration")),
    "data dump": ("a MindSpore data dump", ("rank", "iteration", "graph")),
}
#: What each choice chooses, and where.
CHOICES = {
    "rank": "the rank of a data dump, an msprobe dump or runs saved inside %%msrun (rank_<R>/)",
    "iteration": "the iteration of a data dump or the step of an msprobe dump",
    "graph": "the graph of a data dump",
}


def run_kind(path: str | os.PathLike) -> str:
    """Which of :data:`RUN_KINDS` the directory ``path`` holds."""
    root = Path(path)
    if not root.exists():
        raise DumpError(f"{root}: no such directory.")
    if (root / RUN_FILE).exists():
        return "msdebug run"
    if saved_ranks(root):
        return "msdebug runs by rank"
    if find_msprobe_dump(root) is not None:
        return "msprobe dump"
    if dump_place(root) is not None:
        return "data dump"
    raise DumpError(
        f"{root}: neither a run msdebug saved ({RUN_FILE}, or rank_<R>/{RUN_FILE}), a MindSpore data dump "
        "(rank_N/...) nor an msprobe dump (dump.json)."
    )


def read_any_run(path: str | os.PathLike, rank: int | None = None, iteration: int | None = None,
                 graph: int | None = None, *, job_rank: int | None = None) -> Run:  # fmt: skip
    """A saved run (or one rank of runs saved by rank), a MindSpore data dump or an msprobe
    dump, by what the directory holds. ``rank``, ``iteration`` and ``graph`` choose in it where
    its kind has them (:data:`RUN_KINDS`); unless ``rank`` says, ``job_rank`` (this process's
    rank in an msrun job) is the rank read where there is one. The run's notes say what was
    taken where there was a choice.

    Raises
    ------
    InvalidValueError
        For a choice the directory's kind does not have, or a value it does not hold.
    """
    root = Path(path)
    kind = run_kind(root)
    words, takes = RUN_KINDS[kind]
    for option, value in (("rank", rank), ("iteration", iteration), ("graph", graph)):
        if value is not None and option not in takes:
            raise InvalidValueError(
                f"--{option} {value}: {root} is {words}, with no {option} to choose; --{option} chooses {CHOICES[option]}."
            )
    if kind == "msdebug runs by rank":
        return read_ranked_run(root, rank, job_rank)
    if kind == "msprobe dump":
        found, notes = choose_msprobe_dump(root, rank, iteration, job_rank)
        run = read_msprobe_dump(found)
        run.notes[:0] = notes
        return run
    if kind == "data dump":
        return run_from_dump(root, rank, iteration, graph, job_rank)
    run = read_run(root)
    number = root.name.removeprefix("rank_")
    if job_rank is not None and not (number != root.name and number.isascii() and number.isdigit()):
        run.notes.insert(0, f"every rank of the msrun job compares with {root}, one run saved outside %%msrun")
    return run


# --------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class StatsDiff:
    """Two tensors compared by their statistics (Max, Min, Mean, Norm), where a side kept no
    values: an msprobe statistics dump. Max, Min and Norm decide; a mean may cancel to noise."""

    a: dict
    b: dict
    tolerance: Tolerance

    @property
    def agrees(self) -> bool:
        for key in ("Max", "Min", "Norm"):
            x, y = self.a.get(key), self.b.get(key)
            if x is None or y is None:
                continue
            if not (math.isfinite(x) and math.isfinite(y)):
                if not (x == y or (math.isnan(x) and math.isnan(y))):
                    return False
                continue
            if self.tolerance.rule == "msprobe":  # its statistics rule: half the larger value
                if abs(x - y) / (max(abs(x), abs(y)) + 1e-10) > 0.5:
                    return False
            elif abs(x - y) > self.tolerance.atol + self.tolerance.rtol * abs(y):
                return False
        return True

    @property
    def summary(self) -> str:
        keys = [k for k in STAT_KEYS if k in self.a and k in self.b]
        return "statistics " + ", ".join(f"{k.lower()} {_g4(self.a[k])} / {_g4(self.b[k])}" for k in keys)


def _g4(value: float) -> str:
    return f"{value:.6g}"


@dataclass(frozen=True)
class TensorDiff:
    """One pair of tensors of an aligned op."""

    slot: str
    metrics: Metrics | None  # None where a side has no values to compare (statistics only, unreadable)
    note: str = ""
    stats: StatsDiff | None = None  # where a side kept statistics only
    # False for an output after the first that no later op of the run used (BatchNorm's saved
    # mean on CPU is memory never written): shown, but it names no op as where the runs part.
    decides: bool = True

    @property
    def agrees(self) -> bool:
        if self.metrics is not None:
            return self.metrics.agrees
        return self.stats is None or self.stats.agrees

    @property
    def summary(self) -> str:
        if self.metrics is not None:
            return self.metrics.summary
        return self.stats.summary if self.stats is not None else self.note


@dataclass(frozen=True)
class OpDiff:
    """An aligned pair of ops and how their tensors compare."""

    a: RunOp
    b: RunOp
    tensors: tuple[TensorDiff, ...]

    @property
    def first_difference(self) -> TensorDiff | None:
        return next((t for t in self.tensors if t.decides and not t.agrees), None)

    @property
    def max_rel(self) -> float:
        """The largest relative error of the op's outputs (what it passes on)."""
        values = [t.metrics.max_rel for t in self.tensors
                  if t.metrics is not None and t.decides and t.slot.startswith("output")]  # fmt: skip
        return max(values, default=0.0)


@dataclass(repr=False)
class DiffReport(Rendered):
    """Two runs compared: the first op where they differ, and how the difference spread."""

    _views = rendered_by(lambda v: (v.diff.html_report, v.diff.text_report))

    a: Run
    b: Run
    tolerance_text: str
    first: OpDiff | None  # the first aligned op with a tensor outside the tolerance
    entered_by: list[RunOp]  # ops only one side ran, just before the first difference (a likely cause)
    spread: list[tuple[int, str, float]]  # (index in a, op name, max rel error of its outputs), in order
    compared_ops: int
    compared_tensors: int
    alignment: Alignment
    notes: list[str] = field(default_factory=list)
    ops: list[OpDiff] = field(default_factory=list)  # every aligned op compared, for the walker
    first_stats: dict = field(default_factory=dict)  # ("a" or "b", slot) -> statistics, for the first op
    restored: str = ""  # what was put back before the second run ("restored 4 Parameters ...")
    restored_nothing: bool = False  # and it was nothing: the second run started where the first ended

    @property
    def differs(self) -> bool:
        return self.first is not None

    @property
    def nothing_compared(self) -> str:
        """Why no tensor pair was compared ('' when some were): "agree" is never said of nothing."""
        if self.compared_tensors:
            return ""
        if not self.a.ops and not self.b.ops:
            return "neither run ran an op"
        idle = [f"{run.label} ran no op" for run in (self.a, self.b) if not run.ops]
        if idle:
            return idle[0]
        if not self.compared_ops:
            return (
                f"no op of {self.a.label} ({len(self.a.ops)} ops) aligned with one of {self.b.label} "
                f"({len(self.b.ops)} ops)"
            )
        return f"{self.compared_ops} ops aligned, but no tensor of theirs could be compared"

    @property
    def partial(self) -> list[str]:
        """Where a side's recording stopped at msdebug's cap: the verdict covers what came before."""
        return [f"{run.label}: {run.stopped}" for run in (self.a, self.b) if run.stopped]

    @property
    def culprit(self) -> tuple[RunOp, str] | None:
        """The op where the runs part ways, and how: the first aligned op that differs, unless
        an op only one run has sits just before it and the aligned op's inputs do not agree
        (or were not recorded): then that op."""
        first = self.first
        if first is None:
            return None
        inputs = [t for t in first.tensors if t.slot.startswith("input") and (t.metrics or t.stats)]
        made_here = bool(inputs) and all(t.agrees for t in inputs)  # same inputs, different outputs
        own = [op for op in self.entered_by if op.index < len(self.a.ops) and self.a.ops[op.index] is op]
        other = [op for op in self.entered_by if op not in own]
        if not made_here and (own or other):
            if own:
                there = f"; the reference runs {', '.join(op.op_type for op in other)} there" if other else ""
                return own[-1], f"only this run has it{there}"
            return other[-1], "only the reference has it: this run skips it"
        return first.a, ""

    @property
    def differing_inputs(self) -> list[str]:
        """Where the first differing op's differing inputs come from, when no op of the run
        made them (``x``, ``parameter fc.weight``, ``gradient of fc.weight``): the difference
        was there before the cell's first op that the runs record."""
        first = self.first
        if first is None or self.culprit is None or self.culprit[0] is not first.a:
            return []
        refs = {ref.slot: ref for ref in first.a.inputs}
        found = []
        for tensor in first.tensors:
            ref = refs.get(tensor.slot)
            if ref is not None and ref.origin and not tensor.agrees and ref.origin not in found:
                found.append(ref.origin)
        return found

    @property
    def unaligned_a(self) -> list[RunOp]:
        return [self.a.ops[i] for i in self.alignment.only_a]

    @property
    def unaligned_b(self) -> list[RunOp]:
        return [self.b.ops[j] for j in self.alignment.only_b]


def compare_refs(a: TensorRef, b: TensorRef, tolerance: Callable[[str, str], Tolerance]) -> TensorDiff:
    """One pair of tensors, element by element; by statistics where a side kept only those. A
    file that cannot be read is said, not raised."""
    if (a.path is None and a.values is None) or (b.path is None and b.values is None):
        return _compare_stats(a, b, tolerance)
    try:
        array_a = open_ref(a)
        array_b = open_ref(b)
    except (DumpError, DumpFormatError) as error:
        return TensorDiff(a.slot, None, f"not compared: {error}")
    # The dtype a run recorded wins over the file's: msprobe saves bfloat16 as float32.
    dtypes = (a.dtype or str(array_a.dtype), b.dtype or str(array_b.dtype))
    return TensorDiff(a.slot, compare_arrays(array_a, array_b, tolerance(*dtypes)))


def _compare_stats(a: TensorRef, b: TensorRef, tolerance: Callable[[str, str], Tolerance]) -> TensorDiff:
    sides = []
    for ref in (a, b):
        if ref.stats:
            sides.append(ref.stats)
            continue
        try:
            sides.append(array_stats(open_ref(ref)))
        except (DumpError, DumpFormatError) as error:
            return TensorDiff(a.slot, None, f"not compared: {error}")
    return TensorDiff(
        a.slot, None, "compared by statistics", StatsDiff(sides[0], sides[1], tolerance(a.dtype, b.dtype))
    )


def array_stats(array: np.ndarray, chunk: int = CHUNK) -> dict:
    """Max, Min, Mean and Norm (L2) as msprobe records them, a chunk at a time.

    The mean and the norm are exact sums (``exact_sum``): the same digits on every CPU, where a
    vectorised sum's last digits follow the vector unit's order."""
    from .datadump import exact_sum

    flat = _flat(array)
    if not flat.size:
        return {}
    high, low = -math.inf, math.inf
    for start in range(0, flat.size, chunk):
        part = np.asarray(flat[start : start + chunk], dtype=np.float64)
        high, low = max(high, float(part.max())), min(low, float(part.min()))
    parts = [slice(start, start + chunk) for start in range(0, flat.size, chunk)]
    total = exact_sum(np.asarray(flat[s], dtype=np.float64) for s in parts)
    squares = exact_sum(np.square(np.asarray(flat[s], dtype=np.float64)) for s in parts)
    # + 0.0: -0.0 and 0.0 are equal, and which one max() keeps follows the order
    return {"Max": high + 0.0, "Min": low + 0.0, "Mean": total / flat.size, "Norm": math.sqrt(squares)}


def diff_runs(
    a: Run,
    b: Run,
    rtol: float | None = None,
    atol: float | None = None,
    rule: str = "allclose",
    walk_all: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> DiffReport:
    """Compare run ``a`` with the reference ``b``, op by op in ``a``'s execution order.

    ``walk_all`` keeps comparing after the first difference, for the spread chart and the
    walker; without it the walk stops at the first difference.
    """
    Tolerance(rtol if rtol is not None else 0.0, atol if atol is not None else 0.0, rule)  # validates early

    def tolerance(dtype_a: str, dtype_b: str) -> Tolerance:
        return tolerance_for(dtype_a, dtype_b, rtol, atol, rule)

    alignment = align(a.ops, b.ops)
    used = (_used_files(a), _used_files(b))
    first: OpDiff | None = None
    spread: list[tuple[int, str, float]] = []
    compared = tensors = 0
    ops: list[OpDiff] = []
    for done, (i, j) in enumerate(alignment.pairs):
        op_a, op_b = a.ops[i], b.ops[j]
        diffs = []
        floor = _least_precise(op_a, op_b)
        for slot_a, slot_b in _pair_slots(op_a, op_b):
            if slot_a is None or slot_b is None:
                present = slot_a or slot_b
                side = "the first run" if slot_a is not None else "the reference"
                diffs.append(TensorDiff(present.slot, None, f"only {side} has {present.slot}"))
                continue
            compared_pair = compare_refs(slot_a, slot_b, _with_floor(tolerance, floor))
            if not _decides(slot_a, slot_b, used):
                compared_pair = replace(compared_pair, decides=False)
            diffs.append(compared_pair)
            tensors += 1
        op = OpDiff(op_a, op_b, tuple(diffs))
        compared += 1
        if len(ops) < _MAX_SPREAD:
            ops.append(op)
            spread.append((op_a.index, op_a.name, op.max_rel))
        if first is None and op.first_difference is not None:
            first = op
            if not walk_all:
                break
        if progress is not None:
            progress(done + 1, len(alignment.pairs))
    entered: list[RunOp] = []
    if first is not None:
        entered = _unaligned_before(a, b, alignment, first)
    notes = [*a.notes, *b.notes]
    if alignment.only_a or alignment.only_b:
        notes.append(
            f"{len(alignment.only_a)} ops of {a.label} and {len(alignment.only_b)} of {b.label} have no partner "
            "(renamed, fused or split between the runs); they are listed, not compared"
        )
    if alignment.by_type:
        notes.append(f"{alignment.by_type} op pairs were matched by type and order only: their scopes differ")
    sample = tolerance_for("float32", "float32", rtol, atol, rule)
    return DiffReport(a, b, _tolerance_text(rtol, atol, rule, sample), first, entered, spread, compared, tensors,
                      alignment, notes, ops, _first_stats(first))  # fmt: skip


def _used_files(run: Run) -> set | None:
    """The files an op of ``run`` read as an input, where the run says (an msdebug run refers an
    input an earlier op made to that op's output file); None where it does not (dumps)."""
    if run.kind != "msdebug run":
        return None
    return {ref.path for op in run.ops for ref in op.inputs if ref.path is not None}


def _decides(a: TensorRef, b: TensorRef, used: tuple[set | None, set | None]) -> bool:
    """An op's first output always decides; a later one unless no later op used it, on each
    side that says (BatchNorm's saved mean and variance, LayerNorm's mean and rstd in a forward
    pass: outputs for the backward pass, or memory the CPU kernel never writes)."""
    if a.io != "output" or a.slot == "output 0":
        return True
    known = [(ref, files) for ref, files in ((a, used[0]), (b, used[1])) if files is not None]
    return not known or any(ref.path in files for ref, files in known)


_FLOAT_RANK = ("float64", "float32", "float16", "bfloat16")  # most precise first


def _least_precise(a: RunOp, b: RunOp) -> str:
    """The least precise float type among an aligned pair's tensors: a float32 output computed
    from float16 inputs (LayerNorm's mean in a float16 network) carries float16's error."""
    names = {_dtype_name(ref.dtype) for op in (a, b) for ref in op.tensors}
    return max((n for n in names if n in _FLOAT_RANK), key=_FLOAT_RANK.index, default="")


def _with_floor(tolerance: Callable[[str, str], Tolerance], floor: str) -> Callable[[str, str], Tolerance]:
    return lambda x, y: tolerance(_floored(x, floor), _floored(y, floor))


def _floored(dtype: str, floor: str) -> str:
    """``dtype``, or ``floor`` where ``dtype`` is a more precise float type (integers stay exact)."""
    name = _dtype_name(dtype)
    if name in _FLOAT_RANK and floor and _FLOAT_RANK.index(floor) > _FLOAT_RANK.index(name):
        return floor
    return dtype


def _first_stats(first: OpDiff | None) -> dict:
    """Max, Min, Mean and Norm of each tensor of the first differing op, both sides."""
    found: dict = {}
    if first is None:
        return found
    for side, op in (("a", first.a), ("b", first.b)):
        for ref in op.tensors[:8]:
            if ref.stats or ref.path is None:
                continue
            try:
                found[(side, ref.slot)] = array_stats(open_ref(ref))
            except (DumpError, DumpFormatError):
                pass
    return found


def _tolerance_text(rtol: float | None, atol: float | None, rule: str, sample: Tolerance) -> str:
    if rtol is None and atol is None:
        text = "per dtype: " + ", ".join(f"{name} rtol={r:g} atol={t:g}" for name, (r, t) in DEFAULT_TOLERANCES.items())
        text += ", integers exact"
    else:
        text = str(Tolerance(sample.rtol, sample.atol))
    return text + ("; verdict by msprobe's rule" if rule == "msprobe" else "")


def _pair_slots(a: RunOp, b: RunOp) -> Iterable[tuple[TensorRef | None, TensorRef | None]]:
    """Inputs before outputs, slot by slot; a slot only one side recorded pairs with None."""
    for io in ("inputs", "outputs"):
        left, right = getattr(a, io), getattr(b, io)
        by_slot = {ref.slot: ref for ref in right}
        for ref in left:
            yield ref, by_slot.pop(ref.slot, None)
        for ref in by_slot.values():
            yield None, ref


def _unaligned_before(a: Run, b: Run, alignment: Alignment, first: OpDiff) -> list[RunOp]:
    """Ops only one side ran between the last aligned op before ``first`` and ``first``: where
    an op was added or removed, the difference enters there."""
    index = alignment.pairs.index((first.a.index, first.b.index))
    previous = alignment.pairs[index - 1] if index else (-1, -1)
    only_a = [a.ops[i] for i in alignment.only_a if previous[0] < i < first.a.index]
    only_b = [b.ops[j] for j in alignment.only_b if previous[1] < j < first.b.index]
    return only_a + only_b
