"""The data-dump readers on arbitrary input: the dump tree, ``mapping.csv``, ``.npy`` headers and
the execution-order files give their result or one :class:`MsDebugError` line, never anything
else; the ``msdebug`` command then exits 0, 1 (``--nan`` found one) or 2 with one line, never a
traceback. The matcher gives the same answer as its plain quadratic definition."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from msdebug.dumps import datadump
from msdebug.dumps.datadump import DumpOp, TensorFile, open_tensor, read_data_dump
from msdebug.dumps.explorer import open_dump
from msdebug.dumps.nan import scan_dump
from msdebug.errors import MsDebugError

ROOT = Path(datadump.__file__).resolve().parents[2]  # the msdebug under test, for the command too
FAST = settings(max_examples=60)

# --------------------------------------------------------------------------- the matcher's definition


def reference_match(order: list[str] | None, tensors: list[TensorFile]):
    """The matcher as its docstring defines it, without any index: each pass, each file (by
    timestamp) goes to the first op of its key, in execution order, that lacks its slot; files
    whose scope and type carry other op numbers than the order's, as many, wait for the last pass."""
    if order is None:
        named = dict.fromkeys((t.flat_name, t.op_type) for t in tensors)
        ops = [DumpOp(i, name, op_type) for i, (name, op_type) in enumerate(named)]
    else:
        ops = [DumpOp(i, name, datadump._op_type(name)) for i, name in enumerate(order)]
    keys = (
        lambda op_type, flat: (op_type, flat),
        lambda op_type, flat: ("", flat),
        lambda op_type, flat: (op_type, re.sub(r"-op\d+$", "", flat)),
    )

    def numbers(names: list[tuple[str, str]], op_type: str, base: str) -> set[str]:
        return {m[1] for t, n in names if t == op_type and (m := re.fullmatch(re.escape(base) + r"-op(\d+)", n))}

    def renumbered(t: TensorFile) -> bool:
        """Its scope and type's files carry as many op numbers as the order has there, but other ones."""
        if order is None or not re.search(r"-op\d+$", t.flat_name):
            return False
        base = re.sub(r"-op\d+$", "", t.flat_name)
        files = numbers([(f.op_type, f.flat_name) for f in tensors], t.op_type, base)
        wanted = numbers([(op.op_type, op.name.replace("/", "_")) for op in ops], t.op_type, base)
        return bool(wanted) and files != wanted and len(files) == len(wanted)

    left = tensors
    for number, key in enumerate(keys):
        still = []
        for t in left:
            if number < 2 and renumbered(t):  # its number names another op: by timestamp, last pass
                still.append(t)
                continue
            for op in ops:
                slots = op.inputs if t.io == "input" else op.outputs
                if key(op.op_type, op.name.replace("/", "_")) == key(t.op_type, t.flat_name) and all(
                    have.slot != t.slot for have in slots
                ):
                    slots.append(t)
                    break
            else:
                still.append(t)
        left = still
    for op in ops:
        op.inputs.sort(key=lambda t: t.slot)
        op.outputs.sort(key=lambda t: t.slot)
    return ops, left


# Names that collide on purpose: "/" and "_" flatten alike, -opN counters differ, types differ.
SCOPES = ["Default", "Default/net", "Default_net", "Grad"]
LEAVES = ["Mul-op1", "Mul-op2", "Mul-op7", "Add-op1", "Mul", "MatMul-op3"]
op_name = st.builds(lambda s, leaf: f"{s}/{leaf}", st.sampled_from(SCOPES), st.sampled_from(LEAVES))


@st.composite
def match_case(draw):
    order = draw(st.none() | st.lists(op_name, max_size=12))
    count = draw(st.integers(0, 25))
    tensors = []
    for i in range(count):
        name = draw(op_name)
        op_type = draw(st.sampled_from(["Mul", "Add", "MatMul", datadump._op_type(name)]))
        io_ = draw(st.sampled_from(["input", "output"]))
        slot = draw(st.integers(0, 2))
        tensors.append(TensorFile(Path(f"{i}.npy"), op_type, name.replace("/", "_"), i, io_, slot, "Float32", 4))
    return order, tensors


def _shape(result):
    ops, unmatched = result
    return [(op.index, op.name, op.op_type, op.inputs, op.outputs) for op in ops], unmatched


@settings(max_examples=100)
@given(match_case())
@example((["Default/Mul-op1", "Default/Mul-op2"], []))
@example(  # a file with no op number in a renumbered group is matched by its name, not held back
    (
        ["Default/Mul-op1", "Default/Mul-op7", "Default/Mul"],
        [TensorFile(Path(f"{i}.npy"), "Mul", flat, i, "input", 0, "Float32", 4)
         for i, flat in enumerate(["Default_Mul-op1", "Default_Mul-op1", "Default_Mul-op2", "Default_Mul"])],
    )
)  # fmt: skip
def test_matching_agrees_with_its_quadratic_definition(case):
    order, tensors = case
    assert _shape(datadump._match(order, list(tensors))) == _shape(reference_match(order, list(tensors)))


# --------------------------------------------------------------------------- .npy headers


def _tensor_or_error(path: Path) -> None:
    """open_tensor gives an array every later step can read, or one DumpFormatError line."""
    try:
        array = open_tensor(path)
    except MsDebugError as error:
        assert "\n" not in str(error) and str(error).startswith(path.name + ": "), str(error)
        return
    stats = datadump.tensor_stats(array, chunk=7)
    assert stats.size == array.size and stats.shape == array.shape
    assert isinstance(datadump.is_finite(array, chunk=7), bool)
    datadump.histogram(array)


DESCRS = ["'<f4'", "'<f2'", "'>f8'", "'|b1'", "'<i8'", "'|u1'", "'|V0'", "'|S0'", "'<U3'", "'|O'", "'<c8'",
          "'<M8[s]'", "[('a', '<f4')]", "('<f4', (2,))", "'<f0'", "'x'", "7", "None"]  # fmt: skip
size = st.one_of(st.integers(0, 4), st.sampled_from([2**31, 2**32, 2**62, 2**63, 2**64, 10**20, -1]))
shape_text = st.one_of(
    st.lists(size, max_size=4).map(lambda dims: "(" + "".join(f"{d}, " for d in dims) + ")"),
    st.sampled_from(["()", "(" + "1, " * 40 + ")", "[2]", "(2.0,)", "'x'", "((1,),)", "(True,)"]),
)


@FAST
@given(st.sampled_from(DESCRS), shape_text, st.booleans(), st.binary(max_size=80))
@example("'<f4'", "(4294967296, 4294967296, )", False, b"")
@example("'<f4'", "(100000000000000000000, )", False, b"")
def test_npy_headers(descr, shape, fortran, data):
    header = f"{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {shape}, }}".encode()
    header += b" " * (63 - (10 + len(header)) % 64) + b"\n"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.npy"
        path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data)
        _tensor_or_error(path)


@FAST
@given(st.binary(max_size=300))
def test_npy_raw_bytes(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.npy"
        path.write_bytes(b"\x93NUMPY" + data)
        _tensor_or_error(path)


# --------------------------------------------------------------------------- the dump tree, mapping.csv, order files

ORDER = ["Default/net/Mul-op0", "Default/net/Sqrt-op1", "Default/net_Sqrt-op1", "Default/Add-op2"]
GOOD = [
    "Mul.Default_net_Mul-op0.0.0.100.input.0.DefaultFormat.Float32.npy",
    "Mul.Default_net_Mul-op0.0.0.101.output.0.DefaultFormat.Float32.npy",
    "Sqrt.Default_net_Sqrt-op1.0.0.102.output.0.DefaultFormat.Float32.npy",
    "Sqrt.Default_net_Sqrt-op9.0.0.103.output.0.DefaultFormat.Float32.npy",
    "Parameter.w.0.0.104.output.0.DefaultFormat.Float32.npy",
    "Add.Default_Add-op2.0.0.105.output.1.DefaultFormat.Int32.npy",
]
CONTENTS = [npy for npy in (np.ones(3, np.float32), np.array([np.nan, 1.0], np.float32), np.arange(4, dtype=np.int32),
            np.array(True), np.zeros((2, 0), np.float16))]  # fmt: skip


def _npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


text = st.one_of(st.text(max_size=60), st.sampled_from(["²", "١", "9" * 5000, "0", "1", "\x00", '"', ",,", "\r\n"]))
file_name = st.one_of(st.sampled_from(GOOD), st.sampled_from(["1.npy", "2.npy", "x.npy", "mapping.csv"]), text)
file_data = st.one_of(st.sampled_from(CONTENTS).map(_npy), st.binary(max_size=100))
mapping = st.one_of(
    st.binary(max_size=400),
    st.lists(st.tuples(st.sampled_from(["1.npy", "2.npy", "x"]), st.sampled_from(GOOD) | text), max_size=5).map(
        lambda rows: "".join(f"{a},{b}\n" for a, b in rows).encode("utf-8", "surrogatepass")
    ),
    st.just(b'1.npy,"' + b"x" * (140 << 10)),
)
order_file = st.one_of(
    st.lists(st.sampled_from(ORDER) | text, max_size=8).map(
        lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")
    ),
    st.binary(max_size=200),
)
folder = st.sampled_from(["0", "1", "²", "١", "18446744073709551616", "x", ".hidden"])


@st.composite
def dump_tree(draw):
    """A data dump: execution-order files, iteration folders and their files, all drawn."""
    files: dict[str, bytes] = {}
    for gid in draw(st.lists(st.sampled_from(["0", "1", "²", "١", "99999999999999999999"]), max_size=2, unique=True)):
        files[f"execution_order/ms_execution_order_graph_{gid}.csv"] = draw(order_file)
        files[f"execution_order/ms_global_execution_order_graph_{gid}.csv"] = draw(order_file)
    for _ in range(draw(st.integers(1, 3))):
        step = f"Net/{draw(folder)}/{draw(folder)}"
        for name in draw(st.lists(file_name, max_size=6, unique=True)):
            if (
                "/" in name
                or name in ("", ".", "..")
                or "\x00" in name
                or len(name.encode("utf-8", "surrogatepass")) > 200
            ):
                continue
            files[f"{step}/{name}"] = draw(mapping) if name == "mapping.csv" else draw(file_data)
        if draw(st.booleans()):
            files[f"{step}/mapping.csv"] = draw(mapping)
    return files


def _write_tree(root: Path, files: dict[str, bytes]) -> Path:
    rank = root / "dump" / "rank_0"
    (rank / "execution_order").mkdir(parents=True)
    for name, data in files.items():
        path = rank / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        except (OSError, UnicodeEncodeError):  # a name this file system refuses (surrogates)
            continue
    return root / "dump"


def _everything(path: Path) -> None:
    """What the command and the explorer do with a dump: read it, list it, show each iteration, scan it."""
    dump = read_data_dump(path)
    explorer = open_dump(path)
    repr(explorer)
    explorer._repr_html_()
    for rank in dump.ranks:
        for it in rank.iterations:
            shown = explorer.exec_order(graph=it.graph_id, iteration=it.iteration, rank=rank.rank)
            repr(shown)
            shown._repr_html_()
    report = scan_dump(dump)
    repr(report)
    report._repr_html_()


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(dump_tree())
def test_dump_trees(files):
    with tempfile.TemporaryDirectory() as scratch:
        path = _write_tree(Path(scratch), files)
        try:
            _everything(path)
        except MsDebugError as error:
            assert "\n" not in str(error), str(error)


# --------------------------------------------------------------------------- the real command


@settings(max_examples=4, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(dump_tree(), st.sampled_from([["--nan"], ["--exec-order"], []]))
def test_the_command_exits_0_1_or_2_with_one_line(files, options):
    with tempfile.TemporaryDirectory() as scratch:
        path = _write_tree(Path(scratch), files)
        done = subprocess.run(
            [sys.executable, "-m", "msdebug", "dump", str(path), *options],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.returncode in ((0, 1, 2) if options == ["--nan"] else (0, 2)), done.stderr[-3000:]
    assert len(done.stderr.splitlines()) <= (1 if done.returncode == 2 else 0), done.stderr[-3000:]
