"""One object over an RDR tree, a save_graphs directory or a single ``.ir`` file.

``msdebug.open_dump(path)`` returns an :class:`Explorer`; its methods return plain models
that render themselves through :mod:`msdebug.views.explorer` (HTML in a notebook, text
elsewhere). The summary only lists files; IR files are parsed when a view needs them.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import DumpError, DumpFormatError, MsDebugError, echo
from ..files import MiB, ascii_number, open_regular, read_regular
from . import cells, graphs, rdr
from .ir import IrFile, IrNode, read_ir
from .rendered import Rendered, rendered_by

__all__ = [
    "DotView",
    "DumpSummary",
    "Explorer",
    "ExecOrderView",
    "ExecRow",
    "FileGroup",
    "GraphDiff",
    "GraphView",
    "MemoryView",
    "NodeRow",
    "PbSummary",
    "RankSummary",
    "StageNodes",
    "open_dump",
]

DEFAULT_LIMIT = 200

PB_LIMIT = 512 * MiB  # the largest graph .pb file msdebug reads


# --------------------------------------------------------------------------- models


@dataclass(frozen=True)
class FileGroup:
    kind: str
    title: str
    count: int
    size: int


@dataclass(frozen=True)
class StageRow:
    index: int | None
    label: str
    file: str
    counter: int | None
    size: int


@dataclass(frozen=True)
class RankSummary:
    rank: int | None
    path: str
    groups: tuple[FileGroup, ...]
    stages: tuple[StageRow, ...]
    graph_ids: tuple[int, ...]
    first: str = ""
    last: str = ""
    unknown: tuple[str, ...] = ()


@dataclass(frozen=True, repr=False)
class DumpSummary(Rendered):
    """What a dump holds: per rank, files by kind with sizes, and the stages in pipeline order."""

    _views = rendered_by(lambda v: (v.explorer.html_summary, v.explorer.text_summary))

    kind: str  # "rdr", "graphs" or "ir"
    path: str
    ranks: tuple[RankSummary, ...]
    files: int
    size: int
    hints: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeRow:
    """One IR node, ready to show."""

    graph: str
    id: str
    name: str
    op: str
    scope: str
    inputs: tuple[str, ...]
    input_types: str
    output_type: str
    lineno: int
    source: str  # "path:line" or ""
    code: str  # the snippet MindSpore dumped, or the notebook cell's code
    in_cell: bool
    cell: int | None = None  # the cell's execution count, when this process ran it
    line: int = 0  # the source line (in the cell, for a cell)


@dataclass(frozen=True, repr=False)
class GraphView(Rendered):
    """The nodes of one IR file, filtered by search text and op type, bounded."""

    _views = rendered_by(lambda v: (v.explorer.html_graph, v.explorer.text_graph))

    file: str
    entry: str
    graphs: Sequence[tuple[str, int]]  # name, node count; made as read (a dump may hold 800,000)
    total_nodes: int
    op_counts: tuple[tuple[str, int], ...]
    rows: tuple[NodeRow, ...]
    matched: int
    search: str = ""
    op: str = ""
    params: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ExecRow:
    index: int
    op: str
    name: str
    fullname: str
    ir_file: str
    ir_line: int | None
    source: str
    code: str
    in_cell: bool
    memory: int | None
    cell: int | None = None
    line: int = 0
    inputs: tuple[str, ...] = ()
    input_types: str = ""
    output_type: str = ""
    node: str = ""  # the IR node's id, "%3"


@dataclass(frozen=True, repr=False)
class ExecOrderView(Rendered):
    """A graph's kernels in execution order, each linked to its IR node, source and memory."""

    _views = rendered_by(lambda v: (v.explorer.html_exec_order, v.explorer.text_exec_order))

    file: str
    graph_id: int | None
    rows: tuple[ExecRow, ...]
    total: int
    ir_file: str = ""


@dataclass(frozen=True)
class MemoryRow:
    name: str
    inputs: int
    workspaces: int
    outputs: int
    total: int
    count: tuple[int, int, int]


@dataclass(frozen=True, repr=False)
class MemoryView(Rendered):
    """Bytes per kernel (inputs, workspaces, outputs), largest first, with totals."""

    _views = rendered_by(lambda v: (v.explorer.html_memory, v.explorer.text_memory))

    file: str
    rows: tuple[MemoryRow, ...]
    total: int
    totals: tuple[int, int, int]


@dataclass(frozen=True)
class DiffRow:
    change: str  # "appeared", "vanished", "changed"
    op: str
    key: str
    before: str
    after: str


@dataclass(frozen=True, repr=False)
class GraphDiff(Rendered):
    """Which nodes appeared, vanished or changed between two IR files (two passes)."""

    _views = rendered_by(lambda v: (v.explorer.html_diff, v.explorer.text_diff))

    before: str
    after: str
    counts: dict[str, int]
    rows: tuple[DiffRow, ...]
    nodes: tuple[int, int]
    op_changes: tuple[tuple[str, int, int], ...] = ()


@dataclass(frozen=True, repr=False)
class PbSummary(Rendered):
    """A ``.pb`` graph (``mindspore.irpb.ModelProto``) read with MindSpore's anf_ir_pb2."""

    _views = rendered_by(lambda v: (v.explorer.html_pb, v.explorer.text_pb))

    file: str
    graph: str
    nodes: tuple[tuple[str, str, str], ...]  # name, op_type, full scope name
    op_counts: tuple[tuple[str, int], ...]
    available: bool = True


@dataclass(frozen=True, repr=False)
class StageNodes(Rendered):
    """How many nodes each front-end pipeline stage has, in pipeline order."""

    _views = rendered_by(lambda v: (v.explorer.html_stage_nodes, v.explorer.text_stage_nodes))

    path: str
    stages: tuple[tuple[str, int], ...]  # label, node count
    total: int  # stages in the dump (at most MAX_STAGES are counted)


@dataclass(frozen=True, repr=False)
class DotView(Rendered):
    """A Graphviz ``.dot`` file save_graphs wrote, as msdebug draws it (no Graphviz needed)."""

    _views = rendered_by(lambda v: (v.explorer.html_dot, v.explorer.text_dot))

    file: str
    nodes: tuple[tuple[str, tuple[str, ...], str], ...]  # id, text lines, cluster id
    edges: tuple[tuple[str, str], ...]
    clusters: tuple[tuple[str, str], ...]  # cluster id, label
    size: int
    truncated: bool = False


# --------------------------------------------------------------------------- explorer

MAX_STAGES = 60


class Explorer:
    """An RDR tree, a save_graphs directory or one ``.ir`` file; ``repr`` shows the summary."""

    def __init__(self, path: str | os.PathLike) -> None:
        if not os.fspath(path).strip():
            # Path("") is the current directory: an empty argument must not quietly mean it
            raise DumpError("the dump path is empty; give an RDR directory, a save_graphs directory or an .ir file")
        self.path = Path(path).expanduser()
        if not os.path.lexists(self.path):
            raise DumpError(f"{echo(str(self.path), quote=False)}: no such file or directory")
        self.tree: rdr.RdrTree | None = None
        self.saved: graphs.GraphsDir | None = None
        self.file: IrFile | None = None
        self._ir_cache: dict[Path, IrFile] = {}
        if not self.path.is_dir():  # a file, or something read_ir refuses in one line (FIFO, loop)
            if self.path.is_file() and self.path.suffix != ".ir":
                raise DumpError(
                    f"{self.path}: open_dump reads an RDR tree, a save_graphs directory or one .ir file"
                    + (
                        f"; for print files use msdebug.read_print_file({str(self.path)!r})"
                        if self.path.suffix == ".pb"
                        else ""
                    )
                )
            self.kind = "ir"
            self.file = self._ir(self.path)
            return
        self.tree = rdr.find_rdr(self.path)
        if self.tree is not None:
            self.kind = "rdr"
            return
        self.saved = graphs.read_graphs_dir(self.path)
        if not any(f.family in ("pb", "dot", "trace") or f.ext == "ir" for f in self.saved.files):
            raise DumpError(
                f"{self.path}: neither an RDR tree (rank_*/rdr/) nor a save_graphs directory"
                + _what_is_there(self.saved)
            )
        self.kind = "graphs"

    # -- the pieces every view uses

    def _ir(self, path: Path) -> IrFile:
        if path not in self._ir_cache:
            self._ir_cache[path] = read_ir(path)
        return self._ir_cache[path]

    def _resolve(self, name: str | None, rank: int | None) -> Path:
        """The IR file a person means by ``name``."""
        if self.kind == "ir":
            return self.path
        if name is None:
            raise DumpError("say which graph: a stage such as 'optimize', or a file name; see the summary")
        if self.tree is not None:
            where = self.tree.rank(rank)
            try:
                return where.find(name).path
            except DumpError as error:
                if "Did you mean" in str(error) or " matches " in str(error):
                    raise
                stages = [f.label for f in where.stages()]
                more = f" and {len(stages) - 3} more" if len(stages) > 3 else ""
                have = f" It has {len(stages)} stages ({', '.join(stages[:3])}{more})"
                graphs_ = [f.label for f in where.of_kind("graph")]
                have += f" and kernel graphs {', '.join(graphs_[:4])}." if graphs_ else "."
                raise DumpError(f"{error}{have}") from None
        return self.saved.find(name).path

    def summary(self) -> DumpSummary:
        """Files by kind, sizes and stages in pipeline order, per rank; nothing is parsed."""
        if self.kind == "ir":
            ir = self.file
            size = self.path.stat().st_size
            group = FileGroup("ir", "IR file", 1, size)
            stage = StageRow(None, ir.entry, self.path.name, None, size)
            rank = RankSummary(None, str(self.path), (group,), (stage,), ())
            return DumpSummary("ir", str(self.path), (rank,), 1, size)
        if self.tree is not None:
            ranks = tuple(_rank_summary(r) for r in self.tree.ranks)
            files = sum(len(r.files) + len(r.others) for r in self.tree.ranks)
            size = sum(g.size for r in ranks for g in r.groups)
            hints = ()
            if not any(r.files for r in self.tree.ranks):
                hints = ("no RDR file yet: mode 1 exports only when a run fails, mode 2 after each compile",)
            return DumpSummary("rdr", str(self.tree.root), ranks, files, size, hints)
        return _graphs_summary(self.saved)

    def _repr_html_(self) -> str:
        if self.kind == "ir":  # one file: its graph is what the person wants to see
            return self.graph()._repr_html_()
        from ..views.explorer import html_explorer

        return html_explorer(self.summary(), self.stage_nodes())

    def __repr__(self) -> str:
        if self.kind == "ir":
            return f"{self.summary()!r}\n{self.graph()!r}"
        return repr(self.summary())

    def stages(self, rank: int | None = None) -> list[str]:
        """The names of the front-end pipeline stages, in pipeline order (for :meth:`graph`)."""
        if self.tree is not None:
            return [f.label for f in self.tree.rank(rank).stages()]
        if self.saved is not None:
            return [f.stem for f in self.saved.family("stage")]
        return [self.file.entry] if self.file else []

    def stage_nodes(self, rank: int | None = None) -> StageNodes:
        """The node count of every pipeline stage (at most 60 stages; each file is parsed once)."""
        names = self.stages(rank) if self.kind != "ir" else []
        counted = []
        for name in names[:MAX_STAGES]:
            try:
                path = self._resolve(name, rank)
                count = _header_nodes(path) if path not in self._ir_cache else None
                counted.append((name, count if count is not None else self._ir(path).node_count))
            except MsDebugError:
                continue  # a stage file cut short still leaves the others worth a look
        return StageNodes(str(self.path), tuple(counted), len(names))

    def dot(self, name: str) -> DotView:
        """A ``.dot`` file of a save_graphs directory (level 3), drawn by msdebug."""
        found = self.saved.find_dot(name) if self.saved is not None else None
        if found is None:
            from ..keys import did_you_mean

            dots = [f.stem for f in self.saved.family("dot")] if self.saved is not None else []
            more = f" and {len(dots) - 4} more" if len(dots) > 4 else ""
            have = f" It has {len(dots)} .dot files" + (f": {', '.join(dots[:4])}{more}." if dots else ".")
            raise DumpError(f"no .dot file in {self.path} is called {name!r}." + (did_you_mean(name, dots) or have))
        dot = graphs.read_dot(found.path)
        return DotView(
            str(found.path), tuple(dot.nodes), tuple(dot.edges), tuple(dot.clusters.items()), dot.size, dot.truncated
        )

    def graph(
        self,
        name: str | None = None,
        search: str = "",
        op: str = "",
        rank: int | None = None,
        limit: int = DEFAULT_LIMIT,
    ) -> GraphView:
        """The IR of one graph file: a stage (``'optimize'``), a label or a file name.

        ``search`` matches node lines, names, scopes and source lines (case-insensitive);
        ``op`` keeps one op type (``'PrimFunc_MatMul'``). At most ``limit`` nodes are shown.
        """
        if self.saved is not None and name is not None and not search and not op:
            dot = self.saved.find_dot(name)
            if dot is not None and not any(name in (f.stem, f.relative) for f in self.saved.ir_files()):
                return self.dot(name)  # level 3 writes some stages only as .dot
        path = self._resolve(name, rank)
        ir = self._ir(path)
        ops = ir.op_counts()
        if op and op not in ops:
            from ..keys import did_you_mean

            raise DumpError(f"{path.name} has no {op!r} nodes." + did_you_mean(op, ops))
        nodes = ir.find(search, op)
        rows = tuple(_node_row(node) for node in nodes[:limit])
        return GraphView(
            file=str(path),
            entry=ir.entry,
            graphs=ir.graphs.counts(),
            total_nodes=ir.node_count,
            op_counts=tuple(ops.most_common()),
            rows=rows,
            matched=len(nodes),
            search=search,
            op=op,
            params=tuple(ir.params),
        )

    def exec_order(
        self, graph: int | None = None, rank: int | None = None, limit: int = DEFAULT_LIMIT
    ) -> ExecOrderView:
        """The kernels of graph ``graph`` (default: the first with kernels) in execution order."""
        if self.tree is None:
            raise DumpError(f"{self.path}: execution orders are in RDR trees only (SESSION.graph_exec_order.*)")
        where = self.tree.rank(rank)
        orders = where.of_kind("exec_order")
        if graph is not None:
            orders = [f for f in orders if f.graph_id == graph]
            if not orders:
                ids = ", ".join(str(f.graph_id) for f in where.of_kind("exec_order"))
                raise DumpError(
                    f"rank {where.rank} has no execution order of graph {graph}; it has graphs {ids or 'none'}"
                )
        if not orders:
            raise DumpError(f"rank {where.rank} has no execution order (mode 1 without a failure exports none)")
        order = None
        for candidate in sorted(orders, key=lambda f: f.graph_id or 0):
            order = rdr.read_exec_order(candidate.path)
            if order.entries or graph is not None:
                break
        ir_path = next(
            (
                f.path
                for f in where.of_kind("graph")
                if f.name == f"graph_build.{order.entries[0].graph_id if order.entries else -1}"
            ),
            None,
        )
        nodes = _kernel_nodes(self._ir(ir_path)) if ir_path else []
        memory = {}
        for mem in where.of_kind("memory"):
            memory.update({k.name: k.total for k in rdr.read_memory(mem.path).kernels})
        rows = []
        for entry in order.entries[:limit]:
            node = _take(nodes, entry)
            source = node.source if node else None
            code, in_cell, number, line = _code(source)
            rows.append(
                ExecRow(
                    entry.index,
                    entry.op,
                    entry.name,
                    node.scope if node else "",
                    ir_path.name if ir_path and node else "",
                    node.lineno if node else None,
                    str(source) if source else "",
                    code,
                    in_cell,
                    memory.get(node.scope) if node else None,
                    number,
                    line,
                    tuple(node.inputs) if node else (),
                    node.input_types if node else "",
                    node.output_type if node else "",
                    node.id if node else "",
                )
            )
        gid = order.entries[0].graph_id if order.entries else graph
        return ExecOrderView(str(order.path), gid, tuple(rows), len(order.entries), str(ir_path or ""))

    def memory(self, rank: int | None = None, limit: int = DEFAULT_LIMIT) -> MemoryView:
        """Memory per kernel from the RDR memory address list, largest first."""
        if self.tree is None:
            raise DumpError(f"{self.path}: memory address lists are in RDR trees only")
        where = self.tree.rank(rank)
        files = where.of_kind("memory")
        if not files:
            raise DumpError(f"rank {where.rank} has no memory address list (RDR writes one in mode 2)")
        listing = rdr.read_memory(files[0].path)
        rows = tuple(
            MemoryRow(
                k.name,
                k.input_bytes,
                k.workspace_bytes,
                k.output_bytes,
                k.total,
                (len(k.inputs), len(k.workspaces), len(k.outputs)),
            )
            for k in listing.largest_first()[:limit]
        )
        return MemoryView(str(files[0].path), rows, len(listing.kernels), listing.totals)

    def diff(self, before: str, after: str, rank: int | None = None, limit: int = DEFAULT_LIMIT) -> GraphDiff:
        """Nodes that appeared, vanished or changed between two IR files.

        Nodes are matched by op and scope (their numbers change from pass to pass); a
        matched node "changed" when its input or output types differ.
        """
        a_path, b_path = self._resolve(before, rank), self._resolve(after, rank)
        a, b = self._ir(a_path), self._ir(b_path)
        a_nodes, b_nodes = _keyed(a), _keyed(b)
        rows: list[DiffRow] = []
        counts = Counter()
        for key in list(a_nodes) + [k for k in b_nodes if k not in a_nodes]:
            old, new = a_nodes.get(key, []), b_nodes.get(key, [])
            for x, y in zip(old, new, strict=False):
                if (x.input_types, x.output_type) != (y.input_types, y.output_type):
                    counts["changed"] += 1
                    rows.append(DiffRow("changed", key[0], key[1], _short(x), _short(y)))
            for x in old[len(new) :]:
                counts["vanished"] += 1
                rows.append(DiffRow("vanished", key[0], key[1], _short(x), ""))
            for y in new[len(old) :]:
                counts["appeared"] += 1
                rows.append(DiffRow("appeared", key[0], key[1], "", _short(y)))
        order = {"vanished": 0, "appeared": 1, "changed": 2}
        rows.sort(key=lambda r: order[r.change])
        ops_a, ops_b = a.op_counts(), b.op_counts()
        op_changes = tuple(
            (op, ops_a.get(op, 0), ops_b.get(op, 0))
            for op in sorted(set(ops_a) | set(ops_b))
            if ops_a.get(op) != ops_b.get(op)
        )
        for change in ("appeared", "vanished", "changed"):
            counts.setdefault(change, 0)
        return GraphDiff(
            str(a_path), str(b_path), dict(counts), tuple(rows[:limit]), (a.node_count, b.node_count), op_changes
        )

    def pb(self, name: str, rank: int | None = None) -> PbSummary:
        """A ``.pb`` graph file (RDR ``SESSION.graph_build.<gid>`` or ``ms_output_*``)."""
        from ..backend.protos import anf_ir_model

        if self.tree is not None:
            path = self.tree.rank(rank).find(name, kinds=("graph_pb",)).path
        elif self.saved is not None:
            matches = [f for f in self.saved.files if f.ext == "pb" and name in f.relative]
            if len(matches) != 1:
                raise DumpError(f"{name!r} matches {len(matches)} .pb files in {self.path}")
            path = matches[0].path
        else:
            raise DumpError(f"{self.path} is a single IR file")
        data = read_regular(path, PB_LIMIT, DumpError, "graph .pb file", follow=False)
        try:
            model = anf_ir_model(data)
        except ValueError as error:
            raise DumpFormatError(f"{path}: not a mindspore.irpb.ModelProto ({error})") from None
        if model is None:
            return PbSummary(str(path), "", (), (), available=False)
        nodes = tuple((n.name, n.op_type, n.full_name) for n in model.graph.node)
        ops = Counter(op for _, op, _ in nodes)
        return PbSummary(str(path), model.graph.name, nodes, tuple(ops.most_common()))

    def files(self, kind: str | None = None, rank: int | None = None) -> list[Path]:
        """Paths of the dump's files, of one kind (see the summary) if given."""
        if self.tree is not None:
            where = self.tree.rank(rank)
            return [f.path for f in where.files if kind is None or f.kind == kind]
        if self.saved is not None:
            return [f.path for f in self.saved.files if kind is None or f.family == kind]
        return [self.path]


def open_dump(path: str | os.PathLike):
    """An explorer of the RDR tree, save_graphs directory, ``.ir`` file or data dump at ``path``.

    Raises
    ------
    DumpError
        When there is nothing there that msdebug can read; the message names the path.
    """
    from . import datadump, datadump_explorer

    if datadump.find_data_dump(path) is not None:  # rank_*/execution_order: MindSpore's data dump
        return datadump_explorer.DataDumpExplorer(path)
    return Explorer(path)


# --------------------------------------------------------------------------- helpers


def _file_groups(files, kind_of, titles: dict[str, str]) -> tuple[FileGroup, ...]:
    """Count and size ``files`` per kind, in the order of ``titles``."""
    by_kind: dict[str, list] = {}
    for f in files:
        by_kind.setdefault(kind_of(f), []).append(f)
    return tuple(
        FileGroup(kind, title, len(by_kind[kind]), sum(f.size for f in by_kind[kind]))
        for kind, title in titles.items()
        if kind in by_kind
    )


def _rank_summary(where: rdr.RdrRank) -> RankSummary:
    groups = _file_groups(where.files, lambda f: f.kind, rdr.KINDS)
    if where.others:
        sizes = sum(_size(p) for p in where.others)
        groups += (FileGroup("unknown", "files RDR does not write", len(where.others), sizes),)
    stages = tuple(
        StageRow(f.stage[0] if f.stage else None, f.label, f.path.name, f.counter, f.size) for f in where.stages()
    )
    times = sorted(f.timestamp for f in where.files)
    when = {t: rdr.RdrFile(Path(), "", "", t, None, "", 0).when for t in (times[:1] + times[-1:])}
    return RankSummary(
        where.rank,
        str(where.path),
        groups,
        stages,
        tuple(where.graph_ids()),
        when.get(times[0], "") if times else "",
        when.get(times[-1], "") if times else "",
        tuple(p.name for p in where.others),
    )


_HEAD_BYTES = 16384
_HEAD_SUBGRAPHS = re.compile(rb"^# Total subgraphs: ([0-9]+)$", re.M)
_HEAD_CNODES = re.compile(rb"^Total number of cnodes: ([0-9]+)$", re.M)


def _header_nodes(path: Path) -> int | None:
    """The node count an IR file's header states (cnodes less one Return per graph), read from
    its first 16 KiB: the chart of a dump with 100 MB stages costs no parse. None without one."""
    try:
        with open_regular(path, DumpError, follow=False) as handle:
            head = handle.read(_HEAD_BYTES)
    except (DumpError, OSError):
        return None
    subgraphs, cnodes = _HEAD_SUBGRAPHS.search(head), _HEAD_CNODES.search(head)
    if subgraphs is None or cnodes is None:
        return None
    subgraphs, cnodes = (ascii_number(m.group(1).decode("ascii")) for m in (subgraphs, cnodes))
    if subgraphs is None or cnodes is None or cnodes < subgraphs:  # beyond int64, or not a count of this
        return None
    return cnodes - subgraphs


def _what_is_there(saved: graphs.GraphsDir) -> str:
    """``; it has 2 files: ...`` with a hint when they look like something else msdebug reads."""
    files = saved.files
    unlisted = "".join(f"; {line}" for line in (saved.limit_line(), saved.unlisted_line()) if line)
    if not files:
        return "; it is empty" + (" as far as msdebug could list it" + unlisted if unlisted else "")
    names = ", ".join(graphs.shown_name(f.relative, 60) for f in files[:4]) + (" ..." if len(files) > 4 else "")
    text = f"; it has {len(files)} file{'s' * (len(files) != 1)}: {names}"
    pbs = [f for f in files if f.ext == "pb"]
    if pbs:
        text += f". Print files? msdebug.read_print_file({echo(pbs[0].location)}) reads one"
    return text + unlisted


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _graphs_summary(saved: graphs.GraphsDir) -> DumpSummary:
    groups = _file_groups(saved.files, lambda f: f.family, graphs.FAMILIES)
    stages = tuple(
        StageRow(f.stage[0] if f.stage else None, f.stem, f.relative, f.counter, f.size) for f in saved.family("stage")
    )
    ids = sorted({f.graph_id for f in saved.files if f.family == "kernel_graph" and f.graph_id is not None})
    rank = RankSummary(None, str(saved.root), groups, stages, tuple(ids))
    size = sum(f.size for f in saved.files)
    hints = tuple(line for line in (saved.limit_line(), saved.unlisted_line()) if line)
    return DumpSummary("graphs", str(saved.root), (rank,), len(saved.files), size, hints)


def _code(source) -> tuple[str, bool, int | None, int]:
    """The code to show for ``source``, whether it is a notebook cell, the cell's number, and
    the line (in a cell, as typed: :func:`.cells.place` names it so everywhere)."""
    if source is None:
        return "", False, None, 0
    in_cell = cells.is_cell(source.path)
    line = cells.typed_line(source.path, source.line) if in_cell else source.line
    cell = cells.cell_code(source.path, source.line, source.end_line)
    if cell is not None:
        return cell, True, cells.cell_number(source.path), line
    return source.code.strip(), in_cell, cells.cell_number(source.path), line


def _node_row(node: IrNode) -> NodeRow:
    source = node.source
    code, in_cell, number, line = _code(source)
    return NodeRow(
        node.graph,
        node.id,
        node.name,
        node.op,
        node.scope,
        tuple(node.inputs),
        node.input_types,
        node.output_type,
        node.lineno,
        str(source) if source else "",
        code,
        in_cell,
        number,
        line,
    )


def _kernel_nodes(ir: IrFile) -> list[IrNode]:
    return [node for node in ir.nodes()]


def _take(nodes: list[IrNode], entry: rdr.ExecEntry) -> IrNode | None:
    """The first unclaimed IR node with the kernel's debug name and op (or op alone)."""
    for wanted in (lambda n: n.name == entry.name and n.op == entry.op, lambda n: n.op == entry.op):
        for i, node in enumerate(nodes):
            if wanted(node):
                return nodes.pop(i)
    return None


_OP_NUMBER = re.compile(r"-op\d+$")


def _keyed(ir: IrFile) -> dict[tuple[str, str], list[IrNode]]:
    """Nodes by op and scope, the scope's ``-opN`` dropped: passes renumber it (and debug
    names, so nodes without a scope are matched by op alone, in order)."""
    keyed: dict[tuple[str, str], list[IrNode]] = {}
    for node in ir.nodes():
        keyed.setdefault((node.op, _OP_NUMBER.sub("", node.scope)), []).append(node)
    return keyed


def _short(node: IrNode) -> str:
    text = f"{node.id} = {node.text}"
    return f"{text[:160]}…" if len(text) > 160 else text
