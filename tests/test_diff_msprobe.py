"""msprobe's MindSpore dumps read as runs (no msprobe installed: the layout is written here as
msprobe's data-dump guide describes it), compared with each other and with msdebug's runs, and
read safely when hostile."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msdebug.dumps.diff import diff_runs, read_any_run
from msdebug.dumps.msprobe import find_msprobe_dump, read_msprobe_dump
from msdebug.dumps.runs import read_run
from msdebug.errors import DumpError, DumpFormatError, MsDebugError


def record(array: np.ndarray | None, name: str | None, dtype: str = "Float32", shape=None) -> dict:
    values = array if array is not None else np.zeros(shape or (1,), np.float32)
    out = {
        "type": "mindspore.Tensor",
        "dtype": dtype,
        "shape": list(values.shape),
        "Max": float(values.max()),
        "Min": float(values.min()),
        "Mean": float(values.mean()),
        "Norm": float(np.linalg.norm(values)),
    }
    if name is not None:
        out["data_name"] = name
    return out


def write_msprobe(root: Path, scale: float = 1.0, task: str = "tensor", stack_format: str = "new") -> Path:
    """A mix-level dump of fc1 (Dense) -> relu -> fc2 (Dense) as msprobe lays it out."""
    rank = root / "step0" / "rank"
    tensors = rank / "dump_tensor_data"
    tensors.mkdir(parents=True)
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    w1 = np.full((3, 4), 0.5, np.float32)
    h = x @ w1.T
    r = np.maximum(h * scale, 0)
    w2 = np.ones((2, 3), np.float32)
    y = r @ w2.T
    data = {}
    saved = task == "tensor"

    def put(entry: str, slot: str, array: np.ndarray) -> dict:
        name = f"{entry}.{slot}.npy"
        if saved:
            np.save(tensors / name, array)
        return record(array, name if saved else None)

    e1, e2, e3 = "Cell.fc1.Dense.forward.0", "Functional.relu.0.forward", "Cell.fc2.Dense.forward.0"
    data[e1] = {"input_args": [put(e1, "input.0", x)], "input_kwargs": {}, "output": [put(e1, "output.0", h)],
                "parameters": {"weight": put(e1, "parameters.weight", w1)}}  # fmt: skip
    data[e2] = {"input_args": [put(e2, "input.0", h * scale), {"type": "bool", "value": False}], "input_kwargs": {},
                "output": [put(e2, "output.0", r)]}  # fmt: skip
    data[e3] = {"input_args": [put(e3, "input.0", r)], "input_kwargs": {}, "output": [put(e3, "output.0", y), None]}
    (rank / "dump.json").write_text(
        json.dumps(
            {
                "task": task,
                "level": "mix",
                "framework": "mindspore",
                "dump_data_dir": str(tensors) if saved else None,
                "data": data,
            }
        )  # fmt: skip
    )
    frames = {
        e1: ["File /site-packages/mindspore/nn/cell.py, line 700, in __call__, \n out = self.construct(x)",
             "File /home/me/train.py, line 12, in construct, \n h = self.fc1(x)"],
        e2: ["File /home/me/train.py, line 13, in construct, \n h = ops.relu(h * s)"],
    }  # fmt: skip
    if stack_format == "new":
        stack = {"0": [[e1], frames[e1]], "1": [[e2], frames[e2]]}
    else:
        stack = frames
    (rank / "stack.json").write_text(json.dumps(stack))
    (rank / "construct.json").write_text(json.dumps({e1: None, e2: "", e3: None}))
    return root


def test_a_dump_path_finds_its_rank_folder_and_reads_entries_in_order(tmp_path):
    root = write_msprobe(tmp_path / "dump")
    assert find_msprobe_dump(root) == root / "step0" / "rank"
    run = read_any_run(root)
    assert run.kind == "msprobe dump" and run.label == "msprobe step0/rank"
    assert [(op.op_type, op.scope) for op in run.ops] == [
        ("Dense", "Default"),
        ("relu", "Default"),
        ("Dense", "Default"),
    ]
    fc1 = run.ops[0]
    assert [t.slot for t in fc1.tensors] == ["input 0", "input weight", "output 0"]
    assert (fc1.source, fc1.code) == ("/home/me/train.py:12", "h = self.fc1(x)")  # the person's frame, not cell.py
    assert [t.slot for t in run.ops[1].inputs] == ["input 0"]  # the bool argument is no tensor
    assert [t.slot for t in run.ops[2].outputs] == ["output 0"]  # None outputs are skipped


@pytest.mark.parametrize("stack_format", ["new", "old"])
def test_both_forms_of_stack_json_give_the_source_line(tmp_path, stack_format):
    run = read_msprobe_dump(write_msprobe(tmp_path / "d", stack_format=stack_format) / "step0" / "rank")
    assert run.ops[1].source == "/home/me/train.py:13" and run.ops[1].code == "h = ops.relu(h * s)"


def test_two_msprobe_dumps_differ_first_at_the_changed_api(tmp_path):
    a = read_any_run(write_msprobe(tmp_path / "a", scale=1.5))
    b = read_any_run(write_msprobe(tmp_path / "b"))
    report = diff_runs(a, b)
    assert report.first.a.name == "Functional.relu.0.forward"
    assert report.first.first_difference.slot == "input 0"
    assert report.first.a.source == "/home/me/train.py:13"


def test_a_statistics_dump_is_compared_by_its_statistics(tmp_path):
    a = read_any_run(write_msprobe(tmp_path / "a", scale=1.5, task="statistics"))
    b = read_any_run(write_msprobe(tmp_path / "b", task="tensor"))  # the other side computes them from its files
    assert any("holds statistics only" in note for note in a.notes)
    report = diff_runs(a, b)
    assert report.first.a.name == "Functional.relu.0.forward"
    assert report.first.first_difference.stats is not None and not report.first.first_difference.agrees
    same = diff_runs(read_any_run(write_msprobe(tmp_path / "c", task="statistics")), b)
    assert not same.differs


@pytest.mark.parametrize(
    ("data_name", "expect_path"),
    [("../../../etc/passwd", False), ("/etc/passwd", False), ("ok.npy", True), ("..", False), (7, False)],
)
def test_data_names_that_leave_the_dump_are_not_followed(tmp_path, data_name, expect_path):
    rank = tmp_path / "rank"
    rank.mkdir()
    entry = {"output": [{"type": "mindspore.Tensor", "dtype": "Float32", "shape": [2], "data_name": data_name}]}
    (rank / "dump.json").write_text(json.dumps({"task": "tensor", "data": {"Functional.relu.0.forward": entry}}))
    ref = read_msprobe_dump(rank).ops[0].outputs[0]
    assert (ref.path is not None) == expect_path
    if ref.path is not None:
        assert ref.path.parent == rank / "dump_tensor_data"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "dump.json: not JSON"),
        ("[]", 'not an msprobe dump (no "data" object)'),
        ('{"data": []}', 'not an msprobe dump (no "data" object)'),
        ("[" * 100_000, "dump.json: not JSON"),
    ],
)
def test_a_hostile_dump_json_is_one_line(tmp_path, content, message):
    (tmp_path / "dump.json").write_text(content)
    with pytest.raises(DumpFormatError) as caught:
        read_msprobe_dump(tmp_path)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_odd_records_are_skipped_not_fatal(tmp_path):
    data = {
        "Functional.relu.0.forward": {"output": [{"dtype": "Float32", "shape": [-3]}, {"dtype": 5, "shape": [2]},
                                                 {"dtype": "Float32", "shape": [2] * 40}, "text", 3, [[[[[[1]]]]]]]},
        "weird": "not an entry",
        "Cell.a.b.c.Block.forward.7": {"output": [{"dtype": "Float32", "shape": [1], "Max": True}]},
    }  # fmt: skip
    (tmp_path / "dump.json").write_text(json.dumps({"data": data}))
    run = read_msprobe_dump(tmp_path)
    assert [op.op_type for op in run.ops] == ["relu", "Block"]
    assert run.ops[0].outputs == [] and run.ops[1].outputs[0].stats is None


def test_a_dump_json_that_is_a_fifo_is_refused(tmp_path):
    import os

    os.mkfifo(tmp_path / "dump.json")
    with pytest.raises(DumpError, match="dump.json"):
        read_msprobe_dump(tmp_path)


def test_cells_nest_by_construct_json(tmp_path):
    data = {
        "Cell.encoder.Encoder.forward.0": {"output": []},
        "Cell.encoder.layers.0.Block.forward.0": {"output": []},
        "Mint.matmul.0.forward": {"output": []},
    }
    parents = {
        "Cell.encoder.Encoder.forward.0": None,
        "Cell.encoder.layers.0.Block.forward.0": "Cell.encoder.Encoder.forward.0",
        "Mint.matmul.0.forward": "Cell.encoder.layers.0.Block.forward.0",
    }
    (tmp_path / "dump.json").write_text(json.dumps({"data": data}))
    (tmp_path / "construct.json").write_text(json.dumps(parents))
    run = read_msprobe_dump(tmp_path)
    assert [op.scope for op in run.ops] == ["Default", "Default/encoder-Encoder", "Default/encoder-Encoder/0-Block"]


# --------------------------------------------------------------------------- fuzzing both indexes

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=25,
)
_KEYS = st.sampled_from(["format", "version", "ops", "name", "type", "inputs", "outputs", "file", "shape", "dtype",
                         "data", "input_args", "output", "data_name", "Max", "task"])  # fmt: skip
_INDEX = st.recursive(
    _JSON, lambda inner: st.dictionaries(_KEYS, inner, max_size=6) | st.lists(inner, max_size=3), max_leaves=30
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(index=_INDEX, as_run=st.booleans())
def test_any_index_gives_a_run_or_one_msdebug_error(tmp_path, index, as_run):
    if as_run and isinstance(index, dict):
        index = {"format": "msdebug-run", "version": 1, **index}
    name = "run.json" if as_run else "dump.json"
    (tmp_path / name).write_text(json.dumps(index))
    try:
        run = read_run(tmp_path) if as_run else read_msprobe_dump(tmp_path)
    except MsDebugError as error:
        assert "\n" not in str(error)
        return
    for op in run.ops:
        for ref in op.tensors:
            assert ref.path is None or ref.path.parent in (tmp_path, tmp_path / "dump_tensor_data")
    diff_runs(run, run)  # a run read is a run that compares, with files missing or not
