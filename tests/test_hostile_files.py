"""Files and inputs made to break msdebug: FIFOs, /dev/zero, symlink loops, corrupt tensors,
deep nesting, control characters, huge values. Each gets one line, never a hang or a traceback."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

import numpy as np
import pytest

import msdebug
from msdebug.errors import MsDebugError

from helpers import run_python

DATA = Path(__file__).parent / "data"
IR = DATA / "graphs_l2" / "13_optimize_0068.ir"


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """The ``msdebug`` command in a fresh interpreter; a hang fails the test, not the suite."""
    return subprocess.run(
        [sys.executable, "-m", "msdebug", *args], capture_output=True, text=True, timeout=timeout, cwd=os.getcwd()
    )


def _one_line_error(done: subprocess.CompletedProcess, *expected: str) -> str:
    assert done.returncode != 0, done.stdout[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr[-3000:]
    for word in expected:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def make_fifo():
    """Makes FIFOs; after 5 s a thread opens and closes the writing end of each, so a reader
    that blocked on one sees end-of-file and the test fails instead of hanging."""
    made: list[Path] = []
    done = threading.Event()

    def rescue() -> None:
        if not done.wait(5):
            for path in made:
                with contextlib.suppress(OSError):
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))

    def make(path: Path) -> Path:
        os.mkfifo(path)
        made.append(path)
        return path

    thread = threading.Thread(target=rescue, daemon=True)
    thread.start()
    yield make
    done.set()
    thread.join()


@pytest.fixture
def fifo(make_fifo, tmp_path):
    return make_fifo(tmp_path / "pipe")


# --------------------------------------------------------------------------- 4: non-regular files


def test_print_file_on_a_fifo_is_refused_not_waited_for(fifo):
    _one_line_error(_cli("print-file", str(fifo), timeout=30), "FIFO", "regular files")
    with pytest.raises(MsDebugError, match="FIFO"):
        msdebug.read_print_file(fifo)


def test_dump_graph_whose_ir_file_is_a_fifo(tmp_path):
    shutil.copytree(DATA / "graphs_l2", tmp_path / "g")
    os.mkfifo(tmp_path / "g" / "99_hang_0999.ir")
    done = _cli("dump", str(tmp_path / "g"), "--graph", "99_hang", timeout=60)
    _one_line_error(done, "FIFO")


def test_an_ir_file_that_is_a_fifo_given_directly(make_fifo, tmp_path):
    target = make_fifo(tmp_path / "x.ir")
    _one_line_error(_cli("dump", str(target), timeout=30), "FIFO")


def test_a_source_line_naming_a_fifo_at_a_cell_like_path(make_fifo, tmp_path):
    from msdebug.dumps.cells import cell_code

    cell_dir = tmp_path / "ipykernel_4242"
    cell_dir.mkdir()
    make_fifo(cell_dir / "123456.py")
    started = time.monotonic()
    assert cell_code(str(cell_dir / "123456.py"), 1) is None
    assert time.monotonic() - started < 3


def test_env_config_write_to_a_fifo_is_refused(fifo):
    from msdebug.recorders.envconfig import EnvConfig

    done = run_python(
        f"""
        from msdebug.recorders.envconfig import EnvConfig
        from msdebug.errors import MsDebugError
        try:
            EnvConfig(rdr_enable=True).write({str(fifo)!r}, overwrite=True)
        except MsDebugError as error:
            print("refused:", error)
        """,
        timeout=30,
    )
    assert "refused:" in done.stdout and "FIFO" in done.stdout, done.stdout + done.stderr
    assert EnvConfig  # the module imports


def test_env_config_read_of_a_fifo_is_refused(fifo):
    from msdebug.recorders.envconfig import EnvConfig

    with pytest.raises(MsDebugError, match="FIFO"):
        EnvConfig.read(fifo)


# --------------------------------------------------------------------------- 5: bounded reads


def test_print_file_dev_zero_is_refused_at_once():
    done = _cli("print-file", "/dev/zero", timeout=30)
    _one_line_error(done, "/dev/zero", "character device")


def test_a_print_file_beyond_the_bound_is_refused(tmp_path, monkeypatch):
    import msdebug.dumps.print as printfile

    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * 5000)
    monkeypatch.setattr(printfile, "PRINT_FILE_LIMIT", 4096)
    with pytest.raises(MsDebugError, match="larger than"):
        printfile.read_print_file(big)


def test_rdr_text_records_beyond_the_bound_are_refused(tmp_path, monkeypatch):
    from msdebug.dumps import rdr

    big = tmp_path / "big.txt"
    big.write_bytes(b"a\n" * 4000)
    monkeypatch.setattr(rdr, "TEXT_LIMIT", 4096)
    with pytest.raises(MsDebugError, match="larger than"):
        rdr.read_lines(big, "an RDR text record")


# --------------------------------------------------------------------------- 7: symlink loops


def test_an_rdr_directory_with_a_symlink_loop(tmp_path):
    shutil.copytree(DATA / "rdr_mode1", tmp_path / "dump")
    rdr_dirs = sorted((tmp_path / "dump").rglob("rdr"))
    loop = rdr_dirs[0] / "loop"
    os.symlink(loop, loop)  # a symlink to itself: stat() fails with ELOOP
    done = _cli("dump", str(tmp_path / "dump"))
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == 0, done.stderr


def test_a_symlink_loop_given_as_the_path(tmp_path):
    loop = tmp_path / "loop.ir"
    os.symlink(loop, loop)
    _one_line_error(_cli("dump", str(loop)), "loop.ir")


# --------------------------------------------------------------------------- 8: parser failures


def _print_file_with(tmp_path: Path, dims: list[int], kind: str, content: bytes) -> Path:
    from msdebug.dumps.print import _message_classes

    Print, _, _ = _message_classes()
    message = Print()
    value = message.value.add()
    value.tensor.tensor_type = kind
    value.tensor.dims.extend(dims)
    value.tensor.tensor_content = content
    path = tmp_path / f"corrupt_{len(list(tmp_path.iterdir()))}.bin"
    path.write_bytes(message.SerializeToString())
    return path


@pytest.mark.parametrize(
    ("dims", "kind", "content"),
    [
        ([-1, -1], "Float32", np.zeros(1, "<f4").tobytes()),
        ([-5, 0], "Float32", b""),
        ([2**62, 0], "Float32", b""),
        ([2**31, 2**31, 2**31], "Float32", b""),
        ([1], "Float32", b"\x00\x01\x02"),
        ([1], "BFloat16", b"\x00\x01\x02"),
        ([3], "Int4", b""),
    ],
)
def test_corrupt_print_file_tensors_give_a_print_file_error(tmp_path, dims, kind, content):
    from msdebug.dumps.print import PrintFileError

    path = _print_file_with(tmp_path, dims, kind, content)
    with pytest.raises(PrintFileError, match="byte 0"):
        msdebug.read_print_file(path, "binary")
    _one_line_error(_cli("print-file", str(path), "--format", "binary"), "byte 0")


def test_env_config_read_of_deep_json_and_huge_integers(tmp_path):
    from msdebug.recorders.envconfig import EnvConfig, EnvConfigError

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(EnvConfigError, match="deep.json"):
        EnvConfig.read(deep)
    huge = tmp_path / "huge.json"
    huge.write_text('{"rdr": {"mode": ' + "9" * 5000 + "}}")
    with pytest.raises(EnvConfigError, match="huge.json"):
        EnvConfig.read(huge)


def test_a_jit_config_nested_20000_deep_is_one_line(ip):
    from IPython.core.error import UsageError

    for deep in ("{'a': " * 20_000 + "1" + "}" * 20_000, "[" * 20_000 + "]" * 20_000):
        with pytest.raises(UsageError) as caught:
            ip.run_line_magic("mscontext", f"jit_config={deep}")
        message = str(caught.value)
        assert "\n" not in message and len(message) < 400, message[:500]
        assert "nested too deeply" in message or "expected a dict" in message, message[:500]
        # Nothing chained: no RecursionError (nor msdebug's own error) travels with the
        # UsageError, so no traceback can show one, and its frames are not kept alive.
        assert caught.value.__cause__ is None and caught.value.__context__ is None, repr(caught.value.__context__)
        shown = "".join(traceback.format_exception(caught.value))
        assert "RecursionError" not in shown and "During handling" not in shown, shown[-2000:]


def test_a_deeply_nested_value_through_the_python_api():
    with pytest.raises(MsDebugError):
        msdebug.set(jit_config="[" * 20_000 + "]" * 20_000)


# --------------------------------------------------------------------------- 9: control characters


def test_the_cli_escapes_control_characters_in_file_names(tmp_path):
    shutil.copytree(DATA / "graphs_l2", tmp_path / "g")
    evil = "13_optimize_\x1b]0;pwned\x07\x1b[2J_0068.ir"
    shutil.copy(IR, tmp_path / "g" / evil)
    done = _cli("dump", str(tmp_path / "g"))
    assert done.returncode == 0, done.stderr
    for raw in ("\x1b", "\x07"):
        assert raw not in done.stdout and raw not in done.stderr
    assert "\\x1b" in done.stdout
    done = _cli("dump", str(tmp_path / "g" / "missing\x1b[2J.ir"))
    assert "\x1b" not in done.stderr and "\\x1b" in done.stderr


def test_the_cli_escapes_control_characters_in_print_files(tmp_path):
    path = tmp_path / "printed.txt"
    path.write_text("a line\x1b]0;title\x07 and more\n")
    done = _cli("print-file", str(path), "--format", "text")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "a line" in done.stdout


# --------------------------------------------------------------------------- 10: echo bounds


def test_an_error_echoes_at_most_a_short_piece_of_a_huge_value(ip):
    from IPython.core.error import UsageError

    huge = "x" * 200_000
    for line in (f"mode={huge}", f"save_graphs={huge}", f"jit_config={{'jit_level': '{huge}'}}", f"{huge}=1"):
        with pytest.raises(UsageError) as caught:
            ip.run_line_magic("mscontext", line)
        assert len(str(caught.value)) < 600, len(str(caught.value))
        assert "characters)" in str(caught.value)
    with pytest.raises(MsDebugError) as caught:
        msdebug.set(mode=huge)
    assert len(str(caught.value)) < 600


def test_the_cli_echoes_a_short_piece_of_a_huge_path():
    done = _cli("dump", "/nonexistent/" + "y" * 3000)
    line = _one_line_error(done)
    assert len(line) < 400, len(line)


# --------------------------------------------------------------------------- 11: empty and negative


def test_dump_of_an_empty_path_is_refused(tmp_path):
    _one_line_error(_cli("dump", ""), "empty")
    with pytest.raises(MsDebugError, match="empty"):
        msdebug.open_dump("")


def test_msgraphs_path_empty_is_refused(ip):
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="empty"):
        ip.run_line_magic("msgraphs", "on --path ''")


def test_dump_limit_must_be_positive():
    done = _cli("dump", str(DATA / "graphs_l2"), "--graph", "optimize", "--limit", "-5")
    assert done.returncode == 2 and "--limit" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def _too_deep_to_list(parent: Path) -> str:
    """A real directory no one can list by its path, root included: nested below ``parent``
    until its path is longer than PATH_MAX (made through directory fds, as only that works).
    Returns its path relative to ``parent``."""
    name, relative = "d" * 250, []
    fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        while len(str(parent)) + len("/".join(relative)) < os.pathconf(parent, "PC_PATH_MAX") + 300:
            os.mkdir(name, dir_fd=fd)
            deeper = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = deeper
            relative.append(name)
    finally:
        os.close(fd)
    return "/".join(relative)


def test_dump_skips_directories_it_cannot_list(tmp_path):
    from msdebug.dumps.graphs import read_graphs_dir

    tree = tmp_path / "tree"
    shutil.copytree(DATA / "graphs_l2", tree / "graphs")
    deep = _too_deep_to_list(tree)
    with pytest.raises(OSError):
        os.scandir(tree / deep)  # what msdebug meets there
    locked = tree / "locked"  # unreadable too, where the tests do not run as root
    locked.mkdir()
    locked.chmod(0)
    try:
        listed = read_graphs_dir(tree)
        done = _cli("dump", str(tree))
    finally:
        locked.chmod(0o755)
    # The walk went down to the directory it cannot list, skipped it, and kept the rest.
    unlisted = [path for path in listed.unlisted if path != "locked"]
    assert len(unlisted) == 1 and unlisted[0].startswith(deep.split("/")[0]), [p[:80] for p in listed.unlisted]
    assert deep.startswith(unlisted[0]) and len(str(tree / unlisted[0])) > os.pathconf(tree, "PC_PATH_MAX")
    assert ("locked" in listed.unlisted) == (os.geteuid() != 0)
    assert len(listed.files) == len(read_graphs_dir(tree / "graphs").files) > 100
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 0, done.stderr
    assert "pipeline stages" in done.stdout and f"{len(listed.files)} files" in done.stdout, done.stdout[:500]


def test_dump_of_the_root_directory_does_not_abort():
    # The whole disk is more than a save_graphs directory holds: the listing stops and says so.
    done = _cli("dump", "/", timeout=120)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "listing stopped after 100,000 entries" in done.stdout, done.stdout[-2000:]


# --------------------------------------------------------------------------- 6: one pass over an .ir


def test_every_node_of_an_ir_of_empty_subgraphs_is_read_in_one_open(tmp_path, monkeypatch):
    import builtins

    from msdebug.dumps import read_ir

    path = tmp_path / "empty.ir"
    path.write_text("".join(f"subgraph @g{i}() {{\n}}\n\n" for i in range(20_000)))
    opened = []
    real_open, real_os_open = builtins.open, os.open

    def counting(opener):
        def open_(file, *args, **kwargs):
            if os.fspath(file) == str(path) if isinstance(file, (str, os.PathLike)) else False:
                opened.append(file)
            return opener(file, *args, **kwargs)

        return open_

    monkeypatch.setattr(builtins, "open", counting(real_open))
    monkeypatch.setattr(os, "open", counting(real_os_open))
    ir = read_ir(path)
    assert len(ir.graphs) == 20_000
    assert ir.find("g19999") == []
    assert ir.op_counts() == {}
    assert len(opened) <= 3, len(opened)


def test_an_ir_of_empty_subgraphs_costs_a_few_numbers_per_graph(tmp_path):
    """``msdebug dump FILE`` on 200,000 empty subgraphs: every graph listed and findable, at
    under 150 bytes per graph all told (an object per graph took about 400)."""
    import tracemalloc

    from msdebug.dumps.explorer import open_dump

    path = tmp_path / "empty.ir"
    path.write_text("".join(f"subgraph @g{i}() {{\n}}\n\n" for i in range(200_000)))
    tracemalloc.start()
    try:
        explorer = open_dump(path)
        view = explorer.graph()
        text = repr(view)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 150 * 200_000, f"{peak / 200_000:.0f} bytes per graph"
    assert len(view.graphs) == 200_000 and view.graphs[:2] == (("g0", 0), ("g1", 0))
    assert view.graphs[-1] == ("g199999", 0) and view.total_nodes == 0 and view.rows == ()
    assert "200000 graphs, 0 nodes: @g0 (0), @g1 (0)" in text and "and 199992 more" in text
    graph = explorer.file.graph("@g199999")
    assert (graph.lineno, graph.closed, graph.nodes) == (599_998, True, [])


def test_dump_says_which_directories_it_could_not_list(tmp_path):
    """The directories skipped above are named in the summary, text and HTML, on one bounded line."""
    from msdebug.dumps.explorer import open_dump

    tree = tmp_path / "tree"
    shutil.copytree(DATA / "graphs_l2", tree / "graphs")
    deep = _too_deep_to_list(tree)
    tricky = tree / "<b>\nx"  # a name that must be escaped in HTML and stay on one line in text
    tricky.mkdir()
    deep_tricky = _too_deep_to_list(tricky)
    explorer = open_dump(tree)
    done = _cli("dump", str(tree))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    text, html = repr(explorer), explorer._repr_html_()
    for shown in (text, done.stdout):
        lines = [line for line in shown.splitlines() if "could not be listed" in line]
        assert len(lines) == 1, shown[:2000]
        line = lines[0]
        assert line.startswith("note: 2 directories could not be listed: "), line
        assert "File name too long" in line and len(line) < 300, line
        # Each name is cut in the middle: its head (escaped on one line) and the larger part of its tail.
        assert deep[:8] in line and deep[-20:] in line and "<b>\\nx/" + deep_tricky[:5] in line, line
    assert "could not be listed" in html and "&lt;b&gt;" in html and "<b>" not in html
    assert len(deep) > 4000 and deep not in html  # bounded: the 4,000-character name is cut
