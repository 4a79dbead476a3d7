"""A rank's flight recorder: the communication it launched, in order, and the cells it ran.

Like PyTorch's NCCL Flight Recorder, each rank keeps its last communication ops: for each, its
sequence number in its stream (a group's collectives; the messages from one rank to another),
the op, group, dtypes and shapes, and where it was launched (the notebook cell and line, the
cell that launched it). The rank writes (:class:`Recorder`, fed by
:class:`msdebug.backend.ranks.Watch`), the pool reads (:func:`read_flight`) when it judges a
hang: nothing is asked of the rank, which may be stuck in MindSpore's C++ with the GIL held.

One file per rank, ``<pool>/rank<R>.flight``, of fixed size, mapped into the rank's memory: a
record is a copy into memory, no system call. Layout: a header (magic, cells written, records
written), then two rings of fixed-size slots, each slot a length and a JSON object:

* cells: ``{"n": number, "f": file, "o": offset}``, the file ipykernel ran cell ``n`` from and
  what to add to its line numbers to make them the notebook cell's;
* records: ``{"i": index, "s": seq, "st": stream, "g": group, "o": op, "k": kind, "t": tensors,
  "at": [[cell, file, line, function], ...], "c": cell, "p": peer, "d": direction, "gr": graph,
  "r": ranks}``.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..dumps import cells
from ..errors import MsDebugError
from ..files import read_regular
from .collectives import COLLECTIVE, POINT_TO_POINT, communication

__all__ = ["CELL_MARK", "Flight", "Record", "Recorder", "Where", "read_flight"]

#: The first line the pool puts in front of a cell it sends (its line 1 is the ``%%msrun`` line);
#: a cell sent without it (a nested cell magic first) counts from line 2 of the notebook cell.
CELL_MARK = "# %%msrun\n"

_MAGIC = b"msdflt1\0"
_HEADER = struct.Struct("<8sQQQ")  # magic, cells written, records written, reserved
_LENGTH = struct.Struct("<H")
CELLS, CELL_SLOT = 128, 512
RECORDS, RECORD_SLOT = 2048, 512
_CELLS_AT = _HEADER.size
_RECORDS_AT = _CELLS_AT + CELLS * CELL_SLOT
SIZE = _RECORDS_AT + RECORDS * RECORD_SLOT
_MAX_RANKS = 64  # a group's ranks kept in its records
_MAX_NUMBERS = 4096  # cell files remembered by the rank


@dataclass(frozen=True)
class Where:
    """A place in the person's code: a notebook cell's line, or a file's."""

    cell: int | None
    path: str
    line: int
    function: str = ""

    def __str__(self) -> str:
        if self.cell is not None:
            return f"cell [{self.cell}], line {self.line}"
        return f"{os.path.basename(self.path)}:{self.line}"


@dataclass(frozen=True)
class Record:
    """One communication op a rank launched."""

    index: int  # among all the rank's records
    seq: int  # among its stream's, from 1
    stream: str  # the group (collectives), or "group:sender>receiver" (point-to-point)
    group: str
    op: str
    kind: str  # COLLECTIVE or POINT_TO_POINT
    tensors: tuple[tuple[str, tuple[int, ...]], ...] = ()
    at: tuple[Where, ...] = ()  # innermost first
    cell: int | None = None  # the cell that launched it
    peer: int | None = None  # the other rank (world rank) of a point-to-point op
    direction: str = ""  # "send" or "receive"
    graph: str = ""
    ranks: tuple[int, ...] = ()  # the group's world ranks, when known

    @property
    def shapes(self) -> str:
        """``float32 [2]``, ``float32 [2], int32 [4, 4]``."""
        return ", ".join(f"{dtype} [{', '.join(map(str, shape))}]" for dtype, shape in self.tensors)

    @property
    def signature(self) -> tuple:
        """What every rank's record at this place must agree on: the op (a send and its receive
        are one message), the dtypes and shapes of collectives whose inputs are alike on every
        rank, the dtypes of the others."""
        if self.kind == POINT_TO_POINT:
            return ("message", tuple(dtype for dtype, _ in self.tensors))
        if self.op in _SAME_SHAPE:
            return (self.op, self.tensors)
        return (self.op, tuple(dtype for dtype, _ in self.tensors))


_SAME_SHAPE = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", "Barrier", "AllToAll"}


@dataclass
class Flight:
    """What one rank's recorder holds: its records in order, and its cell files."""

    rank: int
    records: list[Record] = field(default_factory=list)
    written: int = 0  # records ever written (the first ones may be gone from the ring)
    cells: dict[str, tuple[int, int]] = field(default_factory=dict)  # file -> (number, offset)
    running: str = ""  # the file of the cell it runs now (its last)

    def streams(self) -> dict[str, list[Record]]:
        found: dict[str, list[Record]] = {}
        for record in self.records:
            found.setdefault(record.stream, []).append(record)
        return found


# --------------------------------------------------------------------------- the rank's side


class Recorder:
    """The rank's writer, at ``path`` (created; it must not exist)."""

    def __init__(self, path: str | os.PathLike, rank: int) -> None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            os.ftruncate(fd, SIZE)
            self._map = mmap.mmap(fd, SIZE)
        finally:
            os.close(fd)
        _HEADER.pack_into(self._map, 0, _MAGIC, 0, 0, 0)
        self.rank = rank
        self.cell_number: int | None = None
        self._offsets: dict[str, tuple[int, int]] = {}
        self._seqs: dict[str, int] = {}
        self._cells = 0
        self._records = 0
        self._lock = threading.Lock()

    def cell(self, number: int, path: str, raw: str) -> None:
        """The rank starts cell ``number``, run from ``path``; ``raw`` is the cell as sent."""
        offset = 0 if raw.startswith(CELL_MARK) else 1
        with self._lock:
            self.cell_number = number
            self._offsets.pop(path, None)
            self._offsets[path] = (number, offset)
            while len(self._offsets) > _MAX_NUMBERS:
                del self._offsets[next(iter(self._offsets))]
            data = _fit({"n": number, "f": path, "o": offset}, CELL_SLOT)
            if data is not None:
                _put(self._map, _CELLS_AT + (self._cells % CELLS) * CELL_SLOT, data)
                self._cells += 1
                _HEADER.pack_into(self._map, 0, _MAGIC, self._cells, self._records, 0)

    def launched(self, launch) -> None:
        """Record a :class:`msdebug.backend.ranks.Launch` (the watch's ``note``)."""
        named = communication(launch.op, known=True)
        op, kind = named if named is not None else (launch.op, COLLECTIVE)
        ranks = tuple(launch.ranks)
        peer, direction = None, ""
        if kind == POINT_TO_POINT and launch.peer is not None:
            peer = ranks[launch.peer] if 0 <= launch.peer < len(ranks) else launch.peer
            direction = "receive" if op == "Receive" else "send"
        with self._lock:
            if peer is None:
                stream = launch.group if kind == COLLECTIVE else f"{launch.group}:batch"
            else:
                sender, receiver = (self.rank, peer) if direction == "send" else (peer, self.rank)
                stream = f"{launch.group}:{sender}>{receiver}"
            seq = self._seqs[stream] = self._seqs.get(stream, 0) + 1
            record = {
                "i": self._records, "s": seq, "st": stream, "g": launch.group, "o": op, "k": kind,
                "t": [[dtype, list(shape)] for dtype, shape in launch.tensors],
                "at": [self._where(path, line, function) for path, line, function in launch.frames],
                "c": self.cell_number,
            }  # fmt: skip
            if peer is not None:
                record.update(p=peer, d=direction)
            if launch.graph:
                record["gr"] = launch.graph
            if ranks and len(ranks) <= _MAX_RANKS:
                record["r"] = list(ranks)
            data = _fit(record, RECORD_SLOT)
            if data is None:
                return
            _put(self._map, _RECORDS_AT + (self._records % RECORDS) * RECORD_SLOT, data)
            self._records += 1
            _HEADER.pack_into(self._map, 0, _MAGIC, self._cells, self._records, 0)

    def _where(self, path: str, line: int, function: str) -> list:
        number, offset = self._offsets.get(path, (None, 0))
        return [number, path, line + offset, function]

    def graph_nodes(self, ir: str) -> list:
        """The launches of a compiled graph's communication nodes (IR text), in order, each at
        its own line (the watch adds the frames of the graph's call)."""
        from ..backend.ranks import Launch
        from ..dumps.ir import parse_ir

        launches = []
        for graph in parse_ir(ir).graphs:
            location = graph.source
            for node in graph.nodes:
                op = node.op.removeprefix("PrimFunc_")
                if communication(op) is None:
                    continue
                frames = []
                where = node.source or location
                if where is not None:
                    frames.append((where.path, _node_line(node, where), _graph_name(graph.name)))
                launches.append(
                    Launch(op, _attribute(node.text, "group"), _tensors(node.input_types), frames,
                           _number(_attribute(node.text, "dest_rank") or _attribute(node.text, "src_rank")),
                           graph=_graph_name(graph.name))
                )  # fmt: skip
        return launches

    def close(self) -> None:
        self._map.close()


def _fit(record: dict, slot: int) -> bytes | None:
    """``record`` as JSON that fits a slot: the group's ranks go first, then outer frames and
    later tensors, then the frames' folders; None when even that is too long."""
    while True:
        data = json.dumps(record, separators=(",", ":")).encode("utf-8", "replace")
        if len(data) + _LENGTH.size <= slot:
            return data
        if "r" in record:
            del record["r"]
        elif len(record.get("at") or ()) > 1:
            record["at"] = record["at"][:-1]
        elif len(record.get("t") or ()) > 1:
            record["t"] = record["t"][:-1]
        elif record.get("at") and record["at"][0][1] != os.path.basename(record["at"][0][1]):
            record["at"][0][1] = os.path.basename(record["at"][0][1])
        else:
            return None


def _put(target: mmap.mmap, at: int, data: bytes) -> None:
    _LENGTH.pack_into(target, at, len(data))
    target[at + _LENGTH.size : at + _LENGTH.size + len(data)] = data


def _attribute(text: str, name: str) -> str:
    """A node's primitive attribute ``name: "value"`` or ``name: I64(3)`` ('' when absent)."""
    key = f"{name}: "
    start = text.find(key)
    if start < 0:
        return ""
    rest = text[start + len(key) :]
    if rest.startswith('"'):
        return rest[1 : rest.find('"', 1)]
    end = min((i for i in (rest.find(","), rest.find("}")) if i >= 0), default=len(rest))
    value = rest[:end]
    return value[value.find("(") + 1 : value.rfind(")")] if "(" in value else value


def _number(text: str) -> int | None:
    return int(text) if text.lstrip("-").isdigit() else None


def _tensors(types: str) -> list[tuple[str, tuple[int, ...]]]:
    """``(<Tensor[Float32], (2, 3)>, <Int64, NoShape>)`` -> ``[("float32", (2, 3))]``."""
    found = []
    for piece in types.split("<Tensor[")[1:4]:
        dtype, _, rest = piece.partition("]")
        dims = rest[rest.find("(") + 1 : rest.find(")")] if "(" in rest else ""
        shape = tuple(int(d) for d in dims.replace(" ", "").split(",") if d.lstrip("-").isdigit())
        found.append((dtype.lower(), shape))
    return found


def _graph_name(name: str) -> str:
    """``5_1___main___Net_construct_4`` -> ``Net_construct``: the graph MindSpore compiled."""
    parts = name.split("_")
    while parts and parts[0].isdigit():
        parts.pop(0)
    if parts and parts[-1].isdigit():
        parts.pop()
    text = "_".join(parts)
    for prefix in ("__main___", "__main__"):
        text = text.removeprefix(prefix)
    return text or name


def _node_line(node, where) -> int:
    """The line of ``node`` inside the function ``where`` spans: the line that calls the Cell
    attribute the node was made from (``self.ar(x)`` for ``instance name: ar``), else where the
    function starts (MindSpore's IR of a compiled graph names each node's function, not its line)."""
    import linecache

    if node.source is not None:
        return where.line
    instance = _instance(node.text)
    on_disk = os.path.isfile(where.path)
    if instance and (on_disk or (cells.is_cell(where.path) and not os.path.lexists(where.path))):
        lines = linecache.getlines(where.path)  # IPython keeps every cell there, on disk or not
        for number in range(where.line, min(where.end_line, len(lines)) + 1):
            if f".{instance}(" in lines[number - 1]:
                return number
    return where.line


def _instance(text: str) -> str:
    start = text.find("{instance name: ")
    if start < 0:
        return ""
    rest = text[start + len("{instance name: ") :]
    return rest[: rest.find("}")].strip()


# --------------------------------------------------------------------------- the pool's side


def read_flight(path: str | os.PathLike, rank: int) -> Flight | None:
    """The records and cells of the rank's file at ``path`` (None when there is none, or it is
    not a flight file): the slots a rank overwrote while this read them are left out."""
    try:
        data = read_regular(path, SIZE)
    except MsDebugError:
        return None
    if len(data) < SIZE:
        return None
    magic, cells, written, _ = _HEADER.unpack_from(data, 0)
    if magic != _MAGIC:
        return None
    flight = Flight(rank, written=written)
    for index in range(max(0, cells - CELLS), cells):
        cell = _slot(data, _CELLS_AT + (index % CELLS) * CELL_SLOT, CELL_SLOT)
        if cell is not None and isinstance(cell.get("f"), str) and isinstance(cell.get("n"), int):
            flight.cells.pop(cell["f"], None)
            flight.cells[cell["f"]] = (cell["n"], int(cell.get("o") or 0))
            flight.running = cell["f"]
    for index in range(max(0, written - RECORDS), written):
        raw = _slot(data, _RECORDS_AT + (index % RECORDS) * RECORD_SLOT, RECORD_SLOT)
        if raw is None or raw.get("i") != index:
            continue
        try:
            flight.records.append(_record(raw))
        except (KeyError, TypeError, ValueError):
            continue
    return flight


def _slot(data: bytes, at: int, size: int) -> dict | None:
    (length,) = _LENGTH.unpack_from(data, at)
    if not 0 < length <= size - _LENGTH.size:
        return None
    try:
        value = json.loads(data[at + _LENGTH.size : at + _LENGTH.size + length])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _record(raw: Mapping) -> Record:
    return Record(
        index=int(raw["i"]),
        seq=int(raw["s"]),
        stream=str(raw["st"]),
        group=str(raw["g"]),
        op=str(raw["o"]),
        kind=str(raw["k"]),
        tensors=tuple((str(dtype), tuple(int(d) for d in shape)) for dtype, shape in raw.get("t") or ()),
        at=tuple(_where(item) for item in raw.get("at") or ()),
        cell=raw.get("c") if isinstance(raw.get("c"), int) else None,
        peer=raw.get("p") if isinstance(raw.get("p"), int) else None,
        direction=str(raw.get("d") or ""),
        graph=str(raw.get("gr") or ""),
        ranks=tuple(int(rank) for rank in raw.get("r") or ()),
    )


def _where(item: Iterable) -> Where:
    cell, path, line, function = item
    return Where(cell if isinstance(cell, int) else None, str(path), int(line), str(function))
