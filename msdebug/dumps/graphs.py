"""A save_graphs directory (``MS_DEV_SAVE_GRAPHS`` / ``set_context(save_graphs=...)``).

Files are classified from their names alone, so a directory of thousands of dumps is
summarised by listing it. In save_graphs output the trailing ``_NNNN`` counter *is* the
creation order (unlike RDR's), so passes sort by it; stages sort by their ``NN_`` prefix.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import DumpError, echo

__all__ = ["FAMILIES", "GraphFile", "GraphsDir", "classify", "read_graphs_dir"]

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

_COUNTER = re.compile(r"^(?P<stem>.*?)_(?P<counter>\d{4,})$")
_STAGE = re.compile(r"^(?P<index>\d+)_(?P<action>.+)$")
_OPT_PASS = re.compile(r"^opt_pass_(?P<index>\d+)_(?P<action>.+)$")
_GRAPH_ID = re.compile(r"(?:graph_?|_)(?P<gid>\d+)$")


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
        return (int(match["index"]), match["action"]) if match else None

    @property
    def graph_id(self) -> int | None:
        match = _GRAPH_ID.search(self.stem) if self.family in ("kernel_graph", "backend", "pb") else None
        return int(match["gid"]) if match else None

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
    stem, counter = (match["stem"], int(match["counter"])) if match else (base, None)
    if parts[0] == "actor_set" and len(parts) > 1:
        return "actor_set", stem, counter, ext
    if parts[0] == "verbose_ir_files" and len(parts) > 1:
        return "verbose", stem, counter, ext
    if ext == "dot":
        return "dot", stem, counter, ext
    if ext == "pb":
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

    def family(self, family: str) -> list[GraphFile]:
        chosen = [f for f in self.files if f.family == family]
        if family == "stage":
            return sorted(chosen, key=lambda f: (f.stage or (10**6, ""), f.counter or 0))
        if family == "opt_pass":
            return sorted(chosen, key=lambda f: (int(_OPT_PASS.match(f.stem)["index"]), f.counter or 0))
        return sorted(chosen, key=lambda f: (f.counter if f.counter is not None else 10**9, f.relative))

    def ir_files(self) -> list[GraphFile]:
        return [f for f in self.files if f.ext == "ir" or f.family == "trace"]

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
        raise DumpError(f"no IR file in {self.root} is called {text!r}." + did_you_mean(text, pool))


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
    stack = [""]
    while stack:
        prefix = stack.pop()
        directory = root / prefix if prefix else root
        try:
            entries = list(os.scandir(directory))
        except OSError as error:
            if not prefix:
                raise DumpError(
                    f"{echo(str(directory), quote=False)}: cannot list it ({error.strerror or error})"
                ) from None
            unlisted.append(prefix)  # one unreadable subdirectory must not hide the rest
            continue
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
    return GraphsDir(root, files, tuple(unlisted))


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
