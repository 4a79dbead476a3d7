"""The pure core of ``%%msdiff``: the streaming comparison against numpy's own definitions, the
alignment of renamed, added and fused ops, and the saved-run reader on hostile files."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from msdebug.dumps.align import align, normal_type
from msdebug.dumps.diff import Tolerance, compare_arrays, diff_runs, tolerance_for
from msdebug.dumps.runs import RUN_FILE, RunOp, TensorRef, read_run
from msdebug.errors import DumpError, DumpFormatError, InvalidValueError

FAST = settings(max_examples=80)
F32 = Tolerance(1e-4, 1e-6)


# --------------------------------------------------------------------------- compare_arrays


def _reference(a: np.ndarray, b: np.ndarray, tol: Tolerance) -> dict:
    """The metrics by their definitions, on whole arrays: "within" is numpy's isclose on the
    arrays as they are (float32 arithmetic for float32), the errors in float64."""
    close = np.isclose(a.ravel(), b.ravel(), rtol=tol.rtol, atol=tol.atol, equal_nan=True)
    x, y = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    bad = np.flatnonzero(~close)
    finite = np.isfinite(x) & np.isfinite(y)
    diff = np.abs(x[finite] - y[finite])
    nonzero = (y != 0) & finite
    return {
        "within": int(close.sum()),
        "first": None if not bad.size else tuple(int(i) for i in np.unravel_index(bad[0], a.shape)),
        "max_abs": float(diff.max()) if diff.size else 0.0,
        "max_rel": float((np.abs(x[nonzero] - y[nonzero]) / np.abs(y[nonzero])).max()) if nonzero.any() else 0.0,
    }


floats = hnp.arrays(
    np.float32,
    hnp.array_shapes(min_dims=0, max_dims=3, max_side=7),
    elements=st.floats(-1e3, 1e3, width=32) | st.sampled_from([0.0, np.nan, np.inf, -np.inf]),
)


@FAST
@given(floats, st.integers(0, 2**32 - 1), st.integers(1, 9))
def test_the_streaming_metrics_equal_their_definitions_whatever_the_chunk(a, seed, chunk):
    rng = np.random.default_rng(seed)
    b = a.copy()
    if a.size:
        picks = rng.integers(0, a.size, size=rng.integers(0, a.size + 1))
        b.reshape(-1)[picks] += rng.normal(0, 1, picks.size).astype(np.float32)
    got = compare_arrays(a, b, F32, chunk=chunk)
    want = _reference(a, b, F32)
    assert got.count == a.size
    assert got.within == want["within"]
    assert got.first_index == want["first"]
    assert got.agrees == (want["within"] == a.size)
    if not got.nonfinite:  # computed in float32: as close as float32 rounding allows
        assert got.max_abs == pytest.approx(want["max_abs"], rel=1e-6, abs=1e-30)
        assert got.max_rel == pytest.approx(want["max_rel"], rel=1e-6, abs=1e-30)
    whole = compare_arrays(a, b, F32, chunk=1 << 20)  # one chunk or many: the same answer
    assert replace(whole, cosine=None) == replace(got, cosine=None)
    assert (whole.cosine is None) == (got.cosine is None)
    if got.cosine is not None:
        assert whole.cosine == pytest.approx(got.cosine, rel=1e-5)  # float32 sums, split differently


def test_the_first_index_and_both_values_are_those_of_the_first_element_out_of_tolerance():
    a = np.zeros((3, 4), np.float32)
    b = a.copy()
    b[1, 2], b[2, 0] = 0.5, 9.0
    got = compare_arrays(a, b, F32, chunk=5)
    assert (got.first_index, got.first_a, got.first_b) == ((1, 2), 0.0, 0.5)
    assert (got.max_abs, got.within, got.count) == (9.0, 10, 12)
    assert got.cosine is None  # a side all zeros against values: no angle
    assert "max abs 9, max rel 1, cosine n/a, 83.33% within rtol=0.0001, atol=1e-06" == got.summary


def test_cosine_is_that_of_the_two_vectors():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(64, 33)).astype(np.float32)
    b = a + rng.normal(scale=0.1, size=a.shape).astype(np.float32)
    x, y = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    want = x @ y / math.sqrt((x @ x) * (y @ y))
    assert compare_arrays(a, b, F32, chunk=100).cosine == pytest.approx(want, rel=1e-5)


def test_nan_against_nan_agrees_nan_against_a_number_does_not():
    a = np.array([np.nan, 1.0, np.inf], np.float32)
    assert compare_arrays(a, a.copy(), F32).agrees
    b = np.array([np.nan, np.nan, np.inf], np.float32)
    got = compare_arrays(a, b, F32)
    assert (got.agrees, got.nonfinite, got.first_index, got.max_abs) == (False, 1, (1,), math.inf)
    assert got.cosine is None
    # NaN on this side against a number on the reference: a difference too, and +inf against -inf
    flipped = compare_arrays(
        np.array([1.0, np.nan, np.inf], np.float32), np.array([1.0, 2.0, -np.inf], np.float32), F32
    )
    assert (flipped.within, flipped.nonfinite, flipped.first_index) == (1, 2, (1,))


def test_integers_compare_exactly_also_past_float64_precision():
    a = np.array([2**53, 7], np.int64)
    b = np.array([2**53 + 1, 7], np.int64)
    got = compare_arrays(a, b, tolerance_for("int64", "int64"))
    assert (got.agrees, got.first_index, got.within) == (False, (0,), 1)


def test_a_shape_that_differs_is_a_difference_without_element_metrics():
    got = compare_arrays(np.zeros((2, 3)), np.zeros((3, 2)), F32)
    assert not got.agrees and got.summary == "shape [2, 3] against [3, 2]"


def test_a_memory_map_is_compared_without_being_read_whole(tmp_path):
    a = np.lib.format.open_memmap(tmp_path / "a.npy", mode="w+", dtype=np.float32, shape=(3_000_000,))
    a[:] = 1.0
    a[2_500_000] = 2.0
    a.flush()
    view = np.load(tmp_path / "a.npy", mmap_mode="r")
    got = compare_arrays(view, np.ones(3_000_000, np.float32), F32, chunk=1 << 16)
    assert isinstance(view, np.memmap) and got.first_index == (2_500_000,)


def test_msprobe_verdict_rule():
    rule = Tolerance(0, 0, "msprobe")
    base = np.linspace(1, 2, 100).astype(np.float32)
    assert compare_arrays(base + 0.0005, base, rule).agrees  # max abs <= 0.001: reached, whatever rtol
    assert not compare_arrays(base + 1.5, base, rule).agrees  # max abs > 1
    assert not compare_arrays(-base, base, rule).agrees  # cosine < 0.9
    shuffled = base.copy()
    shuffled[:2] = shuffled[:2][::-1] * 40
    assert not compare_arrays(shuffled, base, rule).agrees


def test_tolerances_default_per_dtype_the_less_precise_side_decides():
    assert (tolerance_for("float32", "float32").rtol, tolerance_for("float32", "float32").atol) == (1e-4, 1e-6)
    assert tolerance_for("float32", "float16").rtol == 1e-2
    assert tolerance_for("Float16", "bfloat16").rtol == 5e-2
    assert (tolerance_for("int32", "int32").rtol, tolerance_for("bool", "bool").atol) == (0.0, 0.0)
    assert tolerance_for("float32", "float32", rtol=0.5).atol == 1e-6
    for bad in (-1, float("nan"), float("inf"), "0.1", True):
        with pytest.raises(InvalidValueError, match="rtol must be a finite number from 0"):
            Tolerance(bad, 0)
    with pytest.raises(InvalidValueError, match="rule must be one of allclose, msprobe, got 'msprob'"):
        Tolerance(0, 0, "msprob")


# --------------------------------------------------------------------------- alignment


def op(index: int, name: str, *, source: str = "", outputs=()) -> RunOp:
    scope, _, last = name.rpartition("/")
    return RunOp(index, name, last.split("-op")[0], scope, [], list(outputs), source)


def ops(*names: str) -> list[RunOp]:
    return [op(i, n) for i, n in enumerate(names)]


def test_ops_renumbered_between_modes_align_by_scope_type_and_order():
    a = ops("Default/fc1-Dense/MatMul-op0", "Default/fc1-Dense/BiasAdd-op0", "Default/ReLU-op0",
            "Default/fc2-Dense/MatMul-op0")  # fmt: skip
    b = ops("Default/fc1-Dense/MatMul-op12", "Default/fc1-Dense/BiasAdd-op13", "Default/ReLU-op14",
            "Default/fc2-Dense/MatMul-op15")  # fmt: skip
    found = align(a, b)
    assert (found.pairs, found.only_a, found.only_b, found.by_type) == ([(0, 0), (1, 1), (2, 2), (3, 3)], [], [], 0)


def test_an_added_op_is_named_and_the_rest_still_align():
    a = ops("Default/MatMul-op0", "Default/Mul-op0", "Default/ReLU-op0", "Default/MatMul-op1")
    b = ops("Default/MatMul-op3", "Default/ReLU-op4", "Default/MatMul-op5")
    found = align(a, b)
    assert (found.pairs, found.only_a, found.only_b) == ([(0, 0), (2, 1), (3, 2)], [1], [])


TYPES = ("MatMul", "BiasAdd", "ReLU", "Add", "Mul", "Softmax", "Reshape")


# No shrinking: a list of 600 ops does not get clearer, and a broken walk would shrink for minutes.
@settings(max_examples=25, phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(
    st.lists(st.sampled_from(TYPES), min_size=520, max_size=700),
    st.sets(st.integers(0, 699), max_size=12),
    st.sets(st.integers(0, 699), max_size=12),
    st.randoms(use_true_random=False),
)
def test_runs_spelled_by_two_tools_pair_by_type_in_order(types, extra_at, dropped_at, rng):
    """No scope in common, so the whole run is one gap paired by type (past difflib's size).
    Ops only one side has are stepped over: with extra ops (a Cast another tool adds), every op
    meets its own partner. Where one side also lacks ops, which op of a run of one type (or of
    a repeated layer) it lacks cannot be told by type: then every pair is of one type, in order."""
    extra_at = {k for k in extra_at if k < len(types)}
    dropped_at = {k for k in dropped_at if k < len(types)}
    a = [RunOp(i, f"Default/b-Block/{t}-op{i}", t, "Default/b-Block") for i, t in enumerate(types)]
    b, truth = [], []
    for i, t in enumerate(types):
        if i in extra_at:
            b.append(RunOp(len(b), f"Net/cast.{len(b)}", "Cast", "Net"))
        if i in dropped_at:
            continue
        truth.append((i, len(b)))
        b.append(RunOp(len(b), f"Net/{t.lower()}.{len(b)}", rng.choice((t, t.lower() + "Ext")), "Net"))
    found = align(a, b)
    assert len(a) * len(b) > 250_000  # the one-pass pairing, not difflib
    assert all(x1 < x2 and y1 < y2 for (x1, y1), (x2, y2) in zip(found.pairs, found.pairs[1:], strict=False))
    assert all(normal_type(a[i].op_type) == normal_type(b[j].op_type) for i, j in found.pairs)
    assert not any(b[j].op_type == "Cast" for _, j in found.pairs)
    if not dropped_at:
        assert found.pairs == truth
        assert [b[j].op_type for j in found.only_b] == ["Cast"] * len(extra_at)


def test_types_spelled_per_mode_align_and_fused_ops_are_left_unpaired():
    assert {normal_type(t) for t in ("MatMul", "MatMulExt", "matmul", "__matmul__")} == {"matmul"}
    a = ops("Default/net-Net/AddExt-op0", "Default/net-Net/Dense-op0", "Default/net-Net/ReLU-op0")
    b = ops("Default/Add-op1", "Default/MatMul-op2", "Default/BiasAdd-op3", "Default/ReLU-op4")
    found = align(a, b)
    assert found.pairs == [(0, 0), (2, 3)] and found.by_type == 2
    assert (found.only_a, found.only_b) == ([1], [1, 2])


# --------------------------------------------------------------------------- saved runs


def save_run(root: Path, layers: list[tuple[str, list[np.ndarray]]], label: str = "run") -> Path:
    root.mkdir(parents=True)
    entries = []
    for index, (name, outputs) in enumerate(layers):
        refs = []
        for slot, array in enumerate(outputs):
            file = f"{index:06d}.output.{slot}.npy"
            np.save(root / file, array)
            refs.append({"file": file, "shape": list(array.shape), "dtype": str(array.dtype)})
        scope, _, last = name.rpartition("/")
        entries.append({"name": name, "type": last.split("-op")[0], "scope": scope, "outputs": refs,
                        "source": f"/tmp/x.py:{10 + index}", "code": f"line {index}"})  # fmt: skip
    (root / RUN_FILE).write_text(json.dumps({"format": "msdebug-run", "version": 1, "label": label, "ops": entries}))
    return root


def test_the_first_op_named_is_the_changed_one_not_one_downstream(tmp_path):
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
    before = [
        ("Default/fc1-Dense/MatMul-op0", [x]),
        ("Default/Mul-op0", [x * 2]),
        ("Default/ReLU-op0", [np.maximum(x * 2, 0)]),
    ]
    after = [before[0], ("Default/Mul-op0", [x * 2.01]), ("Default/ReLU-op0", [np.maximum(x * 2.01, 0)])]
    report = diff_runs(read_run(save_run(tmp_path / "a", after, "after")), read_run(save_run(tmp_path / "b", before)))
    assert report.differs and report.first.a.name == "Default/Mul-op0"
    assert report.first.a.source == "/tmp/x.py:11"
    assert report.first.first_difference.metrics.first_index == (0, 0)
    assert [round(rel, 4) for _, _, rel in report.spread] == [0.0, 0.005, 0.005]
    assert (report.compared_ops, report.compared_tensors, report.entered_by) == (3, 3, [])


def test_an_op_only_one_run_has_is_named_where_the_difference_enters(tmp_path):
    x = np.ones((2, 2), np.float32)
    a = [("Default/MatMul-op0", [x]), ("Default/Add-op0", [x + 1]), ("Default/ReLU-op0", [x + 1])]
    b = [("Default/MatMul-op0", [x]), ("Default/ReLU-op0", [x])]
    report = diff_runs(read_run(save_run(tmp_path / "a", a)), read_run(save_run(tmp_path / "b", b)))
    assert report.first.a.name == "Default/ReLU-op0"
    assert [o.name for o in report.entered_by] == ["Default/Add-op0"]
    culprit, why = report.culprit
    assert (culprit.name, why) == ("Default/Add-op0", "only this run has it")
    assert "First difference at Default/Add-op0 (Add): only this run has it" in repr(report)
    assert "the first aligned op after it, Default/ReLU-op0 (ReLU), differs in its output 0" in repr(report)
    removed = diff_runs(read_run(tmp_path / "b"), read_run(tmp_path / "a"))
    assert (removed.culprit[0].name, removed.culprit[1]) == (
        "Default/Add-op0",
        "only the reference has it: this run skips it",
    )
    assert [o.name for o in report.unaligned_a] == ["Default/Add-op0"]
    assert any("1 ops of run and 0 of run have no partner" in note for note in report.notes)


def test_identical_runs_agree(tmp_path):
    layers = [("Default/MatMul-op0", [np.arange(6, dtype=np.float32)])]
    report = diff_runs(read_run(save_run(tmp_path / "a", layers)), read_run(save_run(tmp_path / "b", layers)))
    assert not report.differs and report.compared_tensors == 1


def test_nothing_compared_is_never_agreement(tmp_path):
    """A cell that ran no op, or two runs whose ops share nothing: the answer says nothing was
    compared, first, and the terminal's exit status is 3, not the 0 of agreement."""
    import subprocess
    import sys

    x = np.ones(3, np.float32)
    empty = read_run(save_run(tmp_path / "empty", [], "empty"))
    some = read_run(save_run(tmp_path / "some", [("Default/MatMul-op0", [x])], "some"))
    other = read_run(save_run(tmp_path / "other", [("Default/Sqrt-op0", [x]), ("Default/Exp-op0", [x])], "other"))
    cases = [
        (empty, empty, "neither run ran an op"),
        (empty, some, "empty ran no op"),
        (some, empty, "empty ran no op"),
        (some, other, "no op of some (1 ops) aligned with one of other (2 ops)"),
    ]
    for a, b, why in cases:
        report = diff_runs(a, b)
        assert not report.differs and report.nothing_compared == why
        lines = repr(report).splitlines()
        assert lines[1] == f"Nothing compared: {why}.", lines
        assert "agree" not in repr(report).lower()
    same = diff_runs(some, some)
    assert not same.nothing_compared and repr(same).splitlines()[1].startswith("They agree: 1 aligned ops")
    for a, b, status in ((tmp_path / "empty", tmp_path / "empty", 3), (tmp_path / "some", tmp_path / "other", 3),
                         (tmp_path / "some", tmp_path / "some", 0)):  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "msdebug", "diff", str(a), str(b)], capture_output=True, text=True)
        assert done.returncode == status, done.stdout + done.stderr


def test_a_recording_cut_at_the_cap_says_so_before_the_verdict(tmp_path):
    x = np.ones(3, np.float32)
    cut = save_run(tmp_path / "cut", [("Default/MatMul-op0", [x])], "cut")
    index = json.loads((cut / RUN_FILE).read_text())
    index["stopped"] = "recording stopped after 1 ops (0 MiB), at msdebug's cap of 200,000 ops or 4 GiB a run"
    (cut / RUN_FILE).write_text(json.dumps(index))
    whole = read_run(save_run(tmp_path / "whole", [("Default/MatMul-op0", [x]), ("Default/Exp-op0", [x])], "whole"))
    report = diff_runs(read_run(cut), whole)
    assert report.partial == [f"cut: {index['stopped']}"]
    lines = repr(report).splitlines()
    assert lines[1] == f"Only part was recorded: cut: {index['stopped']}"
    assert lines[2].startswith("They agree: 1 aligned ops") and lines[2].endswith("(what was recorded).")


@pytest.mark.parametrize(
    ("index", "message"),
    [
        ("not json", "run.json: not JSON"),
        ({"format": "other"}, 'not a run msdebug saved (no "format": "msdebug-run")'),
        ({"format": "msdebug-run", "version": 9, "ops": []}, "version 9 of the run format; this msdebug reads version 1"),
        ({"format": "msdebug-run", "version": 1, "ops": {}}, '"ops" is not a list'),
        ({"format": "msdebug-run", "version": 1, "ops": [{"name": 1}]}, 'an op needs a "name" and a "type"'),
        ({"format": "msdebug-run", "version": 1, "ops": [{"name": "a", "type": "T", "outputs": [{"file": "../x.npy"}]}]},
         "'../x.npy' is not a plain file name"),
        ({"format": "msdebug-run", "version": 1, "ops": [{"name": "a", "type": "T", "outputs": [{"file": "/etc/passwd"}]}]},
         "'/etc/passwd' is not a plain file name"),
        ({"format": "msdebug-run", "version": 1, "ops": [{"name": "a", "type": "T", "outputs": [{"file": "x", "shape": [-1]}]}]},
         "shape [-1] is not a list of sizes"),
    ],
)  # fmt: skip
def test_a_hostile_run_index_is_one_line_naming_the_problem(tmp_path, index, message):
    (tmp_path / RUN_FILE).write_text(index if isinstance(index, str) else json.dumps(index))
    with pytest.raises(DumpFormatError) as caught:
        read_run(tmp_path)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_run_index_that_is_a_fifo_or_missing_is_refused(tmp_path):
    import os

    os.mkfifo(tmp_path / RUN_FILE)
    with pytest.raises(DumpError, match="run.json"):
        read_run(tmp_path)
    with pytest.raises(DumpError, match="run.json"):
        read_run(tmp_path / "nowhere")


def test_a_tensor_file_that_is_not_npy_is_said_in_the_report_not_raised(tmp_path):
    layers = [("Default/MatMul-op0", [np.ones(3, np.float32)])]
    a = save_run(tmp_path / "a", layers)
    save_run(tmp_path / "b", layers)
    (a / "000000.output.0.npy").write_bytes(b"garbage")
    report = diff_runs(read_run(a), read_run(tmp_path / "b"))
    assert not report.differs
    assert report.ops[0].tensors[0].note.startswith("not compared: ")


def test_tensor_refs_are_inputs_before_outputs():
    refs = RunOp(0, "Default/Mul-op0", "Mul", "Default", [TensorRef("input 0", None)], [TensorRef("output 0", None)])
    assert [t.slot for t in refs.tensors] == ["input 0", "output 0"]


# --------------------------------------------------------------------------- the walker (ipywidgets)


def test_the_walker_lists_the_differing_ops_and_shows_one_side_by_side(tmp_path):
    from msdebug.ipython.diff import DiffWidget

    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
    before = [("Default/MatMul-op0", [x]), ("Default/Mul-op0", [x * 2]), ("Default/ReLU-op0", [np.maximum(x * 2, 0)])]
    after = [before[0], ("Default/Mul-op0", [x * 2.5]), ("Default/ReLU-op0", [np.maximum(x * 2.5, 0)])]
    report = diff_runs(read_run(save_run(tmp_path / "a", after, "after")), read_run(save_run(tmp_path / "b", before)))
    walker = DiffWidget(report)
    assert walker.only_differing.value is True
    assert [label.split(":")[1].split("(")[0].strip() for label, _ in walker.ops.options] == [
        "Default/Mul-op0",
        "Default/ReLU-op0",
    ]
    assert walker.count.value == "2 of 3 aligned ops"
    assert walker.ops.value == 1 and "Mul-op0</code> (Mul)" in walker.detail.value
    assert walker.detail.value.count("<svg") == 2  # a histogram of each side's output
    assert "first difference at [0, 0]" in walker.detail.value
    walker.only_differing.value = False
    assert len(walker.ops.options) == 3 and walker.ops.options[0][0].startswith("✓ 0: Default/MatMul-op0")
    walker.ops.value = 0
    assert "agrees" in walker.detail.value and "differs" not in walker.detail.value


def test_names_and_values_from_a_run_are_escaped_in_every_view(tmp_path):
    from msdebug.ipython.diff import DiffWidget

    evil = "Default/<img src=x onerror=alert(1)>/Mul-op0"
    a = read_run(save_run(tmp_path / "a", [(evil, [np.ones(2, np.float32)])], "<b>a</b>"))
    b = read_run(save_run(tmp_path / "b", [(evil, [np.zeros(2, np.float32)])]))
    report = diff_runs(a, b)
    walker = DiffWidget(report)
    for html in (report._repr_html_(), walker.detail.value):
        assert "<img" not in html and "<b>a</b>" not in html
        assert "&lt;img src=x onerror=alert(1)&gt;" in html


def _run_with_inputs(root: Path, ops_: list[tuple[str, list, list]]) -> Path:
    """A saved run whose inputs refer to earlier ops' output files, as the recorder writes it:
    ``(name, inputs, outputs)``, an input being an array (its own file) or ``(op, slot)``."""
    root.mkdir(parents=True)
    entries = []
    for index, (name, inputs, outputs) in enumerate(ops_):
        entry = {"name": name, "type": name.rsplit("/", 1)[-1].split("-op")[0], "scope": name.rpartition("/")[0]}
        for io, items in (("input", inputs), ("output", outputs)):
            refs = []
            for slot, item in enumerate(items):
                if isinstance(item, tuple):
                    refs.append({"file": f"{item[0]:06d}.output.{item[1]}.npy", "shape": [2], "dtype": "Float32"})
                    continue
                file = f"{index:06d}.{io}.{slot}.npy"
                np.save(root / file, item)
                refs.append({"file": file, "shape": list(item.shape), "dtype": str(item.dtype)})
            entry[io + "s"] = refs
        entries.append(entry)
    (root / RUN_FILE).write_text(
        json.dumps({"format": "msdebug-run", "version": 1, "label": root.name, "ops": entries})
    )
    return root


def test_a_later_output_no_op_read_does_not_decide(tmp_path):
    """BatchNorm's saved mean and variance on CPU: memory the kernel never writes, different in
    every run. No later op reads them, so they are shown but name no op."""
    x = np.ones(2, np.float32)

    def run(name: str, garbage: float, read: int):
        return read_run(_run_with_inputs(tmp_path / name, [
            ("Default/bn-BatchNorm2d/BatchNorm-op0", [x], [x, np.full(2, garbage, np.float32)]),
            ("Default/ReLU-op0", [(0, read)], [x]),
        ]))  # fmt: skip

    report = diff_runs(run("a", 7.0, read=0), run("b", -3.0, read=0))
    assert report.first is None and report.compared_tensors == 5
    unused = [t for op in report.ops for t in op.tensors if not t.decides]
    assert [(t.slot, t.agrees) for t in unused] == [("output 1", False)]
    used = diff_runs(run("c", 7.0, read=1), run("d", -3.0, read=1))
    assert (used.first.a.name, used.first.first_difference.slot) == ("Default/bn-BatchNorm2d/BatchNorm-op0", "output 1")


def test_an_op_with_a_float16_input_is_judged_at_float16_tolerance(tmp_path):
    """A float32 output computed from float16 inputs (a Cast, LayerNorm's mean in a --dtype
    float16 run) carries float16's error: its op is judged at float16's tolerance."""
    half = np.linspace(1, 2, 2).astype(np.float16)
    mean_a, mean_b = np.array([1.5, 1.5], np.float32), np.array([1.5 * (1 + 3e-3), 1.5], np.float32)
    a = read_run(_run_with_inputs(tmp_path / "a", [("Default/Cast-op0", [half], [mean_a])]))
    b = read_run(_run_with_inputs(tmp_path / "b", [("Default/Cast-op0", [half], [mean_b])]))
    assert diff_runs(a, b).first is None  # 3e-3 is within float16's rtol of 1e-2
    assert diff_runs(a, b, rtol=1e-4, atol=1e-6).first is not None  # a tolerance given is the tolerance
    plain = read_run(_run_with_inputs(tmp_path / "c", [("Default/ReduceMean-op0", [mean_a], [mean_a])]))
    other = read_run(_run_with_inputs(tmp_path / "d", [("Default/ReduceMean-op0", [mean_a], [mean_b])]))
    assert diff_runs(plain, other).first is not None  # all float32: float32's tolerance
