"""%%msdiff between two runs: what is put back, what the report says when a value no op made
differs (the cell's inputs, a gradient), and what a report keeps. Real MindSpore, PyNative, in
the real IPython shell."""

from __future__ import annotations

import gc
import re
from pathlib import Path

import ipywidgets
import numpy as np
import pytest
from IPython.core.error import UsageError

DEFINE = """
import numpy as np
import mindspore as ms
from mindspore import nn, ops, Tensor, Parameter

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc = nn.Dense(4, 4, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        return self.fc(x)

net = Net()
opt = nn.SGD(net.trainable_params(), learning_rate=0.1)
step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), opt)
x = Tensor(np.ones((2, 4), np.float32))
y = Tensor(np.zeros((2, 4), np.float32))
"""


@pytest.fixture
def shell(ip):
    """The shell with only the cell above's names: a test's own networks do not leak into the next."""
    for name in [
        n for n in ip.user_ns if not n.startswith("_") and n not in ("In", "Out", "exit", "quit", "get_ipython")
    ]:
        ip.user_ns.pop(name)
    assert ip.run_cell(DEFINE, store_history=True).error_in_exec is None
    return ip


def _diff(ip, cell: str):
    result = ip.run_cell(cell, store_history=True)
    assert result.error_in_exec is None and result.error_before_exec is None, result
    return result.result


def test_the_report_says_what_was_put_back_and_a_training_step_repeats(shell):
    parameters = {id(p): p for _, p in shell.user_ns["step"].parameters_and_names()}.values()
    size = sum(p.nbytes for p in parameters) / 1e6
    report = _diff(shell, "%%msdiff --repeat\nstep(x, y)")
    assert report.restored == f"restored {len(parameters)} Parameters ({size:.3g} MB) of step"  # net's and SGD's
    assert len(parameters) > 2
    assert not report.restored_nothing and report.first is None and report.compared_tensors > 0
    assert f"{report.restored}, before the second run" in repr(report)
    # MSELoss runs typeof and sequence_len on Python values: no tensor, so no op of the run
    types = [op.op_type for op in report.a.ops]
    assert types[-1] == "SGD" and "Primitive" not in types and all(op.tensors for op in report.a.ops), types


def test_nothing_put_back_is_a_warning_and_restore_names_what_to_put_back(shell):
    shell.run_cell(
        "class Holder:\n"
        "    def __init__(self):\n"
        "        self.w = Parameter(Tensor(np.ones(4, np.float32)), name='w')\n"
        "holder = Holder()\n"
        "def bump():\n"
        "    ops.assign_add(holder.w, Tensor(np.ones(4, np.float32)))\n"
        "    return holder.w * 2\n"
        "del step, opt, net",
        store_history=True,
    )
    report = _diff(shell, "%%msdiff --repeat\nbump()")
    assert report.restored_nothing
    text = repr(report)
    assert text.index("Nothing was put back") < text.index("First difference")  # before the verdict
    assert "restored no Parameter: no Cell or Model is bound to a top-level name of the notebook" in text
    assert "--restore NAME[,NAME]" in text
    assert "the cell's inputs differ between the runs: parameter w" in text
    report = _diff(shell, "%%msdiff --repeat --restore holder.w\nbump()")
    assert report.restored == "restored 1 Parameter (1.6e-05 MB) of holder.w"
    assert report.first is None and report.compared_tensors > 0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--repeat --restore nett", "--restore: no 'nett' in the notebook; its networks: step. Did you mean 'net'?"),
        ("--repeat --restore net.fcc", "--restore: net.fcc: Net has no attribute 'fcc'."),
        (
            "--repeat --restore x",
            "--restore: x is a Tensor, which holds no Parameter; give Cells, Models or Parameters.",
        ),
        ("--repeat --restore 'net;opt'", "--restore 'net;opt': 'net;opt' is not a name"),
        ("--save s --restore net", "--restore net: Parameters are put back between two runs of the cell; use it with"),
    ],
)
def test_restore_mistakes_are_one_line(shell, line, message):
    with pytest.raises(UsageError, match=re.escape(message)):
        shell.run_cell_magic("msdiff", line, "step(x, y)")
    assert not Path("msdiff_runs/s").exists()  # nothing ran


def test_parameters_are_put_back_outside_gradient_recording(shell):
    """A bfloat16 Parameter's restore is an in-place copy; with PyNative's gradient recording on
    (MindSpore's default, and how a training step leaves it), MindSpore refused it in this
    sequence ("A leaf tensor that requires grad is being used in an inplace operator"), as it
    did in the full suite after other modules' training steps. The restore runs under
    MindSpore's own no-grad context, and the recording is as it was afterwards."""
    import mindspore as ms
    from mindspore.common.api import _pynative_executor

    from msdebug.backend.diff import ParameterSnapshot

    w = ms.Parameter(ms.Tensor(np.array([1.5, -2.25, 3.0], np.float32)).astype(ms.bfloat16), name="wg")
    v = ms.Parameter(ms.Tensor(np.array([1.0, 2.0], np.float32)), name="vg")
    snapshot = ParameterSnapshot([("wg", w), ("vg", v)])
    w.copy_(ms.Tensor(np.zeros(3, np.float32)))
    ms.ops.assign(v, ms.Tensor(np.zeros(2, np.float32)))
    recording = _pynative_executor.enable_grad()
    snapshot.restore()
    assert _pynative_executor.enable_grad() == recording
    assert w.astype(ms.float32).asnumpy().tolist() == [1.5, -2.25, 3.0]
    assert v.asnumpy().tolist() == [1.0, 2.0]


def test_a_bfloat16_parameter_is_put_back_on_cpu(shell):
    """CPU has no bfloat16 Assign kernel: the restore goes through an in-place copy."""
    import mindspore as ms

    from msdebug.backend.diff import ParameterSnapshot

    w = ms.Parameter(ms.Tensor(np.array([1.5, -2.25, 3.0], np.float32)).astype(ms.bfloat16), name="wb")
    snapshot = ParameterSnapshot([("wb", w)])
    w.copy_(ms.Tensor(np.zeros(3, np.float32)))
    snapshot.restore()
    assert w.dtype == ms.bfloat16
    assert w.astype(ms.float32).asnumpy().tolist() == [1.5, -2.25, 3.0]
    assert snapshot.summary == "restored 1 Parameter (6e-06 MB) of wb"


def test_inputs_made_outside_the_ops_are_named_when_they_differ(shell):
    shell.run_cell(
        "counter = [0]\ndef batch():\n    counter[0] += 1\n    return Tensor(np.full((2, 4), counter[0], np.float32))",
        store_history=True,
    )
    report = _diff(shell, "%%msdiff --repeat\nxb = batch()\nnet(xb) * 2")
    assert report.first.a.name == "Default/fc-Net/fc-Dense/MatMul-op0" or report.first.a.op_type == "MatMul"
    assert report.differing_inputs == ["xb"]
    assert "the cell's inputs differ between the runs: xb; no op of the cell made it" in repr(report)


def test_a_difference_the_backward_pass_made_is_named_at_the_optimizer(shell):
    """A custom backward that runs as a graph (@jit) and draws from numpy: the hooks see no op of
    it, so the difference first shows in the gradients the optimizer is given."""
    shell.run_cell(
        "@ms.jit\n"
        "def scaled(dout, noise):\n"
        "    return dout * noise\n"
        "class Noisy(nn.Cell):\n"
        "    def construct(self, x):\n"
        "        return x * 1\n"
        "    def bprop(self, x, out, dout):\n"
        "        return (scaled(dout, Tensor(np.random.rand(2, 4).astype(np.float32))),)\n"
        "class Wrap(nn.Cell):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Dense(4, 4, weight_init='ones', bias_init='zeros')\n"
        "        self.noisy = Noisy()\n"
        "        self.head = nn.Dense(4, 1, weight_init='ones', bias_init='zeros')\n"
        "    def construct(self, x):\n"
        "        return self.head(self.noisy(self.fc(x)))\n"
        "wrap = Wrap()\n"
        "train = nn.TrainOneStepCell(nn.WithLossCell(wrap, nn.MSELoss()), nn.SGD(wrap.trainable_params(), 0.1))\n"
        "target = Tensor(np.zeros((2, 1), np.float32))",
        store_history=True,
    )
    report = _diff(shell, "%%msdiff --repeat\ntrain(x, target)")
    assert report.first.a.op_type == "SGD", repr(report)
    assert report.differing_inputs[0] == "gradient of fc.weight"
    text = repr(report)
    assert "gradient of fc.weight" in text and "the backward pass made it, which the hooks do not see" in text
    assert "run the cell in GRAPH mode with %%msdiff --repeat" in text


def _report_on_disk(shell) -> Path:
    """Run a comparison, check its tensors are files, and let go of it: its scratch folder."""
    report = _diff(shell, "%%msdiff --repeat\nnet(x) * 2")
    refs = [ref for run in (report.a, report.b) for op in run.ops for ref in op.tensors]
    in_memory = [ref.slot for ref in refs if ref.values is not None]
    missing = [ref.slot for ref in refs if not ref.path.is_file()]  # the walker reads them back from disk
    assert refs and not in_memory and not missing
    return report.a.root.parent


def test_a_report_keeps_no_tensor_in_memory_and_its_scratch_goes_with_it(shell):
    scratch = _report_on_disk(shell)
    assert scratch.name.startswith("msdebug-diff-") and scratch.is_dir()
    shell.run_line_magic("reset", "-f out")  # Out[] and _N held the report
    for name in ("_", "__", "___"):  # and IPython's hidden copy of them
        shell.user_ns[name] = shell.user_ns_hidden[name] = None
    shell.last_execution_result = None
    ipywidgets.Widget.close_all()  # the walker holds its report while it is shown
    gc.collect()
    assert not scratch.exists()


def test_a_run_only_saved_leaves_no_scratch_folder(shell, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    _diff(shell, "%%msdiff --save kept\nnet(x)")
    assert (Path("msdiff_runs/kept") / "run.json").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("msdebug-diff-")]
