"""Runs: the ops one execution made, in execution order, each with its inputs' and outputs' values.

Pure: numpy only. Three kinds of directory hold one:

* a run msdebug saved: ``run.json`` beside one ``.npy`` per tensor (:func:`read_run`; the
  format is written by :mod:`msdebug.recorders.diff`);
* a MindSpore data dump (GRAPH mode, any rank, read by :mod:`.datadump`): one iteration
  (:func:`run_from_dump`) or the iterations a cell wrote (:func:`run_from_new_iterations`);
* an msprobe dump (:mod:`.msprobe`).

:func:`msdebug.dumps.diff.read_any_run` tells them apart.

Everything read is untrusted: names are plain file names, sizes and texts are bounded.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DumpError, DumpFormatError
from ..files import read_regular

__all__ = [
    "RUN_FILE",
    "RUN_FORMAT",
    "RUN_VERSION",
    "STAT_KEYS",
    "Run",
    "RunOp",
    "TensorRef",
    "open_ref",
    "read_run",
    "run_from_dump",
    "run_from_new_iterations",
    "scope_of",
]

RUN_FILE = "run.json"
RUN_FORMAT = "msdebug-run"
RUN_VERSION = 1
STAT_KEYS = ("Max", "Min", "Mean", "Norm")  # the statistics a run may keep instead of values, as msprobe names them
_MAX_RUN_JSON = 256 << 20
_OP_NUMBER = re.compile(r"-op\d+$", re.ASCII)


@dataclass(frozen=True)
class TensorRef:
    """One input or output of an op: where its values are, and what they are."""

    slot: str  # "input 0", "output 1"
    path: Path | None  # the .npy file; None where the run kept statistics only
    shape: tuple[int, ...] = ()
    dtype: str = ""
    stats: dict | None = None  # max/min/mean/norm, where a run recorded statistics only
    values: np.ndarray | None = field(default=None, compare=False, repr=False)  # kept in memory, not in a file
    # Where an input no op of the run made comes from ("x", "parameter fc.weight", "gradient of
    # fc.weight", "a value"); "" for a value an op made, or where the run does not say.
    origin: str = ""

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
    shape, dtype = _shape(item.get("shape", []), where), _text(item.get("dtype"), 32)
    return TensorRef(f"{io} {slot}", path, shape, dtype, origin=_text(item.get("origin"), 240))


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


def open_ref(ref: TensorRef) -> np.ndarray:
    """The values of one input or output: the array a recorder kept, or the file as a memory
    map (read through the opener)."""
    from .datadump import open_tensor

    if ref.values is not None:
        return ref.values
    if ref.path is None:
        raise DumpError(f"{ref.slot}: this run kept statistics only")
    return open_tensor(ref.path)
