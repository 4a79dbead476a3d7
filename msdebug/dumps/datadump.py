"""MindSpore's data dump (``MINDSPORE_DUMP_CONFIG``): a pure reader of the tree it writes.

Layout (MindSpore 2.10 CPU, verified)::

    <path>/rank_<r>/
      .dump_metadata/{config.json,data_dump.json}
      <net_name>/<graph_id>/<iteration>/<Type>.<flat name>.<task>.<stream>.<us>.<io>.<slot>.<fmt>.<dtype>.npy
                                        mapping.csv   (<digits>.npy,<original file name>: names over 255 bytes)
      execution_order/ms_execution_order_graph_<gid>.csv          full names, in execution order
      execution_order/ms_global_execution_order_graph_<gid>.csv   the iteration numbers dumped
      graphs/ms_output_trace_code_graph_<gid>.ir                  the kernel graph, with source lines

File names replace ``/`` by ``_``, which cannot be undone (``Expand/_Muls`` and
``Expand_/Muls`` look alike), so every tensor is matched to its op through the execution
order: the op's full name, flattened the same way, and its type; ops that still collide are
told apart by the files' timestamps, which grow in execution order. ``Parameter.*`` files
hold the value at the *end* of the step. Tensors are opened lazily as memory maps (read at once under 256 KiB).
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import mmap
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DumpError, DumpFormatError
from ..files import ascii_number, open_regular, read_regular

__all__ = [
    "DataDump",
    "DumpIteration",
    "DumpOp",
    "DumpRank",
    "TensorFile",
    "TensorStats",
    "exact_sum",
    "histogram",
    "is_finite",
    "iteration_paths",
    "tensor_stats",
    "find_data_dump",
    "is_data_dump",
    "open_tensor",
    "read_data_dump",
]

# Numbers in names are ASCII digits (re.ASCII: \d is [0-9]), read through files.ascii_number.
_FILE = re.compile(
    r"^(?P<type>[^.]+)\.(?P<name>.+)\.(?P<task>\d+)\.(?P<stream>\d+)\.(?P<ts>\d+)\."
    r"(?P<io>input|output)\.(?P<slot>\d+)\.(?P<format>[^.]+)\.(?P<dtype>[^.]+)\.npy$",
    re.ASCII,
)
_RANK = re.compile(r"^rank_(\d+)$", re.ASCII)
_EXEC = re.compile(r"^ms_execution_order_graph_(\d+)\.csv$", re.ASCII)
_GLOBAL = re.compile(r"^ms_global_execution_order_graph_(\d+)\.csv$", re.ASCII)
_OP_TYPE = re.compile(r"^(.*?)-op\d+$", re.ASCII)
_OP_NUMBER = re.compile(r"-op\d+$", re.ASCII)
# Bounds on what a reader takes from an untrusted tree.
_MAX_CSV = 64 << 20
_MAX_META = 1 << 20
_MAX_FILES = 1_000_000
_MAX_MAPPING_LINE = 128 << 10  # characters: csv's own default bound on a field
_MAX_NOTES = 3  # per file; then how many more
# Elements per chunk: 4 Mi float32 = 16 MiB read at a time, whatever the tensor's size.
CHUNK = 1 << 22


@dataclass(frozen=True)
class TensorFile:
    """One ``.npy`` file of a data dump, as its name (or ``mapping.csv``) describes it."""

    path: Path
    op_type: str
    flat_name: str
    timestamp: int
    io: str
    slot: int
    dtype: str
    size: int
    stored_as: str = ""  # the random name a long file name was replaced by

    @property
    def is_parameter(self) -> bool:
        return self.op_type == "Parameter"

    @property
    def label(self) -> str:
        """``input 0`` / ``output 0``."""
        return f"{self.io} {self.slot}"


@dataclass
class DumpOp:
    """One kernel of an iteration, in execution order, with its dumped tensors by slot."""

    index: int
    name: str
    op_type: str
    inputs: list[TensorFile] = field(default_factory=list)
    outputs: list[TensorFile] = field(default_factory=list)

    @property
    def tensors(self) -> list[TensorFile]:
        """Inputs before outputs, each by slot: the order a value flows through the op."""
        return self.inputs + self.outputs


@dataclass
class DumpIteration:
    """``<net>/<graph_id>/<iteration>/``: one run of one graph."""

    rank: int
    net: str
    graph_id: int
    iteration: int
    path: Path
    ops: list[DumpOp]
    parameters: list[TensorFile]
    unmatched: list[TensorFile]
    bad_names: list[str]
    order_known: bool
    notes: list[str] = field(default_factory=list)  # what could not be read, and was skipped

    @property
    def first_timestamp(self) -> int:
        stamps = [t.timestamp for op in self.ops for t in op.tensors] + [t.timestamp for t in self.parameters]
        return min(stamps) if stamps else 0

    @property
    def tensor_count(self) -> int:
        return sum(len(op.tensors) for op in self.ops) + len(self.parameters) + len(self.unmatched)

    def tensors(self) -> list[TensorFile]:
        """Every tensor in the order a scan judges them: ops in execution order (inputs first),
        then the end-of-step parameters, then files no op claimed."""
        return [t for op in self.ops for t in op.tensors] + self.parameters + self.unmatched

    def op(self, name: str) -> DumpOp:
        for op in self.ops:
            if op.name == name:
                return op
        raise DumpError(f"iteration {self.iteration} of graph {self.graph_id} has no op {name!r}")


@dataclass
class DumpRank:
    """``rank_<r>/``: execution orders, graphs and iterations of one device."""

    rank: int
    path: Path
    exec_orders: dict[int, list[str]]
    dumped_iterations: dict[int, list[int]]
    iterations: list[DumpIteration]
    metadata: dict[str, str]

    @property
    def nets(self) -> list[str]:
        return sorted({it.net for it in self.iterations})

    @property
    def graph_ids(self) -> list[int]:
        return sorted(set(self.exec_orders) | {it.graph_id for it in self.iterations})

    def ir_path(self, graph_id: int) -> Path | None:
        path = self.path / "graphs" / f"ms_output_trace_code_graph_{graph_id}.ir"
        return path if path.is_file() and not path.is_symlink() else None

    def iteration(self, iteration: int | None = None, graph_id: int | None = None) -> DumpIteration:
        found = [
            it
            for it in self.iterations
            if (iteration is None or it.iteration == iteration) and (graph_id is None or it.graph_id == graph_id)
        ]
        if not found:
            have = ", ".join(f"graph {it.graph_id} iteration {it.iteration}" for it in self.iterations[:12])
            raise DumpError(
                f"rank {self.rank} has no dump of "
                + (f"iteration {iteration}" if iteration is not None else "any iteration")
                + (f" of graph {graph_id}" if graph_id is not None else "")
                + f"; it has {have or 'none'}"
            )
        return found[0]


@dataclass
class DataDump:
    """A data-dump tree: one or more ranks."""

    root: Path
    ranks: list[DumpRank]

    def rank(self, rank: int | None = None) -> DumpRank:
        if not self.ranks:
            raise DumpError(f"{self.root}: no rank holds a data dump")
        if rank is None:
            return self.ranks[0]
        for where in self.ranks:
            if where.rank == rank:
                return where
        have = ", ".join(str(r.rank) for r in self.ranks)
        raise DumpError(f"{self.root}: no rank {rank}; it has rank {have}")

    @property
    def tensor_count(self) -> int:
        return sum(it.tensor_count for r in self.ranks for it in r.iterations)

    @property
    def size(self) -> int:
        return sum(t.size for r in self.ranks for it in r.iterations for t in it.tensors())


# --------------------------------------------------------------------------- finding


def _rank_dirs(path: Path) -> list[tuple[int, Path]]:
    try:
        entries = list(os.scandir(path))
    except OSError:
        return []
    found = []
    for entry in entries:
        match = _RANK.match(entry.name)
        number = ascii_number(match.group(1)) if match else None
        if number is not None and entry.is_dir(follow_symlinks=False):
            found.append((number, Path(entry.path)))
    return sorted(found)


def is_data_dump(path: str | os.PathLike) -> bool:
    """Whether ``path`` (or ``path/rank_*``) holds a data dump: an ``execution_order`` folder
    or ``.dump_metadata``, which RDR trees and save_graphs directories never have."""
    root = Path(path)
    candidates = [p for _, p in _rank_dirs(root)] or [root]
    return any((p / "execution_order").is_dir() or (p / ".dump_metadata").is_dir() for p in candidates)


def find_data_dump(path: str | os.PathLike) -> Path | None:
    """The folder holding ``rank_*`` for ``path`` (the dump path, or one rank inside it)."""
    root = Path(os.path.abspath(os.path.expanduser(path)))
    if _rank_dirs(root) and is_data_dump(root):
        return root
    if _RANK.match(root.name) and is_data_dump(root):
        return root.parent
    return None


# --------------------------------------------------------------------------- reading


def _read_small(path: Path, limit: int) -> str:
    """A small text file of the dump (an execution order, ``mapping.csv``, the metadata): a
    regular file, never a link, at most ``limit`` bytes."""
    data = read_regular(path, limit, DumpFormatError, "small file of a dump", follow=False)
    return data.decode("utf-8", "replace")


def _read_exec_order(path: Path) -> list[str]:
    lines = _read_small(path, _MAX_CSV).splitlines()
    if lines and lines[0].startswith("NodeExecutionOrder"):
        lines = lines[1:]
    return [line.strip() for line in lines if line.strip()]


def _read_numbers(path: Path) -> list[int]:
    numbers = (ascii_number(word) for word in _read_small(path, _MAX_CSV).split())
    return [n for n in numbers if n is not None]


def _read_mapping(path: Path) -> tuple[dict[str, str], list[str]]:
    """``<digits>.npy`` -> original file name, and a note for each line that could not be read
    (longer than any name, or csv refuses it): those lines are skipped, and the files they named
    are listed as odd names, never an error for the whole dump. Line by line, with the reader's
    own bound: csv's field limit is global, and importing MindSpore raises it."""
    try:
        text = _read_small(path, _MAX_CSV)
    except (OSError, DumpFormatError) as error:
        return {}, [f"mapping.csv skipped: {_reason(error)}"]
    mapping: dict[str, str] = {}
    skipped: list[str] = []
    for number, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if len(line) > _MAX_MAPPING_LINE:
            skipped.append(f"mapping.csv line {number} skipped: longer than {_MAX_MAPPING_LINE} characters")
            continue
        try:
            row = next(csv.reader([line]), [])
        except csv.Error as error:
            skipped.append(f"mapping.csv line {number} skipped: csv cannot read it ({error})")
            continue
        if len(row) >= 2:
            mapping[row[0]] = row[1]
    notes = skipped[:_MAX_NOTES]
    if len(skipped) > _MAX_NOTES:
        notes.append(f"mapping.csv: {len(skipped) - _MAX_NOTES} more lines skipped")
    return mapping, notes


def _reason(error: Exception) -> str:
    return (getattr(error, "strerror", None) or str(error)).rsplit(": ", 1)[-1]


def _flat(name: str) -> str:
    return name.replace("/", "_")


def _op_type(full_name: str) -> str:
    last = full_name.rsplit("/", 1)[-1]
    match = _OP_TYPE.match(last)
    return match.group(1) if match else last


def iteration_paths(path: str | os.PathLike) -> set[str]:
    """The iteration folders (``rank_*/<net>/<graph>/<iteration>``) of a data dump now; none
    when there is no dump yet. Lists folders only, so it is cheap on a long run's dump."""
    root = find_data_dump(path)
    if root is None:
        return set()
    found = set()
    for _, where in _rank_dirs(root):
        for net in _subdirs(where):
            if net.name in ("execution_order", "graphs") or net.name.startswith("."):
                continue
            for graph in _subdirs(net):
                if ascii_number(graph.name) is not None:
                    found.update(str(step) for step in _subdirs(graph) if ascii_number(step.name) is not None)
    return found


def read_data_dump(path: str | os.PathLike, skip: set[str] | frozenset[str] = frozenset()) -> DataDump:
    """Read the layout of a data dump (file names only; no tensor is opened), leaving out the
    iteration folders in ``skip`` (see :func:`iteration_paths`).

    Raises
    ------
    DumpError
        When ``path`` holds no ``rank_*`` data dump.
    """
    root = find_data_dump(path)
    if root is None:
        raise DumpError(f"{path}: not a MindSpore data dump (no rank_*/execution_order or rank_*/.dump_metadata)")
    ranks = [_read_rank(number, where, skip) for number, where in _rank_dirs(root) if is_data_dump(where)]
    return DataDump(root, ranks)


def _read_rank(number: int, where: Path, skip: set[str] | frozenset[str] = frozenset()) -> DumpRank:
    orders: dict[int, list[str]] = {}
    dumped: dict[int, list[int]] = {}
    order_dir = where / "execution_order"
    if order_dir.is_dir():
        for entry in sorted(os.scandir(order_dir), key=lambda e: e.name):
            match = _EXEC.match(entry.name) or _GLOBAL.match(entry.name)
            gid = ascii_number(match.group(1)) if match else None
            if gid is None or not entry.is_file(follow_symlinks=False):
                continue
            if match.re is _EXEC:
                orders[gid] = _read_exec_order(Path(entry.path))
            else:
                dumped[gid] = _read_numbers(Path(entry.path))
    metadata = {}
    config = where / ".dump_metadata" / "config.json"
    if config.is_file():
        try:
            import json

            loaded = json.loads(_read_small(config, _MAX_META))
            metadata = {str(k): str(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}
        except (ValueError, OSError, DumpFormatError):
            metadata = {}
    iterations = []
    for net in _subdirs(where):
        if net.name in ("execution_order", "graphs") or net.name.startswith("."):
            continue
        for graph in _subdirs(net):
            gid = ascii_number(graph.name)
            if gid is None:
                continue
            for step in _subdirs(graph):
                iteration = ascii_number(step.name)
                if iteration is not None and str(step) not in skip:
                    iterations.append(_read_iteration(number, net.name, gid, iteration, step, orders.get(gid)))
    iterations.sort(key=lambda it: (it.iteration, it.first_timestamp, it.graph_id))
    return DumpRank(number, where, orders, dumped, iterations, metadata)


def _subdirs(path: Path) -> list[Path]:
    try:
        return sorted((Path(e.path) for e in os.scandir(path) if e.is_dir(follow_symlinks=False)), key=lambda p: p.name)
    except OSError:
        return []


def _read_iteration(
    rank: int, net: str, graph_id: int, iteration: int, path: Path, order: list[str] | None
) -> DumpIteration:
    try:
        entries = list(os.scandir(path))
    except OSError as error:  # an unreadable folder is reported with the iteration, not fatal
        return DumpIteration(
            rank, net, graph_id, iteration, path, [], [], [], [f"(cannot list it: {error.strerror})"], False
        )
    if len(entries) > _MAX_FILES:
        raise DumpError(f"{path}: more than {_MAX_FILES} files")
    names = {e.name: e for e in entries}
    mapping, notes = _read_mapping(path / "mapping.csv") if "mapping.csv" in names else ({}, [])
    tensors: list[TensorFile] = []
    bad: list[str] = []
    for entry in entries:
        if not entry.name.endswith(".npy"):
            continue
        if not entry.is_file(follow_symlinks=False):
            bad.append(entry.name)
            continue
        original = mapping.get(entry.name, entry.name)
        match = _FILE.match(original)
        stamp = ascii_number(match["ts"]) if match else None
        slot = ascii_number(match["slot"]) if match else None
        if stamp is None or slot is None:
            bad.append(entry.name)
            continue
        tensors.append(
            TensorFile(
                Path(entry.path),
                match["type"],
                match["name"],
                stamp,
                match["io"],
                slot,
                match["dtype"],
                entry.stat(follow_symlinks=False).st_size,
                entry.name if original != entry.name else "",
            )
        )
    tensors.sort(key=lambda t: t.timestamp)
    parameters = [t for t in tensors if t.is_parameter]
    ops, unmatched = _match(order, [t for t in tensors if not t.is_parameter])
    return DumpIteration(
        rank, net, graph_id, iteration, path, ops, parameters, unmatched, sorted(bad), order is not None, notes
    )


def _match(order: list[str] | None, tensors: list[TensorFile]) -> tuple[list[DumpOp], list[TensorFile]]:
    """Give each tensor file to its op in the execution order.

    Files are grouped by (type, flat name); the group's ops are the execution-order names
    that flatten to it. Where several ops collide, the k-th file of a slot (by timestamp)
    belongs to the k-th of those ops.
    """
    if order is None:
        # No execution order (a partial copy): the files' timestamps are the only order left,
        # and the flat name the only name.
        named = dict.fromkeys((t.flat_name, t.op_type) for t in tensors)
        ops = [DumpOp(i, name, op_type) for i, (name, op_type) in enumerate(named)]
    else:
        ops = [DumpOp(i, name, _op_type(name)) for i, name in enumerate(order)]
    renumbered = _renumbered_groups(ops, tensors) if order is not None else set()
    # Each pass matches the files the earlier ones left: by type and full name; by name
    # alone (a kernel type that differs from its name's); by type and name without the
    # "-opN" counter (a second instance of a graph numbers its files' ops apart from its
    # execution order). Within a key, the k-th file of a slot goes to the k-th op lacking it.
    keys = (
        lambda op_type, flat: (op_type, flat),
        lambda op_type, flat: ("", flat),
        lambda op_type, flat: (op_type, _OP_NUMBER.sub("", flat)),
    )
    left = tensors
    have: dict[tuple[int, str], set[int]] = {}  # (op index, io) -> the slots it holds
    for number, key in enumerate(keys):
        groups: dict[tuple[str, str], list[DumpOp]] = {}
        for op in ops:
            groups.setdefault(key(op.op_type, _flat(op.name)), []).append(op)
        # Per (key, io, slot), how far along the group the first op lacking that slot is: ops
        # only gain slots, so the position only moves forward (linear in ops plus files).
        first: dict[tuple[tuple[str, str], str, int], int] = {}
        still = []
        for t in left:
            base, op_number = _numbered(t.flat_name)
            if renumbered and number < 2 and op_number is not None and (t.op_type, base) in renumbered:
                still.append(t)  # its number names another op: by timestamp, in the last pass
                continue
            group_key = key(t.op_type, t.flat_name)
            group = groups.get(group_key)
            if not group:
                still.append(t)
                continue
            where = (group_key, t.io, t.slot)
            position = first.get(where, 0)
            while position < len(group) and t.slot in have.get((group[position].index, t.io), ()):
                position += 1
            first[where] = position
            if position == len(group):
                still.append(t)
                continue
            op = group[position]
            (op.inputs if t.io == "input" else op.outputs).append(t)
            have.setdefault((op.index, t.io), set()).add(t.slot)
        left = still
    unmatched = left
    for op in ops:
        op.inputs.sort(key=lambda t: t.slot)
        op.outputs.sort(key=lambda t: t.slot)
    return ops, unmatched


def _numbered(flat: str) -> tuple[str, int | None]:
    """``("Default_Sqrt", 2)`` for ``Default_Sqrt-op2``; the number None where there is none."""
    found = _OP_NUMBER.search(flat)
    return (flat[: found.start()], int(flat[found.start() + 3 :])) if found else (flat, None)


def _renumbered_groups(ops: list[DumpOp], tensors: list[TensorFile]) -> set[tuple[str, str]]:
    """The (type, flat scope) groups whose files' op numbers are not the execution order's.

    From the second graph a process compiles on, MindSpore numbers the dump's files process-wide
    (``Sqrt-op2`` .. ``Sqrt-op4``) and the graph's execution order per graph (``Sqrt-op0`` ..
    ``Sqrt-op2``): matched by name, files would land on other ops that happen to carry their
    numbers. Where one scope and type's files carry as many numbers as the order has ops there,
    but other ones, their numbers say nothing: they go by timestamp (the matcher's last pass).
    Where the numbers agree, or the counts differ (a dump of some kernels only), names match."""
    wanted: dict[tuple[str, str], set[int]] = {}
    for op in ops:
        base, number = _numbered(_flat(op.name))
        if number is not None:
            wanted.setdefault((op.op_type, base), set()).add(number)
    found: dict[tuple[str, str], set[int]] = {}
    for tensor in tensors:
        base, number = _numbered(tensor.flat_name)
        if number is not None:
            found.setdefault((tensor.op_type, base), set()).add(number)
    return {
        key
        for key, numbers in found.items()
        if key in wanted and numbers != wanted[key] and len(numbers) == len(wanted[key])
    }


# --------------------------------------------------------------------------- tensors


@dataclass(frozen=True)
class TensorStats:
    """What is in one tensor: counts of non-finite values and statistics of the finite ones."""

    shape: tuple[int, ...]
    dtype: str
    size: int
    nan: int = 0
    posinf: int = 0
    neginf: int = 0
    first_index: tuple[int, ...] | None = None
    first_kind: str = ""
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    magnitude: bool = False  # complex values: min, max and mean are of |z|

    @property
    def finite(self) -> bool:
        return not (self.nan or self.posinf or self.neginf)

    @property
    def kinds(self) -> str:
        """``NaN ×3, +Inf ×1`` (empty when finite)."""
        parts = [
            f"{kind} ×{count}" for kind, count in (("NaN", self.nan), ("+Inf", self.posinf), ("-Inf", self.neginf))
        ]
        return ", ".join(p for p, n in zip(parts, (self.nan, self.posinf, self.neginf), strict=True) if n)

    @property
    def kind(self) -> str:
        """The kinds present, most serious first: ``NaN``, ``+Inf``, ``-Inf``, or ``finite``."""
        present = [k for k, n in (("NaN", self.nan), ("+Inf", self.posinf), ("-Inf", self.neginf)) if n]
        return " and ".join(present) if present else "finite"

    def summary(self) -> str:
        """One line: ``finite, min -1 max 3 mean 0.5`` or ``NaN ×3 (first at (0, 2)); finite: min …``."""
        shown = f"shape {self.shape} {self.dtype}"
        if self.size == 0:
            return f"{shown}, empty"
        of = "|z| " if self.magnitude else ""
        values = (
            f"{of}min {_num(self.min)} max {_num(self.max)} mean {_num(self.mean)}"
            if self.min is not None
            else "no finite value"
        )
        if self.finite:
            return f"{shown}, finite, {values}"
        return f"{shown}, {self.kinds} of {self.size} (first {self.first_kind} at {self.first_index}); finite values: {values}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def _float_view(array: np.ndarray) -> bool:
    return array.dtype.kind in "fc"


def exact_sum(parts: Iterable[np.ndarray]) -> float:
    """The sum of every value of ``parts``, correctly rounded to float64 (``math.fsum``).

    The answer is the same whatever the order of the values: a numpy or MindSpore sum adds in
    the order of the CPU's vector unit (AVX2 and AVX-512 differ), and where values cancel even
    a float64 sum then changes in the digits msdebug prints. About 50 ns a value, so it is for
    the statistics shown of a few tensors, not for scans. An infinity where the values hold
    one; NaN where they hold a NaN or both infinities, or where the sum is past float64 (only
    float64 data can get there).
    """
    values = itertools.chain.from_iterable(np.asarray(p, dtype=np.float64).ravel().tolist() for p in parts)
    try:
        return math.fsum(values)
    except (ValueError, OverflowError):  # -inf + inf; finite values whose sum is past float64
        return math.nan


def tensor_stats(array: np.ndarray, chunk: int = CHUNK) -> TensorStats:
    """Counts of NaN, +Inf and -Inf, the first non-finite index (C order) and min / max /
    mean of the finite values, reading ``array`` ``chunk`` elements at a time.

    The mean is exact (:func:`exact_sum`), so it prints the same on every CPU."""
    shape, size = tuple(int(n) for n in array.shape), int(array.size)
    dtype = str(array.dtype)
    if size == 0:
        return TensorStats(shape, dtype, 0)
    flat = array.reshape(-1, order="C") if array.flags.c_contiguous else np.ravel(array)
    if flat.dtype.kind == "c":
        return _complex_stats(flat, shape, dtype, chunk)
    nan = posinf = neginf = 0
    first: int | None = None
    first_kind = ""
    low = high = None
    finite_count = 0
    is_float = _float_view(flat)
    for start in range(0, size, chunk):
        part = np.asarray(flat[start : start + chunk])
        if part.dtype == np.bool_:
            part = part.view(np.uint8)
        if is_float:
            lo, hi = part.min(), part.max()
            if np.isfinite(lo) and np.isfinite(hi):
                good = part
            else:
                isnan = np.isnan(part)
                isposinf = np.isposinf(part)
                isneginf = np.isneginf(part)
                n, p, m = int(isnan.sum()), int(isposinf.sum()), int(isneginf.sum())
                if first is None:
                    bad = np.flatnonzero(isnan | isposinf | isneginf)
                    first = start + int(bad[0])
                    value = part[bad[0]]
                    first_kind = "NaN" if np.isnan(value) else ("+Inf" if value > 0 else "-Inf")
                nan, posinf, neginf = nan + n, posinf + p, neginf + m
                good = part[np.isfinite(part)]
                if good.size == 0:
                    continue
                lo, hi = good.min(), good.max()
        else:
            good = part
            lo, hi = part.min(), part.max()
        low = lo if low is None else min(low, lo)
        high = hi if high is None else max(high, hi)
        finite_count += int(good.size)
    first_index = _index(first, shape)
    mean = exact_sum(_finite_parts(flat, chunk)) / finite_count if finite_count else None
    return TensorStats(
        shape,
        dtype,
        size,
        nan,
        posinf,
        neginf,
        first_index,
        first_kind,
        None if low is None else float(low) + 0.0,  # -0.0 or 0.0, whichever came first: one zero
        None if high is None else float(high) + 0.0,
        mean,
    )


def _complex_stats(flat: np.ndarray, shape: tuple[int, ...], dtype: str, chunk: int) -> TensorStats:
    """:func:`tensor_stats` of complex values: an element is NaN when a part is NaN, else an
    infinity when a part is one (+Inf when a part is +inf); min, max and mean are of |z|."""
    nan = posinf = neginf = finite_count = 0
    first: int | None = None
    first_kind = ""
    low = high = None
    for start in range(0, flat.size, chunk):
        part = np.asarray(flat[start : start + chunk])
        isnan = np.isnan(part.real) | np.isnan(part.imag)
        isinf = ~isnan & (np.isinf(part.real) | np.isinf(part.imag))
        isposinf = isinf & ((part.real == np.inf) | (part.imag == np.inf))
        isneginf = isinf & ~isposinf
        bad = isnan | isinf
        if first is None and bad.any():
            at = int(np.argmax(bad))
            first, first_kind = start + at, ("NaN" if isnan[at] else "+Inf" if isposinf[at] else "-Inf")
        nan, posinf, neginf = nan + int(isnan.sum()), posinf + int(isposinf.sum()), neginf + int(isneginf.sum())
        good = np.abs(part[~bad])
        if good.size:
            low = good.min() if low is None else min(low, good.min())
            high = good.max() if high is None else max(high, good.max())
            finite_count += int(good.size)
    mean = exact_sum(_finite_parts(flat, chunk)) / finite_count if finite_count else None
    return TensorStats(
        shape, dtype, int(flat.size), nan, posinf, neginf, _index(first, shape), first_kind,
        None if low is None else float(low), None if high is None else float(high), mean, magnitude=True,
    )  # fmt: skip


def _finite_parts(flat: np.ndarray, chunk: int) -> Iterator[np.ndarray]:
    """The finite values of ``flat``, ``chunk`` at a time, as the mean counts them (|z| of complex ones)."""
    is_float = _float_view(flat)
    for start in range(0, flat.size, chunk):
        part = np.asarray(flat[start : start + chunk])
        if part.dtype == np.bool_:
            part = part.view(np.uint8)
        if is_float:
            part = part[np.isfinite(part)]
        yield np.abs(part) if part.dtype.kind == "c" else part


def _index(first: int | None, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The C-order flat position ``first`` as an index of ``shape`` (``()`` for a scalar)."""
    if first is None:
        return None
    return tuple(int(i) for i in np.unravel_index(first, shape)) if shape else ()


def is_finite(array: np.ndarray, chunk: int = CHUNK) -> bool:
    """Whether every value is finite: the fast path of a scan (min and max of each chunk are
    finite exactly when the chunk is, and need no temporary array)."""
    if not _float_view(array) or array.size == 0:
        return True
    flat = array.reshape(-1) if array.flags.c_contiguous else np.ravel(array)
    for start in range(0, flat.size, chunk):
        part = flat[start : start + chunk]
        if not (np.isfinite(part.min()) and np.isfinite(part.max())):
            return False
    return True


def histogram(array: np.ndarray, bins: int = 30) -> tuple[list[int], list[float]]:
    """Counts and edges of the finite values (empty when there are none)."""
    flat = np.asarray(array).reshape(-1)
    if flat.dtype == np.bool_:
        flat = flat.astype(np.uint8)
    if _float_view(flat):
        flat = flat[np.isfinite(flat)]
    if flat.size == 0:
        return [], []
    values = flat.astype(np.float64)
    low, high = float(values.min()), float(values.max())
    edges = np.linspace(low, high, bins + 1)
    if not low < high or not (np.diff(edges) > 0).all():
        # One value, or values too close together for float64 to split (numpy's own bins for a
        # single 9e15 index out of range): one bin holds them all.
        return [int(values.size)], [low, high]
    counts, edges = np.histogram(values, bins=edges)
    return [int(c) for c in counts], [float(e) for e in edges]


def open_tensor(tensor: TensorFile | str | os.PathLike) -> np.ndarray:
    """The array of one ``.npy`` file, read-only: a memory map (nothing is read yet), or the
    bytes themselves for a tensor under 256 KiB.

    Raises
    ------
    DumpFormatError
        When the file is not a regular file, not ``.npy``, or shorter than its header says.
    """
    path = tensor.path if isinstance(tensor, TensorFile) else Path(tensor)
    # A FIFO planted in a dump must not hang the reader, nor a link lead out of it.
    handle = open_regular(path, DumpFormatError, "{name}: cannot open it ({reason})", follow=False)
    fd = handle.fileno()
    try:
        info = os.fstat(fd)
        head = os.pread(fd, 4096, 0)
        try:
            shape, fortran, dtype, offset = _parse_header(head)
        except (ValueError, OSError, EOFError, SyntaxError, TypeError, MemoryError, RecursionError) as error:
            raise DumpFormatError(f"{path.name}: not a readable .npy file ({error})") from None
        count, need = _check_header(path.name, shape, dtype, offset, info.st_size)
        if count == 0:
            return np.zeros(shape, dtype)
        if need <= _READ_AT_ONCE:  # a small tensor: one read costs less than a map and its unmap
            mapped = head if need <= len(head) else os.pread(fd, need, 0)
            if len(mapped) < need:
                raise DumpFormatError(
                    f"{path.name}: cut short while read: {len(mapped)} bytes, its header needs {need}"
                )
        else:
            try:
                mapped = mmap.mmap(fd, need, access=mmap.ACCESS_READ)
            except (OSError, ValueError) as error:
                raise DumpFormatError(f"{path.name}: cannot map it into memory ({error})") from None
    finally:
        handle.close()
    flat = np.frombuffer(mapped, dtype=dtype, count=count, offset=offset)
    return flat.reshape(shape, order="F" if fortran else "C")


_READ_AT_ONCE = 256 << 10  # bytes: smaller tensors are read, larger ones mapped

# What a MindSpore dump holds: bool, signed and unsigned integers, floats (numpy's kinds).
_TENSOR_KINDS = "biuf"
_MAX_NDIM = 32  # numpy 1's bound (numpy 2 allows 64)
_MAX_BYTES = (1 << 63) - 1  # numpy's bound on an array's bytes, zero-size arrays included


def _check_header(name: str, shape, dtype: np.dtype, offset: int, file_size: int) -> tuple[int, int]:
    """The one check of a ``.npy`` header against what a dump can hold and the file's size:
    ``(elements, bytes the file needs)``, counted with Python ints (numpy's int64 wraps)."""
    if dtype.kind not in _TENSOR_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise DumpFormatError(
            f"{name}: holds {_dtype_words(dtype)} values; a MindSpore dump holds bool, integer and float tensors"
        )
    if dtype.itemsize <= 0:
        raise DumpFormatError(f"{name}: its header gives values of {dtype.itemsize} bytes")
    if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape):
        raise DumpFormatError(f"{name}: its header's shape {_short(shape)} is not a tuple of sizes 0 or more")
    if len(shape) > _MAX_NDIM:
        raise DumpFormatError(f"{name}: its header gives {len(shape)} dimensions; at most {_MAX_NDIM} are allowed")
    if math.prod(n for n in shape if n) * dtype.itemsize > _MAX_BYTES:
        raise DumpFormatError(f"{name}: its header's shape {_short(shape)} is larger than any array can be")
    count = math.prod(shape)
    need = offset + count * dtype.itemsize
    if file_size < need:
        raise DumpFormatError(f"{name}: cut short: {file_size} bytes, its header needs {need}")
    return count, need


def _dtype_words(dtype: np.dtype) -> str:
    words = {"O": "Python object", "V": "structured", "S": "byte string", "U": "text", "c": "complex", "M": "datetime",
             "m": "timedelta"}  # fmt: skip
    return words.get(dtype.kind, "") + f" ({_short(dtype.str)})" if dtype.kind in words else _short(str(dtype))


def _short(value) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


# The header numpy writes (and MindSpore, through it): parsed without ast for speed; anything
# else goes to numpy's own reader.
_NPY_HEADER = re.compile(
    rb"\{'descr': '([<>|=][a-zA-Z]\d+)', 'fortran_order': (True|False), 'shape': \(((?:\d+, ?)*\d*)\), \} *\n"
)


def _parse_header(head: bytes) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """Shape, Fortran order, dtype and data offset of a ``.npy`` file from its first bytes."""
    if head[:6] == b"\x93NUMPY" and head[6:7] == b"\x01" and len(head) >= 10:
        length = int.from_bytes(head[8:10], "little")
        match = _NPY_HEADER.fullmatch(head[10 : 10 + length])
        if match is not None:
            shape = tuple(int(n) for n in match.group(3).replace(b" ", b"").split(b",") if n)
            return shape, match.group(2) == b"True", np.dtype(match.group(1).decode()), 10 + length
    handle = io.BytesIO(head)
    version = np.lib.format.read_magic(handle)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
    else:
        raise ValueError(f"npy format version {version} is not one MindSpore writes")
    return shape, fortran, dtype, handle.tell()
