"""Binary print files (as MindSpore writes them on Ascend) and printed text, decoded to data.

The fixtures under tests/data/print/ were made with MindSpore's own print_pb2
(make_print_files.py) and agree with mindspore.parse_print of 2.7.0 (the opt-in test below).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import msdebug
from msdebug.dumps.print import PrintedTensor, PrintedText, PrintFileError, parse_text, read_print_file

from helpers import run_python

DATA = pathlib.Path(__file__).parent / "data" / "print"
EXPECTED = json.loads((DATA / "expected.json").read_text())


def _check(items, expected) -> None:
    assert len(items) == len(expected)
    for item, want in zip(items, expected, strict=True):
        if "text" in want:
            assert item == PrintedText(want["text"])
        else:
            assert isinstance(item, PrintedTensor) and not item.partial
            assert item.dtype == want["dtype"] and list(item.shape) == want["shape"]
            np.testing.assert_array_equal(item.values, np.array(want["values"]))


def test_every_dtype_decodes_with_mindsporess_print_pb2():
    import mindspore  # noqa: F401 - loaded, so read_print_file uses mindspore.train.print_pb2

    from msdebug.dumps.print import _message_classes

    assert _message_classes()[2] == "mindspore.train.print_pb2"
    log = msdebug.read_print_file(DATA / "all_dtypes.pb")
    assert log.source == "binary file"
    _check(log.items, EXPECTED)
    assert len(log.tensors) == 25 and log.tensors[-1].dtype == np.float32


def test_without_mindspore_the_own_schema_gives_the_same_items():
    code = f"""
        import sys, json
        sys.modules["mindspore"] = None  # as if MindSpore were not installed
        from msdebug.dumps.print import read_print_file, _message_classes
        log = read_print_file({str(DATA / "all_dtypes.pb")!r})
        print(_message_classes()[2], len(log.items), log.items[0].text, log.items[1].values.tolist())
    """
    out = run_python(code, warm=False)  # a process that never imported MindSpore
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(" ", 3)[:3] == ["msdebug", "37", "Bool:"]
    assert out.stdout.strip().endswith("[[False, True, False], [True, False, True]]")


def test_a_training_log_reads_in_order():
    log = read_print_file(DATA / "training.pb")
    texts = [str(item) if isinstance(item, PrintedText) else item.values.item() for item in log.items]
    assert texts == ["step", 0, "loss:", 1.0, "step", 1, "loss:", 0.5, "step", 2, "loss:", pytest.approx(1 / 3)]
    assert "step" in repr(log) and "binary file" in repr(log)


@pytest.mark.parametrize(
    "cut, message",
    [
        (1, r"truncated or corrupt at byte 0"),
        (30, r"truncated at byte 25: a value of 7 bytes needs 4 more bytes than the file has \(30 bytes\)"),
        (-3, r"truncated at byte \d+"),
    ],
)
def test_truncated_files_name_the_byte_offset(tmp_path, cut, message):
    data = (DATA / "training.pb").read_bytes()
    path = tmp_path / "cut.pb"
    path.write_bytes(data[:cut])
    with pytest.raises(PrintFileError, match=message) as error:
        read_print_file(path, "binary")
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_a_truncated_file_is_not_mistaken_for_text(tmp_path):
    data = (DATA / "training.pb").read_bytes()
    (tmp_path / "cut.pb").write_bytes(data[:-3])
    with pytest.raises(PrintFileError, match=r"truncated at byte"):
        read_print_file(tmp_path / "cut.pb")


def test_garbage_and_wrong_fields_are_named(tmp_path):
    (tmp_path / "junk.pb").write_bytes(b"\x12\x03abc")
    with pytest.raises(PrintFileError, match=r"byte 0 starts field 2 \(wire type 2\)"):
        read_print_file(tmp_path / "junk.pb")
    (tmp_path / "bad.pb").write_bytes(b"\x0a\x02\x12\x05")
    with pytest.raises(PrintFileError, match=r"corrupt value at byte 0|truncated"):
        read_print_file(tmp_path / "bad.pb", "binary")
    (tmp_path / "empty.pb").write_bytes(b"")
    with pytest.raises(PrintFileError, match=r"is empty"):
        read_print_file(tmp_path / "empty.pb")
    with pytest.raises(PrintFileError, match=r"is a directory"):
        read_print_file(tmp_path)
    with pytest.raises(PrintFileError, match=r"cannot read .*missing.pb: No such file"):
        read_print_file(tmp_path / "missing.pb")


def test_a_tensor_whose_bytes_do_not_fit_its_shape(tmp_path):
    from msdebug.dumps.print import _own_classes

    message = _own_classes()[0]()
    value = message.value.add()
    value.tensor.tensor_type = "Float32"
    value.tensor.dims.extend([2, 2])
    value.tensor.tensor_content = b"\0" * 12
    (tmp_path / "short.pb").write_bytes(message.SerializeToString())
    with pytest.raises(PrintFileError, match=r"shape \[2, 2\] \(4 elements\) but 12 bytes of Float32 \(3 elements\)"):
        read_print_file(tmp_path / "short.pb")


def test_write_print_file_round_trips_and_never_overwrites(tmp_path):
    from msdebug.dumps.print import write_print_file

    path = tmp_path / "w.pb"
    write_print_file(path, [["x:", np.arange(4, dtype=np.int64).reshape(2, 2)], ["done"]])
    log = read_print_file(path)
    assert [str(i) for i in log.items if isinstance(i, PrintedText)] == ["x:", "done"]
    np.testing.assert_array_equal(log.tensors[0], [[0, 1], [2, 3]])
    with pytest.raises(FileExistsError):
        write_print_file(path, [["again"]])


# --------------------------------------------------------------------------- text

GRAPH = """MARK x:
Tensor(shape=[2], dtype=Float32, value=[ 1.50000000e+00  2.50000000e+00])
Tensor(shape=[2, 3], dtype=Int32, value=
[[0 1 2]
 [3 4 5]])
Tensor(shape=[2], dtype=Bool, value=[ True False])
3
"""
PYNATIVE = """Tensor(shape=[2], dtype=Float32, value= [ 1.50000000e+00,  2.50000000e+00])
Tensor(shape=[], dtype=Int64, value= 3)
Tensor(shape=[2], dtype=Float32, value= [ nan,  -inf])
"""
SUMMARISED = """Tensor(shape=[1000, 3], dtype=Float32, value=
[[ 0.00000000e+00  1.00000000e+00  2.00000000e+00]
 ...
 [ 2.99700000e+03  2.99800000e+03  2.99900000e+03]])
"""


def test_graph_mode_text_parses_into_strings_and_tensors():
    items = parse_text(GRAPH)
    assert [type(i).__name__ for i in items] == [
        "PrintedText",
        "PrintedTensor",
        "PrintedTensor",
        "PrintedTensor",
        "PrintedText",
    ]
    np.testing.assert_array_equal(items[1].values, np.array([1.5, 2.5], np.float32))
    np.testing.assert_array_equal(items[2].values, np.arange(6, dtype=np.int32).reshape(2, 3))
    assert items[3].values.tolist() == [True, False] and items[4].text == "3"


def test_pynative_text_scalars_and_non_finite_values():
    items = parse_text(PYNATIVE)
    assert items[1].shape == () and items[1].values.item() == 3
    stats = items[2].stats()
    assert stats["nan"] == 1 and stats["inf"] == 1


def test_a_summarised_tensor_is_partial_never_reconstructed():
    (tensor,) = parse_text(SUMMARISED)
    assert tensor.partial and tensor.values is None and tensor.shape == (1000, 3)
    assert tensor.stats()["over"] == 6 and tensor.stats()["max"] == 2999.0
    from msdebug.views.print import tensor_summary

    assert "partial: MindSpore printed 6 of 3000 elements" in tensor_summary(tensor)


def test_unclosed_tensor_text_stays_text():
    items = parse_text("Tensor(shape=[2], dtype=Float32, value=[ 1.0\nnext line\n")
    assert [str(i) for i in items] == ["Tensor(shape=[2], dtype=Float32, value=[ 1.0", "next line"]


def test_hostile_text_is_escaped_in_html():
    from msdebug.dumps.print import PrintLog

    log = PrintLog(b'<script>alert(1)</script>\n"><img onerror=alert(2) src=x>\n' + SUMMARISED.encode())
    page = log._repr_html_()
    assert "<script>" not in page and "<img" not in page and "&lt;script&gt;" in page
    assert repr(log).startswith("<script>alert(1)</script>")


def test_the_cli_prints_a_binary_file(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "msdebug", "print-file", str(DATA / "training.pb")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    # A scalar reads on the line of its name (it took three lines: "step", "Int32 scalar", "0").
    assert out.stdout.splitlines()[1:7] == ["step 0", "loss: 1.0", "step 1", "loss: 0.5", "step 2", "loss: 0.333333"]
    (tmp_path / "bad.pb").write_bytes(b"\x0a\x40\xff\xfe")
    out = subprocess.run(
        [sys.executable, "-m", "msdebug", "print-file", str(tmp_path / "bad.pb")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and out.stderr.startswith("msdebug print-file: ") and "byte 0" in out.stderr


@pytest.mark.skipif(
    not os.environ.get("MSDEBUG_MS270_PYTHON"), reason="set MSDEBUG_MS270_PYTHON to a python with MindSpore 2.7.0"
)
def test_mindspore_270_parse_print_agrees_with_the_fixtures():
    code = f"""
import json, numpy as np, mindspore as ms
exp = json.load(open({str(DATA / "expected.json")!r}))
got = ms.parse_print({str(DATA / "all_dtypes.pb")!r})
for e, g in zip(exp, got, strict=True):
    if "text" in e:
        assert g == e["text"], (e, g)
    else:
        a = g.float().asnumpy() if e["dtype"] == "BFloat16" else g.asnumpy()
        assert np.array_equal(a, np.array(e["values"])) and list(a.shape) == e["shape"], (e, g)
print("agree", len(got))
"""
    out = subprocess.run([os.environ["MSDEBUG_MS270_PYTHON"], "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip().endswith("agree 37"), out.stderr[-2000:]
