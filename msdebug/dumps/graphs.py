"""A save_graphs directory (``MS_DEV_SAVE_GRAPHS`` / ``set_context(save_graphs=...)``).

Files are classified from their names alone, so a directory of thousands of dumps is
summarised by listing it. In save_graphs output the trailing ``_NNNN`` counter *is* the
creation order (unlike RDR's), so passes sort by it; stages sort by their ``NN_`` prefix.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DumpError, echo
from ..files import INT64_MAX, ascii_number, open_regular

__all__ = ["FAMILIES", "DotGraph", "GraphFile", "GraphsDir", "classify", "read_dot", "read_graphs_dir"]

# family -> what it is, in the order a summary lists them.
FAMILIES = {
    "stage": "front-end pipeline stages",
    "opt_pass": "optimizer passes",
    "backend": "backend passes (hwopt_*)",
    "kernel_graph": "kernel graphs (graph_build_*, graph_before_reset_id_*)",
    "verbose": "verbose_ir_files/ (backend pass details)",
    "actor_set": "actor_set/ (runtime actor DAG)",
    "trace": "trace_code_graph_* (kernel graph with full traces)",
    "dot": ".dot graphs (Graphviz)",
    "pb": "ms_output_*.pb (irpb.ModelProto)",
    "other": "other files",
}

# re.ASCII: "\d" would take any Unicode digit; re.S: a file name may hold a newline.
_COUNTER = re.compile(r"^(?P<stem>.*?)_(?P<counter>\d{4,})$", re.ASCII | re.S)
_STAGE = re.compile(r"^(?P<index>\d+)_(?P<action>.+)$", re.ASCII | re.S)
_OPT_PASS = re.compile(r"^opt_pass_(?P<index>\d+)_(?P<action>.+)$", re.ASCII | re.S)
_GRAPH_ID = re.compile(r"(?:graph_?|_)(?P<gid>\d+)$", re.ASCII)


@dataclass(frozen=True)
class GraphFile:
    """One file of a save_graphs directory."""

    location: str  # the file's path, as a string: a Path per file costs more than the listing
    relative: str
    family: str
    stem: str  # the name without counter and extension: "13_optimize", "opt_pass_2_opt_a"
    counter: int | None
    ext: str
    size: int

    @property
    def path(self) -> Path:
        return Path(self.location)

    @property
    def stage(self) -> tuple[int, str] | None:
        match = _STAGE.match(self.stem) if self.family == "stage" else None
        number = ascii_number(match["index"]) if match else None
        return (number, match["action"]) if number is not None else None

    @property
    def graph_id(self) -> int | None:
        match = _GRAPH_ID.search(self.stem) if self.family in ("kernel_graph", "backend", "pb") else None
        return ascii_number(match["gid"]) if match else None

    @property
    def label(self) -> str:
        return self.stem


def classify(relative: str) -> tuple[str, str, int | None, str]:
    """``(family, stem, counter, ext)`` of a path relative to the directory."""
    parts = relative.split("/")
    name = parts[-1]
    base, dot, ext = name.rpartition(".")
    if not dot:
        base, ext = name, ""
    match = _COUNTER.match(base)
    counter = ascii_number(match["counter"]) if match else None
    stem = match["stem"] if counter is not None else base  # a "counter" beyond int64 is part of the name
    if parts[0] == "actor_set" and len(parts) > 1:
        return "actor_set", stem, counter, ext
    if parts[0] == "verbose_ir_files" and len(parts) > 1:
        return "verbose", stem, counter, ext
    if ext == "dot":
        return "dot", stem, counter, ext
    if ext == "pb" and name.startswith("ms_output_"):
        return "pb", base, None, ext
    if name.startswith("trace_code_graph"):
        return "trace", stem, counter, ext
    if ext == "ir":
        if _OPT_PASS.match(stem):
            return "opt_pass", stem, counter, ext
        if _STAGE.match(stem):
            return "stage", stem, counter, ext
        if stem.startswith("hwopt_"):
            return "backend", stem, counter, ext
        if stem.startswith(("graph_build_", "graph_before_reset_id_")):
            return "kernel_graph", stem, counter, ext
    return "other", stem, counter, ext


@dataclass
class GraphsDir:
    """Every file of a save_graphs directory, classified by name."""

    root: Path
    files: list[GraphFile]
    unlisted: tuple[str, ...] = ()  # subdirectories that could not be listed (permissions, loops)
    why_unlisted: tuple[str, ...] = ()  # the reason for each, as the system gave it
    stopped: bool = False  # the listing stopped at MAX_ENTRIES: ``files`` is the first part only

    def limit_line(self) -> str:
        """Why the listing is partial; '' when it is whole."""
        if not self.stopped:
            return ""
        return (
            f"listing stopped after {MAX_ENTRIES:,} entries: is this the folder MindSpore wrote "
            "(save_graphs_path, or a rank_N folder in it)?"
        )

    def unlisted_line(self, names: int = 3, width: int = 48) -> str:
        """``2 directories could not be listed: a, b (Permission denied)``; '' when none: a bounded
        line for a summary (at most ``names`` names, each cut in the middle to ``width`` characters)."""
        if not self.unlisted:
            return ""
        count = len(self.unlisted)
        shown = ", ".join(shown_name(name, width) for name in self.unlisted[:names])
        more = f" and {count - names} more" if count > names else ""
        reasons = list(dict.fromkeys(self.why_unlisted))
        why = "; ".join(shown_name(r, width) for r in reasons[:3]) + ("; ..." if len(reasons) > 3 else "")
        return f"{count} director{'y' if count == 1 else 'ies'} could not be listed: {shown}{more}" + (
            f" ({why})" if why else ""
        )

    def family(self, family: str) -> list[GraphFile]:
        chosen = [f for f in self.files if f.family == family]
        if family == "stage":
            return sorted(chosen, key=lambda f: (f.stage or (10**6, ""), f.counter or 0))
        if family == "opt_pass":
            return sorted(chosen, key=lambda f: (_pass_index(f.stem), f.counter or 0))
        return sorted(chosen, key=lambda f: (f.counter if f.counter is not None else 10**9, f.relative))

    def ir_files(self) -> list[GraphFile]:
        return [f for f in self.files if f.ext == "ir" or f.family == "trace"]

    def find_dot(self, text: str) -> GraphFile | None:
        """The ``.dot`` file called ``text`` (with or without counter and extension), if any."""
        for f in self.family("dot"):
            if text in (f.stem, f.relative, os.path.basename(f.location)):
                return f
        return None

    def find(self, text: str) -> GraphFile:
        """The IR file called ``text`` (with or without counter and extension), or the only one
        whose name contains it."""
        candidates = self.ir_files()
        for f in candidates:
            if text in (f.stem, f.relative, os.path.basename(f.location)):
                return f
        matches = [f for f in candidates if text in f.relative]
        if len(matches) == 1:
            return matches[0]
        if matches:
            exact_stage = [f for f in matches if f.stage and f.stage[1] == text]
            if len(exact_stage) == 1:
                return exact_stage[0]
            shown = ", ".join(f.stem for f in matches[:6])
            raise DumpError(f"{text!r} matches {len(matches)} files: {shown}{' ...' if len(matches) > 6 else ''}")
        from ..keys import did_you_mean

        pool = [f.stem for f in candidates] + [f.stage[1] for f in candidates if f.stage]
        stages = [f.stem for f in self.family("stage")] or [f.stem for f in candidates]
        more = f" and {len(stages) - 4} more" if len(stages) > 4 else ""
        have = f" It has {len(candidates)} IR files" + (f", stages {', '.join(stages[:4])}{more}." if stages else ".")
        raise DumpError(f"no IR file in {self.root} is called {text!r}." + (did_you_mean(text, pool) or have))


def _pass_index(stem: str) -> int:
    """``opt_pass_12_x`` -> 12; an index beyond int64 sorts last."""
    number = ascii_number(_OPT_PASS.match(stem)["index"])
    return INT64_MAX + 1 if number is None else number


# A save_graphs directory of a large model holds tens of thousands of files; a folder with more
# entries than this is not one, and listing it whole (``msdebug dump /``) would take minutes.
MAX_ENTRIES = 100_000


def read_graphs_dir(path: str | os.PathLike) -> GraphsDir:
    """List and classify a save_graphs directory (no file is opened).

    Raises
    ------
    DumpError
        When ``path`` is not a readable directory.
    """
    root = Path(path)
    files: list[GraphFile] = []
    unlisted: list[str] = []
    why: list[str] = []
    stack = [""]
    seen = 0
    while stack:
        if seen >= MAX_ENTRIES:  # `msdebug dump /` must answer, not walk the whole disk
            break
        prefix = stack.pop()
        directory = root / prefix if prefix else root
        try:
            entries = list(os.scandir(directory))
        except OSError as error:
            if not prefix:
                raise DumpError(
                    f"{echo(str(directory), quote=False)}: cannot list it ({error.strerror or error})"
                ) from None
            unlisted.append(prefix)  # one unreadable subdirectory must not hide the rest: the summary names it
            why.append(error.strerror or type(error).__name__)
            continue
        seen += len(entries)
        for entry in entries:
            relative = f"{prefix}/{entry.name}" if prefix else entry.name
            if _is_dir(entry):
                stack.append(relative)
                continue
            try:
                size = entry.stat().st_size
            except OSError:
                size = 0
            family, stem, counter, ext = classify(relative)
            files.append(GraphFile(entry.path, relative, family, stem, counter, ext, size))
    files.sort(key=lambda f: f.relative)
    return GraphsDir(root, files, tuple(unlisted), tuple(why), stopped=bool(stack))


def shown_name(name: str, width: int) -> str:
    """``name`` on one line (control characters escaped) and at most ``width`` characters, cut in the middle."""
    from ..views._text import shorten

    if not name.isprintable():
        name = repr(name)[1:-1]
    return shorten(name, width)


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


# --------------------------------------------------------------------------- .dot files

_DOT_MAX_BYTES = 8 << 20
_DOT_NODE = re.compile(r"^(?P<id>[A-Za-z_][\w]*)\[(?P<attrs>.*)$", re.S)
_DOT_EDGE = re.compile(r"^(?P<a>[A-Za-z_]\w*)(?::\w+)?->(?P<b>[A-Za-z_]\w*)(?::\w+)?\[")
_DOT_CLUSTER = re.compile(r"^subgraph (?P<id>cluster_\w+)\s*\{")
_DOT_LABEL = re.compile(r'label=(?:<(?P<html>.*)>|"(?P<text>(?:[^"\\]|\\.)*)")', re.S)
_DOT_CELL = re.compile(r">([^<>]+)<")


@dataclass
class DotGraph:
    """What a Graphviz file MindSpore wrote draws: nodes (id, text lines, cluster), edges, clusters."""

    path: Path
    nodes: list[tuple[str, tuple[str, ...], str]] = field(default_factory=list)
    edges: list[tuple[str, str]] = field(default_factory=list)
    clusters: dict[str, str] = field(default_factory=dict)
    size: int = 0
    truncated: bool = False


def _dot_label(attrs: str) -> tuple[str, ...]:
    match = _DOT_LABEL.search(attrs)
    if match is None:
        return ()
    if match["text"] is not None:
        return (match["text"],)
    cells = [c.strip() for c in _DOT_CELL.findall(f">{match['html']}<")]
    # Port numbers (the input slots of a CNode) say nothing a reader needs.
    return tuple(c for c in cells if c and not c.isdigit())


def read_dot(path: str | os.PathLike) -> DotGraph:
    """The nodes, edges and clusters of a ``.dot`` file save_graphs wrote (level 3).

    Only the shapes MindSpore writes are understood: one node or edge statement per line
    (an HTML-like label may span lines), ``subgraph cluster_*`` blocks with a ``label``. At
    most 8 MiB are read.

    Raises
    ------
    DumpError
        When ``path`` is not a regular file or cannot be read.
    """
    path = Path(path)
    with open_regular(path, DumpError, follow=False) as handle:
        info = os.fstat(handle.fileno())
        data = handle.read(_DOT_MAX_BYTES + 1)
    graph = DotGraph(path, size=info.st_size, truncated=len(data) > _DOT_MAX_BYTES)
    text = data[:_DOT_MAX_BYTES].decode("utf-8", "replace")
    clusters: list[str] = []
    pending: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if pending:
            pending.append(line)
            if line.endswith(("]", "];}", "];")):
                statement = "\n".join(pending)
                pending = []
                match = _DOT_NODE.match(statement)
                if match:
                    graph.nodes.append((match["id"], _dot_label(match["attrs"]), clusters[-1] if clusters else ""))
                if line.endswith("}") and clusters:
                    clusters.pop()
            continue
        cluster = _DOT_CLUSTER.match(line)
        if cluster:
            clusters.append(cluster["id"])
            graph.clusters[cluster["id"]] = ""
            continue
        if line.startswith("label=") and clusters and not graph.clusters[clusters[-1]]:
            graph.clusters[clusters[-1]] = " ".join(_dot_label(line))
            continue
        edge = _DOT_EDGE.match(line)
        if edge:
            graph.edges.append((edge["a"], edge["b"]))
            continue
        if _DOT_NODE.match(line) and not line.startswith(("graph[", "node[", "edge[")):
            pending = [line]
            if line.endswith(("]", "];}", "];")):
                pending = []
                match = _DOT_NODE.match(line)
                graph.nodes.append((match["id"], _dot_label(match["attrs"]), clusters[-1] if clusters else ""))
                if line.endswith("}") and clusters:
                    clusters.pop()
            continue
        if line == "}" and clusters:
            clusters.pop()
    return graph
