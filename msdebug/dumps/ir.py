"""The ``.ir`` text format MindSpore writes for RDR and save_graphs.

One pass over the lines, dispatching on their first characters; the details of a node
(its inputs, output shape, source locations) are parsed only when asked for, so a file of
hundreds of megabytes reads at a good fraction of the speed of reading its lines.

Layout (MindSpore 2.7.0 and 2.10)::

    # IR entry: @graph                       header lines, in any order
    # Total subgraphs: 3
    # Attrs: / key: value
    # Total params: 3 / # Params: / %para1_x: <abstract>
    Total number of nodes: 51 / Total number of cnodes: 21
    subgraph attr: ... / subgraph instance: ... / # In file ...
    subgraph @graph(%para1_x) {
      %0(name) = Op(%para1_x, ...) {instance name: ...} primitive_attrs: {...} cnode_attrs: {...}
          : (<inputs>) -> (<output>)
          # Fullname with scope: (Default/Op-op0)       (# Scope: in front-end files)
          # In file /path.py:12~14, 8~20/    code/
      Return(%0)
    }
"""

from __future__ import annotations

import operator
import os
import re
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import BinaryIO

import numpy as np

from ..errors import DumpError, DumpFormatError
from ..files import ascii_number, open_regular

__all__ = [
    "GraphCounts",
    "IrFile",
    "IrGraph",
    "IrGraphs",
    "IrNode",
    "SourceLocation",
    "parse_ir",
    "read_ir",
    "looks_binary",
]

# ASCII whitespace, as in the byte patterns of the scan, so a node's op is the one op_counts counted.
_CALLEE = re.compile(r"(call @[^\s(]+|%\d+|[^\s(\[]+)", re.ASCII)
_REFERENCE = re.compile(r"(?<![\w$@])(%para\d+_[^\s,()\[\]{}]+|%\d+|@[^\s,()\[\]{}]+)")
_LOCATION = re.compile(
    # The code is missing where MindSpore could not read the file (a terminal IPython's cells).
    r"# In file (?P<path>.+?):(?P<line>\d+)(?:~(?P<end>\d+))?(?:, (?P<c1>\d+)~(?P<c2>\d+))?/(?:(?P<code>.*?)/)?"
    r"(?:<~~.*)?$",
    re.ASCII,
)
_TENSOR = re.compile(r"<(?:Ref\[)?Tensor\[(\w+)\]\]?, \(([^)]*)\)")
_INSTALLED = ("/site-packages/", "/dist-packages/")

# How much of a file's start decides whether it is text at all.
_SNIFF = 8192


@dataclass(frozen=True)
class SourceLocation:
    """One ``# In file path:line[~end], col~col/code/`` line."""

    path: str
    line: int
    end_line: int
    columns: tuple[int, int] | None
    code: str

    @property
    def installed(self) -> bool:
        """Whether the file belongs to an installed package (MindSpore's own layers, say)."""
        return any(part in self.path for part in _INSTALLED)

    def __str__(self) -> str:
        span = f"{self.line}~{self.end_line}" if self.end_line != self.line else str(self.line)
        return f"{self.path}:{span}"

    @classmethod
    def parse(cls, text: str) -> SourceLocation | None:
        match = _LOCATION.search(text)
        if match is None:
            return None
        line = ascii_number(match["line"])
        end = ascii_number(match["end"]) if match["end"] else line
        columns = (ascii_number(match["c1"]), ascii_number(match["c2"])) if match["c1"] else None
        if line is None or end is None or (columns is not None and None in columns):
            return None  # a number beyond int64 is no place in a file: not a location
        return cls(match["path"], line, end, columns, match["code"] or "")


class IrNode:
    """One CNode line and its continuation lines.

    ``op`` is the primitive (``PrimFunc_MatMul``, ``Load``) or ``call`` for calls of a
    graph or of a value; ``callee`` then says which (``@graph`` or ``%10``). The
    continuation lines are kept as they are and read when a property needs them.
    """

    __slots__ = ("index", "name", "graph", "lineno", "text", "block", "_op", "_details", "_digits")

    def __init__(self, index: int | str, name: str, text: str, block: str, graph: str, lineno: int) -> None:
        # ``index`` as the file spells it ("%007" stays "%007" in id); -1 beyond int64.
        self._digits = str(index)
        number = ascii_number(index) if isinstance(index, str) else index
        self.index = -1 if number is None else number
        self.name = name
        self.text = text
        self.block = block
        self.graph = graph
        self.lineno = lineno
        self._op: tuple[str, str] | None = None
        self._details: tuple[str, str, tuple[str, ...]] | None = None

    def _callee(self) -> tuple[str, str]:
        if self._op is None:
            match = _CALLEE.match(self.text)
            callee = match.group(1) if match else self.text[:40]
            if callee.startswith("call @"):
                self._op = ("call", callee[5:])
            elif callee.startswith("%"):
                self._op = ("call", callee)
            else:
                self._op = (callee, "")
        return self._op

    @property
    def op(self) -> str:
        return self._callee()[0]

    @property
    def callee(self) -> str:
        return self._callee()[1]

    def _parse_block(self) -> tuple[str, str, tuple[str, ...]]:
        if self._details is None:
            abstract = scope = ""
            where = []
            for line in self.block.splitlines():
                body = line.strip()
                if body.startswith(":"):
                    if not abstract:
                        abstract = body[1:].strip()
                elif body.startswith("# In file "):
                    where.append(body)
                elif body.startswith(("# Fullname with scope: (", "# Scope: (")):
                    scope = body[body.index("(") + 1 : -1]
            self._details = (abstract, scope, tuple(where))
        return self._details

    @property
    def abstract(self) -> str:
        """``(<inputs>) -> (<output>)`` as dumped; '' when the dump has none."""
        return self._parse_block()[0]

    @property
    def scope(self) -> str:
        """``Default/dense-Dense/MatMul-op0`` (``# Fullname with scope`` or ``# Scope``)."""
        return self._parse_block()[1]

    @property
    def id(self) -> str:
        """``%3``, as other nodes of the same graph refer to it."""
        return f"%{self._digits}"

    @property
    def inputs(self) -> list[str]:
        """Nodes, parameters and graphs this node uses: ``['%para1_x', '%0', '@graph']``."""
        op, callee = self._callee()
        if op == "call" and callee.startswith("%"):  # the called value is an input too
            rest = self.text[len(callee) :]
            return [callee, *(r for r in _REFERENCE.findall(rest) if r != "@FuncUnion")]
        start = self.text.find("(")
        return _REFERENCE.findall(self.text[start + 1 :]) if start >= 0 else []

    @property
    def input_types(self) -> str:
        """The input abstracts, ``(<Tensor[Float32], (1, 3)>, ...)``; '' when not dumped."""
        abstract = self.abstract
        return abstract.rpartition(" -> ")[0] if " -> " in abstract else ""

    @property
    def output_type(self) -> str:
        """The output abstract, ``(<Tensor[Float32], (1, 2)>)``; '' when not dumped."""
        abstract = self.abstract
        return abstract.rpartition(" -> ")[2] if " -> " in abstract else abstract

    @property
    def output_dtype(self) -> str:
        match = _TENSOR.search(self.output_type)
        return match.group(1) if match else ""

    @property
    def output_shape(self) -> tuple[int, ...] | None:
        match = _TENSOR.search(self.output_type)
        if match is None:
            return None
        parts = [p for p in match.group(2).replace(" ", "").split(",") if p]
        # Dynamic shapes print as -1 (or -2) or names; a name or a number beyond int64 gives None.
        dims = [ascii_number(p[1:]) if p[:1] == "-" else ascii_number(p) for p in parts]
        if None in dims:
            return None
        return tuple(-d if p[:1] == "-" else d for p, d in zip(parts, dims, strict=True))

    @property
    def sources(self) -> list[SourceLocation]:
        """Every ``# In file`` line, outermost call first."""
        return [loc for loc in map(SourceLocation.parse, self._parse_block()[2]) if loc is not None]

    @property
    def source(self) -> SourceLocation | None:
        """The innermost location outside installed packages (the person's own line), else the
        innermost one."""
        sources = self.sources
        for loc in reversed(sources):
            if not loc.installed:
                return loc
        return sources[-1] if sources else None

    def matches(self, needle: str) -> bool:
        """Whether the lower-case ``needle`` occurs in the node's line, name or continuation."""
        return needle in self.text.lower() or needle in self.name.lower() or needle in self.block.lower()

    def signature(self) -> str:
        """What the node computes, without its number: for comparing two passes."""
        return f"{self.op} {self.text} {self.output_type}"

    def __repr__(self) -> str:
        return f"<IrNode {self.graph}:{self.id}({self.name}) {self.op} line {self.lineno}>"


class IrGraph:
    """One ``subgraph @name(...) { ... }`` block.

    The scan that finds it keeps only where it is and which ops it uses; its nodes are
    parsed from the file the first time :attr:`nodes` is asked for.
    """

    __slots__ = (
        "name", "params", "lineno", "location", "returns", "parent", "closed", "start", "end", "raw_ops",
        "_loader", "_nodes",
    )  # fmt: skip

    def __init__(self, name: str, params: str, lineno: int, location: str, start: int, loader) -> None:
        self.name = name
        self.params = params
        self.lineno = lineno
        self.location = location
        self.returns = ""
        self.parent = ""  # the graph this one is nested in ("parent: [subgraph @...]")
        self.closed = False
        self.start = start  # byte offsets of the block in the file
        self.end = start
        self.raw_ops: list[bytes] | tuple[()] = ()  # each node's callee as the scan saw it
        self._loader = loader
        self._nodes: list[IrNode] | None = None

    @classmethod
    def _from_head(cls, head: bytes, lineno: int, location: str, start: int, loader) -> IrGraph:
        """The graph whose ``subgraph @`` line goes on with ``head``."""
        name, _, params = head.decode("utf-8", "replace").partition("(")
        name, _, parent = name.partition(_PARENT)
        graph = cls(name, params.rsplit(")", 1)[0], lineno, location, start, loader)
        graph.parent = parent.rstrip("]")
        return graph

    def add_ops(self, found: list[bytes]) -> None:
        # An empty graph keeps the shared empty tuple: no list per subgraph.
        if found:
            if self.raw_ops:
                self.raw_ops.extend(found)
            else:
                self.raw_ops = found

    @property
    def node_count(self) -> int:
        return len(self.raw_ops)

    @property
    def op_counts(self) -> Counter:
        """How often each op occurs in this graph (``call`` for calls of graphs and values)."""
        return _op_counts(self.raw_ops)

    @property
    def nodes(self) -> list[IrNode]:
        if self._nodes is None:
            # The node lines are exactly the ones the scan counted: none counted, nothing to read.
            self._parse(self._loader(self.start, self.end) if self.raw_ops else b"")
        return self._nodes

    def _parse(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace")
        nodes, lineno, position = [], self.lineno, 0
        for match in _NODE_BLOCK.finditer(text):
            lineno += text.count("\n", position, match.start())
            position = match.start()
            index, name, body, block = match.group(1, 2, 3, 4)
            nodes.append(IrNode(index, name, body, block, self.name, lineno))
        self._nodes = nodes or _NO_NODES

    @property
    def source(self) -> SourceLocation | None:
        """Where the function behind the graph is defined, when dumped."""
        return SourceLocation.parse(self.location) if self.location else None

    def __repr__(self) -> str:
        return f"<IrGraph @{self.name}: {self.node_count} nodes, line {self.lineno}>"


class IrGraphs(Sequence):
    """The graphs of one file, in file order: a sequence of :class:`IrGraph`.

    A dump may hold 800,000 empty subgraphs. The scan keeps each empty one as three numbers
    in arrays (offset, end, line) and its ``subgraph @`` line in one bytes blob; its
    :class:`IrGraph` is made the first time it is asked for. Graphs with nodes (and the few
    empty ones the bulk step leaves to the line-by-line scan) are made as the scan meets them.
    """

    __slots__ = ("_start", "_end", "_lineno", "_heads", "_head_end", "_made", "_loader")

    def __init__(self, loader: Callable[[int, int], bytes] | None = None) -> None:
        self._start, self._end, self._lineno = array("q"), array("q"), array("q")
        self._heads = bytearray()  # every graph's head line, each followed by "\n"
        self._head_end = array("q")  # where each graph's head (with its "\n") ends in _heads
        self._made: dict[int, IrGraph] = {}
        self._loader = loader

    def __len__(self) -> int:
        return len(self._start)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        index = operator.index(index)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("graph index out of range")
        graph = self._made.get(index)
        if graph is None:
            graph = IrGraph._from_head(self._head(index), self._lineno[index], "", self._start[index], self._loader)
            graph.end, graph.closed = self._end[index], True
            self._made[index] = graph
        return graph

    def __repr__(self) -> str:
        return f"<IrGraphs: {len(self)} graphs>"

    def _head(self, index: int) -> bytes:
        return bytes(self._heads[self._head_end[index - 1] if index else 0 : self._head_end[index] - 1])

    def _name(self, index: int) -> str:
        graph = self._made.get(index)
        return graph.name if graph is not None else IrGraph._from_head(self._head(index), 0, "", 0, None).name

    def _add(self, graph: IrGraph, head: bytes) -> None:
        """A graph the line-by-line scan made (it may still grow: ops, its end)."""
        self._made[len(self._start)] = graph
        self._start.append(graph.start)
        self._end.append(graph.start)
        self._lineno.append(graph.lineno)
        self._heads += head
        self._heads += b"\n"
        self._head_end.append(len(self._heads))

    def _extend_empty(self, starts, ends, linenos, heads: bytes, head_ends) -> None:
        """Empty, closed graphs found in bulk: int64 arrays, and their heads each ending in "\\n"."""
        for column, values in ((self._start, starts), (self._end, ends), (self._lineno, linenos)):
            column.frombytes(np.ascontiguousarray(values, np.int64).view(np.uint8))
        self._head_end.frombytes(np.ascontiguousarray(head_ends + len(self._heads), np.int64).view(np.uint8))
        self._heads += heads

    def _with_nodes(self) -> list[IrGraph]:
        """The graphs that have nodes, in file order (every other graph is empty)."""
        return [graph for _, graph in sorted(self._made.items()) if graph.raw_ops]

    def find(self, name: str) -> int:
        """The index of the first graph called ``name`` (or ``name`` without its ``@``); -1 if none."""
        names = [n for n in dict.fromkeys((name, name.lstrip("@"))) if "(" not in n and "\n" not in n]
        if not names:
            return -1
        # A head is the name, then "(" or " parent: [subgraph @" or nothing (see _from_head).
        wanted = re.compile("^(?:" + "|".join(map(re.escape, names)) + ")(?:\\(|" + re.escape(_PARENT) + "|$)", re.M)
        text = self._heads.decode("utf-8", "replace")
        match = wanted.search(text)
        return -1 if match is None else text.count("\n", 0, match.start())

    def counts(self) -> GraphCounts:
        """``(name, node count)`` of every graph, made one at a time as a view reads them."""
        return GraphCounts(self)


class GraphCounts(Sequence):
    """``(name, node count)`` per graph, in file order: what a summary lists (a few of them)."""

    __slots__ = ("_graphs",)

    def __init__(self, graphs: IrGraphs) -> None:
        self._graphs = graphs

    def __len__(self) -> int:
        return len(self._graphs)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        index = operator.index(index)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("graph index out of range")
        graph = self._graphs._made.get(index)
        return (graph.name, graph.node_count) if graph is not None else (self._graphs._name(index), 0)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        shown = ", ".join(map(repr, self[:4]))
        return f"GraphCounts([{shown}{', ...' if len(self) > 4 else ''}], {len(self)} graphs)"


@dataclass
class IrFile:
    """A parsed ``.ir`` file."""

    path: str
    entry: str = ""
    total_subgraphs: int | None = None
    total_nodes: int | None = None
    total_cnodes: int | None = None
    params: list[tuple[str, str]] = field(default_factory=list)
    attrs: dict[str, str] = field(default_factory=dict)
    graphs: IrGraphs = field(default_factory=IrGraphs)
    lines: int = 0
    size: int = 0
    _loader: Callable[[int, int], bytes] | None = field(default=None, repr=False, compare=False)
    _source: Callable[[], BinaryIO] | None = field(default=None, repr=False, compare=False)

    def nodes(self) -> Iterator[IrNode]:
        """Every node, graph by graph; the bodies not parsed yet are read in one pass over one
        open file (not one open per graph), and graphs without nodes are not read at all (a
        dump may hold 800,000 empty subgraphs)."""
        graphs = self.graphs._with_nodes()
        if self._source is None or all(graph._nodes is not None for graph in graphs):
            for graph in graphs:
                yield from graph.nodes
            return
        with self._source() as handle:
            for graph in graphs:
                if graph._nodes is None:
                    handle.seek(graph.start)
                    graph._parse(handle.read(graph.end - graph.start))
                yield from graph._nodes

    @property
    def node_count(self) -> int:
        """CNodes in the graph bodies (``Total number of cnodes`` counts Return lines too)."""
        return sum(graph.node_count for graph in self.graphs._made.values())

    def op_counts(self) -> Counter:
        """How often each op occurs, most common first (one count over every graph's ops)."""
        return _op_counts(chain.from_iterable(graph.raw_ops for graph in self.graphs._made.values()))

    def graph(self, name: str) -> IrGraph:
        index = self.graphs.find(name)
        if index < 0:
            raise KeyError(name)
        return self.graphs[index]

    def find(self, text: str = "", op: str = "") -> list[IrNode]:
        """Nodes whose line, name, scope or source contains ``text`` and whose op is ``op``."""
        needle = text.lower()
        return [node for node in self.nodes() if (not op or node.op == op) and (not needle or node.matches(needle))]


def looks_binary(head: bytes) -> bool:
    """NUL bytes, or text that is not UTF-8 (allowing a character cut at the end)."""
    if b"\0" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start < len(head) - 4
    return False


# The scan matches only the lines that give a file its shape; the regex engine skips the
# rest (node continuation lines, device formats, attributes) without a Python-level step.
# Every pattern starts with the newline before its line: a literal prefix lets the engine
# jump between candidates, several times faster than ^ with re.M.
_SCAN = re.compile(
    rb"\n(?:"
    rb"subgraph @(?P<graph>[^\n]*)"
    rb"|(?P<close>\})"
    rb"|  (?P<ret>Return\([^\n]*)"
    rb"|# IR entry: @(?P<entry>[^\n]*)"
    rb"|# Total subgraphs: (?P<subgraphs>\d+)"
    rb"|Total number of nodes: (?P<nodes>\d+)"
    rb"|Total number of cnodes: (?P<cnodes>\d+)"
    rb"|(?P<param>%para\d+_[^:\n]*): (?P<abstract>[^\n]*)"
    rb"|(?P<where># In file [^\n]*)"
    rb"|# (?P<attrs>Attrs:)"
    rb")"
)
_OPS = re.compile(rb"\n  %\d+\([^)\n]*\) = (call @|%\d|[^\s(\[]+)")
_ATTR = re.compile(rb"\n([A-Za-z_][\w.-]*): ([^\n]*)")
# Exactly the node lines _OPS counts (an op starts the right-hand side), so node_count == len(nodes).
_NODE_BLOCK = re.compile(r"^  %(\d+)\(([^)\n]*)\) = ([^\s(\[][^\n]*)\n((?:      [^\n]*\n)*)", re.M | re.ASCII)
_CHUNK = 1 << 20  # the bulk step holds a few bytes per byte of a chunk: 1 MiB keeps that small
_OPEN = b"subgraph @"  # what _SCAN's first branch matches, for the bulk step
_PARENT = " parent: [subgraph @"
_EMPTY_GRAPH = re.compile(rb"\nsubgraph @[^\n]*\n+\}")  # what the bulk step takes: without one, it is not tried
_NO_NODES: list = []  # shared by every empty graph; never appended to


def _header_number(digits: bytes) -> int | None:
    """A count the header states; None beyond int64 (no dump holds that many of anything)."""
    return ascii_number(digits.decode("ascii"))


def _op_counts(raw_ops: Iterable[bytes]) -> Counter:
    """How often each op occurs among ``raw_ops``: the raw bytes are counted first, so each
    distinct op is decoded once, however many nodes (or graphs) hold it."""
    counts: Counter = Counter()
    for raw, number in Counter(raw_ops).items():
        counts[_op_name(raw)] += number
    return counts


def _op_name(raw: bytes) -> str:
    return "call" if raw[:1] == b"%" or raw == b"call @" else raw.decode("utf-8", "replace")


class _Scan:
    """State carried from one chunk to the next."""

    def __init__(self, ir: IrFile, bulk: bool = True) -> None:
        self.ir = ir
        self.bulk = bulk  # take runs of empty graphs in bulk (off only to test it against the line scan)
        self.graph: IrGraph | None = None
        self.location = ""
        self.lineno = 1  # of the line after the newline a chunk starts with
        self.found = False

    def close_graph(self, end: int) -> None:
        self.graph.end = end
        self.graph = None

    def chunk(self, data: bytes, base: int) -> None:
        """Scan ``data``, which starts with a newline at file offset ``base`` and holds whole lines."""
        if self.bulk and _EMPTY_GRAPH.search(data):
            self._chunk_in_bulk(data, base)
        else:
            self._lines(data, base, 0, len(data), self.lineno)
        self.lineno += data.count(b"\n")

    def _chunk_in_bulk(self, data: bytes, base: int) -> None:
        """The line scan between runs of empty graphs; each run taken with a few array operations.

        A run is ``subgraph @...`` lines each followed by a ``}`` line, with nothing but empty
        lines among them: the graphs the line scan would open and close with nothing in them.
        """
        buf = np.frombuffer(data, np.uint8)
        newlines = np.flatnonzero(buf == 10)  # newlines[k] ends line k-1; line k starts after it
        # The first byte of each line; the line after the last newline may be empty.
        last = int(buf[newlines[-1] + 1]) if newlines[-1] + 1 < len(buf) else 10
        first = np.append(buf[newlines[:-1] + 1], np.uint8(last))
        kind = np.full(len(first), 3, np.uint8)  # 0 empty, 1 "subgraph @", 2 "}", 3 anything else
        kind[first == 10] = 0
        kind[first == ord("}")] = 2
        opens = np.flatnonzero(first == ord("s"))
        del first
        for offset, byte in enumerate(_OPEN[1:], 1):  # keep the lines that read "subgraph @"
            opens = opens[newlines[opens] + 1 + offset < len(buf)]
            opens = opens[buf[newlines[opens] + 1 + offset] == byte]
        kind[opens] = 1
        events = np.flatnonzero(kind)  # the lines that are not empty
        kinds = kind[events]
        pairs = np.flatnonzero((kinds[:-1] == 1) & (kinds[1:] == 2))  # an open, then its close
        if not len(pairs):
            self._lines(data, base, 0, len(data), self.lineno)
            return
        # Runs of pairs: a pair whose open is the event right after the previous pair's close.
        breaks = np.flatnonzero(np.diff(pairs) != 2) + 1
        position = 0  # the newline the line scan goes on from
        for run in np.split(pairs, breaks):
            open_lines, close_lines = events[run], events[run + 1]
            self._lines(data, base, position, int(newlines[open_lines[0]]), self.lineno + _line(newlines, position))
            if self.location:  # the first graph has a "# In file" line: the line scan keeps it
                position = _end_of_line(newlines, int(close_lines[0]), len(buf))
                self._lines(data, base, int(newlines[open_lines[0]]), position, self.lineno + int(open_lines[0]))
                open_lines, close_lines = open_lines[1:], close_lines[1:]
                if not len(open_lines):
                    continue
            self.found = True
            if self.graph is not None:  # a graph without "}" before this run
                self.close_graph(base + int(newlines[open_lines[0]]) + 1)
            head_starts = newlines[open_lines] + 1 + len(_OPEN)
            head_ends = newlines[open_lines + 1] + 1  # each head with the newline that ends it
            # The heads' bytes: +1 where one starts, -1 where it ends, summed up to a mask.
            low, high = int(head_starts[0]), int(head_ends[-1])
            mask = np.zeros(high - low + 1, np.int8)
            mask[head_starts - low] = 1
            mask[head_ends - low] = -1
            np.cumsum(mask, dtype=np.int8, out=mask)
            self.ir.graphs._extend_empty(
                base + newlines[open_lines] + 1,
                base + newlines[close_lines] + 2,
                self.lineno + open_lines,
                buf[low:high][mask[:-1].view(bool)].tobytes(),
                np.cumsum(head_ends - head_starts),
            )
            position = _end_of_line(newlines, int(close_lines[-1]), len(buf))
        self._lines(data, base, position, len(data), self.lineno + _line(newlines, position))

    def _lines(self, data: bytes, base: int, position: int, stop: int, lineno: int) -> None:
        """The line scan of ``data[position:stop]``: ``position`` is a newline, or ``stop``, as is ``stop``;
        ``lineno`` is the line after the newline at ``position``."""
        if position >= stop:
            return
        ir, count = self.ir, data.count
        for match in _SCAN.finditer(data, position, stop):
            self.found = True
            start = match.start()
            lineno += count(b"\n", position + 1, start + 1)
            if self.graph is not None:
                self.graph.add_ops(_OPS.findall(data, position, start))
            position = start
            kind = match.lastindex
            if kind == 1:
                if self.graph is not None:  # a graph without "}" before the next one
                    self.close_graph(base + start + 1)
                head = match.group(1)
                self.graph = IrGraph._from_head(head, lineno, self.location, base + start + 1, ir._loader)
                ir.graphs._add(self.graph, head)
                self.location = ""
            elif kind == 2:
                if self.graph is not None:
                    self.graph.closed = True
                    self.close_graph(base + match.end())
            elif kind == 3:
                if self.graph is not None:
                    self.graph.returns = match.group(3).decode("utf-8", "replace").strip()
            elif kind == 4:
                ir.entry = match.group(4).decode("utf-8", "replace").strip()
            elif kind == 5:
                ir.total_subgraphs = _header_number(match.group(5))
            elif kind == 6:
                ir.total_nodes = _header_number(match.group(6))
            elif kind == 7:
                ir.total_cnodes = _header_number(match.group(7))
            elif kind == 9:
                if self.graph is None:
                    name, abstract = match.group(8, 9)
                    ir.params.append((name.decode("utf-8", "replace"), abstract.decode("utf-8", "replace")))
            elif kind == 10:
                if self.graph is None:
                    self.location = match.group(10).decode("utf-8", "replace")
            elif kind == 11:
                end = data.find(b"\n\n", match.end())
                for key, value in _ATTR.findall(data, match.end(), end if end >= 0 else len(data)):
                    ir.attrs[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
        if self.graph is not None:
            self.graph.add_ops(_OPS.findall(data, position, stop))


def _line(newlines, position: int) -> int:
    """Which line (counted from the chunk's first) starts after the newline at ``position``."""
    return int(np.searchsorted(newlines, position))


def _end_of_line(newlines, line: int, size: int) -> int:
    """The newline that ends ``line``, or ``size`` for the last line."""
    return int(newlines[line + 1]) if line + 1 < len(newlines) else size


def _scan(chunks: Iterable[bytes], path: str, loader: Callable[[int, int], bytes], bulk: bool = True) -> IrFile:
    ir = IrFile(path, graphs=IrGraphs(loader), _loader=loader)
    scan = _Scan(ir, bulk)
    data, base, size = b"\n", -1, 0  # a newline in front of line 1, at offset -1
    for piece in chunks:
        size += len(piece)
        data += piece
        cut = data.rfind(b"\n")
        if cut > 0:
            scan.chunk(data[:cut], base)
            data, base = data[cut:], base + cut
    scan.chunk(data, base)
    if scan.graph is not None:
        scan.close_graph(size)
    # The last chunk has no newline after it: one line fewer, and none for a final newline.
    ir.lines, ir.size = scan.lineno - (2 if data.endswith(b"\n") else 1), size
    if not size:
        raise DumpFormatError(f"{path}: empty file, not a MindSpore IR dump")
    if not scan.found:
        raise DumpFormatError(f"{path}: not a MindSpore IR dump (no IR line in its {ir.lines} lines)")
    graphs = ir.graphs
    if graphs and not graphs[-1].closed:
        last = graphs[-1]
        raise DumpFormatError(
            f"{path}: cut short: subgraph @{last.name} opened at line {last.lineno} is not closed "
            f"when the file ends at line {ir.lines}"
        )
    return ir


def parse_ir(text: str | bytes, path: str = "<string>") -> IrFile:
    """Parse the text of one ``.ir`` file (see :func:`read_ir` for files on disk).

    Lines it does not know are skipped, so newer MindSpore versions still read.

    Raises
    ------
    DumpFormatError
        When nothing in it is IR, or the last graph is never closed (a file cut short).
    """
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    return _scan([data], path, lambda start, end: data[start:end])


def read_ir(path: str | os.PathLike) -> IrFile:
    """Read and parse one ``.ir`` file, streaming it in chunks (UTF-8; bad bytes become U+FFFD).

    Graph bodies are read again, from the file, when their nodes are first asked for.

    Raises
    ------
    DumpError
        When the file cannot be opened.
    DumpFormatError
        When it is binary, empty, or cut short; the message names the file.
    """
    name = os.fspath(path)

    def loader(start: int, end: int) -> bytes:
        with open_regular(name, DumpError, follow=False) as handle:
            try:
                handle.seek(start)
                return handle.read(end - start)
            except OSError as error:
                raise DumpError(f"{name}: cannot read it any more ({error.strerror or error})") from None

    try:
        with open_regular(name, DumpError, follow=False) as handle:
            head = handle.read(_SNIFF)
            if looks_binary(head):
                raise DumpFormatError(f"{name}: binary data, not a MindSpore IR text dump")
            chunks = iter(lambda: handle.read(_CHUNK), b"")
            ir = _scan(_prepend(head, chunks), name, loader)
            ir._source = lambda: open_regular(name, DumpError, follow=False)
            return ir
    except OSError as error:
        raise DumpError(f"{name}: cannot read it ({error.strerror or error})") from None


def _prepend(head: bytes, rest: Iterable[bytes]) -> Iterator[bytes]:
    yield head
    yield from rest
