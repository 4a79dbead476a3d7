"""Every reader of a file msdebug did not write, against a FIFO, ``/dev/zero`` and symbolic links.

All of them open through ``msdebug.files.open_regular``: each case gives one line (an error of
``msdebug.errors``, or the note of a reader that walks many files), and none ever blocks. Config
files and print files are named by the user, so a link to a regular file is followed; a file
inside a dump, a profile or an RDR tree is never opened through a link (``O_NOFOLLOW``).

A reader that regressed into a blocking ``open()`` would wait on the FIFO forever: each call runs
in a thread, and when it has not returned within a generous bound the test opens the FIFO's other
end itself, so the reader gets end-of-file and the test fails instead of hanging.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import msdebug
from msdebug import files
from msdebug.dumps import cells, datadump, graphs, ir, profile, rdr
from msdebug.errors import MsDebugError
from msdebug.recorders import datadump as dump_config
from msdebug.recorders import profile as profiler_config
from msdebug.recorders.envconfig import EnvConfig

DATA = Path(__file__).parent / "data"
HANG_BOUND = 120  # seconds: only a reader blocked for good gets anywhere near it


def _collected(read: Callable[[Path, list[str]], object]) -> Callable[[Path], None]:
    """A reader in collect mode: its one note is raised, so every reader answers alike."""

    def call(path: Path) -> None:
        problems: list[str] = []
        try:
            read(path, problems)
        except MsDebugError as error:  # a reader that walks many files never stops at one
            raise AssertionError(f"raised instead of collecting: {error}") from None
        if problems:
            assert len(problems) == 1, problems
            raise MsDebugError(problems[0])

    return call


def _mapping(path: Path) -> None:
    _, notes = datadump._read_mapping(path)
    if notes:
        assert len(notes) == 1, notes
        raise MsDebugError(notes[0])


@dataclass(frozen=True)
class Reader:
    name: str
    read: Callable[[Path], object]
    follows: bool  # a link to a regular file is followed (a path the user names)
    good: bytes = b"x\n"  # what the file outside holds


READERS = [
    Reader("print file", msdebug.read_print_file, True, (DATA / "print" / "training.pb").read_bytes()),
    Reader("env_config", EnvConfig.read, True, b"{}"),
    Reader(
        "dump config",
        dump_config.read_config,
        True,
        json.dumps(dump_config.build_config("/tmp/msdebug-dump")).encode(),
    ),
    Reader("profiler_config.json", profiler_config.read_config, True, b'{"start_step": 2, "stop_step": 3}'),
    Reader("IR file", ir.read_ir, False),
    Reader("dot file", graphs.read_dot, False),
    Reader("RDR record", lambda path: rdr.read_lines(path, "an RDR text record"), False),
    Reader("dump tensor", datadump.open_tensor, False),
    Reader("dump mapping.csv", _mapping, False),
    Reader("profile op types", _collected(profile.read_op_types), False),
    Reader("profile op details", _collected(profile.read_op_details), False),
    Reader("profile executions", _collected(lambda path, notes: profile.read_executions(path, [], notes)), False),
    Reader("profile steps", _collected(profile.read_steps), False),
    Reader("profile trace", _collected(profile.read_trace), False),
]

CASES = ["FIFO", "/dev/zero", "link to /dev/zero", "link outside"]


def _bounded(call: Callable[[], object], fifo: Path | None) -> BaseException | None:
    """What ``call()`` raised (None when it returned); a call blocked on ``fifo`` fails the test."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(HANG_BOUND)
    if thread.is_alive():
        if fifo is not None:  # the reader waits in open(): give it a writer, then end-of-file
            os.close(os.open(fifo, os.O_WRONLY))
        thread.join()
        pytest.fail(f"the reader blocked on {fifo or 'its file'}")
    return outcome[0]


def _hostile(case: str, target: Path, outside: Path, content: bytes) -> tuple[Path, Path | None]:
    """Make ``target`` the hostile file of ``case`` (a link outside points at ``outside``, which
    holds ``content``); returns the path to read and the FIFO to unblock, if any."""
    target.parent.mkdir(exist_ok=True)
    if case == "FIFO":
        os.mkfifo(target)
        return target, target
    if case == "/dev/zero":
        return Path("/dev/zero"), None
    if case == "link to /dev/zero":
        target.symlink_to("/dev/zero")
    else:
        outside.parent.mkdir(exist_ok=True)
        outside.write_bytes(content)
        target.symlink_to(outside)
    return target, None


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("reader", READERS, ids=lambda reader: reader.name)
def test_every_reader_refuses_fifos_devices_and_links_in_one_line(reader, case, tmp_path):
    target, fifo = _hostile(case, tmp_path / "in" / "hostile-file", tmp_path / "outside" / "file", reader.good)
    error = _bounded(lambda: reader.read(target), fifo)

    if case == "link outside" and reader.follows:
        assert error is None, f"{reader.name}: a link the user names to a regular file is read: {error!r}"
        return
    assert isinstance(error, MsDebugError), f"{reader.name}: {error!r}"
    line = str(error)
    assert "\n" not in line and line.strip(), line
    expected = {
        "FIFO": "is a FIFO (named pipe); msdebug reads only regular files",
        "/dev/zero": "is a character device; msdebug reads only regular files",
        "link to /dev/zero": (
            "is a character device; msdebug reads only regular files" if reader.follows else "is a symbolic link"
        ),
        "link outside": "is a symbolic link; msdebug does not follow links",
    }[case]
    assert expected in line, line
    assert target.name in line, line  # the file is named (a long path shortened in the middle)


@pytest.mark.parametrize("case", [case for case in CASES if case != "/dev/zero"])  # /dev/zero is no cell path
def test_a_cell_source_that_is_no_regular_file_is_not_shown(case, tmp_path):
    """``cell_code`` shows a cell's lines when it can and nothing otherwise: never a hang."""
    target, fifo = _hostile(case, tmp_path / "ipykernel_4242" / "123456.py", tmp_path / "outside.py", b"secret = 1\n")
    shown: list[object] = []
    assert _bounded(lambda: shown.append(cells.cell_code(str(target), 1)), fifo) is None
    assert shown == [None]
    target.unlink()
    target.write_text("seen = 1\n")  # the same path as a regular file is shown
    assert cells.cell_code(str(target), 1) == "seen = 1"


def test_a_profile_reads_no_file_through_a_link(tmp_path):
    """The walk of a whole profile: a link among its files is one note, the rest is read."""
    root = tmp_path / "profile"
    shutil.copytree(DATA / "profile_2rank", root)
    framework = next(root.glob("rank_0/*/FRAMEWORK"))
    types = framework / "cpu_op_type_info_0.csv"
    (tmp_path / "outside.csv").write_bytes(types.read_bytes())
    types.unlink()
    types.symlink_to(tmp_path / "outside.csv")
    report = profile.read_profile(root)
    problems = report.runs[0].problems
    notes = [note for note in problems if "symbolic link" in note]
    assert len(notes) == 1 and notes[0].startswith("op types: ") and types.name in notes[0], problems
    assert [run.rank for run in report.runs] == [0, 1] and report.runs[1].op_types  # the other rank is whole


def test_a_data_dump_never_maps_a_tensor_through_a_link(tmp_path):
    from test_hostile_dumps import STAMP, file_name, make_dump, npy

    name = file_name("Mul", "Default_Mul-op0", STAMP)
    path = make_dump(tmp_path / "dump", ["Default/Mul-op0"], {name: npy([1.0])})
    tensor = next(path.rglob(name))
    tensor.rename(tmp_path / "outside.npy")
    tensor.symlink_to(tmp_path / "outside.npy")
    with pytest.raises(MsDebugError, match="symbolic link"):
        datadump.open_tensor(tensor)


# --------------------------------------------------------------------------- the opener itself


def test_collect_mode_returns_none_with_the_line_and_raise_mode_raises_it(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    problems: list[str] = []
    assert files.open_regular(tmp_path / "pipe", problems=problems, what="a table") is None
    assert files.open_regular(tmp_path / "gone", problems=problems, what="a table") is None
    assert files.read_regular("/dev/zero", 10, problems=problems, what="a table") is None
    assert problems == [
        f"a table: {tmp_path / 'pipe'} is a FIFO (named pipe); msdebug reads only regular files. Not read.",
        f"a table: {tmp_path / 'gone'} is missing.",
        "a table: /dev/zero is a character device; msdebug reads only regular files. Not read.",
    ]
    with pytest.raises(MsDebugError, match="FIFO"):
        files.open_regular(tmp_path / "pipe")
    with pytest.raises(MsDebugError, match="No such file"):
        files.read_regular(tmp_path / "gone", 10)


def test_reads_are_bounded_and_links_followed_only_when_asked(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 100)
    (tmp_path / "link").symlink_to(tmp_path / "big")
    with pytest.raises(MsDebugError, match="larger than 99 bytes"):
        files.read_regular(tmp_path / "big", 99)
    assert files.read_regular(tmp_path / "link", 100) == b"x" * 100
    with pytest.raises(MsDebugError, match="symbolic link"):
        files.read_regular(tmp_path / "link", 100, follow=False)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for follow in (True, False):
        with pytest.raises(MsDebugError, match="loop"):
            files.open_regular(loop, follow=follow)
