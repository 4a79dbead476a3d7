"""The explorer of a data dump: ``msdebug.open_dump(path)`` on ``rank_*/execution_order`` trees.

Execution order with per-op statistics and a non-finite filter, one tensor (statistics, a
histogram, its values folded), one tensor across ranks or iterations, and the first
non-finite value. Models only: they render through :mod:`msdebug.views.datadump`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..errors import DumpError, DumpFormatError
from . import cells
from .datadump import (
    DumpIteration,
    TensorFile,
    TensorStats,
    histogram,
    is_finite,
    open_tensor,
    read_data_dump,
    tensor_stats,
)
from .rendered import Rendered, rendered_by

__all__ = [
    "CompareRow",
    "DataDumpExplorer",
    "DataDumpSummary",
    "DataExecRow",
    "DataExecView",
    "IterationRow",
    "TensorCompare",
    "TensorView",
]


# --------------------------------------------------------------------------- the explorer's models


@dataclass(frozen=True)
class IterationRow:
    rank: int
    net: str
    graph_id: int
    iteration: int
    ops: int
    tensors: int
    size: int
    bad_names: int


@dataclass(frozen=True, repr=False)
class DataDumpSummary(Rendered):
    root: str
    ranks: tuple[int, ...]
    metadata: dict
    rows: tuple[IterationRow, ...]
    total_rows: int
    tensors: int
    size: int
    _views = rendered_by(lambda v: (v.datadump.html_summary, v.datadump.text_summary))


@dataclass(frozen=True)
class DataExecRow:
    index: int
    name: str
    op_type: str
    outputs: tuple[TensorStats | None, ...]
    inputs_finite: bool | None
    source: str = ""
    code: str = ""

    @property
    def finite(self) -> bool | None:
        if any(s is None for s in self.outputs):
            return None
        return all(s.finite for s in self.outputs) and self.inputs_finite is not False


@dataclass(frozen=True, repr=False)
class DataExecView(Rendered):
    """Ops of one iteration in execution order, with their output statistics."""

    _views = rendered_by(lambda v: (v.datadump.html_exec, v.datadump.text_exec))

    path: str
    where: str
    rows: tuple[DataExecRow, ...]
    total: int
    matched: int
    nonfinite_only: bool


@dataclass(frozen=True, repr=False)
class TensorView(Rendered):
    """One dumped tensor: statistics, a histogram of its finite values, its values folded."""

    _views = rendered_by(lambda v: (v.datadump.html_tensor, v.datadump.text_tensor))

    path: str
    op: str
    slot: str
    where: str
    stats: TensorStats
    counts: tuple[int, ...]
    edges: tuple[float, ...]
    values: str


@dataclass(frozen=True)
class CompareRow:
    label: str
    stats: TensorStats | None
    max_abs: float | None
    max_rel: float | None
    note: str = ""


@dataclass(frozen=True, repr=False)
class TensorCompare(Rendered):
    """One tensor across ranks or iterations, against the first."""

    _views = rendered_by(lambda v: (v.datadump.html_compare, v.datadump.text_compare))

    op: str
    slot: str
    across: str
    rows: tuple[CompareRow, ...]


class DataDumpExplorer(Rendered):
    """``msdebug.open_dump(path)`` on a data dump: ``repr`` shows the summary."""

    _views = rendered_by(lambda v: (v.datadump.html_explorer, v.datadump.text_explorer))

    def __init__(self, path: str | os.PathLike) -> None:
        self.dump = read_data_dump(path)
        self.path = self.dump.root
        self.kind = "datadump"

    def summary(self, limit: int = 200) -> DataDumpSummary:
        rows = [
            IterationRow(it.rank, it.net, it.graph_id, it.iteration, len(it.ops), it.tensor_count,
                         sum(t.size for t in it.tensors()), len(it.bad_names))
            for r in self.dump.ranks for it in r.iterations
        ]  # fmt: skip
        meta = self.dump.ranks[0].metadata if self.dump.ranks else {}
        return DataDumpSummary(
            str(self.dump.root), tuple(r.rank for r in self.dump.ranks), dict(meta), tuple(rows[:limit]), len(rows),
            sum(r.tensors for r in rows), sum(r.size for r in rows),
        )  # fmt: skip

    def _iteration(self, graph: int | None, iteration: int | None, rank: int | None) -> DumpIteration:
        return self.dump.rank(rank).iteration(iteration, graph)

    def exec_order(
        self,
        graph: int | None = None,
        iteration: int | None = None,
        rank: int | None = None,
        nonfinite: bool = False,
        limit: int = 200,
    ) -> DataExecView:
        """Ops in execution order with per-output statistics; ``nonfinite=True`` keeps the ops
        with a non-finite input or output."""
        from .ir import read_ir

        it = self._iteration(graph, iteration, rank)
        ir_path = self.dump.rank(it.rank).ir_path(it.graph_id)
        nodes = {}
        if ir_path is not None:
            try:
                nodes = {n.scope: n for n in read_ir(ir_path).nodes() if n.scope}
            except (DumpError, DumpFormatError):
                nodes = {}
        rows, matched = [], 0
        for op in it.ops:
            outputs = tuple(_stats_or_none(t) for t in op.outputs)
            inputs = [_finite_or_none(t) for t in op.inputs]
            inputs_finite = None if None in inputs else all(inputs)
            row_source = code = ""
            node = nodes.get(op.name)
            if node is not None and node.source is not None:
                loc = node.source
                row_source, code = f"{loc.path}:{loc.line}", cells.cell_code(loc.path, loc.line) or loc.code.strip()
            row = DataExecRow(op.index, op.name, op.op_type, outputs, inputs_finite, row_source, code)
            if nonfinite and row.finite is not False:
                continue
            matched += 1
            if len(rows) < limit:
                rows.append(row)
        where = f"rank {it.rank}, graph {it.graph_id}, iteration {it.iteration}"
        return DataExecView(str(it.path), where, tuple(rows), len(it.ops), matched, nonfinite)

    def tensor(
        self,
        op: str,
        slot: str = "output 0",
        graph: int | None = None,
        iteration: int | None = None,
        rank: int | None = None,
    ) -> TensorView:
        """One tensor of op ``op`` (its full name, or a unique part of it): ``'output 0'``,
        ``'input 1'`` or a parameter's name."""
        it = self._iteration(graph, iteration, rank)
        tensor, name = _find_tensor(it, op, slot)
        array = open_tensor(tensor)
        stats = tensor_stats(array)
        counts, edges = histogram(array)
        with np.printoptions(threshold=200, edgeitems=4, precision=5):
            values = np.array2string(
                np.asarray(array) if array.size <= 10_000 else np.asarray(array[(slice(0, 4),) * array.ndim])
            )
        if array.size > 10_000:
            values = f"(the first 4 along each axis of {array.shape})\n{values}"
        where = f"rank {it.rank}, graph {it.graph_id}, iteration {it.iteration}"
        return TensorView(str(tensor.path), name, tensor.label, where, stats, tuple(counts), tuple(edges), values)

    def compare(self, op: str, slot: str = "output 0", across: str = "ranks", graph: int | None = None,
                iteration: int | None = None, rank: int | None = None) -> TensorCompare:  # fmt: skip
        """One tensor across ``'ranks'`` (same iteration) or ``'iterations'`` (same rank):
        max absolute and relative difference against the first."""
        if across not in ("ranks", "iterations"):
            raise DumpError(f"across must be 'ranks' or 'iterations', got {across!r}")
        if across == "ranks":
            places = [(f"rank {r.rank}", r.iteration(iteration, graph)) for r in self.dump.ranks]
        else:
            where = self.dump.rank(rank)
            places = [
                (f"iteration {it.iteration}", it)
                for it in where.iterations
                if graph is None or it.graph_id == (graph if graph is not None else it.graph_id)
            ]
            if graph is None and places:
                first_graph = places[0][1].graph_id
                places = [p for p in places if p[1].graph_id == first_graph]
        rows, base, name = [], None, op
        for label, it in places:
            try:
                tensor, name = _find_tensor(it, op, slot)
                array = np.asarray(open_tensor(tensor), dtype=np.float64)
            except (DumpError, DumpFormatError) as error:
                rows.append(CompareRow(label, None, None, None, str(error)))
                continue
            stats = tensor_stats(array)
            if base is None:
                base = array
                rows.append(CompareRow(label, stats, 0.0, 0.0, "reference"))
            elif base.shape != array.shape:
                rows.append(CompareRow(label, stats, None, None, f"shape {array.shape} differs from {base.shape}"))
            else:
                with np.errstate(invalid="ignore", divide="ignore"):
                    diff = np.abs(array - base)
                    rel = diff / np.maximum(np.abs(base), np.finfo(np.float64).tiny)
                both = np.isfinite(diff)
                max_abs = float(diff[both].max()) if both.any() else None
                max_rel = float(rel[both].max()) if both.any() else None
                rows.append(CompareRow(label, stats, max_abs, max_rel))
        return TensorCompare(name, slot, across, tuple(rows))

    def nan(self, rank: int | None = None, progress=None):
        """The first non-finite tensor in execution order (see :func:`msdebug.dumps.nan.scan_dump`)."""
        from .nan import scan_dump

        return scan_dump(self.dump, rank=rank, progress=progress)


def _stats_or_none(tensor: TensorFile) -> TensorStats | None:
    try:
        return tensor_stats(open_tensor(tensor))
    except (DumpError, DumpFormatError):
        return None


def _finite_or_none(tensor: TensorFile) -> bool | None:
    try:
        return is_finite(open_tensor(tensor))
    except (DumpError, DumpFormatError):
        return None


def _find_tensor(it: DumpIteration, op: str, slot: str) -> tuple[TensorFile, str]:
    params = [t for t in it.parameters if t.flat_name == op or t.flat_name == op.replace(".", "_")]
    if params:
        return params[0], f"Parameter.{params[0].flat_name}"
    exact = [o for o in it.ops if o.name == op]
    found = exact or [o for o in it.ops if op in o.name]
    if len(found) != 1:
        from ..errors import did_you_mean

        if not found:
            raise DumpError(
                f"no op {op!r} in graph {it.graph_id} iteration {it.iteration}."
                + did_you_mean(op, [o.name.rsplit("/", 1)[-1] for o in it.ops] + [t.flat_name for t in it.parameters])
            )
        names = ", ".join(o.name for o in found[:5])
        raise DumpError(
            f"{op!r} matches {len(found)} ops ({names}{', ...' if len(found) > 5 else ''}); give more of the name"
        )
    match = found[0]
    wanted = slot.strip().lower()
    for tensor in match.tensors:
        if tensor.label == wanted:
            return tensor, match.name
    have = ", ".join(t.label for t in match.tensors) or "none"
    raise DumpError(f"{match.name} has no dumped {slot!r}; it has {have}")
