"""Profile readers, the profiler's and the data dump's config readers, and ``%msdump --dir`` on
hostile input: files that are FIFOs, devices or directories, endless lines, 200 KB fields,
negative times, and fuzzed bytes. Each gives a result (with a note) or one MsDebugError line;
never a traceback, a hang or all of memory.

A FIFO is read here with a writer on its other end (a thread that writes a valid file): a
reader that opens it would get that file and succeed, so the test sees a reader that opened
it, without ever hanging. Endless inputs (``/dev/zero``, a 2 GB sparse file) are read in a
fresh interpreter limited to 1 GiB of address space: a reader that gathers them whole dies
there with MemoryError.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import msdebug
from msdebug.dumps.profile import STEPS_FILE
from msdebug.errors import DumpConfigError, MsDebugError, ProfilerOptionsError
from msdebug.recorders import datadump
from msdebug.recorders.profile import read_config as read_profiler_config

from helpers import kernel_env

DATA = Path(__file__).parent / "data"
TWO_RANKS = DATA / "profile_2rank"
RUN = "host_1_20260101000000000_ascend_ms"
TYPE_HEAD = "op_type,type_occurrences,execution_frequency(per-step),total_compute_time,avg_time(ms),percent"
DETAIL_HEAD = (
    "op_side,op_type,op_name,full_op_name,op_occurrences,op_total_time(ms),op_avg_time(ms),total_proportion,"
    "subgraph,pid"
)
GOOD_PROFILER_CONFIG = {"start_step": 2, "stop_step": 3, "is_valid": True}


def _one_line(error: BaseException) -> str:
    text = str(error)
    assert text and "\n" not in text and "Traceback" not in text, text
    return text


@contextlib.contextmanager
def _fifo_with_writer(path: Path, data: bytes):
    """A FIFO at ``path`` whose other end writes ``data`` to whoever opens it for reading (each time)."""
    os.mkfifo(path)
    stop = threading.Event()

    def write() -> None:
        # A reader that closes before the write gets EPIPE here; with SIGPIPE at its default (as
        # MindSpore leaves it) the signal would end the whole test process instead.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPIPE})
        while not stop.is_set():
            with contextlib.suppress(OSError):
                handle = os.open(path, os.O_WRONLY)  # blocks until a reader opens
                try:
                    # Never blocks: while one reader holds the FIFO open without reading, this loop
                    # fills its buffer, and a blocking write would then wait for good on the
                    # release end below, which reads nothing.
                    os.set_blocking(handle, False)
                    os.write(handle, data)
                finally:
                    os.close(handle)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        yield path
    finally:
        # The writer may wait for a reader (the fixed readers never read it): hold a read end open
        # until it has written (less than a pipe's buffer), closed and seen the stop.
        stop.set()
        release = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            writer.join()
        finally:
            os.close(release)


def _limited_python(code: str, memory: int = 1 << 30) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter that cannot map more than ``memory`` bytes."""
    prelude = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))\n"
    env = {**kernel_env(), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=600
    )


def _profile(root: Path, types: str | bytes | None = None, details=None, stamps=None, steps=None) -> Path:
    """A profile folder with the given files (text or bytes; None leaves the file out)."""
    framework = root / RUN / "FRAMEWORK"
    framework.mkdir(parents=True, exist_ok=True)
    for name, content in (
        ("cpu_op_type_info_0.csv", types),
        ("cpu_op_detail_info_0.csv", details),
        ("cpu_op_execute_timestamp_0.txt", stamps),
    ):
        if content is not None:
            (framework / name).write_bytes(content.encode() if isinstance(content, str) else content)
    if steps is not None:  # where msdebug writes it: the output folder, above the run
        (root / STEPS_FILE).write_bytes(steps.encode() if isinstance(steps, str) else steps)
    return root


def _details(rows: list[list]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(DETAIL_HEAD.split(","))
    writer.writerows(rows)
    return out.getvalue()


# --------------------------------------------------------------------------- %msdump --dir (A)


@pytest.fixture
def no_dump_config(monkeypatch):
    monkeypatch.delenv("MINDSPORE_DUMP_CONFIG", raising=False)


@pytest.mark.parametrize("kind", ["a file", "below a file", "in /proc"])
def test_msdump_on_a_dir_that_cannot_be_one_is_one_line(ip, tmp_path, no_dump_config, kind):
    from IPython.core.error import UsageError

    (tmp_path / "plain").write_text("x")
    directory = {"a file": tmp_path / "plain", "below a file": tmp_path / "plain" / "dump", "in /proc": "/proc/x"}
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("msdump", f"on --dir {directory[kind]}")
    message = _one_line(caught.value)
    assert f"{directory[kind]}" in message and "give another directory" in message
    assert "MINDSPORE_DUMP_CONFIG" not in os.environ


def test_msdump_never_reads_a_fifo_where_its_config_goes(ip, tmp_path, no_dump_config):
    from IPython.core.error import UsageError

    config = datadump.build_config(tmp_path)
    same = (json.dumps(config, indent=2) + "\n").encode()  # what msdebug would write: it would take it as its own
    with _fifo_with_writer(tmp_path / datadump.CONFIG_NAME, same), pytest.raises(UsageError) as caught:
        ip.run_line_magic("msdump", f"on --dir {tmp_path}")
    message = _one_line(caught.value)
    assert "FIFO" in message and datadump.CONFIG_NAME in message and "give another directory" in message
    assert "MINDSPORE_DUMP_CONFIG" not in os.environ


def test_msdump_never_reads_a_device_where_its_config_goes(tmp_path):
    (tmp_path / "dump").mkdir()
    (tmp_path / "dump" / datadump.CONFIG_NAME).symlink_to("/dev/zero")
    result = _limited_python(f"""
        from msdebug.errors import DumpConfigError
        from msdebug.recorders import datadump
        try:
            datadump.write_config(datadump.build_config({str(tmp_path / "dump")!r}), {str(tmp_path / "dump")!r})
        except DumpConfigError as error:
            print("ERROR", error)
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("ERROR ") and result.stdout.count("\n") == 1, result.stdout
    assert "character device" in result.stdout and "give another directory" in result.stdout


def test_a_config_msdebug_did_not_write_is_never_overwritten(tmp_path):
    theirs = tmp_path / datadump.CONFIG_NAME
    theirs.write_text('{"theirs": 1}')
    written = datadump.write_config(datadump.build_config(tmp_path), tmp_path)
    assert written.name == "msdebug_dump-1.json" and theirs.read_text() == '{"theirs": 1}'
    assert datadump.write_config(datadump.build_config(tmp_path), tmp_path) == written  # its own: taken again


@pytest.mark.parametrize("kind", ["FIFO", "directory", "character device"])
def test_a_dump_config_env_path_that_is_no_file_is_one_line(tmp_path, monkeypatch, kind):
    target = {"FIFO": tmp_path / "cfg.json", "directory": tmp_path, "character device": Path("/dev/zero")}[kind]
    config = (json.dumps(datadump.build_config(tmp_path)) + "\n").encode()
    monkeypatch.setenv("MINDSPORE_DUMP_CONFIG", str(target))
    with _fifo_with_writer(target, config) if kind == "FIFO" else contextlib.nullcontext():
        status = datadump.dump_status()
        with pytest.raises(DumpConfigError) as caught:
            datadump.read_config(target)
    assert status.error == _one_line(caught.value)
    assert kind in status.error and str(target) in status.error, status.error
    assert "refuse" in repr(status)


# --------------------------------------------------------------------------- profiler_config.json (D)


@pytest.mark.parametrize("kind", ["FIFO", "directory", "character device"])
def test_a_profiler_config_that_is_no_file_is_one_line(tmp_path, kind):
    folder = tmp_path / "cfg"
    folder.mkdir()
    target = folder / "profiler_config.json"
    if kind == "directory":
        target.mkdir()
    elif kind == "character device":
        target.symlink_to("/dev/zero")
    with (
        _fifo_with_writer(target, json.dumps(GOOD_PROFILER_CONFIG).encode())
        if kind == "FIFO"
        else (contextlib.nullcontext())
    ):
        with pytest.raises(ProfilerOptionsError) as caught:
            read_profiler_config(target)
        with pytest.raises(ProfilerOptionsError) as again:  # before any monitor starts
            msdebug.dynamic_profile(cfg_path=folder, output_path=tmp_path / "out")
    assert kind in _one_line(caught.value) and str(again.value) == str(caught.value)


# --------------------------------------------------------------------------- CSV rows and times (B)


def test_a_200_kb_field_is_a_note_and_the_other_rows_are_read(tmp_path):
    rows = [
        ["Host", "MatMul", "MatMul-op0", "Default/MatMul-op0", 2, 1.5, 0.75, 0.6, "Default", 1],
        ["Host", "ReLU", "ReLU-op1", "Default/" + "R" * 200_000, 2, 1.0, 0.5, 0.4, "Default", 1],
        ["Host", "ReLU", "ReLU-op2", "Default/ReLU-op2", 2, 1.0, 0.5, 0.4, "Default", 1],
    ]
    report = msdebug.open_profile(_profile(tmp_path, details=_details(rows)))
    assert {row.full_name for row in report.ops()} == {"Default/MatMul-op0", "Default/ReLU-op2"}
    notes = [note for note in report.notes if "cpu_op_detail_info_0.csv" in note and "line 3" in note]
    assert len(notes) == 1 and "longer than" in notes[0] and len(notes[0]) < 300, report.notes


def test_negative_times_are_refused_with_a_note(tmp_path):
    types = f"{TYPE_HEAD}\nMatMul,2,1,1.5,0.75,1.5\nReLU,2,1,-455.2843,-227.6,-0.5\n"
    rows = [
        ["Host", "MatMul", "MatMul-op0", "Default/MatMul-op0", 2, 1.5, 0.75, 1.5, "Default", 1],
        ["Host", "ReLU", "ReLU-op1", "Default/ReLU-op1", 2, -455.2843, -227.6, -0.5, "Default", 1],
        ["Host", "ReLU", "ReLU-op2", "Default/ReLU-op2", -3, 1.0, 0.5, 0.4, "Default", 1],
    ]
    report = msdebug.open_profile(_profile(tmp_path, types=types, details=_details(rows)))
    assert report.total_ms == 1.5
    assert [row.op_type for row in report.op_types()] == ["MatMul"]
    assert [row.full_name for row in report.ops()] == ["Default/MatMul-op0"]
    text = repr(report)
    assert "-455" not in text and "-50.0%" not in text and "-0.5" not in text
    assert (
        "note: op types: cpu_op_type_info_0.csv: 1 row(s) with a negative time, count or share, the first at line 3 "
        "(total_compute_time is negative); skipped."
    ) in text
    assert (
        "note: ops: cpu_op_detail_info_0.csv: 2 row(s) with a negative time, count or share, the first at line 3 "
        "(op_total_time(ms) is negative); skipped."
    ) in text


# --------------------------------------------------------------------------- endless lines (C)


@pytest.mark.parametrize(
    "name, note",
    [
        ("cpu_op_type_info_0.csv", "op types: cpu_op_type_info_0.csv: line 3 is longer than 1 MiB"),
        ("cpu_op_detail_info_0.csv", "ops: cpu_op_detail_info_0.csv: line 3 is longer than 1 MiB"),
        (
            "cpu_op_execute_timestamp_0.txt",
            "op executions: cpu_op_execute_timestamp_0.txt: line 2 is longer than 1 MiB",
        ),
    ],
)
def test_a_2_gb_line_is_a_format_error_of_its_file_not_all_of_memory(tmp_path, name, note):
    framework = (
        _profile(
            tmp_path,
            types=f"{TYPE_HEAD}\nMatMul,2,1,1.5,0.75,1.0\n",
            details=_details([["Host", "MatMul", "MatMul-op0", "Default/MatMul-op0", 2, 1.5, 0.75, 1.0, "Default", 1]]),
            stamps="Default/MatMul-op0;HostCpuOps;1800000000000000000,0.5,0 1800000000000000001,1.0,0 \n",
        )
        / RUN
        / "FRAMEWORK"
    )
    with open(framework / name, "r+b") as handle:
        handle.truncate(os.fstat(handle.fileno()).st_size + (2 << 30))  # sparse: 2 GB of zero bytes, no newline
    result = _limited_python(f"""
        import msdebug
        report = msdebug.open_profile({str(tmp_path)!r})
        print(repr(report))
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"note: {note}" in result.stdout, result.stdout
    assert "MatMul" in result.stdout  # the lines before it, and the other files, are read


def test_a_trace_with_an_endless_item_stops_with_a_note(tmp_path):
    trace = tmp_path / "trace_view.json"
    with open(trace, "wb") as handle:
        handle.write(b'[{"ph": "X", "ts": 1, "dur": 2}, {"name": "')
        handle.truncate(2 << 30)
    result = _limited_python(f"""
        from msdebug.dumps.profile import read_trace
        problems = []
        summary = read_trace({str(trace)!r}, problems)
        print(summary.events, problems)
    """)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("1 ['trace: trace_view.json: an item is longer than 16 MiB"), result.stdout


# --------------------------------------------------------------------------- fuzzing (E)

REAL_FRAMEWORK = next(TWO_RANKS.glob("rank_0/*/FRAMEWORK"))
REAL_TYPES = (REAL_FRAMEWORK / "cpu_op_type_info_0.csv").read_text().splitlines()
REAL_DETAILS = (REAL_FRAMEWORK / "cpu_op_detail_info_0.csv").read_text().splitlines()
REAL_STAMPS = (REAL_FRAMEWORK / "cpu_op_execute_timestamp_0.txt").read_text().splitlines()
CELL = st.one_of(
    st.sampled_from(["MatMul", "Host", "Default/MatMul-op0", "", '"', '""', "a\nb", "1e999", "nan", "-inf", "0"]),
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=12),
)
ROW = st.lists(CELL, max_size=12).map(lambda cells: ",".join(cells))
NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers(-(10**20), 10**20).map(str))
NAME = st.sampled_from(["MatMul", "AllReduce", "Default/MatMul-op0", "", "<b>", "a,b"])
TYPE_ROW = st.builds(lambda name, numbers: ",".join([name, *numbers]), NAME, st.lists(NUMBER, min_size=5, max_size=5))
DETAIL_ROW = st.builds(
    lambda kind, name, numbers: ",".join(["Host", kind, name, name, *numbers, "Default", "1"]),
    NAME,
    NAME,
    st.lists(NUMBER, min_size=4, max_size=4),
)


def _csv_text(real: list[str], row=ROW):
    return st.lists(st.one_of(st.sampled_from(real), row, ROW), max_size=12).map(
        lambda lines: "\n".join([real[0], *lines])  # the real header, so that the rows are read
    )


STAMP_LINE = st.one_of(
    st.sampled_from(REAL_STAMPS),
    st.builds(
        lambda name, triples: f"{name};HostCpuOps;" + " ".join(triples),
        st.sampled_from(["Default/MatMul-op0", "", "a;b", "x\x00"]),
        st.lists(
            st.tuples(st.integers(-1, 10**19), st.floats(-1e6, 1e30), st.integers(0, 10)).map(
                lambda t: f"{t[0]},{t[1]},{t[2]}"
            ),
            max_size=6,
        ),
    ),
    st.text(max_size=40),
)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
STEPS = st.one_of(
    st.builds(
        lambda steps, partial: {"steps": steps, "partial": partial, "mode": "GRAPH"},
        st.lists(st.lists(st.one_of(st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=3)), max_size=4)),
        JSON_VALUE,
    ),
    JSON_VALUE,
)


def _read_and_render(root: Path) -> None:
    """read_profile on ``root``: a report that renders, or one MsDebugError line."""
    try:
        report = msdebug.open_profile(root)
    except MsDebugError as error:
        _one_line(error)
        return
    for run in report.runs:
        assert all(row.total_ms >= 0 and row.occurrences >= 0 and row.share >= 0 for row in run.op_types + run.ops)
    assert report.total_ms >= 0
    assert repr(report) and report._repr_html_()


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=120)
@given(
    _csv_text(REAL_TYPES, TYPE_ROW),
    _csv_text(REAL_DETAILS, DETAIL_ROW),
    st.lists(STAMP_LINE, max_size=8),
    st.booleans(),
    STEPS,
)
@example("\n".join(REAL_TYPES), "\n".join(REAL_DETAILS), REAL_STAMPS, True, {"steps": [[0, 1, 2**64]]})
@example(f"{TYPE_HEAD}\nA,1,1,1e308,1e308,2", f'{DETAIL_HEAD}\n"', ["x;HostCpuOps;1,1e30,0"], False, [1])
def test_fuzzed_profile_files_give_a_report_or_one_line(types, details, stamps, newline, steps):
    with tempfile.TemporaryDirectory() as folder:
        end = "\n" if newline else ""
        root = _profile(
            Path(folder),
            types=_encode(types + end),
            details=_encode(details + end),
            stamps=_encode("\n".join(stamps) + end),
            steps=_encode(json.dumps(steps)),
        )
        _read_and_render(root)


@settings(max_examples=120)
@given(st.binary(max_size=600), st.sampled_from(["types", "details", "stamps", "steps"]))
def test_raw_bytes_in_each_profile_file(data, which):
    with tempfile.TemporaryDirectory() as folder:
        files = {"types": "\n".join(REAL_TYPES) + "\n", "details": "\n".join(REAL_DETAILS) + "\n"}
        files[which] = data
        _read_and_render(_profile(Path(folder), **files))


@settings(max_examples=150)
@given(
    st.one_of(
        st.dictionaries(st.sampled_from(["start_step", "stop_step", "is_valid", "analyse", "x"]), JSON_VALUE),
        JSON_VALUE,
        st.binary(max_size=200),
    )
)
def test_fuzzed_profiler_and_dump_configs_are_read_or_one_line(value):
    data = value if isinstance(value, bytes) else _encode(json.dumps(value))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "profiler_config.json"
        path.write_bytes(data)
        for reader in (read_profiler_config, datadump.read_config):
            try:
                assert isinstance(reader(path), dict)
            except MsDebugError as error:
                _one_line(error)


def test_the_cli_on_hostile_profiles_prints_a_report_or_one_line(tmp_path):
    cases = {
        "negative": _profile(tmp_path / "negative", types=f"{TYPE_HEAD}\nReLU,2,1,-4.5,-2.2,-0.5\n"),
        "binary": _profile(tmp_path / "binary", types=b"\x00\xff" * 50, details=b"\x89PNG", stamps=b"\x00;\xff"),
        "field": _profile(tmp_path / "field", details=_details([["Host", "A", "A", "A" * 200_000, 1, 1, 1, 1]])),
        "not a profile": tmp_path / "nothing",
    }
    (tmp_path / "nothing").mkdir()
    for name, root in cases.items():
        result = subprocess.run(
            [sys.executable, "-m", "msdebug", "profile", str(root)],
            capture_output=True,
            text=True,
            env=kernel_env(),
            timeout=300,
        )
        assert "Traceback" not in result.stderr, (name, result.stderr)
        if name == "not a profile":
            assert result.returncode != 0 and result.stderr.count("\n") == 1, (name, result.stderr)
            assert result.stderr.startswith("msdebug profile: ") and "no profile inside" in result.stderr
        else:
            assert result.returncode == 0 and result.stdout.startswith("Profile "), (name, result.stderr)
            assert "note: " in result.stdout, (name, result.stdout)
