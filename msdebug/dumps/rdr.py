"""A Running Data Recorder tree: ``<rdr path>/rank_<id>/rdr/<MODULE>.<name>.<timestamp>[_NNNN].<ext>``.

MindSpore (up to 2.7.0) writes every file read-only (0400) in a 0700 directory; the
readers only ever open files for reading. File names are parsed into module, name,
graph id, timestamp and the ``.ir`` dump counter (which is *not* chronological: it is
assigned while exporting from a hash map, so pipeline stages sort by their ``NN_`` prefix).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DumpError, DumpFormatError, echo
from ..files import MiB, ascii_number, read_regular
from .ir import looks_binary

__all__ = [
    "Address",
    "ExecEntry",
    "ExecOrder",
    "KernelMemory",
    "MemoryList",
    "RdrFile",
    "RdrRank",
    "RdrTree",
    "find_rdr",
    "parse_rdr_name",
    "read_exec_order",
    "read_memory",
    "read_stream_order",
    "read_string",
    "read_lines",
]

TEXT_LIMIT = 256 * MiB  # the largest RDR text record msdebug reads (they are a few MB)

_NAME = re.compile(
    r"^(?P<module>[A-Z][A-Z0-9_]*)\.(?P<name>.+)\.(?P<ts>\d{14})(?:_(?P<counter>\d{4}))?\.(?P<ext>ir|pb|txt|json|dat)$",
    re.ASCII,
)
_STAGE = re.compile(r"^(\d+)_(.+)$", re.ASCII | re.S)
_EXEC_HEADER = "================== execution order =================="
_EXEC_ENTRY = re.compile(r"^(\d+):$", re.ASCII)
_EXEC_NODE = re.compile(r"^@(?P<graph>[^:]+):(?P<name>[^{]*)\{(?P<inputs>.*)\}$")
_EXEC_INPUT = re.compile(r"(?:^|, )\[\d+\]: ")
_ADDRESS = re.compile(r"^&(0x[0-9a-fA-F]+|0) #(\d+)$", re.ASCII)
_MEM_SECTION = re.compile(r"^kernel_(inputs|workspaces|outputs) (\d+)$", re.ASCII)

# What each recorder's files are, for the summary.
KINDS = {
    "pipeline": "front-end pipeline stage IR",
    "graph": "kernel graph IR",
    "graph_pb": "kernel graph protobuf",
    "exec_order": "kernel execution order",
    "memory": "memory addresses per kernel",
    "string": "text record (SOMAS)",
    "stream": "stream execution order",
    "other": "other files",
}


@dataclass(frozen=True)
class RdrFile:
    """One file of a rank's ``rdr`` directory, its name taken apart."""

    path: Path
    module: str
    name: str
    timestamp: str
    counter: int | None
    ext: str
    size: int

    @property
    def kind(self) -> str:
        if self.module == "PIPELINE" and self.ext == "ir":
            return "pipeline"
        if self.ext == "ir":
            return "graph"
        if self.ext == "pb":
            return "graph_pb"
        if self.ext == "json":
            return "stream"
        if self.ext == "txt":
            if "exec_order" in self.name:
                return "exec_order"
            if "mem_address" in self.name:
                return "memory"
            return "string"
        return "other"

    @property
    def graph_id(self) -> int | None:
        """``SESSION.graph_build.0`` -> 0; None for names without a trailing id."""
        head, _, tail = self.name.rpartition(".")
        return ascii_number(tail) if head else None

    @property
    def stage(self) -> tuple[int, str] | None:
        """``PIPELINE.12_optimize`` -> (12, 'optimize')."""
        match = _STAGE.match(self.name) if self.module == "PIPELINE" else None
        number = ascii_number(match.group(1)) if match else None
        return (number, match.group(2)) if number is not None else None

    @property
    def label(self) -> str:
        """``PIPELINE.12_optimize``: the name without timestamp, counter and extension."""
        return f"{self.module}.{self.name}"

    @property
    def when(self) -> str:
        """The local time the recorder was created, ``2026-11-21 07:26:43``."""
        t = self.timestamp
        return f"{t[:4]}-{t[4:6]}-{t[6:8]} {t[8:10]}:{t[10:12]}:{t[12:]}"


def parse_rdr_name(path: str | os.PathLike) -> RdrFile | None:
    """The parts of an RDR file name, or None when the name is not one."""
    path = Path(path)
    match = _NAME.match(path.name)
    if match is None:
        return None
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    counter = match["counter"]
    return RdrFile(
        path,
        match["module"],
        match["name"],
        match["ts"],
        ascii_number(counter) if counter else None,
        match["ext"],
        size,
    )


@dataclass
class RdrRank:
    """The ``rdr`` directory of one rank."""

    rank: int
    path: Path
    files: list[RdrFile] = field(default_factory=list)
    others: list[Path] = field(default_factory=list)  # names RDR does not write

    def of_kind(self, kind: str) -> list[RdrFile]:
        return [f for f in self.files if f.kind == kind]

    def stages(self) -> list[RdrFile]:
        """Pipeline stage files in pipeline order (by ``NN_``, never by the dump counter)."""
        return sorted(self.of_kind("pipeline"), key=lambda f: (f.stage or (10**6, ""), f.name))

    def graph_ids(self) -> list[int]:
        return sorted({f.graph_id for f in self.files if f.graph_id is not None and f.module == "SESSION"})

    def find(self, text: str, kinds: tuple[str, ...] = ("pipeline", "graph")) -> RdrFile:
        """The IR file whose label is ``text`` or contains it (``optimize``, ``graph_build.0``)."""
        candidates = [f for f in self.files if f.kind in kinds]
        for f in candidates:
            if text in (f.label, f.name, f.path.name):
                return f
        matches = [f for f in candidates if text in f.label]
        if len(matches) == 1:
            return matches[0]
        from ..keys import did_you_mean

        labels = [f.label for f in candidates] + [f.stage[1] for f in candidates if f.stage]
        if matches:
            raise DumpError(
                f"{text!r} matches {len(matches)} files of rank {self.rank}: {', '.join(f.label for f in matches[:6])}"
            )
        raise DumpError(f"no IR file of rank {self.rank} is called {text!r}." + did_you_mean(text, labels))


@dataclass
class RdrTree:
    """Every rank of an RDR output directory."""

    root: Path
    ranks: list[RdrRank]

    def rank(self, rank: int | None = None) -> RdrRank:
        if rank is None:
            return self.ranks[0]
        for r in self.ranks:
            if r.rank == rank:
                return r
        raise DumpError(f"{self.root}: no rank {rank}; it has ranks {', '.join(str(r.rank) for r in self.ranks)}")


def _rank_of(directory: Path) -> int:
    name = directory.parent.name if directory.name == "rdr" else directory.name
    tail = name.rpartition("_")[2]
    number = ascii_number(tail) if name.startswith("rank_") else None
    return number if number is not None else 0


def _read_rank(directory: Path) -> RdrRank:
    rank = RdrRank(_rank_of(directory), directory)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as error:
        raise DumpError(f"{echo(str(directory), quote=False)}: cannot list it ({error.strerror or error})") from None
    for entry in entries:
        if not is_regular(entry):
            continue
        parsed = parse_rdr_name(entry.path)
        if parsed is None:
            rank.others.append(Path(entry.path))
        else:
            rank.files.append(parsed)
    return rank


def is_regular(entry: os.DirEntry) -> bool:
    """Whether a listed entry is a regular file (a symlink loop or a vanished file is not)."""
    try:
        return entry.is_file()
    except OSError:
        return False


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def _names(directory: Path) -> list[tuple[str, bool]]:
    """(name, is a directory) of each entry, from one scandir (no stat per file)."""
    try:
        with os.scandir(directory) as entries:
            return [(entry.name, _is_dir(entry)) for entry in entries]
    except OSError:
        return []


def find_rdr(path: str | os.PathLike) -> RdrTree | None:
    """The RDR tree at ``path`` (the rdr path itself, a ``rank_N`` or a ``rank_N/rdr``
    directory), or None when there is none."""
    root = Path(path)
    if not root.is_dir():
        return None
    entries = _names(root)
    subdirs = {name for name, is_dir in entries if is_dir}
    has_rdr_files = any(_NAME.match(name) for name, is_dir in entries if not is_dir)
    if root.name == "rdr" and has_rdr_files:
        candidates = [root]
    elif "rdr" in subdirs:
        candidates = [root / "rdr"]
    else:
        candidates = sorted(
            (root / name / "rdr" for name in subdirs if name.startswith("rank_") and (root / name / "rdr").is_dir()),
            key=_rank_of,
        )
    if not candidates:
        if not has_rdr_files:
            return None
        candidates = [root]
    ranks = [_read_rank(c) for c in candidates]
    ranks.sort(key=lambda r: r.rank)
    return RdrTree(root, ranks)


# ----------------------------------------------------------------- file contents


def read_lines(path: str | os.PathLike, what: str) -> list[str]:
    """The lines of a text dump; binary data gives a :class:`DumpFormatError` naming the file."""
    name = os.fspath(path)
    data = read_regular(name, TEXT_LIMIT, DumpError, what, follow=False)
    if looks_binary(data[:8192]):
        raise DumpFormatError(f"{name}: binary data, not {what}")
    return data.decode("utf-8", "replace").splitlines()


@dataclass(frozen=True)
class ExecEntry:
    """One kernel of an execution order: ``@kernel_graph0:x{[0]: ValueNode<Primitive> PrimFunc_MatMul, ...}``."""

    index: int
    graph: str
    name: str
    op: str
    inputs: tuple[str, ...]
    stream: int | None
    graph_id: int | None
    text: str


@dataclass
class ExecOrder:
    path: Path
    entries: list[ExecEntry]
    declared: int


def read_exec_order(path: str | os.PathLike) -> ExecOrder:
    """Parse ``SESSION.graph_exec_order.<gid>.<ts>.txt``.

    Raises
    ------
    DumpFormatError
        When it is binary, lacks the header, or lists fewer kernels than the header says.
    """
    lines = read_lines(path, "an RDR execution order")
    if not lines or lines[0].strip() != _EXEC_HEADER:
        raise DumpFormatError(f"{path}: not an RDR execution order (no '{_EXEC_HEADER}' header line)")
    declared = -1
    entries: list[ExecEntry] = []
    i = 1
    while i < len(lines):
        line = lines[i]
        if line.startswith("execution_order size:"):
            tail = line.rpartition(":")[2].strip()
            declared = ascii_number(tail)
            declared = -1 if declared is None else declared
        elif _EXEC_ENTRY.match(line):
            body = [text.strip() for text in lines[i + 1 : i + 4]]
            if len(body) < 3 or not all(lines[i + 1 + k].startswith("\t") for k in range(len(body))):
                break  # cut short: reported below
            entries.append(_exec_entry(_number(line[:-1], path, i + 1, "a kernel number"), *body))
            i += 3
        i += 1
    closed = len(lines) > 1 and lines[-1].strip() == _EXEC_HEADER
    if declared >= 0 and (len(entries) < declared or not closed):
        raise DumpFormatError(
            f"{path}: cut short: it lists {len(entries)} of the {declared} kernels its header announces"
            + ("" if closed else ", and the closing line is missing")
        )
    return ExecOrder(Path(path), entries, declared)


def _exec_entry(index: int, text: str, stream: str, graph_id: str) -> ExecEntry:
    match = _EXEC_NODE.match(text)
    graph, name, op, inputs = "", text, "", ()
    if match is not None:
        graph, name = match["graph"], match["name"]
        parts = [value.strip() for value in _EXEC_INPUT.split(match["inputs"])[1:]]
        if parts:
            first = parts[0]
            op = first.rpartition(" ")[2] if first.startswith("ValueNode<Primitive>") else first
            inputs = tuple(parts[1:])
    return ExecEntry(
        index,
        graph,
        name,
        op,
        inputs,
        ascii_number(stream),
        ascii_number(graph_id),
        text,
    )


@dataclass(frozen=True)
class Address:
    address: str
    size: int


@dataclass
class KernelMemory:
    """The device addresses of one kernel's inputs, workspaces and outputs."""

    name: str
    inputs: list[Address] = field(default_factory=list)
    workspaces: list[Address] = field(default_factory=list)
    outputs: list[Address] = field(default_factory=list)

    @property
    def input_bytes(self) -> int:
        return sum(a.size for a in self.inputs)

    @property
    def workspace_bytes(self) -> int:
        return sum(a.size for a in self.workspaces)

    @property
    def output_bytes(self) -> int:
        return sum(a.size for a in self.outputs)

    @property
    def total(self) -> int:
        return self.input_bytes + self.workspace_bytes + self.output_bytes


@dataclass
class MemoryList:
    path: Path
    kernels: list[KernelMemory]

    def largest_first(self) -> list[KernelMemory]:
        return sorted(self.kernels, key=lambda k: (-k.total, k.name))

    @property
    def totals(self) -> tuple[int, int, int]:
        return (
            sum(k.input_bytes for k in self.kernels),
            sum(k.workspace_bytes for k in self.kernels),
            sum(k.output_bytes for k in self.kernels),
        )


def read_memory(path: str | os.PathLike) -> MemoryList:
    """Parse ``…mem_address_list.<ts>.txt``.

    Raises
    ------
    DumpFormatError
        When it is binary, or a section holds fewer addresses than it announces.
    """
    lines = read_lines(path, "an RDR memory address list")
    kernels: list[KernelMemory] = []
    kernel: KernelMemory | None = None
    section: list[Address] | None = None
    expected = 0
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip()
        if not line:
            continue
        header = _MEM_SECTION.match(line)
        address = _ADDRESS.match(line)
        if section is not None and expected and not address:
            raise DumpFormatError(f"{path}: line {lineno}: {expected} more address(es) expected, found {line[:60]!r}")
        if header and kernel is not None:
            section = getattr(kernel, header.group(1))
            expected = _number(header.group(2), path, lineno, "an address count")
        elif address and section is not None and expected:
            section.append(Address(address.group(1), _number(address.group(2), path, lineno, "a size")))
            expected -= 1
        elif address:
            raise DumpFormatError(f"{path}: line {lineno}: an address outside any kernel_* section")
        else:
            kernel = KernelMemory(line)
            kernels.append(kernel)
            section, expected = None, 0
    if expected:
        raise DumpFormatError(
            f"{path}: cut short: {echo(kernel.name, quote=False)} lacks {expected} address(es) at the end"
        )
    if lines and not kernels:
        raise DumpFormatError(f"{path}: not an RDR memory address list")
    return MemoryList(Path(path), kernels)


def _number(digits: str, path, lineno: int, what: str) -> int:
    """A number a record states, up to int64 (MindSpore writes sizes and counts as 64-bit integers)."""
    number = ascii_number(digits)
    if number is None:
        raise DumpFormatError(
            f"{path}: line {lineno}: {what} of {len(digits):,} digits, beyond a 64-bit integer; is it the right file?"
        )
    return number


def read_string(path: str | os.PathLike) -> str:
    """A ``StringRecorder`` ``.txt`` (SOMAS memory-planner records): the text as written."""
    return "\n".join(read_lines(path, "an RDR text record"))


def read_stream_order(path: str | os.PathLike) -> list[dict]:
    """``StreamExecOrderRecorder`` JSON: a list of ``{index, node_name, stream_id, ...}``."""
    from ..keys import load_json

    text = "\n".join(read_lines(path, "an RDR stream execution order"))
    data = load_json(text, DumpFormatError, os.fspath(path))
    if not isinstance(data, list):
        raise DumpFormatError(f"{path}: expected a JSON list of kernels, found {type(data).__name__}")
    return data
