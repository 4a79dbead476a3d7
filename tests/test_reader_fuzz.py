"""The readers of files msdebug did not write, on arbitrary input: RDR execution orders, memory
lists and trees, save_graphs directories, printed text and print files (text and binary), and
env_config.json. Each gives its result, which every view can show, or one MsDebugError line;
never anything else. The ``msdebug`` command then exits 0 or 2 with at most one line on stderr.

Numbers in these files are read by :func:`msdebug.files.ascii_number`: ``int()`` refuses 4,300
digits with a ValueError, and ``\\d`` in a pattern takes any Unicode digit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from msdebug.dumps import print as printfile
from msdebug.dumps import rdr
from msdebug.dumps.explorer import open_dump
from msdebug.dumps.graphs import read_graphs_dir
from msdebug.dumps.ir import parse_ir
from msdebug.dumps.print import PrintedTensor, PrintedText, parse_text, read_print_file
from msdebug.errors import MsDebugError
from msdebug.recorders.envconfig import EnvConfig

ROOT = Path(printfile.__file__).resolve().parents[2]  # the msdebug under test, for the command too
FAST = settings(max_examples=60)
HUGE = "9" * 5000  # beyond int()'s 4,300 digits
# Numbers as files spell them, and as they must not be read: Unicode digits, past int64, past int().
NUMBERS = ["0", "1", "2", "007", "4", "9223372036854775807", "9223372036854775808", "18446744073709551616",
           "99999999999999999999", HUGE, "²", "١٢", "-1", "+3", "1_0", " 1", "0x10", ""]  # fmt: skip
number = st.one_of(st.sampled_from(NUMBERS), st.integers(0, 2**70).map(str))
noise = st.text(max_size=30)


def one_line(error: MsDebugError) -> str:
    text = str(error)
    assert text and "\n" not in text and len(text) < 2000, text[:3000]
    return text


def result_or_one_line(read, *args):
    """``read(*args)``, or None after checking the MsDebugError it raised is one line."""
    try:
        return read(*args)
    except MsDebugError as error:
        one_line(error)
        return None


def _scratch_file(data: bytes, name: str = "f.txt"):
    folder = tempfile.TemporaryDirectory()
    path = Path(folder.name) / name
    path.write_bytes(data)
    return folder, path


def _read_file(read, data: bytes, name: str = "f.txt"):
    folder, path = _scratch_file(data, name)
    with folder:
        return result_or_one_line(read, path)


# --------------------------------------------------------------------------- numbers: one case per reader

HEADER = rdr._EXEC_HEADER


@pytest.mark.parametrize(
    "read, text",
    [
        (rdr.read_exec_order, f"{HEADER}\nexecution_order size: 1\n{HUGE}:\n\t@g:a{{}}\n\t0\n\t0\n{HEADER}\n"),
        (rdr.read_exec_order, f"{HEADER}\n١:\n\t@g:a{{}}\n\t١\n\t²\n{HEADER}\n"),
        (rdr.read_memory, f"Default/a\nkernel_inputs {HUGE}\n&0x1 #4\n"),
        (rdr.read_memory, f"Default/a\nkernel_inputs 1\n&0x1 #{HUGE}\n"),
        (rdr.read_memory, "Default/a\nkernel_inputs ١\n&0x1 #4\n"),
        (rdr.read_stream_order, f"[{HUGE}]"),
        (rdr.read_stream_order, "[" * 100_000),
        (EnvConfig.read, '{"rdr": {"a\\nb": 1}}'),
        (EnvConfig.read, '{"rdr": {"path": "' + "x\\n" * 10_000 + '"}}'),
    ],
    ids=[
        "exec-index",
        "exec-unicode",
        "mem-count",
        "mem-size",
        "mem-unicode",
        "stream-int",
        "stream-deep",
        "env-key",
        "env-path",
    ],  # fmt: skip
)
def test_a_number_or_a_name_no_reader_expects(read, text):
    _read_file(read, text.encode())


def test_numbers_in_ir_text_beyond_int64():
    ir = parse_ir(
        f"# Total subgraphs: {HUGE}\nTotal number of cnodes: 99999999999999999999\n"
        f"subgraph @g() {{\n  %{HUGE}(a) = Op()\n      : () -> (<Tensor[Float32], ({HUGE}, 2)>)\n"
        f"      # In file /p.py:{HUGE}/x/\n  %007(b) = Op(%007)\n      # In file /p.py:١/x/\n}}\n"
    )
    assert ir.total_subgraphs is None and ir.total_cnodes is None
    first, second = ir.graphs[0].nodes
    assert (first.id, first.index, first.output_shape, first.source) == (f"%{HUGE}", -1, None, None)
    assert (second.id, second.index, second.inputs, second.source) == ("%007", 7, ["%007"], None)


def test_numbers_in_names_beyond_int64(tmp_path):
    names = [f"PIPELINE.{HUGE}_x.20240101000000.ir", "PIPELINE.١_y.20240101000000.ir", "SESSION.g.١.20240101000000.txt"]
    for name in names:
        parsed = rdr.parse_rdr_name(tmp_path / name[:250])
        assert parsed is None or (parsed.stage is None and parsed.graph_id is None), parsed
    for name in [f"opt_pass_{HUGE[:200]}_a.ir", f"{HUGE[:200]}_stage.ir", f"graph_build_{HUGE[:200]}.ir",
                 f"x_{HUGE[:200]}.ir", "opt_pass_1_b_0001.ir", "١_x.ir", "x_١٢٣٤.ir"]:  # fmt: skip
        (tmp_path / name).write_text("x")
    saved = read_graphs_dir(tmp_path)
    assert [f.stem for f in saved.family("opt_pass")] == ["opt_pass_1_b", f"opt_pass_{HUGE[:200]}_a"]
    assert all(f.stage is None and f.graph_id is None for f in saved.files if f.family != "opt_pass")
    assert [f.counter for f in saved.files if f.counter is not None] == [1]
    repr(open_dump(tmp_path))


@pytest.mark.parametrize(
    "text, shape, values",
    [
        (f"Tensor(shape=[{HUGE}], dtype=Int32, value=[1])", None, None),
        (f"Tensor(shape=[1], dtype=Int32, value=[{HUGE}])", None, None),
        (f"Tensor(shape=[1], dtype=Int64, value=[{HUGE[:4000]}])", None, None),
        ("Tensor(shape=[9223372036854775807, 2], dtype=Int32, value=[])", None, None),
        ("Tensor(shape=[0, 9223372036854775808], dtype=Int32, value=[])", None, None),
        ("Tensor(shape=[0, 9223372036854775807], dtype=Int32, value=[])", (0, 9223372036854775807), "partial"),
        ("Tensor(shape=[" + "1, " * 65 + "1], dtype=Int32, value=[1])", None, None),
        ("Tensor(shape=[1], dtype=Int8, value=[300])", (1,), "partial"),
        ("Tensor(shape=[1], dtype=Int32, value=[nan])", (1,), "partial"),
        ("Tensor(shape=[1], dtype=Float32, value=[1+2j])", (1,), "partial"),
        ("Tensor(shape=[1], dtype=UInt64, value=[18446744073709551615])", (1,), [18446744073709551615]),
        ("Tensor(shape=[2], dtype=Int8, value=[-128 127])", (2,), [-128, 127]),
        ("Tensor(shape=[1], dtype=Int32, value=[1-2])", None, None),
        ("Tensor(shape=[١], dtype=Int32, value=[1])", None, None),
    ],
)
def test_printed_tensors_no_numpy_array_can_hold(text, shape, values):
    """A shape or number no tensor has leaves the lines as text; values that do not fit the
    dtype keep the tensor, partial, with what was printed."""
    items = parse_text(text)
    if shape is None:
        assert [type(item) for item in items] == [PrintedText], items
        assert "".join(map(str, items)) == text
        return
    (tensor,) = items
    assert isinstance(tensor, PrintedTensor) and tensor.shape == shape
    if values == "partial":
        assert tensor.partial and tensor.values is None
    else:
        assert tensor.values.tolist() == values and not tensor.partial
    tensor.stats()


# --------------------------------------------------------------------------- RDR records


def _check_exec_order(order: rdr.ExecOrder) -> None:
    assert order.declared < 0 or len(order.entries) >= order.declared
    for entry in order.entries:
        assert entry.index >= 0 and (entry.stream is None or entry.stream >= 0)


exec_line = st.one_of(
    st.sampled_from(
        [
            HEADER,
            "execution_order size: 2",
            "\t@kernel_graph0:Default/a{[0]: ValueNode<Primitive> Mul}",
            "\t0",
            "\t1",
            "\t@g:x{}",
            "",
            "\t",
        ]
    ),  # fmt: skip
    number.map(lambda n: f"{n}:"),
    number.map(lambda n: f"execution_order size: {n}"),
    number.map(lambda n: f"\t{n}"),
    noise,
)


@FAST
@given(st.lists(exec_line, max_size=20), st.booleans())
@example([HEADER, "execution_order size: 1", f"{HUGE}:", "\t@g:a{}", "\t0", "\t0", HEADER], True)
def test_rdr_exec_orders(lines, headed):
    data = "\n".join(([HEADER] if headed else []) + lines).encode("utf-8", "surrogatepass")
    order = _read_file(rdr.read_exec_order, data)
    if order is not None:
        _check_exec_order(order)


memory_line = st.one_of(
    st.sampled_from(
        ["Default/net/Mul-op0", "kernel_inputs 1", "kernel_outputs 2", "kernel_workspaces 0", "&0x7f00 #4", "&0 #0", ""]
    ),  # fmt: skip
    number.map(lambda n: f"kernel_inputs {n}"),
    number.map(lambda n: f"&0x10 #{n}"),
    noise,
)


@FAST
@given(st.lists(memory_line, max_size=20))
@example(["Default/a", f"kernel_inputs {HUGE}", "&0x1 #4"])
@example(["Default/a", "kernel_inputs 1", f"&0x1 #{HUGE}"])
def test_rdr_memory_lists(lines):
    memory = _read_file(rdr.read_memory, "\n".join(lines).encode("utf-8", "surrogatepass"))
    if memory is not None:
        assert sum(memory.totals) == sum(k.total for k in memory.largest_first())
        assert all(a.size >= 0 for k in memory.kernels for a in k.inputs + k.workspaces + k.outputs)


@FAST
@given(
    st.one_of(st.binary(max_size=200), st.sampled_from([f"[{HUGE}]", "[" * 50_000, '[{"a": 1}]', "{}"]).map(str.encode))
)
def test_rdr_stream_orders(data):
    order = _read_file(rdr.read_stream_order, data)
    assert order is None or isinstance(order, list)


# --------------------------------------------------------------------------- RDR trees and save_graphs directories

RDR_NAMES = [
    "PIPELINE.12_optimize.20240101000000.ir",
    "PIPELINE.1_parse.20240101000001_0003.ir",
    "SESSION.graph_build.0.20240101000002.ir",
    "SESSION.graph_exec_order.0.20240101000003.txt",
    "DEVICE.mem_address_list.20240101000004.txt",
    "STREAM.stream_exec_order.20240101000005.json",
    "SOMAS.x.20240101000006.txt",
]
rdr_name = st.one_of(
    st.sampled_from(RDR_NAMES),
    st.builds(lambda n, c: f"PIPELINE.{n}_x.20240101000000{c}.ir", number, st.sampled_from(["", "_0001", "_١٢٣٤"])),
    st.builds(lambda n: f"SESSION.graph_build.{n}.20240101000000.ir", number),
    noise,
)
GRAPH_NAMES = ["13_optimize_0068.ir", "opt_pass_2_opt_a_0010.ir", "hwopt_d_x_graph_0_0100.ir",
               "graph_build_0_0200.ir", "trace_code_graph_0.ir", "ms_output_x.pb", "a.dot",
               "verbose_ir_files/x_0001.ir", "actor_set/a_0002.ir"]  # fmt: skip
graph_name = st.one_of(
    st.sampled_from(GRAPH_NAMES),
    st.builds(lambda n, c: f"{n}_stage_{c}.ir", number, number),
    st.builds(lambda n, c: f"opt_pass_{n}_x_{c}.ir", number, number),
    st.builds(lambda n: f"graph_build_{n}.ir", number),
    noise.map(lambda t: t + ".ir"),
)
contents = st.one_of(
    st.sampled_from(
        [
            b"",
            b"\x00\x01",
            b"subgraph @g() {\n}\n",
            f"# Total subgraphs: {HUGE}\n".encode(),
            f"{HEADER}\n{HUGE}:\n".encode(),
            b"Total number of cnodes: 99999999999999999999\n",
        ]
    ),  # fmt: skip
    st.binary(max_size=60),
)


def _write(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        if "\x00" in name or any(part in ("", ".", "..") for part in name.split("/")):
            continue
        path = root / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        except (OSError, UnicodeEncodeError):  # a name this file system refuses (too long, surrogates)
            continue


def _explore(path: Path) -> None:
    """What the command and the explorer show of a tree: its summary, as text and HTML, and each graph."""
    explorer = open_dump(path)
    repr(explorer)
    explorer._repr_html_()
    for stage in explorer.stages()[:3]:
        result_or_one_line(lambda s=stage: repr(explorer.graph(s)))
    if explorer.tree is not None:
        for rank in explorer.tree.ranks:
            result_or_one_line(lambda r=rank.rank: repr(explorer.exec_order(rank=r)))
            result_or_one_line(lambda r=rank.rank: repr(explorer.memory(rank=r)))


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    st.dictionaries(rdr_name, contents, max_size=6),
    st.sampled_from(["rank_0/rdr", "rank_١/rdr", "rdr", "rank_99999999999999999999/rdr"]),
)
def test_rdr_trees(files, where):
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "out"
        _write(root / where, files)
        result_or_one_line(_explore, root)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.dictionaries(graph_name, contents, max_size=8))
def test_save_graphs_directories(files):
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "graphs"
        root.mkdir()
        _write(root, files)
        saved = read_graphs_dir(root)
        for family in ("stage", "opt_pass", "backend", "kernel_graph", "other"):
            ordered = saved.family(family)
            assert all(f.stage is None or f.stage[0] >= 0 for f in ordered)
            assert all(f.graph_id is None or 0 <= f.graph_id < 2**63 for f in ordered)
        assert all(f.counter is None or 0 <= f.counter < 2**63 for f in saved.files)
        result_or_one_line(_explore, root)


# --------------------------------------------------------------------------- printed text and print files

shape = st.lists(number, max_size=4).map(", ".join)
token = st.one_of(number, st.sampled_from(["1.5", "-2", "nan", "inf", "True", "False", "1+2j", "1e999", "...", "-0"]))
tensor_text = st.builds(
    lambda s, d, values, tail: f"Tensor(shape=[{s}], dtype={d}, value={values}{tail}",
    shape,
    st.sampled_from([*printfile.DTYPES, "str", "x"]),
    st.lists(token, max_size=6).map(lambda ts: "[" + " ".join(ts) + "]"),
    st.sampled_from([")", "", "]", ")\n)"]),
)


def _check_log(log: printfile.PrintLog) -> None:
    """Everything a view reads of a log: its items, their stats, its text and its renderings."""
    for item in log.items:
        if isinstance(item, PrintedTensor):
            stats = item.stats()
            assert item.values is None or (item.values.shape == item.shape and not item.partial)
            assert stats["over"] >= 0 and item.size >= 0
        str(item)
    assert isinstance(log.text, str)
    repr(log)
    log._repr_html_()


@FAST
@given(st.lists(st.one_of(tensor_text, noise), max_size=6))
def test_printed_text(parts):
    text = "\n".join(parts)
    log = printfile.PrintLog(text.encode("utf-8", "surrogatepass"))
    _check_log(log)
    # Nothing printed is dropped: text items and tensor blocks give back every line.
    shown = [
        line
        for item in log.items
        for line in (item.text.split("\n") if isinstance(item, PrintedTensor) else [str(item)])
    ]
    assert shown == str(text.encode("utf-8", "surrogatepass"), "utf-8", "replace").splitlines()


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # int64 on the wire: negatives take ten bytes
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number_: int, payload: bytes) -> bytes:
    return _varint(number_ << 3 | 2) + _varint(len(payload)) + payload


def _tensor_value(dims: list[int], kind: str, content: bytes) -> bytes:
    tensor = b"".join(_varint(1 << 3) + _varint(d) for d in dims)
    tensor += _field(2, kind.encode()) + _field(3, content)
    return _field(1, _field(2, tensor))


dim = st.one_of(st.integers(0, 4), st.sampled_from([-1, 2**31, 2**32, 2**62, 2**63 - 1, -(2**63)]))
binary_value = st.one_of(
    st.builds(
        _tensor_value,
        st.lists(dim, max_size=4) | st.just([1] * 70),
        st.sampled_from([*printfile.DTYPES, "str", "x"]),
        st.binary(max_size=40),
    ),
    st.binary(max_size=30).map(lambda text: _field(1, _field(1, text))),
    st.binary(max_size=20),
)


@FAST
@given(st.lists(binary_value, min_size=1, max_size=4), st.sampled_from(["auto", "binary", "text"]))
@example([_tensor_value([0, 2**62, 2**62], "Float32", b"")], "binary")
@example([_tensor_value([2**32, 2**32], "Float32", b"")], "binary")
@example([_tensor_value([1] * 70, "Int8", b"\x01")], "binary")
def test_print_files(values, form):
    folder, path = _scratch_file(b"".join(values), "print.pb")
    with folder:
        log = result_or_one_line(read_print_file, path, form)
        if log is not None:
            _check_log(log)


# --------------------------------------------------------------------------- env_config.json

json_value = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(),
        st.text(max_size=20),
        st.sampled_from(["/tmp/rdr", "rel", "/a b", "/" + "x" * 300, "/\n"]),
    ),  # fmt: skip
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
section = st.dictionaries(
    st.sampled_from(["enable", "mode", "path", "mem_reuse", "Enable", "x\ny"]), json_value, max_size=4
)
config = st.dictionaries(st.sampled_from(["rdr", "sys", "other", "\u202e"]), section | json_value, max_size=3)


@FAST
@given(st.one_of(config.map(lambda c: json.dumps(c).encode()), st.binary(max_size=80),
                 st.sampled_from([f'{{"rdr": {{"mode": {HUGE}}}}}', '{"rdr": ' + "[" * 5000, '{"rdr": {"mode": 1e999}}']).map(str.encode)))  # fmt: skip
def test_env_config_files(data):
    config_ = _read_file(EnvConfig.read, data, "env_config.json")
    if config_ is not None:
        assert config_ == EnvConfig(**{k: v for k, v in vars(config_).items() if k.startswith(("rdr_", "mem_"))})
        assert json.loads(config_.to_json()) == config_.to_dict()


# --------------------------------------------------------------------------- the real command


def _command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "msdebug", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _exits_0_or_2_with_one_line(done: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode in (0, 2), done.stderr[-3000:]
    assert len(done.stderr.splitlines()) <= (1 if done.returncode == 2 else 0), done.stderr[-3000:]


@settings(max_examples=3, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.dictionaries(graph_name | rdr_name.map(lambda n: f"rank_0/rdr/{n}"), contents, min_size=1, max_size=6),
       st.sampled_from([[], ["--exec-order"], ["--memory"], ["--graph", "optimize"]]))  # fmt: skip
@example({f"rank_0/rdr/PIPELINE.{HUGE[:200]}_x.20240101000000.ir": b"subgraph @g() {\n}\n",
          "rank_0/rdr/DEVICE.mem_address_list.20240101000004.txt": f"a\nkernel_inputs {HUGE}\n".encode()},
         ["--memory"])  # fmt: skip
def test_the_dump_command(files, options):
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "d"
        root.mkdir()
        _write(root, files)
        _exits_0_or_2_with_one_line(_command("dump", str(root), *options))


@settings(max_examples=3, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(st.lists(binary_value, min_size=1, max_size=3).map(b"".join),
                 st.lists(tensor_text | noise, max_size=4).map(lambda ps: "\n".join(ps).encode("utf-8", "surrogatepass"))),
       st.sampled_from(["auto", "binary", "text"]))  # fmt: skip
@example(f"Tensor(shape=[{HUGE}], dtype=Int32, value=[{HUGE}])".encode(), "auto")
@example(_tensor_value([0, 2**62, 2**62], "Float32", b""), "auto")
@example(_field(1, _field(1, b"\x80")), "binary")  # a string that is not UTF-8
def test_the_print_file_command(data, form):
    folder, path = _scratch_file(data, "print.pb")
    with folder:
        _exits_0_or_2_with_one_line(_command("print-file", str(path), "--format", form))
