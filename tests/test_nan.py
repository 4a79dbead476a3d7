"""Finding the first NaN/Inf: real data dumps (GRAPH, @jit) scanned, PyNative hooks on real
Cells, dump configs checked with MindSpore's rules, and the data-dump explorer.

Dumps are latched at the first graph compile of a process, so every dump is made by a fresh
interpreter, once per session, and shared by the tests that read it.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest

from helpers import run_python

GRAPH_SCRIPT = """\
import os, sys
from msdebug.recorders import datadump
datadump.enable(sys.argv[1], inputs=True)
import numpy as np
import mindspore as ms
from mindspore import nn, ops
ms.set_context(mode=ms.GRAPH_MODE)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(4, 8, weight_init="ones", bias_init="zeros")
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(8, 2, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        h = self.fc1(x)
        d = ops.sqrt(h - 5)
        return self.fc2(self.relu(d)).sum()


net = Net()
print(net(ms.Tensor(np.full((3, 4), 10, np.float32))))
print(net(ms.Tensor(np.ones((3, 4), np.float32))))
"""
JIT_SCRIPT = """\
import sys
from msdebug.recorders import datadump
datadump.enable(sys.argv[1], inputs=True)
import numpy as np
import mindspore as ms
from mindspore import ops


@ms.jit
def step(a):
    b = ops.log(a)
    return ops.relu(b) * 3


print(step(ms.Tensor(np.arange(4, dtype=np.float32))))
"""
LONG_SCRIPT = """\
import sys
from msdebug.recorders import datadump
datadump.enable(sys.argv[1])
import numpy as np
import mindspore as ms
from mindspore import nn, ops
ms.set_context(mode=ms.GRAPH_MODE)


class Leaf(nn.Cell):
    def construct(self, x):
        return ops.log(x - 3)


class Mid(nn.Cell):
    def __init__(self):
        super().__init__()
        setattr(self, "b" * 120, Leaf())

    def construct(self, x):
        return getattr(self, "b" * 120)(x)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        setattr(self, "a" * 120, Mid())

    def construct(self, x):
        return getattr(self, "a" * 120)(x) * 2


print(Net()(ms.Tensor(np.arange(4, dtype=np.float32) + 5)))
print(Net()(ms.Tensor(np.arange(4, dtype=np.float32))))
"""
# Hand-written attention, as PyNative runs it in the tests of the rule (ATTENTION_CELL): a -inf
# mask on padded positions, one query fully masked. The mask's -Inf comes in as data; Softmax
# makes NaN of the all -inf row (float16 on CPU; MindSpore's float32 CPU kernel writes 0 there).
ATTENTION = """\
import math
import numpy as np, mindspore as ms
from mindspore import nn, ops


class Attention(nn.Cell):
    def __init__(self):
        super().__init__()
        self.softmax = nn.Softmax(axis=-1)

    def construct(self, q, k, v, mask):
        scores = ops.matmul(q, k.T) / math.sqrt(q.shape[-1]) + mask
        return ops.matmul(self.softmax(scores), v)


rng = np.random.default_rng(0)
q, k, v = (ms.Tensor(rng.standard_normal((3, 4)).astype(np.float16)) for _ in range(3))
padding = np.zeros((3, 3), np.float16)
padding[:, 2] = -np.inf  # the last key is padding
padding[2, :] = -np.inf  # and so is the last query: its row is all -inf
mask = ms.Tensor(padding)
attention = Attention()
"""
ATTENTION_SCRIPT = (
    "import sys\nfrom msdebug.recorders import datadump\ndatadump.enable(sys.argv[1], inputs=True)\n"
    + ATTENTION
    + "ms.set_context(mode=ms.GRAPH_MODE)\nprint(attention(q, k, v, mask))\n"
)


def _make_dump(root: Path, name: str, script: str) -> tuple[Path, Path]:
    where = root / name
    source = root / f"{name}.py"
    source.write_text(script)
    result = run_python(f"import runpy, sys; sys.argv = ['{source}', '{where}/dump']; runpy.run_path('{source}')")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Dump Alert" not in result.stderr  # msdebug always writes e2e_dump_settings
    return where / "dump", source


@pytest.fixture(scope="session")
def dumps(tmp_path_factory):
    """Real dumps, one fresh process each: GRAPH (a NaN made by Sqrt, masked by ReLU, in the
    second step), @jit (-Inf from Log), op names over 255 bytes, and masked attention (GRAPH,
    float16: a -Inf mask comes in, Softmax makes NaN)."""
    root = tmp_path_factory.mktemp("dumps")
    made = {name: _make_dump(root, name, script) for name, script in
            (("graph", GRAPH_SCRIPT), ("jit", JIT_SCRIPT), ("long", LONG_SCRIPT),
             ("attention", ATTENTION_SCRIPT))}  # fmt: skip
    yield made
    for path in root.rglob("*"):  # MindSpore writes 0400 files in 0700 folders
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o700)
    shutil.rmtree(root, ignore_errors=True)


def _writable_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    for path in [dst, *dst.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o700 if path.is_dir() else 0o600)
    return dst


def _run_file(folder: Path, name: str, code: str):
    """Run ``code`` from a file in a fresh interpreter (GRAPH mode compiles from source files)."""
    script = folder / f"{name}.py"
    script.write_text(textwrap.dedent(code))
    return run_python(f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')")


def _line_of(source: Path, text: str) -> int:
    return next(i for i, line in enumerate(source.read_text().splitlines(), 1) if text in line)


# --------------------------------------------------------------------------- data dumps


def test_graph_dump_first_nan_is_sqrt_with_its_line_and_relu_masks_it(dumps):
    from msdebug.dumps.nan import scan_dump

    path, source = dumps["graph"]
    report = scan_dump(path)
    culprit = report.culprit
    assert culprit.name == "Default/Sqrt-op0"
    assert culprit.op_type == "Sqrt"
    assert culprit.slot == "output 0"
    assert culprit.kind == "NaN"
    assert culprit.stats.nan == 24 and culprit.stats.first_index == (0, 0)
    assert culprit.made_here
    assert culprit.where == "rank 0, net Net, graph 0, iteration 1"
    assert [s.label for s in culprit.inputs] == ["input 0"] and culprit.inputs[0].stats.finite
    assert culprit.inputs[0].stats.max == -1.0
    assert culprit.source == f"{source}:{_line_of(source, 'ops.sqrt(h - 5)')}"
    assert culprit.line == f"{source}:{_line_of(source, 'ops.sqrt(h - 5)')}: `d = ops.sqrt(h - 5)`"
    assert culprit.reached[0].name == "Default/relu-ReLU/ReLU-op0"
    assert culprit.reached[0].outcome == "masked it: its output is finite"
    assert len(culprit.reached) == 1  # ReLU turned NaN into 0: the loss is finite
    text = repr(report)
    assert "First non-finite value: NaN at Default/Sqrt-op0 (Sqrt), output 0" in text
    assert "Sqrt made it: its inputs are finite and its output 0 is not" in text


def test_public_api_and_progress(dumps):
    import msdebug

    calls = []
    from msdebug.dumps.nan import scan_dump

    path, _ = dumps["graph"]
    report = scan_dump(path, progress=lambda done, total: calls.append((done, total)))
    assert len(calls) == report.checked_tensors and calls == sorted(calls)
    assert all(total == calls[0][1] for _, total in calls) and calls[-1][0] == report.checked_bytes
    assert msdebug.first_nonfinite(path).culprit == report.culprit


def test_jit_dump_minus_inf_from_log(dumps):
    from msdebug.dumps.nan import scan_dump

    path, source = dumps["jit"]
    culprit = scan_dump(path).culprit
    assert (culprit.name, culprit.op_type, culprit.kind) == ("Default/Log-op0", "Log", "-Inf")
    assert culprit.stats.neginf == 1 and culprit.stats.nan == 0 and culprit.stats.first_index == (0,)
    assert culprit.line == f"{source}:{_line_of(source, 'ops.log(a)')}: `b = ops.log(a)`"
    assert culprit.reached[0].op_type == "ReLU" and culprit.reached[0].outcome.startswith("masked")


def test_names_over_255_bytes_are_read_through_mapping_csv(dumps):
    from msdebug.dumps.datadump import read_data_dump
    from msdebug.dumps.nan import scan_dump

    path, source = dumps["long"]
    dump = read_data_dump(path)
    first = dump.ranks[0].iterations[0]
    long_ops = [op for op in first.ops if len(op.name) > 255]
    assert [op.op_type for op in long_ops] == ["Sub", "Log"]
    assert all(t.stored_as and t.stored_as[:-4].isdigit() for op in long_ops for t in op.tensors)
    culprit = scan_dump(path).culprit
    assert culprit.name == "Default/" + "a" * 120 + "-Mid/" + "b" * 120 + "-Leaf/Log-op0"
    assert culprit.kind == "NaN and -Inf" and culprit.stats.nan == 3 and culprit.stats.neginf == 1
    assert culprit.where.endswith("iteration 1")
    assert culprit.line.endswith(": `return ops.log(x - 3)`")
    assert "op inputs are not in this dump (input_output 2)" in " ".join(scan_dump(path).notes)


def test_all_finite_dump(dumps, tmp_path):
    from msdebug.dumps.nan import scan_dump

    path = _writable_copy(dumps["graph"][0], tmp_path / "finite")
    shutil.rmtree(path / "rank_0" / "Net" / "0" / "1")
    report = scan_dump(path)
    assert report.culprit is None
    assert report.checked_ops == 8 and report.checked_tensors == 34
    assert repr(report).startswith("All finite: checked 8 ops and 34 tensors")


def test_parameter_files_hold_the_updated_value(dumps, tmp_path):
    from msdebug.dumps.datadump import read_data_dump
    from msdebug.dumps.nan import scan_dump

    path = _writable_copy(dumps["graph"][0], tmp_path / "updated")
    shutil.rmtree(path / "rank_0" / "Net" / "0" / "1")
    (weight,) = [t for t in read_data_dump(path).ranks[0].iterations[0].parameters if t.flat_name == "fc2_weight"]
    data = np.load(weight.path)
    data[0, 0] = np.nan
    np.save(weight.path, data)
    culprit = scan_dump(path).culprit
    assert (culprit.name, culprit.op_type, culprit.kind) == ("fc2_weight", "Parameter", "NaN")
    assert culprit.note.startswith("a Parameter file holds the value after the step's update")
    # The value the op used (its input 1, before the update) is finite: the scan judged that first.
    assert "fc2-Dense/MatMul-op0" not in repr(scan_dump(path))


def test_nan_only_in_an_input_is_upstream(dumps, tmp_path):
    from msdebug.dumps.datadump import read_data_dump
    from msdebug.dumps.nan import scan_dump

    path = _writable_copy(dumps["graph"][0], tmp_path / "input")
    first = read_data_dump(path).ranks[0].iterations[0].op("Default/fc1-Dense/MatMul-op0").inputs[0]
    data = np.load(first.path)
    data[2, 1] = np.nan
    np.save(first.path, data)
    culprit = scan_dump(path).culprit
    assert (culprit.name, culprit.slot, culprit.made_here) == ("Default/fc1-Dense/MatMul-op0", "input 0", False)
    assert culprit.stats.first_index == (2, 1)
    assert "graph input or parameter" in culprit.note
    assert "received it" in culprit.verdict


def test_multi_rank_earliest_wins_and_compare_across_ranks(dumps, tmp_path):
    from msdebug.dumps.datadump import read_data_dump
    from msdebug.dumps.datadump_explorer import DataDumpExplorer
    from msdebug.dumps.nan import scan_dump

    path = _writable_copy(dumps["graph"][0], tmp_path / "ranks")
    shutil.copytree(path / "rank_0", path / "rank_1")
    bias = read_data_dump(path).rank(1).iteration(1).op("Default/fc1-Dense/BiasAdd-op0").outputs[0]
    data = np.load(bias.path)
    data[0, 3] = np.inf
    np.save(bias.path, data)
    report = scan_dump(path)
    assert report.culprit.name == "Default/fc1-Dense/BiasAdd-op0"
    assert report.culprit.where == "rank 1, net Net, graph 0, iteration 1"
    assert report.culprit.kind == "+Inf"
    assert "ranks 0 also hold non-finite values" in " ".join(report.notes)
    explorer = DataDumpExplorer(path)
    compare = explorer.compare("fc1-Dense/BiasAdd", iteration=1)
    assert [r.label for r in compare.rows] == ["rank 0", "rank 1"]
    assert compare.rows[1].stats.posinf == 1 and compare.rows[1].max_abs == 0.0
    iterations = explorer.compare("Default/Sub-op0", "input 0", across="iterations")
    assert [r.label for r in iterations.rows] == ["iteration 0", "iteration 1"]
    assert iterations.rows[1].max_abs == pytest.approx(36.0)


def test_truncated_and_garbage_npy_are_reported_and_skipped(dumps, tmp_path):
    from msdebug.dumps.datadump import read_data_dump
    from msdebug.dumps.nan import scan_dump

    path = _writable_copy(dumps["graph"][0], tmp_path / "cut")
    it = read_data_dump(path).ranks[0].iteration(1)
    cut = it.op("Default/fc1-Dense/MatMul-op0").outputs[0].path
    with open(cut, "r+b") as handle:
        handle.truncate(cut.stat().st_size - 8)
    garbage = it.op("Default/fc1-Dense/BiasAdd-op0").outputs[0].path
    garbage.write_bytes(b"\x00garbage, not numpy")
    report = scan_dump(path)
    assert report.culprit.name == "Default/Sqrt-op0"
    skipped = dict(report.skipped)
    assert skipped[cut.name].startswith("cut short: ")
    assert skipped[garbage.name].startswith("not a readable .npy file")
    assert "Skipped 2 unreadable files" in report._repr_html_()


def test_malicious_file_names_are_listed_escaped_and_never_followed(dumps, tmp_path):
    from msdebug.dumps.datadump import read_data_dump
    from msdebug.dumps.datadump_explorer import DataDumpExplorer
    from msdebug.dumps.nan import scan_dump

    path = _writable_copy(dumps["graph"][0], tmp_path / "evil")
    shutil.rmtree(path / "rank_0" / "Net" / "0" / "1")
    step = path / "rank_0" / "Net" / "0" / "0"
    (step / "<img src=x onerror=alert(1)>.npy").write_bytes(b"x")
    os.symlink("/etc/passwd", step / "Sqrt.Default_Sqrt-op0.0.0.9.output.1.DefaultFormat.Float32.npy")
    evil = step / "Mul.Default_<b>evil<_b>-op0.0.0.99.output.0.DefaultFormat.Float32.npy"
    np.save(evil, np.array([np.nan], np.float32))
    it = read_data_dump(path).ranks[0].iterations[0]
    assert it.bad_names == sorted(
        ["<img src=x onerror=alert(1)>.npy", "Sqrt.Default_Sqrt-op0.0.0.9.output.1.DefaultFormat.Float32.npy"]
    )
    report = scan_dump(path)
    assert report.culprit.name == "Default_<b>evil<_b>-op0"
    assert "this file matches no op" in report.culprit.note
    html = report._repr_html_()
    assert "<b>evil" not in html and "&lt;b&gt;evil" in html
    summary = DataDumpExplorer(path)._repr_html_()
    assert "<img" not in summary


def test_explorer_exec_order_filter_tensor_viewer(dumps):
    import msdebug

    path, source = dumps["graph"]
    explorer = msdebug.open_dump(path)
    assert "rank 0 Net graph 0 iteration 1: 8 ops, 34 tensors" in repr(explorer)
    order = explorer.exec_order(iteration=1)
    assert [r.name for r in order.rows][:4] == [
        "Default/fc1-Dense/MatMul-op0", "Default/fc1-Dense/BiasAdd-op0", "Default/Sub-op0", "Default/Sqrt-op0",
    ]  # fmt: skip
    assert order.rows[3].code == "d = ops.sqrt(h - 5)"
    bad = explorer.exec_order(iteration=1, nonfinite=True)
    assert [(r.name, r.finite, r.inputs_finite) for r in bad.rows] == [
        ("Default/Sqrt-op0", False, True),
        ("Default/relu-ReLU/ReLU-op0", False, False),
    ]
    assert "2 ops with a non-finite value of 8" in repr(bad)
    view = explorer.tensor("Default/Sub-op0", iteration=1)
    assert view.stats.min == view.stats.max == -1.0 and view.stats.finite
    assert sum(view.counts) == 24
    html = view._repr_html_()
    assert "<svg" in html and "<details>" in html
    nan_view = explorer.tensor("Sqrt", iteration=1)
    assert nan_view.counts == () and "no finite value to draw" in nan_view._repr_html_()
    with pytest.raises(msdebug.errors.DumpError, match="Did you mean 'Sqrt-op0'"):
        explorer.tensor("Sqrt-opp0", iteration=1)
    with pytest.raises(msdebug.errors.DumpError, match="has no dumped 'output 3'; it has input 0, output 0"):
        explorer.tensor("Sqrt", "output 3", iteration=1)


# --------------------------------------------------------------------------- the dump config


def test_inputs_has_one_default_outputs_only_and_the_nan_scan_asks_for_inputs(tmp_path, monkeypatch):
    """``input_output`` has no MindSpore default: msdebug's one default is outputs only, in
    :func:`build_config` as in :func:`enable` (``%msdump on``, ``--inputs`` adds them)."""
    import inspect

    from msdebug.recorders import datadump

    defaults = {
        function.__name__: inspect.signature(function).parameters["inputs"].default
        for function in (datadump.build_config, datadump.enable)
    }
    assert defaults == {"build_config": False, "enable": False}
    assert datadump.build_config(tmp_path)["common_dump_settings"]["input_output"] == 2
    assert datadump.build_config(tmp_path, inputs=True)["common_dump_settings"]["input_output"] == 0
    # %%msnan's own dump, before the first compile, has the inputs it judges parameters by
    monkeypatch.setenv("MINDSPORE_DUMP_CONFIG", "")  # unset, and restored after the test
    monkeypatch.setattr(datadump._switch, "graph_compiled", lambda: False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    path, made = datadump.dump_for_cell()
    assert made
    assert datadump.read_config(datadump._switch.config_file())["common_dump_settings"]["input_output"] == 0


def test_config_rules_mirror_mindspore():
    from msdebug.errors import DumpConfigError
    from msdebug.recorders.datadump import build_config, check_config

    good = build_config("/tmp/abs_dump", kernels="Default/Sqrt-op0, relu", iteration="0|2-4", inputs=True)
    common = good["common_dump_settings"]
    assert (common["dump_mode"], common["kernels"], common["input_output"]) == (1, ["Default/Sqrt-op0", "relu"], 0)
    assert good["e2e_dump_settings"] == {"enable": True, "trans_flag": True}
    cases = [
        ({"path": "/data/dump.v1"}, "has '.'"),
        ({"iteration": "first"}, '"all" or digits'),
        ({"iteration": "2-1|-"}, "dump nothing"),
        ({"iteration": 0}, "must be a string"),
        ({"dump_mode": 2}, "Ascend async dump"),
        ({"dump_mode": "0"}, "dump_mode must be 0"),
        ({"net_name": "My Net"}, "only letters"),
        ({"saved_data": "statistic"}, "needs a GPU or Ascend"),
        ({"saved_data": "tensors"}, "Did you mean 'tensor'"),
        ({"input_output": 3}, "input_output must be"),
        ({"kernels": "Default/Log-op0"}, "kernels must be a list"),
        ({"support_device": ["0"]}, "support_device"),
        ({"op_debug_mode": 4}, "not supported on CPU"),
        ({"overflow_number": 2}, "only read with op_debug_mode 3"),
        ({"dump_mod": 0}, "Did you mean 'dump_mode'"),
    ]
    for change, message in cases:
        bad = {"common_dump_settings": {**common, **change}, "e2e_dump_settings": {"enable": True}}
        with pytest.raises(DumpConfigError, match=message.replace("(", r"\(").replace("|", r"\|")):
            check_config(bad)
    with pytest.raises(DumpConfigError, match="common_dump_settings not found"):
        check_config({"e2e_dump_settings": {}})
    with pytest.raises(DumpConfigError, match="'enable'|enable must be true or false"):
        check_config({**good, "e2e_dump_settings": {"enable": "true"}})


def test_write_config_never_overwrites(tmp_path):
    from msdebug.recorders.datadump import build_config, write_config

    (tmp_path / "msdebug_dump.json").write_text("mine")
    first = write_config(build_config(tmp_path), tmp_path)
    again = write_config(build_config(tmp_path), tmp_path)
    other = write_config(build_config(tmp_path, iteration="3"), tmp_path)
    assert (tmp_path / "msdebug_dump.json").read_text() == "mine"
    assert first.name == again.name == "msdebug_dump-1.json" and other.name == "msdebug_dump-2.json"


def test_too_late_after_the_first_compile_and_the_first_cell_works(tmp_path):
    target = tmp_path / "late"
    code = f"""
    import numpy as np, mindspore as ms
    from mindspore import nn, ops
    ms.set_context(mode=ms.GRAPH_MODE)
    class Net(nn.Cell):
        def construct(self, x):
            return ops.sqrt(x - 2)
    net = Net()
    net(ms.Tensor(np.ones(3, np.float32)))
    from msdebug.recorders import datadump
    from msdebug.errors import DumpTooLateError
    try:
        datadump.enable({str(target)!r})
    except DumpTooLateError as error:
        print("ERROR", error)
    print("STATE", datadump.dump_status().state)
    """
    result = _run_file(tmp_path, "late", code)
    assert result.returncode == 0, result.stderr[-2000:]
    error = next(line for line in result.stdout.splitlines() if line.startswith("ERROR"))
    cell = f'import os; os.environ["MINDSPORE_DUMP_CONFIG"] = "{target}/msdebug_dump.json"'
    assert error == (
        "ERROR %msdump on: too late, this process has compiled a graph and MindSpore reads the dump config only "
        f"at its first graph compile. Run this first in a fresh kernel: {cell}"
    )
    assert "STATE off (too late to switch on in this process)" in result.stdout
    fresh = _run_file(tmp_path, "fresh", cell + "\n" + textwrap.dedent(code).split("from msdebug")[0])
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    from msdebug.dumps.nan import scan_dump

    assert scan_dump(target).culprit.op_type == "Sqrt"
    for path in target.rglob("*"):
        if path.is_dir():
            path.chmod(0o700)


def test_status_says_configured_then_on_and_what_was_written(tmp_path):
    code = f"""
    import os
    from msdebug.recorders import datadump
    datadump.enable({str(tmp_path / "d")!r})
    print("O", datadump.disable().state, "MINDSPORE_DUMP_CONFIG" in os.environ)
    print("A", datadump.enable({str(tmp_path / "d")!r}).state)
    import numpy as np, mindspore as ms
    from mindspore import nn, ops
    ms.set_context(mode=ms.GRAPH_MODE)
    class Net(nn.Cell):
        def construct(self, x):
            return x * 2
    net = Net()
    net(ms.Tensor(np.ones(3, np.float32)))
    status = datadump.dump_status()
    print("B", status.state)
    print("C", status.iterations, status.tensors)
    try:
        datadump.disable()
    except Exception as error:
        print("D", type(error).__name__, error)
    """
    result = _run_file(tmp_path, "status", code)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = dict(
        line.split(" ", 1) for line in result.stdout.splitlines() if line[:2] in ("O ", "A ", "B ", "C ", "D ")
    )
    assert lines["O"] == "off False"
    assert lines["A"] == "configured: MindSpore reads it at the first graph compile"
    assert lines["B"] == "on: MindSpore dumps every graph run"
    assert lines["C"] == "1 2"  # outputs only by default: Mul's output and the graph input x
    assert lines["D"].startswith("DumpTooLateError %msdump off: too late")


# --------------------------------------------------------------------------- PyNative hooks


class _Models:
    """Real Cells, built once (importing MindSpore in the test process)."""

    def __init__(self) -> None:
        import mindspore as ms
        from mindspore import nn, ops

        class Scale(nn.Cell):
            def __init__(self):
                super().__init__()
                self.gamma = ms.Parameter(ms.Tensor(np.ones(4, np.float32)), name="gamma")

            def construct(self, x):
                return x * self.gamma + 0.5

        class Net(nn.Cell):
            def __init__(self):
                super().__init__()
                self.norm = nn.LayerNorm((4,))
                self.scale = Scale()
                self.fc = nn.Dense(4, 2)
                self.relu = nn.ReLU()

            def construct(self, x):
                h = self.scale(self.norm(x))
                d = ops.sqrt(h - 1)
                return self.fc(self.relu(d)).sum()

        self.ms, self.ops, self.net = ms, ops, Net()


@pytest.fixture(scope="module")
def models():
    return _Models()


def _originals():
    from mindspore import mint, nn
    from mindspore.common.tensor import Tensor
    from mindspore.ops.auto_generate import gen_ops_prim
    from mindspore.ops.primitive import Primitive

    return (nn.Cell.__call__, Primitive.__call__, gen_ops_prim.Sqrt.__call__, Tensor.__dict__.get("__mul__"),
            Tensor.__dict__.get("__radd__"), mint.div)  # fmt: skip


def test_hooks_blame_the_primitive_inside_the_parents_construct(models):
    from msdebug.recorders.nan import watch_pynative

    before = _originals()
    x = models.ms.Tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    with watch_pynative() as watch:
        loss = models.net(x)
    assert _originals() == before
    assert np.isfinite(loss.asnumpy())  # ReLU hid the NaN from the loss
    culprit = watch.report().culprit
    assert (culprit.name, culprit.op_type, culprit.slot, culprit.kind) == (
        "Default/Sqrt-op0",
        "Sqrt",
        "output 0",
        "NaN",
    )
    assert culprit.made_here and culprit.stats.nan == 9 and culprit.stats.first_index == (0, 0)
    assert culprit.source == f"{__file__}:{_line_of(Path(__file__), 'd = ops.sqrt(h - 1)')}"
    assert culprit.code == "d = ops.sqrt(h - 1)"
    assert [(r.name, r.outcome) for r in culprit.reached] == [
        ("Default/relu-ReLU/ReLU-op0", "masked it: its output is finite")
    ]


def test_hooks_all_finite_inf_and_input_only(models):
    from msdebug.recorders.nan import watch_pynative

    ms, ops = models.ms, models.ops
    with watch_pynative() as watch:
        ops.sqrt(ms.Tensor(np.full((2, 3), 4.0, np.float32))) * 2 + 1
    report = watch.report()
    assert report.culprit is None and report.checked_ops == 3 and report.checked_tensors == 4
    with watch_pynative() as watch:
        ms.Tensor(np.ones(3, np.float32)) / ms.Tensor(np.array([1, 0, 2], np.float32))
    culprit = watch.report().culprit
    assert (culprit.op_type, culprit.kind, culprit.stats.first_index) == ("Div", "+Inf", (1,))
    data = np.ones((2, 2), np.float32)
    data[1, 0] = np.nan
    with watch_pynative() as watch:
        out = ops.relu(ms.Tensor(data))
    assert np.isfinite(out.asnumpy()).all()
    culprit = watch.report().culprit
    assert (culprit.name, culprit.slot, culprit.made_here) == ("Default/ReLU-op0", "input 0", False)
    assert "it comes from the data" in culprit.note


def test_every_op_is_checked_when_its_output_is_thrown_away(models):
    """The exploratory line that converts a result and drops it: CPython gives the freed
    output's id to the next op's output, which the hooks once took for the same op again."""
    from msdebug.recorders.nan import watch_pynative

    ms, ops = models.ms, models.ops
    x, y = ms.Tensor(np.ones(4, np.float32)), ms.Tensor(np.full(4, -1.0, np.float32))
    with watch_pynative() as watch:
        ops.exp(x).asnumpy()
        ops.log(y).asnumpy()
    report = watch.report()
    assert report.checked_ops == 2
    assert (report.culprit.op_type, report.culprit.kind, report.culprit.code) == ("Log", "NaN", "ops.log(y).asnumpy()")
    with watch_pynative() as watch:
        for _ in range(3):
            ops.exp(x).asnumpy()
            ops.sin(x).asnumpy()
        ops.log(y).asnumpy()
    report = watch.report()
    assert report.checked_ops == 7
    assert (report.culprit.name, report.culprit.kind) == ("Default/Log-op0", "NaN")
    assert watch.names._last == []  # the last outputs are let go with the hooks


def test_functions_over_inner_primitives_and_astype_are_seen(models):
    """ops.softmax, ops.cat and ops.log_softmax call pyboost_inner_prim instances, which no
    primitive or overload wrapper saw; Tensor.astype is a Cast no primitive call shows."""
    from msdebug.recorders.nan import watch_pynative

    ms, ops = models.ms, models.ops
    scores = ms.Tensor(np.array([[1.0, 2.0], [-np.inf, -np.inf]], np.float16))
    with watch_pynative() as watch:
        probs = ops.softmax(scores, -1)  # float16: the all -inf row gives NaN
        joined = ops.cat((probs, probs))
        joined.astype(ms.float32)
    report = watch.report()
    assert report.checked_ops == 3
    assert (report.culprit.name, report.culprit.made_here) == ("Default/Softmax-op0", True)
    assert [r.op_type for r in report.culprit.reached] == ["Concat", "Cast"]


def test_a_later_output_no_op_reads_is_not_blamed_until_one_does(models):
    """BatchNorm on CPU leaves its saved mean and variance unwritten: stale memory, sometimes
    NaN. The watch is fed as the hooks feed it (an op with two outputs, then one reading the first)."""
    from msdebug.recorders.nan import NanWatch

    ms = models.ms
    x = ms.Tensor(np.ones(4, np.float32))
    y, stale = ms.Tensor(np.ones(4, np.float32)), ms.Tensor(np.array([0, np.nan, 0, 0], np.float32))
    watch = NanWatch()
    watch.op("BatchNorm", (x,), (y, stale))
    watch.op("ReLU", (y,), ms.Tensor(np.ones(4, np.float32)))
    report = watch.report()
    assert report.culprit is None
    assert report.notes == [
        "Default/BatchNorm-op0 (BatchNorm) made NaN in its output 1, which no later op read: an output a kernel "
        "may leave unwritten (BatchNorm's saved mean and variance on CPU), not blamed"
    ]
    watch = NanWatch()
    watch.op("BatchNorm", (x,), (y, stale))
    watch.op("Add", (y, stale), ms.Tensor(np.array([2, np.nan, 2, 2], np.float32)))
    culprit = watch.report().culprit
    assert (culprit.name, culprit.slot, culprit.made_here) == ("Default/BatchNorm-op0", "output 1", True)
    assert [(r.name, r.outcome) for r in culprit.reached] == [("Default/Add-op0", "passed it on")]


def test_a_complex_tensor_with_a_nan_gets_an_answer(models):
    from msdebug.dumps.datadump import tensor_stats
    from msdebug.recorders.nan import watch_pynative

    values = np.array([3 + 4j, complex(np.nan, 0), complex(0, np.inf), complex(-np.inf, 1)], np.complex64)
    with watch_pynative() as watch:
        models.ms.Tensor(values) * 2
    culprit = watch.report().culprit
    assert (culprit.op_type, culprit.slot, culprit.kind) == ("Mul", "input 0", "NaN and +Inf and -Inf")
    assert "finite values: |z| min 5 max 5 mean 5" in repr(watch.report())
    stats = tensor_stats(values)
    assert (stats.nan, stats.posinf, stats.neginf, stats.first_index, stats.first_kind) == (1, 1, 1, (1,), "NaN")


def test_hooks_removed_after_an_exception(models):
    from msdebug.recorders.nan import watch_pynative

    before = _originals()
    with pytest.raises(ZeroDivisionError):
        with watch_pynative():
            models.ops.sqrt(models.ms.Tensor(np.ones(2, np.float32)))
            1 / 0  # noqa: B018
    assert _originals() == before


# --------------------------------------------------------------------------- the command


def _msdebug(*args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "msdebug", *args], capture_output=True, text=True, timeout=120)


def test_cli_dump_nan_exit_status(dumps, tmp_path):
    path, source = dumps["graph"]
    found = _msdebug("dump", str(path), "--nan")
    assert found.returncode == 1, found.stderr
    assert found.stdout.splitlines()[0] == (
        "First non-finite value: NaN at Default/Sqrt-op0 (Sqrt), output 0; rank 0, net Net, graph 0, iteration 1"
    )
    assert f"  {source}:{_line_of(source, 'ops.sqrt(h - 5)')}: `d = ops.sqrt(h - 5)`" in found.stdout.splitlines()
    finite = _writable_copy(path, tmp_path / "finite")
    shutil.rmtree(finite / "rank_0" / "Net" / "0" / "1")
    clean = _msdebug("dump", str(finite), "--nan")
    assert clean.returncode == 0 and clean.stdout.startswith("All finite: checked 8 ops and 34 tensors")
    assert _msdebug("dump", str(tmp_path), "--nan").returncode == 2
    assert _msdebug("dump", str(path), "--nan", "--rank", "x").returncode == 2
    assert _msdebug("dump", str(path), "--memory").returncode == 2
    explore = _msdebug("dump", str(path), "--exec-order", "--limit", "2")
    assert explore.returncode == 0 and "Execution order (rank 0, graph 0, iteration 0): 8 ops of 8" in explore.stdout


# --------------------------------------------------------------------------- the magics


NET_CELL = """\
import numpy as np, mindspore as ms
from mindspore import nn, ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")
        self.relu = nn.ReLU()

    def construct(self, x):
        h = self.fc(x)
        d = ops.sqrt(h - 5)
        return self.relu(d).sum()


net = Net()
x = ms.Tensor(np.ones((2, 4), np.float32))
"""


def test_msnan_pynative_keeps_the_result_and_names_the_cell_line(ip, capsys):
    ip.run_cell(NET_CELL, store_history=True)
    defined = ip.execution_count - 1
    result = ip.run_cell("%%msnan\nloss = net(x)\nprint('printed', loss)\nloss * 2", store_history=True)
    assert result.error_in_exec is None
    assert float(result.result.asnumpy()) == 0.0  # the cell's own value; ReLU hid the NaN
    out = capsys.readouterr().out
    assert "printed 0.0" in out
    assert "First non-finite value: NaN at Default/Sqrt-op0 (Sqrt), output 0" in out
    assert f"cell [{defined}], line 13: `d = ops.sqrt(h - 5)`" in out
    assert "Default/relu-ReLU/ReLU-op0 (ReLU): masked it: its output is finite" in out


def test_msnan_removes_its_hooks_after_an_error(ip, capsys):
    ip.run_cell(NET_CELL)
    before = _originals()
    result = ip.run_cell("%%msnan\nnet(x)\nraise ValueError('boom')")
    assert isinstance(result.error_in_exec, ValueError)
    assert _originals() == before
    out = capsys.readouterr().out
    assert "First non-finite value: NaN at Default/Sqrt-op0" in out
    assert "(%%msnan: the report above covers the ops that ran before the error)" in out


def test_msnan_and_msdump_usage_errors(ip):
    from IPython.core.error import UsageError

    for line, message in (
        ("%%msnan --pynativ\n1", "unknown option --pynativ; use --pynative, --inf. Did you mean '--pynative'?"),
        ("%msdump onn", "unknown word 'onn'; use on or off. Did you mean 'on'?"),
        ("%msdump --dir /tmp/x", "options go with on"),
        ("%msdump on --dir /tmp/a.b", "has '.'"),
        ("%msdump on --dir /tmp/d --iteration first", "iteration 'first'"),
    ):
        magic, _, rest = line.partition(" ")
        with pytest.raises(UsageError, match=re.escape(message)):
            if magic.startswith("%%"):
                args, _, body = rest.partition("\n")
                ip.run_cell_magic(magic[2:], args, body)
            else:
                ip.run_line_magic(magic[1:], rest)


def _remove_dumps_named_in(text: str) -> None:
    """Delete the dumps %%msnan set up (MindSpore writes them read-only)."""
    for found in set(re.findall(r"set up a data dump in (/tmp/msdebug_nan_\w+)", text)):
        for path in Path(found).rglob("*"):
            if path.is_dir():
                path.chmod(0o700)
        shutil.rmtree(found, ignore_errors=True)


def _outputs_text(outputs: list[dict]) -> str:
    parts = []
    for out in outputs:
        parts.append(
            out.get("text") or out.get("data", {}).get("text/plain", "") or "\n".join(out.get("traceback", []))
        )
    return "\n".join(parts)


@pytest.fixture(scope="module")
def graph_kernel():
    from helpers import Kernel

    kernel = Kernel()
    kernel.dump_notes = []
    status, outputs = kernel.run("%load_ext msdebug\n%mscontext mode=graph")
    assert status == "ok", outputs
    yield kernel
    kernel.close()  # MindSpore writes into its dump until the process ends
    for text in kernel.dump_notes:
        _remove_dumps_named_in(text)


def test_msnan_in_graph_mode_sets_up_a_dump_and_finds_the_op(graph_kernel):
    status, _ = graph_kernel.run(NET_CELL)
    assert status == "ok"
    status, outputs = graph_kernel.run("%%msnan\nloss = net(x)\nloss")
    text = _outputs_text(outputs)
    graph_kernel.dump_notes.append(text)  # removed once the kernel has ended
    assert status == "ok", text
    assert (
        "First non-finite value: NaN at Default/Sqrt-op0 (Sqrt), output 0; rank 0, net Net, graph 0, iteration 0"
        in text
    )
    assert "cell [2], line 13: `d = ops.sqrt(h - 5)`" in text
    assert "msdebug set up a data dump in /tmp/msdebug_nan_" in text
    assert any(o["type"] == "execute_result" for o in outputs)  # the cell's own value
    status, outputs = graph_kernel.run("%msdump")
    assert "state: on: MindSpore dumps every graph run" in _outputs_text(outputs)
    status, outputs = graph_kernel.run("%%msnan\nnet(ms.Tensor(np.full((2, 4), 3, np.float32)))")
    text = _outputs_text(outputs)
    assert "All finite: checked 6 ops and 23 tensors" in text and "(data dump)" in text


def test_a_temporary_directory_with_a_dot_still_gets_a_graph_dump(tmp_path, monkeypatch):
    """TMPDIR under /home/john.doe: MindSpore refuses a dump path with a dot, and the dump is
    msdebug's choice, not the user's: it goes where MindSpore takes it, and says where."""
    from helpers import Kernel

    home = tmp_path / "john.doe" / "tmp"
    home.mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(home))
    kernel = Kernel()
    try:
        status, outputs = kernel.run("%load_ext msdebug\n%mscontext mode=graph\n" + NET_CELL)
        assert status == "ok", outputs
        status, outputs = kernel.run("import tempfile\ntempfile.gettempdir()")
        assert str(home) in _outputs_text(outputs)
        status, outputs = kernel.run("%%msnan\nloss = net(x)")
        text = _outputs_text(outputs)
    finally:
        kernel.close()
        _remove_dumps_named_in(_outputs_text(outputs))
    assert status == "ok", text
    assert "First non-finite value: NaN at Default/Sqrt-op0 (Sqrt), output 0" in text
    assert "msdebug set up a data dump in /tmp/msdebug_nan_" in text


def test_too_late_in_a_kernel_says_the_first_cell_and_pynative_helps(tmp_path):
    from helpers import Kernel

    kernel = Kernel()
    try:
        kernel.run("%load_ext msdebug\n%mscontext mode=graph")
        kernel.run(NET_CELL + "net(x)")
        status, outputs = kernel.run(f"%msdump on --dir {tmp_path}/late")
        text = _outputs_text(outputs)
        assert status == "error"
        assert text.count("\n") <= 2, text  # one line
        assert (
            f'Run this first in a fresh kernel: import os; os.environ["MINDSPORE_DUMP_CONFIG"] = '
            f'"{tmp_path}/late/msdebug_dump.json"' in text
        )
        status, outputs = kernel.run("%%msnan\nnet(x)")
        text = _outputs_text(outputs)
        assert status == "error"
        assert "or rerun this cell in PyNative under hooks: %%msnan --pynative" in text
        status, outputs = kernel.run("%%msnan\n@ms.jit\ndef f(a):\n    return a * 2\nf(x)")
        assert "would not help: it calls @jit functions" in _outputs_text(outputs)
        status, outputs = kernel.run("%%msnan --pynative\nnet(x)")
        text = _outputs_text(outputs)
        assert status == "ok", text
        assert "First non-finite value: NaN at Default/Sqrt-op0 (Sqrt), output 0" in text
        assert "(PyNative hooks)" in text
        status, outputs = kernel.run("import msdebug; print(msdebug.get('mode'))")
        assert _outputs_text(outputs).strip() == "0"  # back to GRAPH
        # A real interrupt (SIGINT from the kernel manager) in the middle of hooked ops.
        msg_id = kernel.start_until(
            "%%msnan --pynative\nt = ms.Tensor(np.ones(4, np.float32))\nt = ops.sqrt(t)\n"
            "open('hooked', 'w').close()\nwhile True:\n    t = ops.sqrt(t)",
            "hooked",
        )
        kernel.manager.interrupt_kernel()
        # To its idle status, not only its reply: ipykernel sends the reply to a failed cell
        # before it opens the window in which it aborts the requests already queued, so the
        # next request, sent at the reply, could be aborted.
        status, outputs = kernel.finish(msg_id, 120)
        assert status == "error" and [o["ename"] for o in outputs if o["type"] == "error"] == ["KeyboardInterrupt"]
        # functools.wraps copies names and modules: a wrapper is told by its __wrapped__.
        # Read through the reply, not stdout: this checks the hooks, not the stream.
        shown = kernel.evaluate(
            "from mindspore import nn, mint\nfrom mindspore.ops.primitive import Primitive\n"
            "from mindspore.ops.auto_generate import gen_ops_prim\nfrom mindspore.common.tensor import Tensor\n"
            "wrapped = [hasattr(f, '__wrapped__') for f in (Primitive.__call__, nn.Cell.__call__,"
            " gen_ops_prim.Sqrt.__call__, mint.div, Tensor.__radd__)]",
            "(wrapped, '__mul__' in Tensor.__dict__, msdebug.get('mode'))",
        )
        assert shown == "([False, False, False, False, False], False, 0)"
    finally:
        kernel.close()


def test_msnan_on_a_jit_function_in_pynative_reads_a_dump(tmp_path):
    from helpers import Kernel

    kernel = Kernel()
    text = ""
    try:
        kernel.run("%load_ext msdebug\nimport numpy as np, mindspore as ms\nfrom mindspore import ops")
        status, outputs = kernel.run(
            "%%msnan\n@ms.jit\ndef step(a):\n    b = ops.log(a - 1)\n    return ops.relu(b) * 3\n\n"
            "step(ms.Tensor(np.arange(4, dtype=np.float32)))"
        )
        text = _outputs_text(outputs)
        assert status == "ok", text
        assert "First non-finite value: NaN and -Inf at Default/Log-op0 (Log), output 0" in text
        assert "cell [2], line 4: `b = ops.log(a - 1)`" in text
        assert "msdebug set up a data dump in /tmp/msdebug_nan_" in text
        assert "PyNative hooks: " in text  # both looked; the dump saw the graph's ops
    finally:
        kernel.close()
        _remove_dumps_named_in(text)


def test_msnan_when_both_the_hooks_and_the_dump_find_a_value_says_what_each_found(tmp_path):
    """A PyNative cell that calls an @jit function: the hooks see its PyNative ops, the data dump
    the graph's. When both find a non-finite value, the report blames the earlier one and says
    what the other found, never that it was finite."""
    from helpers import Kernel

    kernel = Kernel()
    texts = []
    try:
        kernel.run(
            "%load_ext msdebug\nimport numpy as np, mindspore as ms\nfrom mindspore import ops\n"
            "x = ms.Tensor(np.arange(4, dtype=np.float32))"
        )
        # The hooks first: a PyNative Sqrt makes the NaN, the graph's Log receives it later.
        status, outputs = kernel.run(
            "%%msnan\n@ms.jit\ndef scaled_log(a):\n    return ops.log(a) * 3\n\nh = ops.sqrt(x - 2)\nscaled_log(h)"
        )
        texts.append(_outputs_text(outputs))
        assert status == "ok", texts[-1]
        assert "First non-finite value: NaN at Default/Sqrt-op0 (Sqrt), output 0" in texts[-1], texts[-1]
        assert "msdebug set up a data dump in /tmp/msdebug_nan_" in texts[-1]
        assert "tensors, finite" not in texts[-1], texts[-1]
        found = r"the data dump of the graphs this cell ran found NaN later, at \S*Log-op\d+ \(Log\), input 0, which received it"
        assert re.search(found, texts[-1]), texts[-1]
        # The dump first: the graph's Log makes -Inf and NaN, the PyNative Sqrts after it receive them.
        # (Two of them: in a kernel the hooks miss the first op after an @jit call, a bug of its own.)
        status, outputs = kernel.run("%%msnan\ny = scaled_log(x - 1)\nz = ops.sqrt(y)\nops.sqrt(z)")
        texts.append(_outputs_text(outputs))
        assert status == "ok", texts[-1]
        assert re.search(r"First non-finite value: NaN and -Inf at \S*Log-op\d+ \(Log\)", texts[-1]), texts[-1]
        found = r"PyNative hooks: \d+ ops checked as well; they found NaN(?: and -Inf)? later, at \S*Sqrt-op\d+ \(Sqrt\), input 0, which received it"
        assert re.search(found, texts[-1]), texts[-1]
    finally:
        kernel.close()
        for text in texts:
            _remove_dumps_named_in(text)


def test_progress_bars_appear_only_for_long_scans():
    import io

    from msdebug.cli import _TextProgress
    from msdebug.ipython.magics.nan import WidgetProgress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    quick = Terminal()
    bar = _TextProgress(quick)
    bar(10, 100)
    bar.close()
    assert quick.getvalue() == ""  # under two seconds: nothing
    slow = Terminal()
    bar = _TextProgress(slow, after=0)
    bar(50 << 20, 100 << 20)
    bar.close()
    assert slow.getvalue() == f"\rscanning [{'#' * 15:<30}]  50% of 100 MB\n"
    widget = WidgetProgress(after=0)
    widget(3 << 20, 4 << 20)
    assert widget.bar is None  # a small dump: never a bar (it would stay in the saved notebook)
    widget(3 << 30, 4 << 30)
    assert type(widget.bar).__name__ == "FloatProgress" and widget.bar.value == 0.75
    widget.close()


def test_gradients_and_updated_parameters_that_forward_hooks_cannot_see(models):
    from mindspore import nn

    from msdebug.recorders.nan import watch_pynative

    ms, ops = models.ms, models.ops

    class Root(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(4, 1, weight_init="zeros", bias_init="zeros")

        def construct(self, x):
            return ops.sqrt(self.fc(x)).sum()  # finite (0), but its gradient at 0 is +Inf

    x = ms.Tensor(np.ones((2, 4), np.float32))
    net = Root()
    step = nn.TrainOneStepCell(net, nn.SGD(net.trainable_params(), 0.1))
    with watch_pynative() as watch:
        step(x)
    culprit = watch.report().culprit
    assert (culprit.name, culprit.op_type, culprit.slot, culprit.kind) == (
        "Default/optimizer-SGD", "SGD", "gradient of fc.weight", "+Inf",
    )  # fmt: skip
    assert culprit.note.startswith("the backward pass made it")
    assert culprit.code == "step(x)"

    class Linear(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(4, 1, weight_init="zeros", bias_init="zeros")

        def construct(self, x):
            return self.fc(x).sum()

    net = Linear()
    step = nn.TrainOneStepCell(net, nn.SGD(net.trainable_params(), 3e38))  # finite gradients, overflowing update
    with watch_pynative() as watch:
        step(x)
    culprit = watch.report().culprit
    assert (culprit.name, culprit.op_type, culprit.slot, culprit.kind) == (
        "fc.weight", "Parameter", "value after the cell", "-Inf",
    )  # fmt: skip
    assert "the optimizer's update made it" in culprit.note


def test_hooks_see_functional_overloads(models):
    from mindspore import mint

    from msdebug.recorders.nan import watch_pynative

    ms = models.ms
    t = ms.Tensor(np.array([-1.0, 1.0], np.float32))
    with watch_pynative() as watch:
        mint.div(t, ms.Tensor(np.zeros(2, np.float32)))  # ops.functional_overload: C++ without a primitive call
    culprit = watch.report().culprit
    assert (culprit.name, culprit.op_type, culprit.kind) == ("Default/Div-op0", "Div", "+Inf and -Inf")
    assert culprit.stats.first_index == (0,) and culprit.stats.first_kind == "-Inf"


def test_kernels_and_iteration_selection_are_taken_by_mindspore(tmp_path):
    code = f"""
    from msdebug.recorders import datadump
    datadump.enable({str(tmp_path / "sel")!r}, kernels="Default/Sqrt-op0,relu", inputs=True, iteration="1")
    import numpy as np, mindspore as ms
    from mindspore import nn, ops
    ms.set_context(mode=ms.GRAPH_MODE)
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.relu = nn.ReLU()
        def construct(self, x):
            return self.relu(ops.sqrt(x - 2)) * 3
    net = Net()
    for step in range(3):
        net(ms.Tensor(np.ones(3, np.float32) * step))
    """
    result = _run_file(tmp_path, "selection", code)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Unused Kernel" not in result.stderr
    from msdebug.dumps.datadump import read_data_dump
    from msdebug.dumps.nan import scan_dump

    (iteration,) = read_data_dump(tmp_path / "sel").ranks[0].iterations
    assert iteration.iteration == 1
    assert [op.op_type for op in iteration.ops if op.tensors] == ["Sqrt", "ReLU"]
    culprit = scan_dump(tmp_path / "sel").culprit
    assert (culprit.name, culprit.where) == ("Default/Sqrt-op0", "rank 0, net Net, graph 0, iteration 1")


def test_pynative_names_number_ops_per_scope_like_mindspore(models):
    from mindspore import nn

    from msdebug.recorders.nan import watch_pynative

    ms = models.ms

    class Two(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Dense(2, 2, weight_init="ones", bias_init="zeros")
            self.fc2 = nn.Dense(2, 2, weight_init="ones", bias_init="zeros")

        def construct(self, x):
            return self.fc2(self.fc1(x))

    with watch_pynative() as watch:
        Two()(ms.Tensor(np.full((1, 2), 1e38, np.float32)))  # fc1 gives 2e38; fc2 overflows float32
    culprit = watch.report().culprit
    assert culprit.name == "Default/fc2-Dense/MatMul-op0"  # fc1 ran its own MatMul-op0 before
    assert (culprit.kind, culprit.made_here) == ("+Inf", True)


# --------------------------------------------------------------------------- the rule: made, not received


def test_msnan_attention_mask_blames_the_softmax_and_lists_the_mask(ip, capsys):
    """A -inf mask is data; the NaN Softmax makes of the fully masked row is what breaks the
    output. ``--inf`` gives the first non-finite value of any kind: the mask, at the Add."""
    ip.run_cell(ATTENTION, store_history=True)
    defined = ip.execution_count - 1
    scores_line = _line_of_text(ATTENTION, "scores = ops.matmul")
    result = ip.run_cell("%%msnan\nout = attention(q, k, v, mask)", store_history=True)
    assert result.error_in_exec is None
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "First non-finite value made: NaN at Default/softmax-Softmax/Softmax-op0 (Softmax), output 0"
    assert lines[1] == "  Softmax made it: its inputs hold no NaN (they hold -Inf) and its output 0 does"
    head = lines.index("  entered as data, not blamed (--inf blames the first non-finite value of any kind):")
    assert lines[head + 1] == (
        "    -Inf ×5 in input 1 (mask) of Default/Add-op0 (Add): "
        f"cell [{defined}], line {scores_line}: `scores = ops.matmul(q, k.T) / math.sqrt(q.shape[-1]) + mask`"
    )
    assert "Default/MatMulExt-op1 (MatMulExt): passed it on" in out
    assert np.isnan(ip.user_ns["out"].asnumpy()[2]).all()  # the fully masked query's output

    ip.run_cell("%%msnan --inf\nout = attention(q, k, v, mask)")
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "First non-finite value of any kind: -Inf at Default/Add-op0 (Add), input 1"
    assert "Add received it: its input 1 is already not finite" in out
    assert "entered as data" not in out


def _line_of_text(text: str, part: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if part in line)


def test_an_infinity_made_from_finite_values_is_the_culprit_after_a_mask_came_in(models):
    from msdebug.recorders.nan import watch_pynative

    ms, ops = models.ms, models.ops
    scores = ms.Tensor(np.zeros((2, 3), np.float32))
    masks = [ms.Tensor(np.full((2, 3), -np.inf, np.float32)) for _ in range(8)]
    logits = ms.Tensor(np.array([1.0, 100.0], np.float32))
    with watch_pynative() as watch:
        for mask in masks:  # eight infinities come in as data: listed (five of them), never blamed
            scores = scores + mask
        ops.exp(logits)  # exp(100) overflows float32: +Inf made from finite values
    report = watch.report()
    culprit = report.culprit
    assert (culprit.name, culprit.op_type, culprit.slot, culprit.kind) == ("Default/Exp-op0", "Exp", "output 0", "+Inf")
    assert culprit.made_here and not culprit.came_in and culprit.stats.first_index == (1,)
    assert report.entered_count == 8
    shown, more = report.others_entered()
    assert [(e.name, e.slot, e.kinds, e.value) for e in shown] == [
        (f"Default/Add-op{i}", "input 1", "-Inf ×6", "mask") for i in range(5)
    ]
    text = repr(report)
    assert text.splitlines()[0] == "First non-finite value made: +Inf at Default/Exp-op0 (Exp), output 0"
    assert "Exp made it: its inputs are finite and its output 0 is not" in text
    assert "    and 3 more" in text
    html = report._repr_html_()
    assert "Entered as data, not blamed" in html and "and 3 more" in html
    with watch_pynative(inf=True) as watch:
        scores + masks[0]
    assert watch.report().culprit.name == "Default/Add-op0"


def test_an_infinity_that_came_in_then_made_nan_names_the_op_that_made_it(models):
    """inf - inf: the Sub made the NaN, from inputs that hold no NaN; the Mul only passed the
    infinity on (an infinity from an infinity is no finding)."""
    from msdebug.recorders.nan import watch_pynative

    ms = models.ms
    x = ms.Tensor(np.array([1.0, np.inf, 3.0], np.float32))
    with watch_pynative() as watch:
        y = x * 2
        y - y  # noqa: B018
    report = watch.report()
    culprit = report.culprit
    assert (culprit.name, culprit.op_type, culprit.slot, culprit.kind) == ("Default/Sub-op0", "Sub", "output 0", "NaN")
    assert culprit.made_here and culprit.stats.first_index == (1,)
    assert culprit.verdict == "Sub made it: its inputs hold no NaN (they hold +Inf) and its output 0 does"
    assert culprit.code == "y - y  # noqa: B018"
    assert [(e.name, e.slot, e.value) for e in report.entered] == [("Default/Mul-op0", "input 0", "x")]
    assert repr(report).splitlines()[0] == "First non-finite value made: NaN at Default/Sub-op0 (Sub), output 0"


def test_when_no_op_makes_a_value_the_answer_is_where_it_came_in(models):
    """Never "All finite" while a non-finite value came in: a NaN in the data is named where it
    came in (after a mask came in, it is still the answer: no mask is a NaN), and with only
    infinities that came in, the first of them, said so. A mask held in a Parameter is no
    "update made it" after the cell either."""
    from mindspore import nn

    from msdebug.recorders.nan import watch_pynative

    ms, ops = models.ms, models.ops
    padding = ms.Tensor(np.array([0.0, -np.inf], np.float32))
    data = np.ones((2, 2), np.float32)
    data[1, 0] = np.nan
    with watch_pynative() as watch:
        ms.Tensor(np.ones(2, np.float32)) + padding  # -Inf comes in
        ops.relu(ms.Tensor(data))  # a NaN comes in; ReLU makes nothing of it
    report = watch.report()
    culprit = report.culprit
    assert (culprit.name, culprit.slot, culprit.kind, culprit.made_here) == (
        "Default/ReLU-op0",
        "input 0",
        "NaN",
        False,
    )
    assert "it comes from the data" in culprit.note
    assert not culprit.came_in
    assert [(e.name, e.value) for e in report.entered] == [("Default/Add-op0", "padding")]
    assert repr(report).splitlines()[0] == "First NaN: NaN at Default/ReLU-op0 (ReLU), input 0"

    class Masked(nn.Cell):
        def __init__(self):
            super().__init__()
            self.mask = ms.Parameter(ms.Tensor(np.array([0.0, -np.inf], np.float32)), name="mask", requires_grad=False)

        def construct(self, x):
            return ops.softmax(ops.relu(x + self.mask))  # ReLU makes 0 of -Inf: the output is finite

    with watch_pynative() as watch:
        out = Masked()(ms.Tensor(np.ones(2, np.float32)))
    assert np.isfinite(out.asnumpy()).all()
    report = watch.report()
    culprit = report.culprit
    assert (culprit.name, culprit.op_type, culprit.slot, culprit.kind) == ("Default/Add-op0", "Add", "input 1", "-Inf")
    assert culprit.came_in and not culprit.made_here
    assert culprit.note.startswith(
        "no op made a NaN, or an infinity from finite values: the first non-finite value came in here"
    )
    assert "parameter mask already holds it" in culprit.note
    assert [(r.name, r.outcome) for r in culprit.reached] == [("Default/ReLU-op0", "masked it: its output is finite")]
    text = repr(report)
    assert text.startswith("First non-finite value: -Inf at Default/Add-op0 (Add), input 1\n")
    assert "All finite" not in text and "entered as data" not in text  # the one that came in is the answer


def test_graph_dump_of_masked_attention_blames_the_softmax_and_lists_the_mask(dumps, tmp_path):
    """The rule in a dump scan (GRAPH), in the command too: the first value an op made, the
    mask listed as data; --inf the first of any kind; inputs not dumped, a Parameter file says
    where an infinity came from; when no op made one, where the first came in."""
    from msdebug.dumps.nan import scan_dump

    path, source = dumps["attention"]
    at = f"{source}:{_line_of(source, 'scores = ops.matmul')}: `scores = ops.matmul(q, k.T) / math.sqrt(q.shape[-1]) + mask`"
    report = scan_dump(path)
    culprit = report.culprit
    assert (culprit.name, culprit.op_type, culprit.slot, culprit.kind) == (
        "Default/softmax-Softmax/Softmax-op0", "Softmax", "output 0", "NaN",
    )  # fmt: skip
    assert culprit.made_here and culprit.stats.nan == 3 and culprit.stats.first_index == (2, 0)
    assert (
        culprit.line
        == f"{source}:{_line_of(source, 'self.softmax(scores)')}: `return ops.matmul(self.softmax(scores), v)`"
    )
    assert [(e.name, e.slot, e.value, e.kinds, e.line) for e in report.entered] == [
        ("Default/Add-op0", "input 1", "mask", "-Inf ×5", at)
    ]
    assert all(r.outcome == "passed it on" or "NaN" not in r.outcome for r in culprit.reached)
    lines = repr(report).splitlines()
    assert lines[0] == (
        "First non-finite value made: NaN at Default/softmax-Softmax/Softmax-op0 (Softmax), output 0; "
        "rank 0, net Net, graph 0, iteration 0"
    )
    assert f"    -Inf ×5 in input 1 (mask) of Default/Add-op0 (Add); rank 0, iteration 0: {at}" in lines
    assert "Entered as data, not blamed" in report._repr_html_()

    old = scan_dump(path, inf=True)
    assert (old.culprit.name, old.culprit.slot, old.culprit.kind, old.rule) == (
        "Default/Add-op0",
        "input 1",
        "-Inf",
        "any",
    )
    assert old.entered == ()

    found = _msdebug("dump", str(path), "--nan")
    assert found.returncode == 1 and found.stdout.splitlines()[0] == lines[0]
    anykind = _msdebug("dump", str(path), "--nan", "--inf")
    assert anykind.returncode == 1, anykind.stderr
    assert anykind.stdout.splitlines()[0] == (
        "First non-finite value of any kind: -Inf at Default/Add-op0 (Add), input 1; rank 0, net Net, graph 0, iteration 0"
    )
    alone = _msdebug("dump", str(path), "--inf")
    assert (alone.returncode, alone.stderr) == (2, "msdebug dump: --inf goes with --nan\n")

    outputs = _writable_copy(path, tmp_path / "outputs")
    for file in outputs.rglob("*.input.*.npy"):
        file.unlink()
    report = scan_dump(outputs)
    assert report.culprit.name == "Default/softmax-Softmax/Softmax-op0"
    assert [(e.name, e.slot, e.value) for e in report.entered] == [
        ("Default/Add-op0", "output 0", "a graph input or parameter (inputs not dumped)")
    ]

    unmade = _writable_copy(path, tmp_path / "unmade")  # every NaN written over: Softmax made none
    for file in unmade.rglob("*.npy"):
        values = np.load(file)
        if values.dtype.kind == "f" and np.isnan(values).any():
            np.save(file, np.nan_to_num(values, nan=0.0, posinf=np.inf, neginf=-np.inf))
    report = scan_dump(unmade)
    culprit = report.culprit
    assert (culprit.name, culprit.slot, culprit.kind, culprit.came_in) == ("Default/Add-op0", "input 1", "-Inf", True)
    assert re.fullmatch(
        r"no op made a NaN, or an infinity from finite values: the first non-finite value came in here; "
        r"input 1 is %para\d+_mask: a graph input or parameter \(its value before the step\)",
        culprit.note,
    ), culprit.note
    text = repr(report)
    assert text.startswith("First non-finite value: -Inf at Default/Add-op0 (Add), input 1; rank 0")
    assert "entered as data" not in text  # the one that came in is the answer
    assert _msdebug("dump", str(unmade), "--nan").returncode == 1


def test_what_came_in_is_escaped_and_bounded_in_both_forms():
    """Op names, values and code in the list come from dumps: escaped in HTML, at most five
    listed and the rest counted; a report from before the rule (no such fields) still renders."""
    from types import SimpleNamespace as NS

    from msdebug.dumps.datadump import TensorStats
    from msdebug.dumps.nan import Culprit, Entered, NanReport, SlotStats
    from msdebug.views import nan

    hostile = "<script>alert(1)</script>"
    inf = TensorStats((2,), "float32", 2, neginf=1, first_index=(1,), first_kind="-Inf", min=0.0, max=0.0, mean=0.0)
    made = TensorStats((2,), "float32", 2, nan=1, first_index=(1,), first_kind="NaN", min=0.0, max=0.0, mean=0.0)
    came = [Entered(f"Default/{hostile}-op{i}", "Add", "input 1", inf, hostile, "x.py:3", hostile) for i in range(6)]
    culprit = Culprit("Default/Sub-op0", "Sub", "output 0", made, True, (SlotStats("input 0", "", inf),),
                      (SlotStats("output 0", "", made),))  # fmt: skip
    report = NanReport("data dump", culprit, 3, 4, entered=tuple(came), entered_count=40)
    html, text = report._repr_html_(), repr(report)
    assert "<script" not in html and html.count("&lt;script&gt;") == 15  # name, value and code of five
    assert "and 35 more" in html and "    and 35 more" in text.splitlines()
    assert (
        f"    -Inf ×1 in input 1 ({hostile}) of Default/{hostile}-op4 (Add): x.py:3: `{hostile}`" in text.splitlines()
    )
    assert "op5" not in text
    assert text.splitlines()[0] == "First non-finite value made: NaN at Default/Sub-op0 (Sub), output 0"
    assert culprit.verdict == "Sub made it: its inputs hold no NaN (they hold -Inf) and its output 0 does"
    plain = NS(**{k: getattr(report, k) for k in ("checked_ops", "checked_tensors", "checked_bytes", "seconds",
                                                  "mode", "culprit", "notes", "skipped")})  # fmt: skip
    assert nan.text_report(plain).splitlines()[0] == "First non-finite value: NaN at Default/Sub-op0 (Sub), output 0"


def test_a_cell_with_hooks_and_a_dump_prefers_a_value_made_to_one_that_came_in():
    """``%%msnan`` on PyNative code that calls graphs: the hooks' and the dump's findings, made
    outranks came in whichever came first; both list what came in."""
    from msdebug.dumps.datadump import TensorStats
    from msdebug.dumps.nan import Culprit, Entered, NanReport
    from msdebug.recorders.nan import _dump_first, _list_entered

    inf = TensorStats((1,), "float32", 1, neginf=1, first_index=(0,), first_kind="-Inf")

    def report(came_in: bool, when: int, place: str) -> NanReport:
        culprit = Culprit(place, "Add", "input 1", inf, False, (), (), when_us=when, came_in=came_in)
        return NanReport("x", culprit, 1, 1, entered=(Entered(place, "Add", "input 1", inf),), entered_count=1)

    assert _dump_first(report(True, 1, "hooks"), report(False, 9, "dump"), 1)  # made, though later
    assert not _dump_first(report(False, 9, "hooks"), report(True, 1, "dump"), 9)
    assert _dump_first(report(False, 9, "hooks"), report(False, 1, "dump"), 9)  # both made: the earlier
    assert not _dump_first(report(True, 1, "hooks"), report(True, 9, "dump"), 1)
    hooked, dumped = report(True, 1, "hooks"), report(False, 9, "dump")
    _list_entered(hooked, dumped)
    assert [e.name for e in dumped.entered] == ["hooks", "dump"] and dumped.entered_count == 2
    assert [e.name for e in dumped.others_entered()[0]] == ["hooks", "dump"]
    assert [e.name for e in hooked.others_entered()[0]] == ["dump"]  # its own culprit is not listed twice
