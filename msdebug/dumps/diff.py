"""Where two runs part ways: runs as op lists, their alignment, and a streaming tensor comparison.

Pure: numpy only. A *run* is the ops one execution made, in execution order, each with the
``.npy`` files of its inputs and outputs. Three kinds of directory hold one:

* a run msdebug saved (``run.json`` beside its tensors, see :func:`read_run`);
* a MindSpore data dump (GRAPH mode, any rank, read by :mod:`.datadump`);
* an msprobe dump (``dump.json`` and its ``.npy`` tensors).

:func:`diff_runs` aligns the ops of two runs (scope, type and order; then type and order;
what is left is named, never dropped) and walks them in the first run's execution order,
inputs before outputs, comparing each pair of tensors a chunk at a time over memory maps:
two dumps larger than memory are compared in bounded memory. The first pair outside the
tolerance names the op where the runs part ways.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DumpError, DumpFormatError, InvalidValueError
from ..files import read_regular
from .rendered import Rendered, rendered_by

__all__ = [
    "DiffReport",
    "Metrics",
    "OpDiff",
    "Run",
    "RunOp",
    "TensorRef",
    "Tolerance",
    "align",
    "compare_arrays",
    "diff_runs",
    "find_msprobe_dump",
    "open_ref",
    "read_any_run",
    "read_msprobe_dump",
    "read_run",
    "run_from_dump",
    "run_from_new_iterations",
    "tolerance_for",
]

RUN_FILE = "run.json"
RUN_FORMAT = "msdebug-run"
RUN_VERSION = 1
# Elements per chunk of a comparison: 1 Mi elements is 8 MiB per float64 temporary.
CHUNK = 1 << 20
_MAX_RUN_JSON = 256 << 20
_MAX_SPREAD = 10_000
_OP_NUMBER = re.compile(r"-op\d+$", re.ASCII)


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


# --------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class TensorRef:
    """One input or output of an op: where its values are, and what they are."""

    slot: str  # "input 0", "output 1"
    path: Path | None  # the .npy file; None where the run kept statistics only
    shape: tuple[int, ...] = ()
    dtype: str = ""
    stats: dict | None = None  # max/min/mean/norm, where a run recorded statistics only
    values: np.ndarray | None = field(default=None, compare=False, repr=False)  # kept in memory, not in a file

    @property
    def io(self) -> str:
        return self.slot.split()[0]


@dataclass
class RunOp:
    """One op of a run, in execution order."""

    index: int
    name: str  # as the run spells it: Default/fc1-Dense/MatMul-op0
    op_type: str
    scope: str  # the name without its type and number: Default/fc1-Dense
    inputs: list[TensorRef] = field(default_factory=list)
    outputs: list[TensorRef] = field(default_factory=list)
    source: str = ""  # path:line
    code: str = ""  # the source line
    cell: str = ""  # cell [3], line 4

    @property
    def tensors(self) -> list[TensorRef]:
        """Inputs before outputs: the order a value flows through the op."""
        return self.inputs + self.outputs

    @property
    def place(self) -> str:
        return self.cell or self.source


@dataclass
class Run:
    """The ops of one execution, and what made it."""

    root: Path
    kind: str  # "msdebug run", "data dump", "msprobe dump"
    label: str
    ops: list[RunOp]
    meta: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def tensor_count(self) -> int:
        return sum(len(op.tensors) for op in self.ops)

    @property
    def stopped(self) -> str:
        """Why recording stopped before the cell ended ('' when it did not): msdebug's cap."""
        value = self.meta.get("stopped")
        return _text(value, 400) if isinstance(value, str) else ""


def scope_of(name: str) -> tuple[str, str]:
    """``("Default/fc1-Dense", "MatMul")`` for ``Default/fc1-Dense/MatMul-op12``."""
    head, _, last = name.rpartition("/")
    return head, _OP_NUMBER.sub("", last)


# --------------------------------------------------------------------------- reading runs


def _untrusted_name(name: object, where: str) -> str:
    """A file name from a run's own index: one plain component, never a path out of the run."""
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name in (".", "..") or "\0" in name:
        raise DumpFormatError(f"{where}: {name!r} is not a plain file name.")
    return name


def _shape(value: object, where: str) -> tuple[int, ...]:
    if (
        not isinstance(value, list)
        or len(value) > 32
        or not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 1 << 62 for n in value)
    ):
        raise DumpFormatError(f"{where}: shape {str(value)[:80]} is not a list of sizes.")
    return tuple(value)


def _text(value: object, limit: int = 4096) -> str:
    return value[:limit] if isinstance(value, str) else ""


def read_run(path: str | os.PathLike) -> Run:
    """A run msdebug saved: ``run.json`` and its tensors in the same directory."""
    root = Path(path)
    index = root / RUN_FILE
    text = read_regular(index, _MAX_RUN_JSON, DumpError, what=RUN_FILE)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise DumpFormatError(f"{index}: not JSON ({str(error)[:120]}).") from None
    if not isinstance(data, dict) or data.get("format") != RUN_FORMAT:
        raise DumpFormatError(f'{index}: not a run msdebug saved (no "format": "{RUN_FORMAT}").')
    if data.get("version") != RUN_VERSION:
        raise DumpFormatError(
            f"{index}: version {data.get('version')!r} of the run format; this msdebug reads version {RUN_VERSION}."
        )
    entries = data.get("ops")
    if not isinstance(entries, list):
        raise DumpFormatError(f'{index}: "ops" is not a list.')
    ops = []
    for number, entry in enumerate(entries):
        where = f"{index}, op {number}"
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("name"), str)
            or not isinstance(entry.get("type"), str)
        ):
            raise DumpFormatError(f'{where}: an op needs a "name" and a "type".')
        refs = {}
        for io in ("inputs", "outputs"):
            items = entry.get(io, [])
            if not isinstance(items, list):
                raise DumpFormatError(f'{where}: "{io}" is not a list.')
            refs[io] = [_tensor_ref(root, item, f"{where} {io[:-1]} {slot}", io[:-1], slot)
                        for slot, item in enumerate(items)]  # fmt: skip
        name = entry["name"][:4096]
        ops.append(
            RunOp(len(ops), name, entry["type"][:256], _text(entry.get("scope")) or scope_of(name)[0], refs["inputs"],
                  refs["outputs"], _text(entry.get("source")), _text(entry.get("code")), _text(entry.get("cell")))
        )  # fmt: skip
    meta = {key: value for key, value in data.items() if key not in ("ops", "format", "version", "notes")}
    notes = [_text(note, 400) for note in data.get("notes", [])[:20]] if isinstance(data.get("notes"), list) else []
    return Run(root, "msdebug run", _text(data.get("label"), 200) or root.name, ops, meta, [n for n in notes if n])


def _tensor_ref(root: Path, item: object, where: str, io: str, slot: int) -> TensorRef:
    if not isinstance(item, dict):
        raise DumpFormatError(f"{where}: not an object.")
    file = item.get("file")
    path = root / _untrusted_name(file, where) if file is not None else None
    return TensorRef(f"{io} {slot}", path, _shape(item.get("shape", []), where), _text(item.get("dtype"), 32))


def run_from_dump(path: str | os.PathLike, rank: int | None = None, iteration: int | None = None,
                  graph_id: int | None = None) -> Run:  # fmt: skip
    """One iteration of a MindSpore data dump as a run (the first one, unless named)."""
    from .datadump import read_data_dump

    dump = read_data_dump(path)
    where = dump.rank(rank)
    it = where.iteration(iteration, graph_id)
    notes = list(it.notes)
    ops: list[RunOp] = []
    _add_ops(ops, it, _ir_places(where.ir_path(it.graph_id), notes))
    if not it.order_known:
        notes.append("the dump has no execution order for this graph: ops are in the order of their files' timestamps")
    label = f"{Path(path).name} (rank {where.rank}, graph {it.graph_id}, iteration {it.iteration})"
    meta = {"rank": where.rank, "graph": it.graph_id, "iteration": it.iteration, "net": it.net,
            "ir": str(where.ir_path(it.graph_id) or "")}  # fmt: skip
    return Run(Path(path), "data dump", label, ops, meta, notes)


def run_from_new_iterations(path: str | os.PathLike, skip: set[str], label: str) -> Run:
    """The iterations of a data dump that are not in ``skip`` (what one cell ran), as one run:
    rank 0's iterations in the order they ran, each graph's ops in execution order."""
    from .datadump import read_data_dump

    dump = read_data_dump(path, skip=skip)
    notes: list[str] = []
    ops: list[RunOp] = []
    if not dump.ranks or not dump.rank().iterations:
        notes.append("the data dump has no new iteration: the cell ran no graph")
        return Run(Path(path), "data dump", label, ops, {}, notes)
    where = dump.rank()
    places: dict[int, dict[str, tuple[str, str, str]]] = {}
    for it in sorted(where.iterations, key=lambda it: it.first_timestamp):
        notes.extend(it.notes)
        if it.graph_id not in places:
            places[it.graph_id] = _ir_places(where.ir_path(it.graph_id), notes)
        _add_ops(ops, it, places[it.graph_id])
    meta = {"iterations": [[it.graph_id, it.iteration] for it in where.iterations], "rank": where.rank}
    return Run(Path(path), "data dump", label, ops, meta, notes)


def _add_ops(ops: list[RunOp], iteration, places: dict[str, tuple[str, str, str]]) -> None:
    """The kernels of one dumped iteration, appended to ``ops`` in execution order, with their
    source lines from ``places``."""
    for op in iteration.ops:
        refs = [[TensorRef(t.label, t.path, (), t.dtype) for t in tensors] for tensors in (op.inputs, op.outputs)]
        ops.append(RunOp(len(ops), op.name, op.op_type, scope_of(op.name)[0], *refs,
                         *places.get(op.name, ("", "", ""))))  # fmt: skip


def _ir_places(ir_path: Path | None, notes: list[str]) -> dict[str, tuple[str, str, str]]:
    """``{full name: (source, code, cell)}`` from the graph's IR file, which holds each
    kernel's source lines; empty where the dump has none."""
    if ir_path is None:
        return {}
    from .ir import read_ir
    from .nan import source_text

    places = {}
    try:
        nodes = read_ir(ir_path).nodes()
    except (DumpError, DumpFormatError) as error:
        notes.append(f"source lines unknown: {error}")
        return {}
    for node in nodes:
        location = node.source
        if location is not None and node.scope and node.scope not in places:
            places[node.scope] = source_text(location.path, location.line, location.code)
    return places


def read_any_run(path: str | os.PathLike, rank: int | None = None) -> Run:
    """A saved run, a MindSpore data dump or an msprobe dump, by what the directory holds."""
    from .datadump import find_data_dump

    root = Path(path)
    if not root.exists():
        raise DumpError(f"{root}: no such directory.")
    if (root / RUN_FILE).exists():
        return read_run(root)
    found = find_msprobe_dump(root, rank)
    if found is not None:
        return read_msprobe_dump(found)
    dump = find_data_dump(root)
    if dump is not None:
        return run_from_dump(dump, rank)
    raise DumpError(
        f"{root}: neither a run msdebug saved ({RUN_FILE}), a MindSpore data dump (rank_N/...) nor an msprobe "
        "dump (dump.json)."
    )


# --------------------------------------------------------------------------- alignment

_TYPE_SUFFIXES = ("ext", "v2", "v3")


def normal_type(op_type: str) -> str:
    """``matmul`` for ``MatMul``, ``MatMulExt``, ``matmul`` and ``__matmul__``: types as the
    modes and tools spell them differently."""
    name = op_type.strip("_").replace("_", "").lower()
    for suffix in _TYPE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name


def normal_scope(scope: str) -> str:
    """The Cell path of a scope without what GRAPH mode adds: ``h * 2`` runs as
    ``Expand/_Muls/Mul-op0`` in a graph and as ``Default/Mul-op0`` under the hooks."""
    parts = scope.split("/")
    kept = []
    skip = False
    for part in parts:
        if part == "Expand":
            skip = True
            continue
        if skip and part.startswith("_"):
            skip = False
            continue
        skip = False
        kept.append(part)
    return "/".join(kept) or "Default"


def _keys(ops: Sequence[RunOp], with_scope: bool) -> list[tuple]:
    seen: Counter = Counter()
    keys = []
    for op in ops:
        base = (normal_scope(op.scope), normal_type(op.op_type)) if with_scope else (normal_type(op.op_type),)
        keys.append((*base, seen[base]))
        seen[base] += 1
    return keys


@dataclass
class Alignment:
    """Pairs of op indices (a, b) in execution order; ops of either side that have no partner."""

    pairs: list[tuple[int, int]]
    only_a: list[int]
    only_b: list[int]
    by_type: int = 0  # pairs found by type and order only (their scopes differ)


_EXACT_PAIRING = 250_000  # gaps up to this many (a, b) cells are paired by difflib: the longest match
_WINDOW = 48  # beyond: the ops both sides are paired over, exactly, where the walk meets a mismatch
_BACK = 16  # and how far back it may take pairs just made


def _pair_by_type(types_a: Sequence[str], types_b: Sequence[str]) -> list[tuple[int, int]]:
    """Pairs of positions with the same type, in order, on both sides.

    Small gaps get difflib's longest matching blocks. difflib is quadratic where types repeat
    (8,000 ops took 88 s), and two runs whose scopes are spelled differently fall here whole;
    so a larger gap is walked once: equal types pair, and at a mismatch a window around it
    (from ``_BACK`` ops before it to ``_WINDOW`` ops on) is paired exactly, as many pairs as the
    window holds (a longest common subsequence), and the walk goes on from its middle. An op
    only one side has (an extra Cast, an op one tool does not record) is stepped over; a choice
    made in the last ``_BACK`` ops of a run of one type is taken back where it ends. Linear in
    the ops for runs that mostly agree, and for runs that share nothing.
    """
    if len(types_a) * len(types_b) <= _EXACT_PAIRING:
        matcher = difflib.SequenceMatcher(None, types_a, types_b, autojunk=False)
        return [(block.a + k, block.b + k) for block in matcher.get_matching_blocks() for k in range(block.size)]
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < len(types_a) and j < len(types_b):
        if types_a[i] == types_b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
            continue
        while pairs and pairs[-1][0] >= i - _BACK and pairs[-1][1] >= j - _BACK:  # the pairs just made
            pairs.pop()
        start_a, start_b = max(i - _BACK, 0), max(j - _BACK, 0)
        if pairs:
            start_a, start_b = max(start_a, pairs[-1][0] + 1), max(start_b, pairs[-1][1] + 1)
        surplus_a = len(types_a) - start_a > len(types_b) - start_b  # where a tie skips: the side with ops more
        local = _longest_common(types_a[start_a : i + _WINDOW], types_b[start_b : j + _WINDOW], surplus_a)
        ahead = [(start_a + x, start_b + y) for x, y in local]
        kept = [(x, y) for x, y in ahead if x < i + _WINDOW // 2 and y < j + _WINDOW // 2]
        if not any(x >= i or y >= j for x, y in kept):  # the first step forward, if it lies further
            kept += [(x, y) for x, y in ahead if x >= i or y >= j][:1]
        pairs.extend(kept)
        if not local:  # nothing in the window pairs: the first half of it on both sides stays alone
            i, j = i + _WINDOW // 2, j + _WINDOW // 2
            continue
        last = kept[-1] if kept else (start_a - 1, start_b - 1)
        moved = max(i, last[0] + 1), max(j, last[1] + 1)
        i, j = moved if moved != (i, j) else (i + 1, j + 1)  # nothing in the window pairs with these two
    return pairs


def _longest_common(a: Sequence[str], b: Sequence[str], skip_a: bool) -> list[tuple[int, int]]:
    """The pairs of a longest common subsequence of ``a`` and ``b`` (small: a window); where
    two are as long, the one that skips on ``a`` first when ``skip_a``, else on ``b``."""
    rows = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for x in range(len(a) - 1, -1, -1):
        row, below = rows[x], rows[x + 1]
        for y in range(len(b) - 1, -1, -1):
            row[y] = below[y + 1] + 1 if a[x] == b[y] else max(below[y], row[y + 1])
    pairs, x, y = [], 0, 0
    while x < len(a) and y < len(b):
        if a[x] == b[y]:
            pairs.append((x, y))
            x, y = x + 1, y + 1
        elif rows[x + 1][y] > rows[x][y + 1] or (skip_a and rows[x + 1][y] == rows[x][y + 1]):
            x += 1
        else:
            y += 1
    return pairs


def align(a: Sequence[RunOp], b: Sequence[RunOp]) -> Alignment:
    """Pair the ops of two runs: by scope, type and occurrence first; between those anchors, by
    type and order; what is left on either side is listed, never dropped."""
    matcher = difflib.SequenceMatcher(None, _keys(a, True), _keys(b, True), autojunk=False)
    anchors = [(block.a + k, block.b + k) for block in matcher.get_matching_blocks() for k in range(block.size)]
    pairs: list[tuple[int, int]] = []
    by_type = 0
    previous = (-1, -1)
    for anchor in [*anchors, (len(a), len(b))]:
        gap_a, gap_b = range(previous[0] + 1, anchor[0]), range(previous[1] + 1, anchor[1])
        if gap_a and gap_b:
            types_a = [normal_type(a[i].op_type) for i in gap_a]
            types_b = [normal_type(b[i].op_type) for i in gap_b]
            for i, j in _pair_by_type(types_a, types_b):
                pairs.append((gap_a[i], gap_b[j]))
                by_type += 1
        if anchor != (len(a), len(b)):
            pairs.append(anchor)
        previous = anchor
    pairs.sort()
    paired_a, paired_b = {i for i, _ in pairs}, {j for _, j in pairs}
    return Alignment(
        pairs,
        [i for i in range(len(a)) if i not in paired_a],
        [j for j in range(len(b)) if j not in paired_b],
        by_type,
    )


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


STAT_KEYS = ("Max", "Min", "Mean", "Norm")


def _g4(value: float) -> str:
    return f"{value:.6g}"


@dataclass(frozen=True)
class TensorDiff:
    """One pair of tensors of an aligned op."""

    slot: str
    metrics: Metrics | None  # None where a side has no values to compare (statistics only, unreadable)
    note: str = ""
    stats: StatsDiff | None = None  # where a side kept statistics only

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
        return next((t for t in self.tensors if not t.agrees), None)

    @property
    def max_rel(self) -> float:
        """The largest relative error of the op's outputs (what it passes on)."""
        values = [t.metrics.max_rel for t in self.tensors if t.metrics is not None and t.slot.startswith("output")]
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
    def unaligned_a(self) -> list[RunOp]:
        return [self.a.ops[i] for i in self.alignment.only_a]

    @property
    def unaligned_b(self) -> list[RunOp]:
        return [self.b.ops[j] for j in self.alignment.only_b]


def open_ref(ref: TensorRef) -> np.ndarray:
    """The values of one input or output: the array a recorder kept, or the file as a memory
    map (read through the opener)."""
    from .datadump import open_tensor

    if ref.values is not None:
        return ref.values
    if ref.path is None:
        raise DumpError(f"{ref.slot}: this run kept statistics only")
    return open_tensor(ref.path)


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
    first: OpDiff | None = None
    spread: list[tuple[int, str, float]] = []
    compared = tensors = 0
    ops: list[OpDiff] = []
    for done, (i, j) in enumerate(alignment.pairs):
        op_a, op_b = a.ops[i], b.ops[j]
        diffs = []
        for slot_a, slot_b in _pair_slots(op_a, op_b):
            if slot_a is None or slot_b is None:
                present = slot_a or slot_b
                side = "the first run" if slot_a is not None else "the reference"
                diffs.append(TensorDiff(present.slot, None, f"only {side} has {present.slot}"))
                continue
            diffs.append(compare_refs(slot_a, slot_b, tolerance))
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


# --------------------------------------------------------------------------- msprobe dumps
# msprobe's MindSpore dumps as runs: ``dump.json`` with its ``.npy`` tensors, read without msprobe.
#
# Layout (msprobe's data-dump guide for MindSpore, PyNative levels L0, L1 and mix)::
#
#     <dump_path>/step<N>/rank<R>/          ("rank" alone without distributed training)
#       dump.json           {"task", "level", "framework": "mindspore", "dump_data_dir", "data": {entry: ...}}
#       stack.json          the Python stack of each forward entry
#       construct.json      child entry -> parent Cell entry (L0, mix)
#       dump_tensor_data/   <data_name>.npy, for task "tensor" (statistics only without it)
#
# Entries of ``data`` are in execution order: APIs ``Functional.relu.0.forward``,
# ``Tensor.__add__.3.forward``, ``Primitive.norm.RmsNorm.0.forward``; Cells
# ``Cell.fc1.Dense.forward.0`` (counter after the direction); backward entries and
# ``Cell.<path>.<Class>.parameters_grad.<k>``. Each tensor record has ``dtype``, ``shape``,
# ``Max``/``Min``/``Mean``/``Norm`` and, where saved, ``data_name`` (bfloat16 is saved as float32).
# Everything here is untrusted: names are checked to be plain file names, sizes are bounded.


DUMP_FILE = "dump.json"
_MAX_DUMP_JSON = 512 << 20
_MAX_SIDE_JSON = 128 << 20
_MAX_ENTRIES = 1_000_000
_MAX_DEPTH = 4
_STEP = re.compile(r"^step(\d+)$", re.ASCII)
_RANK = re.compile(r"^rank(\d*)$", re.ASCII)
_FRAME = re.compile(r"^File (.*), line (\d+), in (.*?), \n (.*)$", re.DOTALL)
_API = re.compile(r"^(?P<prefix>[A-Za-z]+)\.(?P<body>.+)\.(?P<n>\d+)\.(?P<dir>forward|backward)$", re.ASCII)
_CELL = re.compile(r"^Cell\.(?P<body>.+)\.(?P<dir>forward|backward|parameters_grad)(?:\.(?P<n>\d+))?$", re.ASCII)


def _rank_number(name: str) -> int:
    digits = _RANK.match(name)
    return int(digits.group(1)) if digits and digits.group(1) else 0


def find_msprobe_dump(path: str | os.PathLike, rank: int | None = None) -> Path | None:
    """The ``rank<R>`` directory holding ``dump.json`` at or under ``path`` (a dump path, one of
    its ``step<N>`` folders or a rank folder): the first step, and rank ``rank`` or the first."""
    root = Path(path)
    if (root / DUMP_FILE).is_file():
        return root
    steps = sorted((p for p in _dirs(root) if _STEP.match(p.name)), key=lambda p: int(p.name[4:]))
    for holder in steps or [root]:
        ranks = sorted((p for p in _dirs(holder) if _RANK.match(p.name) and (p / DUMP_FILE).is_file()),
                       key=lambda p: _rank_number(p.name))  # fmt: skip
        if rank is not None:
            ranks = [p for p in ranks if _rank_number(p.name) == rank]
        if ranks:
            return ranks[0]
    return None


def _dirs(path: Path) -> list[Path]:
    try:
        return [p for p in path.iterdir() if p.is_dir() and not p.is_symlink()][:10_000]
    except OSError:
        return []


def _json(path: Path, limit: int, required: bool) -> object:
    if not required and not path.exists():
        return None
    text = read_regular(path, limit, DumpError, what=path.name, follow=False)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise DumpFormatError(f"{path}: not JSON ({str(error)[:120]}).") from None


def read_msprobe_dump(path: str | os.PathLike) -> Run:
    """The rank folder ``path`` (with ``dump.json``) as a run: its entries in execution order."""
    root = Path(path)
    data = _json(root / DUMP_FILE, _MAX_DUMP_JSON, True)
    if not isinstance(data, dict) or not isinstance(data.get("data"), dict):
        raise DumpFormatError(f'{root / DUMP_FILE}: not an msprobe dump (no "data" object).')
    framework = data.get("framework")
    notes = []
    if framework not in ("mindspore", None):
        notes.append(f"{root / DUMP_FILE} was made with {str(framework)[:40]}; its API names follow that framework")
    stacks = _stacks(_json(root / "stack.json", _MAX_SIDE_JSON, False), notes)
    parents = _json(root / "construct.json", _MAX_SIDE_JSON, False)
    parents = parents if isinstance(parents, dict) else {}
    tensors = root / "dump_tensor_data"
    ops = []
    for name, entry in list(data["data"].items())[:_MAX_ENTRIES]:
        if not isinstance(entry, dict):
            continue
        op_type, scope = _type_and_scope(name, parents)
        inputs, outputs = [], []
        for key, value in entry.items():
            if key in ("input_args", "input"):
                _collect(value, "input", inputs, tensors, 0)
            elif key == "input_kwargs" and isinstance(value, dict):
                for kw, item in list(value.items())[:256]:
                    _collect(item, f"input {str(kw)[:40]}", inputs, tensors, 1, keyed=True)
            elif key == "parameters" and isinstance(value, dict):
                for param, item in list(value.items())[:256]:
                    _collect(item, f"input {str(param)[:40]}", inputs, tensors, 1, keyed=True)
            elif key == "output":
                _collect(value, "output", outputs, tensors, 0)
            elif ".parameters_grad" in name and isinstance(value, list):
                _collect(value, f"output {str(key)[:40]}", outputs, tensors, 1, keyed=True)
        source, code = stacks.get(name, ("", ""))
        ops.append(RunOp(len(ops), name[:4096], op_type, scope, inputs, outputs, source, code))
    if data.get("task") == "statistics" or not tensors.is_dir():
        notes.append(
            f"{root} holds statistics only (task {str(data.get('task'))[:20]!r}): tensors are compared by them"
        )
    label = f"msprobe {root.parent.name}/{root.name}" if _STEP.match(root.parent.name) else f"msprobe {root.name}"
    meta = {"task": data.get("task"), "level": data.get("level"), "framework": framework}
    return Run(root, "msprobe dump", label, ops, meta, notes)


def _type_and_scope(name: str, parents: dict) -> tuple[str, str]:
    """``("relu", "Default/fc1-Dense")`` for an API entry inside ``fc1``; Cells by class."""
    cell = _CELL.match(name)
    if cell is not None:
        path, _, cls = cell.group("body").rpartition(".")
        op_type = cls if cell.group("dir") == "forward" else f"{cls}.{cell.group('dir')}"
        return op_type, _scope(parents.get(name), parents)
    api = _API.match(name)
    if api is None:
        return name.split(".")[0][:64] or "unknown", "Default"
    body = api.group("body")
    op_type = body.rpartition(".")[2] if api.group("prefix") == "Primitive" else body
    if api.group("dir") == "backward":
        op_type += ".backward"
    return op_type[:128], _scope(parents.get(name), parents)


def _scope(parent: object, parents: dict) -> str:
    """``Default/outer-Outer/fc1-Dense``: the chain of Cell entries above an entry."""
    labels = []
    seen = set()
    while isinstance(parent, str) and parent and parent not in seen and len(labels) < 64:
        seen.add(parent)
        cell = _CELL.match(parent)
        if cell is None:
            break
        path, _, cls = cell.group("body").rpartition(".")
        labels.append(f"{path.rpartition('.')[2]}-{cls}")
        parent = parents.get(parent)
        if isinstance(parent, list):  # Megatron runs: [parent, micro step]
            parent = parent[0] if parent else None
    return "/".join(["Default", *reversed(labels)])


def _collect(value: object, slot: str, into: list, tensors: Path, depth: int, keyed: bool = False) -> None:
    """Tensor records of an argument, nested lists flattened (``input 1.0``)."""
    if depth > _MAX_DEPTH or len(into) > 4096:
        return
    if isinstance(value, list):
        for position, item in enumerate(value[:4096]):
            inner = f"{slot}.{position}" if (depth or keyed) else f"{slot} {position}"
            _collect(item, inner, into, tensors, depth + 1)
        return
    if not isinstance(value, dict) or "shape" not in value or not isinstance(value.get("dtype"), str):
        return  # numbers, strings, None, slices: not tensors
    shape = value.get("shape")
    if (
        not isinstance(shape, list)
        or len(shape) > 32
        or not all(isinstance(n, int) and 0 <= n < 1 << 62 for n in shape)
    ):
        return
    name = value.get("data_name")
    path = None
    if (
        isinstance(name, str)
        and name
        and "/" not in name
        and "\\" not in name
        and name not in (".", "..")
        and "\0" not in name
    ):
        path = tensors / name
    stats = {
        key: value[key]
        for key in STAT_KEYS
        if isinstance(value.get(key), (int, float)) and not isinstance(value.get(key), bool)
    }
    into.append(TensorRef(slot, path, tuple(shape), value["dtype"][:32], stats or None))


def _stacks(value: object, notes: list[str]) -> dict[str, tuple[str, str]]:
    """``{entry: (path:line, code)}``: the first frame of each entry's stack (innermost first)
    that is the person's code rather than a library's; both forms of ``stack.json``."""
    found: dict[str, tuple[str, str]] = {}
    if not isinstance(value, dict):
        return found
    groups = list(value.items())[:_MAX_ENTRIES]
    if "0" in value and isinstance(value["0"], list) and len(value["0"]) == 2 and isinstance(value["0"][0], list):
        groups = [(name, item[1]) for _, item in groups if isinstance(item, list) and len(item) == 2
                  and isinstance(item[0], list) for name in item[0][:_MAX_ENTRIES] if isinstance(name, str)]  # fmt: skip
    for name, frames in groups:
        if isinstance(frames, list):
            place = _user_frame([f for f in frames[:256] if isinstance(f, str)])
            if place is not None:
                found[name] = place
    return found


def _user_frame(frames: list[str]) -> tuple[str, str] | None:
    parsed = [match for match in (_FRAME.match(f[:8192]) for f in frames) if match is not None]
    for match in parsed:
        path = match.group(1)
        if "site-packages" not in path and "dist-packages" not in path and "<frozen" not in path:
            return f"{path}:{match.group(2)}", match.group(4).strip()[:400]
    if parsed:
        return f"{parsed[0].group(1)}:{parsed[0].group(2)}", parsed[0].group(4).strip()[:400]
    return None
