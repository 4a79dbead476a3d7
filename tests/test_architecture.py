"""The house rules, checked: every import in msdebug/ (also the ones inside functions) read with ``ast``.

* no import cycle between msdebug's modules;
* only ``msdebug/backend/`` imports MindSpore;
* only ``msdebug/ipython/`` imports IPython's core, ipywidgets, ipykernel or comm (``IPython.display``
  to show a result is fine anywhere);
* readers (``dumps/``) and renderers (``views/``) are pure: no IPython edge, no settings, no recorders;
  views import nothing of msdebug but views and the key catalog (models call views, never the reverse);
  readers reach MindSpore only through ``backend.protos`` (its generated protobuf modules, when installed).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "msdebug"

IPYTHON_EDGE = ("IPython", "ipywidgets", "ipykernel", "comm")
ALLOWED_ANYWHERE = ("IPython.display",)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


@functools.cache
def parsed(path: Path) -> ast.Module:
    """``path``'s syntax tree, parsed once for every rule here (the rules only read it)."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Line numbers of imports under ``if TYPE_CHECKING:`` (they never run)."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


@functools.cache
def imports(name: str) -> tuple[tuple[str, int], ...]:
    """Every module ``name`` imports, anywhere in its file: ``(absolute name, line)``.

    ``from .pkg import sub`` counts as an import of ``pkg.sub`` when ``sub`` is a module.
    """
    return tuple(_imports(name))


def _imports(name: str) -> Iterator[tuple[str, int]]:
    path = MODULES[name]
    tree = parsed(path)
    skip = _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield (sub if sub in MODULES else target), node.lineno


def internal_graph() -> dict[str, set[str]]:
    return {name: {target for target, _ in imports(name) if target in MODULES and target != name} for name in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def violations(rule) -> list[str]:
    found = {
        f"{MODULES[name].relative_to(PACKAGE.parent)}:{line} imports {target}"
        for name in MODULES
        for target, line in imports(name)
        if rule(name, target)
    }
    return sorted(found)


def _under(name: str, *folders: str) -> bool:
    return any(name == f"msdebug.{f}" or name.startswith(f"msdebug.{f}.") for f in folders)


def _is(target: str, *roots: str) -> bool:
    return any(target == root or target.startswith(root + ".") for root in roots)


def test_the_walk_sees_the_whole_package():
    assert {"msdebug", "msdebug.settings", "msdebug.backend.context", "msdebug.ipython.extension"} <= set(MODULES)
    assert "msdebug.backend" in {target for target, _ in imports("msdebug.settings")}
    assert "msdebug.backend.protos" in {target for target, _ in imports("msdebug.dumps.print")}  # inside a function


def test_no_import_cycles_counting_imports_inside_functions():
    assert cycles(internal_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_only_backend_imports_mindspore():
    assert violations(lambda name, target: _is(target, "mindspore") and not _under(name, "backend")) == []


def test_only_the_ipython_folder_imports_ipython_widgets_kernels_and_comms():
    def rule(name: str, target: str) -> bool:
        return _is(target, *IPYTHON_EDGE) and not _is(target, *ALLOWED_ANYWHERE) and not _under(name, "ipython")

    assert violations(rule) == []


def test_views_import_only_views_and_the_key_catalog():
    def rule(name: str, target: str) -> bool:
        return (
            _under(name, "views")
            and _is(target, "msdebug")
            and not (_under(target, "views") or _under(target, "keys"))  # keys: the package and its modules
        )

    assert violations(rule) == []


@pytest.mark.parametrize("folder", ["dumps", "views"])
def test_readers_and_views_are_pure(folder):
    higher = ("msdebug.ipython", "msdebug.settings", "msdebug.recorders", "msdebug.recorders.print", "msdebug.cli")

    def rule(name: str, target: str) -> bool:
        touches_mindspore = _is(target, "msdebug.backend") and target != "msdebug.backend.protos"
        return _under(name, folder) and (_is(target, *higher) or touches_mindspore or _is(target, *IPYTHON_EDGE))

    assert violations(rule) == []


def test_readers_never_render_at_import_time():
    """A reader module may call a view lazily (its models' ``_repr_html_``), never at import."""
    for name in MODULES:
        if not _under(name, "dumps"):
            continue
        for node in parsed(MODULES[name]).body:
            if isinstance(node, ast.ImportFrom) and node.module and "views" in node.module:
                pytest.fail(f"{name} imports {node.module} at module level")


# --------------------------------------------------------------------------- one opener

# Calls that open or map a file by name. A file msdebug did not write is opened only in
# msdebug/files.py (open_regular, read_regular: no FIFO, no device, bounded, links refused inside
# trees); every other such call in msdebug/ is listed here with what it opens.
FILE_CALLS = {"open", "read_text", "read_bytes", "fdopen", "load", "loadtxt", "fromfile", "memmap", "mmap"}
OPENS_WHAT_MSDEBUG_WROTE = {
    ("recorders/print.py", "open(path, mode)"): "_create: a new print file, 'xb' (never an existing one)",
    ("recorders/print.py", "open(path, 'ab')"): "appends to the print file msdebug is capturing to",
    ("recorders/print.py", "libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)"): "maps its own memfd",
    ("cli.py", "os.open(os.devnull, os.O_WRONLY)"): "writes to /dev/null",
    ("ipython/hooks.py", "open(name, 'x', encoding='utf-8')"): "writes a new cell file",
    ("dumps/print.py", "open(os.fspath(path), 'xb')"): "writes a new print file",
    ("recorders/datadump.py", "open(path, 'x', encoding='utf-8')"): "writes a new dump config",
    ("recorders/envconfig.py", "os.fdopen(fd, 'w', encoding='utf-8')"): "writes the mkstemp file of an env_config",
    ("recorders/profile.py", "open(os.dup(sink.fileno()), 'wb')"): "writes to its own log sink",
    ("recorders/profile.py", "open(self.output / STEPS_FILE, 'x', encoding='utf-8')"): "writes new step marks",
    ("recorders/profile_dynamic.py", "open(temporary, 'w', encoding='utf-8')"): (
        "writes profiler_config.json's temporary"
    ),
    ("recorders/diff.py", "open(partial, 'x', encoding='utf-8')"): "writes a new run.json, renamed into place",
    ("recorders/diff.py", "open(root / file, 'xb')"): "writes a new tensor file of a saved run",
    ("dumps/datadump.py", "mmap.mmap(fd, need, access=mmap.ACCESS_READ)"): "maps the fd open_regular opened",
    ("ipython/explorer.py", "self.open(label, search=row.fullname)"): "opens a tab of the explorer, not a file",
    ("ipython/ranks.py", "os.open(os.path.join(pool, f'rank{rank}.stacks'), flags, 384)"): (
        "a new file a rank's faulthandler appends its stacks to"
    ),
    ("ipython/ranks.py", "os.fdopen(fd, 'a', encoding='utf-8')"): "the rank's new stacks file, opened above",
    ("ranks/flight.py", "os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, 'O_CLOEXEC', 0), 384)"): (
        "a new flight file a rank writes its communication to"
    ),
    ("ranks/flight.py", "mmap.mmap(fd, SIZE)"): "maps the new flight file opened above",
    ("ipython/ranks.py", "os.fdopen(os.dup(2), 'w', encoding='utf-8', errors='replace')"): (
        "writes a crash report to the rank's own log"
    ),
    ("ipython/ranks.py", "open(os.path.join(pool, f'rank{rank}.pid'), 'x', encoding='ascii')"): "writes a new pid file",
    ("ranks/worker.py", "open(temporary, 'w', encoding='utf-8')"): "writes how a rank ended, renamed into place",
    ("ranks/worker.py", "os.open(os.path.join(pool, f'{stem}.ended'), os.O_WRONLY | os.O_NONBLOCK)"): (
        "the write end of the FIFO the pool made: held open, never written"
    ),
    ("ranks/pool.py", "os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)"): (
        "the read end of a FIFO the pool made in its own directory (mkdtemp, 0700): never read"
    ),
    ("ranks/worker.py", "open(os.path.join(pool, f'{stem}.supervisor'), 'w', encoding='ascii')"): (
        "writes a supervisor's pid"
    ),
    (
        "ranks/pool.py",
        "open(self.dir / 'msrun.log', 'xb')",
    ): "a new file in the pool's own directory for msrun's output",
    ("ranks/pool.py", "(self.dir / f'rank{rank}.pid').read_text(encoding='ascii')"): (
        "the pid a rank wrote in the pool's own directory (mkdtemp, 0700)"
    ),
    (
        "ranks/pool.py",
        "path.read_text(encoding='utf-8')",
    ): "the connection file a rank's ipykernel wrote in the pool's directory",
    (
        "ranks/pool.py",
        "(self.dir / f'{stem}.exit').read_text(encoding='utf-8')",
    ): "how a rank ended, as its supervisor wrote it",
    ("ranks/pool.py", "path.read_text(encoding='ascii')"): "a supervisor's pid, written in the pool's directory",
    ("ranks/pool.py", "open(path, encoding='utf-8', errors='replace')"): "the stacks a rank's faulthandler wrote",
    ("__init__.py", "source.read_text(encoding='utf-8')"): "msdebug's own extension/package.json",
    (
        "recorders/diff.py",
        "open(ref.path, 'xb')",
    ): "a new file for a value kept in memory, in the run's own scratch folder",
    ("backend/profile.py", "(root / relative).read_text(encoding='utf-8')"): (
        "the installed MindSpore's own source, parsed for its profiler tables"
    ),
    ("views/status.py", "resources.files(__package__).joinpath('status.schema.json').read_text(encoding='utf-8')"): (
        "msdebug's own package data"
    ),
    ("cli.py", "WatchHistory.load(args.path)"): "a saved watch: dumps.watch reads it (its files through the opener)",
    ("ranks/watch.py", "WatchHistory.load(saved)"): "a rank's saved watch: dumps.watch reads it through the opener",
}


def file_calls(source: str | ast.AST) -> Iterator[tuple[int, str]]:
    """``(line, call)`` of each call in ``source`` (code, or its tree) that opens, reads or maps a
    file by name."""
    for node in ast.walk(ast.parse(source) if isinstance(source, str) else source):
        if isinstance(node, ast.Call):
            func = node.func
            by_name = isinstance(func, ast.Name) and func.id == "open"
            if by_name or (isinstance(func, ast.Attribute) and func.attr in FILE_CALLS and not _in_memory(node)):
                yield node.lineno, ast.unparse(node)


def _in_memory(call: ast.Call) -> bool:
    """``np.loadtxt(io.BytesIO(data))`` or ``np.loadtxt(lines[a:b])``: parses bytes already read."""
    first = call.args[0] if call.args else None
    wraps = isinstance(first, ast.Call) and getattr(first.func, "attr", getattr(first.func, "id", "")) in (
        "BytesIO",
        "StringIO",
    )
    return wraps or isinstance(first, ast.Subscript)


def test_files_msdebug_did_not_write_open_only_through_the_opener():
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where == "files.py":
            continue
        for line, call in file_calls(parsed(path)):
            found[(where, call)] = line
    bypass = [f"msdebug/{where}:{line}: {call}" for (where, call), line in found.items()
              if (where, call) not in OPENS_WHAT_MSDEBUG_WROTE]  # fmt: skip
    assert bypass == [], "open these through msdebug.files.open_regular / read_regular:\n" + "\n".join(bypass)
    stale = sorted(set(OPENS_WHAT_MSDEBUG_WROTE) - set(found))
    assert stale == [], f"no longer in msdebug/, drop them from the list: {stale}"


def test_the_opener_check_sees_each_way_to_read_a_file():
    source = """
import numpy as np, mmap, pathlib, io, os
open(p)
pathlib.Path(p).read_text()
p.read_bytes()
p.open()
io.open(p)
os.open(p, os.O_RDONLY)
np.load(p)
np.fromfile(p)
np.memmap(p)
mmap.mmap(fd, 0)
json.loads(text)
"""
    assert [line for line, _ in file_calls(source)] == list(range(3, 13))


# --------------------------------------------------------------------------- one name per feature

# Each feature has one noun, the same in every folder: backend/profile.py drives MindSpore's
# profiler, recorders/profile.py makes it record, dumps/profile.py reads what it wrote,
# views/profile.py renders it and ipython/magics/profile.py holds %%msprofile.
FEATURES = {"context", "print", "rdr", "graphs", "datadump", "nan", "profile", "diff", "ranks", "watch"}
UI_PIECES = {"status", "panel", "explorer"}
# What else a folder may hold: helpers that are no feature, each named in the README's Layout.
HELPERS = {
    "backend": {"version", "process", "protos", "hooks"},  # hooks: PyNative op hooks, used by nan
    # envconfig: MindSpore's env_config.json file, which RDR is read from; profile_options and
    # profile_dynamic: the profiler's two other ways in (MS_PROFILER_OPTIONS / profiler_config.json,
    # DynamicProfilerMonitor), beside the session in profile.py
    # hooked: one watched run of a cell (SIGINT held, scopes, dump, hooks), shared by nan and diff
    "recorders": {"envconfig", "profile_options", "profile_dynamic", "hooked"},
    # the .ir format (rdr and graphs); notebook cell names; the models' mixin; runs (the run model and
    # the saved-run format), align (which op is which) and msprobe (its dumps as runs), read by diff
    "dumps": {"ir", "cells", "rendered", "runs", "align", "msprobe"},
    "views": {"_html", "_text", "svg", "report"},  # shared HTML/text pieces; SVG charts; the report model
    "ipython": {"extension", "prefs", "hooks", "completion", "comm"},
    "ipython/magics": {"_parse", "_cellbody"},  # the one grammar; running a cell body
    # the pool started through msrun, what a worker runs, the C-level output a rank forwards; where
    # a rank is (stacks); MindSpore's communication ops, one list (collectives); a rank's flight
    # recorder (flight); the hang policy and where the ranks differ (hangs); a job started without msdebug (attach)
    "ranks": {"pool", "worker", "coutput", "stacks", "collectives", "flight", "hangs", "attach"},
}


def misnamed(folder: str, names) -> list[str]:
    """The modules of ``folder`` whose name is not a feature's noun, a UI piece, ``<feature>_<piece>``
    (dumps/datadump_explorer.py) or one of the folder's helpers: a second name for a feature."""
    allowed = FEATURES | UI_PIECES | HELPERS[folder]
    wrong = []
    for name in names:
        feature, _, piece = name.partition("_")
        if name not in allowed and not (feature in FEATURES and piece in UI_PIECES):
            wrong.append(f"msdebug/{folder}/{name}.py")
    return wrong


def modules_in(folder: str) -> list[str]:
    return sorted(path.stem for path in (PACKAGE / folder).glob("*.py") if path.name != "__init__.py")


@pytest.mark.parametrize("folder", sorted(HELPERS))
def test_each_feature_has_one_name_in_every_folder(folder):
    assert misnamed(folder, modules_in(folder)) == []


# The package's top holds what every feature shares, and no feature of its own: a feature's
# recorder, reader, view and magics live in the folders above, under the feature's one name.
# controls: the settings panel's model (which control a key gets, why it is locked), read by
# ipython/panel.py and views/panel.py alike.
TOP = {"__main__", "cli", "errors", "keys", "settings", "interrupts", "files", "schema", "controls"}


def test_no_feature_lives_at_the_top_of_the_package():
    assert sorted(set(modules_in(".")) - TOP) == []


def test_the_naming_rule_refuses_a_second_name_for_a_feature():
    second_names = ["profiler", "dump", "dumps", "printout", "prints", "dataexplorer", "savegraphs", "nan_report"]
    assert misnamed("backend", ["profile", "datadump", *second_names]) == [
        f"msdebug/backend/{name}.py" for name in second_names
    ]
    assert misnamed("views", ["datadump_explorer", "_html"]) == []
