"""Data dumps made to break msdebug's readers and its command: a broken pipe, a quadratic matching,
hostile ``mapping.csv`` files, ``.npy`` headers that lie, digits that are not ASCII. Each gets its
result or one line, never a traceback, a hang, or minutes of work."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from msdebug.dumps import datadump
from msdebug.dumps.datadump import TensorFile, open_tensor, read_data_dump
from msdebug.errors import DumpFormatError

ROOT = Path(datadump.__file__).resolve().parents[2]  # the msdebug under test, for the command too
STAMP = 1_795_000_000_000_000


def npy(array) -> bytes:
    """``array`` as numpy writes it to a ``.npy`` file."""
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array))
    return buffer.getvalue()


def make_dump(root: Path, order: list[str], files: dict[str, bytes], step: str = "0", graph: str = "0") -> Path:
    """A data dump in MindSpore's layout: ``order`` as the execution order of graph 0, ``files``
    (name -> bytes) in ``rank_0/Net/<graph>/<step>/``."""
    rank = root / "dump" / "rank_0"
    folder = rank / "Net" / graph / step
    folder.mkdir(parents=True)
    (rank / "execution_order").mkdir()
    (rank / "execution_order" / "ms_execution_order_graph_0.csv").write_text(
        "NodeExecutionOrder-FullNameWithScope\n" + "".join(f"{name}\n" for name in order)
    )
    (rank / "execution_order" / "ms_global_execution_order_graph_0.csv").write_text("0\n")
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return root / "dump"


def file_name(
    op_type: str, flat: str, stamp: int | str, io: str = "output", slot: int = 0, dtype: str = "Float32"
) -> str:
    return f"{op_type}.{flat}.0.0.{stamp}.{io}.{slot}.DefaultFormat.{dtype}.npy"


def cli(*args: str, stdin=None, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real ``msdebug`` command (this worktree's code) in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "msdebug", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def one_line(done: subprocess.CompletedProcess, status: int = 2) -> str:
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode == status, (done.returncode, done.stderr[-3000:])
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr[-3000:]
    return lines[0]


# --------------------------------------------------------------------------- matching is not quadratic


class CountedSlot(int):
    """A slot number that counts how often it is compared or hashed: the matcher's unit of work."""

    uses = 0

    def __eq__(self, other):
        CountedSlot.uses += 1
        return int(self) == other

    def __ne__(self, other):
        CountedSlot.uses += 1
        return int(self) != other

    def __hash__(self):
        CountedSlot.uses += 1
        return int.__hash__(self)


def test_matching_out_of_order_op_numbers_is_linear_work():
    """An unrolled loop: 2,000 ops in one scope whose files' op numbers are not the execution
    order's, so every file falls to the last pass (one group of 2,000 ops). The k-th file
    still goes to the k-th op, and each file costs a bounded number of slot checks (the
    quadratic matcher made about n^2 / 2 = 2,000,000)."""
    n = 2000
    order = [f"Default/Mul-op{i}" for i in range(n)]
    numbers = [n + (i * 7919) % n for i in range(n)]  # a permutation of n .. 2n-1
    tensors = [
        TensorFile(Path(f"{i}.npy"), "Mul", f"Default_Mul-op{number}", STAMP + i, "output", CountedSlot(0), "F", 4)
        for i, number in enumerate(numbers)
    ]
    CountedSlot.uses = 0
    ops, unmatched = datadump._match(order, tensors)
    assert unmatched == []
    assert [op.outputs for op in ops] == [[t] for t in tensors]
    assert CountedSlot.uses <= 10 * n, f"{CountedSlot.uses} slot checks for {n} files"


# --------------------------------------------------------------------------- a broken pipe


def many_ops_dump(root: Path, n: int) -> Path:
    order = [f"Default/net/Mul-op{i}" for i in range(n)]
    one = npy(np.ones(2, np.float32))
    files = {file_name("Mul", f"Default_net_Mul-op{i}", STAMP + i): one for i in range(n)}
    return make_dump(root, order, files)


def reader_gone(*args: str, read_first_line: bool) -> subprocess.CompletedProcess:
    """``msdebug ARGS | head -1``: the reader takes one line (or none) and closes the pipe."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "msdebug", *args]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as process:
        first = process.stdout.readline() if read_first_line else b""
        process.stdout.close()
        stderr = process.stderr.read().decode()
        status = process.wait(timeout=120)
    return subprocess.CompletedProcess(command, status, first.decode(), stderr)


def test_a_reader_that_stops_mid_output_ends_the_command_quietly(tmp_path):
    """1,500 rows (about 120 KB) cannot fit the pipe (64 KiB): the command is writing when head goes."""
    path = many_ops_dump(tmp_path, 1500)
    done = reader_gone("dump", str(path), "--exec-order", "--limit", "1500", read_first_line=True)
    assert done.stdout.startswith("Data dump"), done.stdout
    assert (done.returncode, done.stderr) == (0, "")


def test_a_reader_gone_before_the_output_ends_the_command_quietly():
    """A short output sits in stdout's buffer until the interpreter flushes it on its way out."""
    profile = Path(__file__).parent / "data" / "profile_2rank"
    done = reader_gone("profile", str(profile), "--top", "1000", read_first_line=False)
    assert (done.returncode, done.stderr) == (0, "")


# --------------------------------------------------------------------------- a hostile mapping.csv

LONG = "Default/" + "very_long_scope-Block/" * 12 + "Sqrt-op3"


@pytest.mark.parametrize(
    "mapping",
    [
        b"1.npy,Sqrt.%s\n2.npy," + b"x" * (200 << 10) + b"\n",  # a field over csv's 128 KiB bound
        b'1.npy,Sqrt.%s\n2.npy,"' + b"x" * (200 << 10),  # an unclosed quote running to the end
        b"1.npy,Sqrt.%s\n" + bytes(range(256)) * 40,  # random bytes, NULs, lone quotes and CRs included
    ],
    ids=["field-over-128KiB", "unclosed-quote", "random-bytes"],
)
def test_a_hostile_mapping_csv_keeps_what_it_can_read(tmp_path, mapping):
    original = file_name("Sqrt", LONG.replace("/", "_"), STAMP, "output")
    files = {"1.npy": npy(np.array([np.nan], np.float32)), "2.npy": npy(np.ones(1, np.float32))}
    path = make_dump(tmp_path, [LONG], files)
    (path / "rank_0" / "Net" / "0" / "0" / "mapping.csv").write_bytes(mapping.replace(b"%s", original[5:].encode()))
    it = read_data_dump(path).ranks[0].iterations[0]
    assert [t.path.name for t in it.ops[0].outputs] == ["1.npy"]  # line 1 still names the long file
    assert "2.npy" in it.bad_names
    found = cli("dump", str(path), "--nan")
    assert found.returncode == 1 and "Traceback" not in found.stderr, found.stderr[-3000:]
    assert LONG in found.stdout
    assert 1 <= len(it.notes) <= 4  # the lines skipped, said once each, at most 3 and a count
    for note in it.notes:  # what could not be read is said in the report
        assert note.startswith("mapping.csv") and note in found.stdout
    bound = csv.field_size_limit(sys.maxsize)  # as importing MindSpore does: the reader keeps its own bound
    try:
        assert read_data_dump(path).ranks[0].iterations[0].notes == it.notes
    finally:
        csv.field_size_limit(bound)


def test_a_mapping_csv_that_is_not_a_regular_file_is_a_note(tmp_path):
    path = make_dump(tmp_path, ["Default/Mul-op0"], {file_name("Mul", "Default_Mul-op0", STAMP): npy([1.0])})
    os.mkfifo(path / "rank_0" / "Net" / "0" / "0" / "mapping.csv")
    it = read_data_dump(path).ranks[0].iterations[0]
    assert len(it.notes) == 1 and len(it.ops[0].outputs) == 1
    assert it.notes[0].startswith("mapping.csv skipped: ") and "is a FIFO (named pipe)" in it.notes[0], it.notes


# --------------------------------------------------------------------------- .npy headers that lie


def npy_with_header(descr: str, shape: str, data: bytes = b"\0" * 64) -> bytes:
    """A version 1.0 ``.npy`` file whose header says what it is told to."""
    header = f"{{'descr': {descr}, 'fortran_order': False, 'shape': {shape}, }}".encode()
    header += b" " * (63 - (10 + len(header)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data


LYING_HEADERS = {
    "2**32 x 2**32 (int64 wraps to 0)": ("'<f4'", "(4294967296, 4294967296)", "larger than any array"),
    "10**20 elements (int64 overflows)": ("'<f4'", "(100000000000000000000,)", "larger than any array"),
    "10**9 elements in 64 bytes": ("'<f4'", "(1000000000,)", "cut short: 192 bytes, its header needs 4000000128"),
    "0 x 2**62": ("'<f4'", "(0, 4611686018427387904)", "larger than any array"),
    "33 dimensions": ("'<f4'", "(" + "1, " * 33 + ")", "33 dimensions"),
    "zero itemsize (void)": ("'|V0'", "(4,)", "structured"),
    "zero itemsize (bytes)": ("'|S0'", "(4,)", "byte string"),
    "Python objects": ("'|O'", "(1,)", "Python object"),
    "structured": ("[('a', '<f4'), ('b', '<i4')]", "(2,)", "structured"),
    "subarray": ("('<f4', (2,))", "(2,)", "structured"),
    "text": ("'<U4'", "(2,)", "text"),
    "complex": ("'<c8'", "(2,)", "complex"),
    "datetime": ("'<M8[s]'", "(2,)", "datetime"),
}


@pytest.mark.parametrize("case", LYING_HEADERS, ids=list(LYING_HEADERS))
def test_a_lying_npy_header_is_one_line(tmp_path, case):
    descr, shape, words = LYING_HEADERS[case]
    path = tmp_path / "Mul.x.0.0.1.output.0.DefaultFormat.Float32.npy"
    path.write_bytes(npy_with_header(descr, shape))
    with pytest.raises(DumpFormatError, match=r"^Mul\.x\..*npy: ") as raised:
        open_tensor(path)
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_a_lying_header_in_a_tensor_that_is_not_the_culprit_is_skipped(tmp_path):
    """The scan opens every tensor before the culprit: a lying one is skipped and listed."""
    order = ["Default/Mul-op0", "Default/Sqrt-op1"]
    files = {
        file_name("Mul", "Default_Mul-op0", STAMP): npy_with_header("'<f4'", "(4294967296, 4294967296)"),
        file_name("Sqrt", "Default_Sqrt-op1", STAMP + 1): npy(np.array([np.nan], np.float32)),
    }
    path = make_dump(tmp_path, order, files)
    found = cli("dump", str(path), "--nan")
    assert found.returncode == 1 and "Traceback" not in found.stderr, found.stderr[-3000:]
    assert "Default/Sqrt-op1" in found.stdout and "larger than any array" in found.stdout
    shown = cli("dump", str(path), "--exec-order")
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr[-3000:]


def test_bool_integer_and_float_tensors_still_open(tmp_path):
    for array in (np.array([True, False]), np.arange(3, dtype=np.int8), np.arange(3, dtype=np.uint64),
                  np.ones((2, 0), np.float16), np.ones((2, 3), ">f8"),
                  np.arange(3000, dtype=np.float32),  # read past the first 4 KiB
                  np.arange(300_000, dtype=np.float32).reshape(600, 500).T):  # mapped, Fortran order  # fmt: skip
        path = tmp_path / "t.npy"
        path.write_bytes(npy(array))
        opened = open_tensor(path)
        assert opened.dtype == array.dtype and opened.shape == array.shape and (opened == array).all()


# --------------------------------------------------------------------------- digits that are not ASCII


def test_ascii_number_reads_only_ascii_digits_within_the_type():
    from msdebug.files import INT64_MAX, ascii_number

    assert [ascii_number(t) for t in ("0", "12", "007", "0" * 40 + "9", str(INT64_MAX))] == [0, 12, 7, 9, INT64_MAX]
    refused = ("", "²", "1²", "١٢", "12 ", "-1", "+1", "1_000", "0x1", str(INT64_MAX + 1), "9" * 5000)
    assert [ascii_number(t) for t in refused] == [None] * len(refused)
    assert ascii_number("100", high=99) is None


def test_folders_and_order_lines_named_with_other_digits_are_not_iterations(tmp_path):
    """``"²".isdigit()`` is True and ``int("²")`` raises; ``int("١")`` is 1, a second graph 1."""
    nan = npy(np.array([np.nan], np.float32))
    path = make_dump(tmp_path, ["Default/Mul-op0"], {file_name("Mul", "Default_Mul-op0", STAMP): nan})
    rank = path / "rank_0"
    for odd in ("²", "١", "99999999999999999999"):  # the last beyond int64, numpy's integer
        (rank / "Net" / "0" / odd).mkdir()
        (rank / "Net" / odd / "0").mkdir(parents=True)
    (rank / "execution_order" / "ms_global_execution_order_graph_0.csv").write_text("0\n²\n١\n" + "9" * 5000 + "\n1\n")
    (rank / "execution_order" / "ms_execution_order_graph_١.csv").write_text("Default/Other-op0\n")
    huge = file_name("Mul", "Default_Mul-op0", "9" * 5000)  # beyond int()'s 4,300 digits, via mapping.csv
    (rank / "Net" / "0" / "0" / "7.npy").write_bytes(nan)
    (rank / "Net" / "0" / "0" / "mapping.csv").write_text(f"7.npy,{huge}\n")
    dump = read_data_dump(path)
    assert [(it.graph_id, it.iteration) for it in dump.ranks[0].iterations] == [(0, 0)]
    assert dump.ranks[0].dumped_iterations == {0: [0, 1]} and list(dump.ranks[0].exec_orders) == [0]
    assert dump.ranks[0].iterations[0].bad_names == ["7.npy"]
    assert datadump.iteration_paths(path) == {str(rank / "Net" / "0" / "0")}
    found = cli("dump", str(path), "--nan")
    assert found.returncode == 1 and "Traceback" not in found.stderr, found.stderr[-3000:]


def test_the_rdr_reader_and_the_context_keys_read_ascii_digits_only(tmp_path):
    from msdebug.dumps.rdr import _EXEC_HEADER as header
    from msdebug.dumps.rdr import _rank_of, read_exec_order
    from msdebug.keys import UNSET, Integer

    order = tmp_path / "SESSION.graph_exec_order.0.20261123154245.txt"
    order.write_text(f"{header}\nexecution_order size: ²\n0:\n\t@g:Default/Mul-op0{{}}\n\t²\n\t١\n{header}\n")
    entry = read_exec_order(order).entries[0]
    assert (entry.stream, entry.graph_id, read_exec_order(order).declared) == (None, None, -1)
    assert _rank_of(tmp_path / "rank_²" / "rdr") == 0
    assert [Integer().from_raw(t) for t in ("12", "-3", "²", "--5", "-")] == [12, -3, UNSET, UNSET, UNSET]


def test_a_save_graphs_level_of_other_digits_in_the_environment(monkeypatch):
    from msdebug.recorders import graphs
    from msdebug.views.explorer import _line_of

    monkeypatch.setenv(graphs.ENV_LEVEL, "²")
    monkeypatch.setattr(graphs, "_context_keys", lambda: False)
    assert graphs.status().level == 0
    assert (_line_of("/a/b.py:²"), _line_of("/a/b.py:12~14")) == (0, 12)


def test_a_histogram_of_values_too_close_to_split_is_one_bin():
    # Found by test_dump_fuzz: numpy's own bins around a single float32 9.0e15 index out of range.
    import numpy as np

    from msdebug.dumps.datadump import histogram

    huge = np.frombuffer(b"\x00\x00\x00Z", "<f4").reshape(())
    assert histogram(huge) == ([1], [float(huge), float(huge)])
    close = np.array([2.0**53, 2.0**53 + 2], np.float64)
    counts, edges = histogram(close)
    assert sum(counts) == 2 and edges[0] == 2.0**53 and edges[-1] == 2.0**53 + 2
    counts, edges = histogram(np.arange(10, dtype=np.float32))
    assert len(counts) == 30 and sum(counts) == 10
