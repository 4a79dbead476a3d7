"""Runs: the ops one execution made, in execution order, each with its inputs' and outputs' values.

Pure: numpy only. Three kinds of directory hold one:

* a run msdebug saved: ``run.json`` beside one ``.npy`` per tensor (:func:`read_run`; the
  format is written by :mod:`msdebug.recorders.diff`), or one such run per rank in ``rank_<R>``
  folders, as ``%%msdiff --save`` writes inside ``%%msrun`` (:func:`read_ranked_run`);
* a MindSpore data dump (GRAPH mode, any rank, read by :mod:`.datadump`): one iteration of one
  graph (:func:`run_from_dump`) or the iterations a cell wrote (:func:`run_from_new_iterations`);
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

from ..errors import DumpError, DumpFormatError, InvalidValueError, did_you_mean
from ..files import ascii_number, read_regular

__all__ = [
    "RUN_FILE",
    "RUN_FORMAT",
    "RUN_VERSION",
    "STAT_KEYS",
    "Run",
    "RunOp",
    "TensorRef",
    "choose_rank",
    "dump_place",
    "open_ref",
    "read_ranked_run",
    "read_run",
    "run_from_dump",
    "run_from_new_iterations",
    "saved_ranks",
    "scope_of",
]

RUN_FILE = "run.json"
RUN_FORMAT = "msdebug-run"
RUN_VERSION = 1
STAT_KEYS = ("Max", "Min", "Mean", "Norm")  # the statistics a run may keep instead of values, as msprobe names them
_MAX_RUN_JSON = 256 << 20
_OP_NUMBER = re.compile(r"-op\d+$", re.ASCII)
_RANK_DIR = re.compile(r"^rank_(\d+)$", re.ASCII)  # a rank's folder: of a data dump, of runs saved by rank
_LISTED = 12  # ranks, graphs or iterations named in one message


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


def saved_ranks(path: str | os.PathLike) -> dict[int, Path]:
    """``{rank: folder}``: the ``rank_<R>`` folders of ``path`` that hold a saved run (what
    ``%%msdiff --save NAME`` writes inside ``%%msrun``: one folder per rank)."""
    found: dict[int, Path] = {}
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)[:100_000]
    except OSError:
        return found
    for entry in entries:
        match = _RANK_DIR.match(entry.name)
        number = ascii_number(match.group(1)) if match else None
        if number is not None and entry.is_dir(follow_symlinks=False) and os.path.isfile(Path(entry.path, RUN_FILE)):
            found[number] = Path(entry.path)
    return found


def read_ranked_run(path: str | os.PathLike, rank: int | None = None, job_rank: int | None = None) -> Run:
    """One rank of runs saved by rank (``NAME/rank_<R>/run.json``): ``rank``, else ``job_rank``
    (in an msrun job, each rank reads its own), else the first, which the run's notes name."""
    ranks = saved_ranks(path)
    number, notes = choose_rank(sorted(ranks), rank, job_rank, str(path))
    run = read_run(ranks[number])
    run.notes[:0] = notes
    return run


def _tensor_ref(root: Path, item: object, where: str, io: str, slot: int) -> TensorRef:
    if not isinstance(item, dict):
        raise DumpFormatError(f"{where}: not an object.")
    file = item.get("file")
    path = root / _untrusted_name(file, where) if file is not None else None
    shape, dtype = _shape(item.get("shape", []), where), _text(item.get("dtype"), 32)
    return TensorRef(f"{io} {slot}", path, shape, dtype, origin=_text(item.get("origin"), 240))


def run_from_dump(path: str | os.PathLike, rank: int | None = None, iteration: int | None = None,
                  graph_id: int | None = None, job_rank: int | None = None) -> Run:  # fmt: skip
    """One iteration of one graph of a MindSpore data dump, as a run.

    ``path`` is the dump path, or a folder inside it that names a rank (``rank_<R>``), a graph
    (``rank_<R>/<net>/<graph>``) or an iteration (``rank_<R>/<net>/<graph>/<iteration>``).
    Unless ``rank`` says, the rank is ``job_rank`` (this process's rank in an msrun job) or
    the first; unless ``graph_id`` says, the graph with the most kernels (a training step,
    not the small graphs around it: an init graph, a lone optimizer update); unless
    ``iteration`` says, that graph's first iteration. The run's notes say what was taken where
    there was a choice, and which others there are.

    Raises
    ------
    InvalidValueError
        For a rank, graph or iteration that is not in the dump; the message lists those that are.
    """
    from .datadump import read_data_dump

    place = dump_place(path)
    if place is None:
        raise DumpError(f"{path}: not a MindSpore data dump (no rank_*/execution_order or rank_*/.dump_metadata)")
    root, named = place
    for option, given, by_path in (("rank", rank, named[0]), ("graph", graph_id, named[1]),
                                   ("iteration", iteration, named[2])):  # fmt: skip
        if given is not None and by_path is not None and given != by_path:
            raise InvalidValueError(
                f"--{option} {given}: {path} is {option} {by_path} of the dump; give one of the two."
            )
    rank, graph_id, iteration = (given if given is not None else by_path
                                 for given, by_path in zip((rank, graph_id, iteration), named, strict=True))  # fmt: skip
    dump = read_data_dump(root)
    number, notes = choose_rank([r.rank for r in dump.ranks], rank, job_rank, str(root))
    where = dump.rank(number)
    it, chosen = _choose_iteration(where, iteration, graph_id, f"rank {number} of {root}")
    notes += chosen + list(it.notes)
    ops: list[RunOp] = []
    _add_ops(ops, it, _ir_places(where.ir_path(it.graph_id), notes))
    if not it.order_known:
        notes.append("the dump has no execution order for this graph: ops are in the order of their files' timestamps")
    if it.unmatched:
        notes.append(f"{len(it.unmatched)} tensor files of {it.path} matched no kernel of graph {it.graph_id} (a "
                     "second run of the graph written into the same iteration?): they are not compared")  # fmt: skip
    label = f"{Path(root).name} (rank {where.rank}, graph {it.graph_id}, iteration {it.iteration})"
    meta = {"rank": where.rank, "graph": it.graph_id, "iteration": it.iteration, "net": it.net,
            "ir": str(where.ir_path(it.graph_id) or "")}  # fmt: skip
    return Run(Path(root), "data dump", label, ops, meta, notes)


def dump_place(path: str | os.PathLike) -> tuple[Path, tuple[int | None, int | None, int | None]] | None:
    """``(dump root, (rank, graph, iteration))`` for a data dump's path or a folder inside it:
    what the folder itself names (``rank_1/Net/2/5``: rank 1, graph 2, iteration 5), None for
    what it leaves open; None when ``path`` is in no data dump."""
    from .datadump import find_data_dump

    here = Path(os.path.abspath(os.path.expanduser(path)))
    for depth in (0, 1, 2, 3):  # rank_<R>, rank_<R>/<net>, rank_<R>/<net>/<graph>, .../<graph>/<iteration>
        if len(here.parts) <= depth + 1:
            break
        rank_dir = here.parents[depth - 1] if depth else here
        found = _RANK_DIR.match(rank_dir.name)
        below = [ascii_number(part) for part in here.parts[len(rank_dir.parts) + 1 :]]
        if found is None or None in below or find_data_dump(rank_dir) is None:
            continue
        named = (ascii_number(found.group(1)), *below, *([None] * (2 - len(below))))
        return rank_dir.parent, named
    root = find_data_dump(here)
    return (root, (None, None, None)) if root is not None else None


def choose_rank(have: list[int], rank: int | None, job_rank: int | None, where: str) -> tuple[int, list[str]]:
    """Which of the ranks ``have`` of ``where`` to read, and a note where that was a choice:
    ``rank`` when given; else ``job_rank`` (this process's rank in an msrun job: each rank
    compares with its own, or with the one rank there is); else the first.

    Raises
    ------
    InvalidValueError
        For a ``rank`` (or ``job_rank``) that ``where`` does not have.
    """
    listed = _numbers(have)
    if not have:
        raise DumpError(f"{where}: no rank holds a run")
    if rank is not None:
        if rank not in have:
            raise InvalidValueError(f"--rank {rank}: {where} has no rank {rank}; it has rank {listed}."
                                    + did_you_mean(str(rank), map(str, have)))  # fmt: skip
        return rank, []
    if job_rank is not None:
        if job_rank in have:
            return job_rank, []
        if len(have) == 1:
            return have[0], [f"{where} has rank {have[0]} only: rank {job_rank} of this msrun job compares with it"]
        raise InvalidValueError(
            f"{where} has rank {listed} but not {job_rank}, this process's rank in its msrun job: choose one "
            "with --rank R."
        )
    if len(have) > 1:
        return have[0], [f"rank {have[0]} of {where} taken (it has rank {listed}): choose another with --rank R"]
    return have[0], []


def _choose_iteration(where, iteration: int | None, graph: int | None, named: str):
    """The iteration of :func:`run_from_dump` in one rank of a dump, and the notes on that choice."""
    iterations = where.iterations
    if not iterations:
        raise DumpError(f"{named}: no iteration was dumped")
    kernels: dict[int, int] = {}
    for it in iterations:
        kernels[it.graph_id] = max(kernels.get(it.graph_id, 0), len(where.exec_orders.get(it.graph_id) or ()),
                                   len(it.ops))  # fmt: skip

    def graphs(ids) -> str:
        shown = [f"{gid} ({kernels[gid]} kernels)" for gid in sorted(ids)]
        return ", ".join(shown[:_LISTED]) + (f" and {len(shown) - _LISTED} more" if len(shown) > _LISTED else "")

    if graph is not None and graph not in kernels:
        raise InvalidValueError(f"--graph {graph}: {named} has no graph {graph}; it has graph {graphs(kernels)}."
                                + did_you_mean(str(graph), map(str, kernels)))  # fmt: skip
    in_graph = [it for it in iterations if graph is None or it.graph_id == graph]
    taken = [it for it in in_graph if iteration is None or it.iteration == iteration]
    if not taken:
        have = sorted({it.iteration for it in in_graph})
        scope = named if graph is None else f"graph {graph} of {named}"
        raise InvalidValueError(f"--iteration {iteration}: {scope} has no iteration {iteration}; it has iteration "
                                f"{_numbers(have)}." + did_you_mean(str(iteration), map(str, have)))  # fmt: skip
    notes = []
    if graph is None:
        ids = {it.graph_id for it in taken}
        last = {gid: max(it.first_timestamp for it in taken if it.graph_id == gid) for gid in ids}
        graph = max(ids, key=lambda gid: (kernels[gid], last[gid]))  # a tie: the graph that ran last
        if len(ids) > 1:
            at = "" if iteration is None else f" at iteration {iteration}"
            notes.append(f"graph {graph} taken, the one with the most kernels ({kernels[graph]}); {named} also has "
                         f"graph {graphs(ids - {graph})}{at}: choose with --graph G")  # fmt: skip
    it = next(it for it in taken if it.graph_id == graph)  # iterations are sorted by number
    if iteration is None:
        others = sorted({i.iteration for i in iterations if i.graph_id == graph} - {it.iteration})
        if others:
            notes.append(f"iteration {it.iteration} of graph {graph} taken, its first; it also ran at iteration "
                         f"{_numbers(others)}: choose with --iteration N")  # fmt: skip
    return it, notes


def _numbers(numbers) -> str:
    shown = [str(n) for n in sorted(numbers)]
    return ", ".join(shown[:_LISTED]) + (f" and {len(shown) - _LISTED} more" if len(shown) > _LISTED else "")


def run_from_new_iterations(path: str | os.PathLike, skip: set[str], label: str, rank: int | None = None) -> Run:
    """The iterations of a data dump that are not in ``skip`` (what one cell ran), as one run:
    one rank's iterations in the order they ran, each graph's ops in execution order. The rank
    is ``rank`` (this process's rank in an msrun job, whose ranks may share the dump path) where
    it has new iterations, else the first rank that has."""
    from .datadump import read_data_dump

    dump = read_data_dump(path, skip=skip)
    notes: list[str] = []
    ops: list[RunOp] = []
    ranks = [r for r in dump.ranks if r.iterations]
    if not ranks:
        notes.append("the data dump has no new iteration: the cell ran no graph")
        return Run(Path(path), "data dump", label, ops, {}, notes)
    where = next((r for r in ranks if r.rank == rank), ranks[0])
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
