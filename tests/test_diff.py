"""``%%msdiff`` in real kernels on the real MindSpore CPU build: a code change found at its line,
a float16 overflow at its op, a dropout by ``--repeat``, PyNative against GRAPH, saved runs in a
terminal, and mistakes as one line."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from helpers import Kernel, kernel_env, text_of

NET = """\
import numpy as np, mindspore as ms, msdebug
from mindspore import nn, ops
ms.set_seed(0)

class Net(nn.Cell):
    def __init__(self, scale=1.0):
        super().__init__()
        self.fc1 = nn.Dense(8, 16, weight_init="normal", bias_init="zeros")
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(16, 4, weight_init="normal", bias_init="zeros")
        self.scale = scale

    def construct(self, x):
        h = self.relu(self.fc1(x))
        h = h * self.scale
        return self.fc2(h).sum()

net = Net()
x = ms.Tensor(np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8))
"""


def _text(outputs: list[dict]) -> str:
    parts = [text_of(outputs, "stream"), text_of(outputs, "execute_result")]
    parts += ["\n".join(o.get("traceback", [])) + o.get("evalue", "") for o in outputs if o["type"] == "error"]
    return "\n".join(parts)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """A kernel in PyNative mode with the net above; its runs are saved under its working directory."""
    k = Kernel()
    status, outputs = k.run("%load_ext msdebug\n" + NET)
    assert status == "ok", outputs
    yield k
    k.close()


def test_a_change_made_between_two_runs_is_found_at_its_line(kernel):
    status, outputs = kernel.run("%%msdiff --save before\nnet(x)")
    text = _text(outputs)
    assert status == "ok", text
    assert "Saved 7 ops and" in text and "msdiff_runs/before" in text
    assert "compare a later run with: %%msdiff --against before" in text
    status, outputs = kernel.run("net.scale = 1.01")
    status, outputs = kernel.run("%%msdiff --against before\nnet(x)")
    text = _text(outputs)
    assert status == "ok", text
    # The op the change went into, not an op downstream of it, and the line that runs it.
    assert "First difference at Default/Mul-op0 (Mul), output 0" in text
    assert "h = h * self.scale" in text
    assert "how the difference spread" in text
    kernel.run("net.scale = 1.0")


def test_every_op_is_recorded_when_its_output_is_thrown_away(kernel):
    # Each line drops its result: the next op's output gets the freed one's id (CPython).
    cell = "from mindspore import ops\nfor _ in range(3):\n    ops.exp(x).asnumpy()\n    ops.sin(x).asnumpy()\nops.log(x).asnumpy()"
    status, outputs = kernel.run("%%msdiff --save thrown\n" + cell)
    text = _text(outputs)
    assert status == "ok", text
    assert "Saved 7 ops and" in text, text


def test_the_same_cell_twice_finds_a_dropout(kernel):
    status, outputs = kernel.run("drop = nn.Dropout(p=0.5)\ndrop.set_train()  # a dropout drops only in training")
    assert status == "ok", outputs
    status, outputs = kernel.run("%%msdiff --repeat\nh = net.fc1(x)\ny = drop(h)\ny.sum()")
    text = _text(outputs)
    assert status == "ok", text
    assert "First difference at Default/Dropout" in text, text
    assert "cell [" in text and "y = drop(h)" in text


def test_a_float16_overflow_is_found_at_its_op(kernel):
    status, outputs = kernel.run(
        "class Big(nn.Cell):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = nn.Dense(8, 8, weight_init='ones', bias_init='zeros')\n"
        "    def construct(self, x):\n"
        "        h = self.fc(x)\n"
        "        return (h * 3000.0).mean()\n"
        "big = Big()\n"
        "xs = ms.Tensor(np.full((2, 8), 4.0, np.float32))"
    )
    assert status == "ok", outputs
    status, outputs = kernel.run("%%msdiff --dtype float16\nbig(xs)")
    text = _text(outputs)
    assert status == "ok", text
    assert "First difference at Default/Mul-op" in text and "output 0" in text  # 32 * 3000 = 96000 > 65504
    assert "(h * 3000.0).mean()" in text
    status, outputs = kernel.run("print(big.fc.mixed_precision_type, big.fc.weight.dtype)")
    assert _text(outputs).strip() == "None Float32"  # to_float undone
    # bfloat16 (element-wise: this CPU build has no bfloat16 MatMul or reduction) rounds 13.3 to
    # 13.3125, within bfloat16's tolerance. numpy has no bfloat16: its values are kept as float32,
    # compared with bfloat16's tolerance.
    status, outputs = kernel.run(
        "class Affine(nn.Cell):\n    def construct(self, x):\n        return x * 3.0 + 1.0\n"
        "affine = Affine()\nx41 = ms.Tensor(np.full((2, 8), 4.1, np.float32))"
    )
    assert status == "ok", outputs
    status, outputs = kernel.run("%%msdiff --dtype bfloat16\naffine(x41)")
    text = _text(outputs)
    assert status == "ok" and "bfloat16 (msdebug run) against as it is" in text, text
    assert "They agree: 2 aligned ops" in text, text
    status, outputs = kernel.run("%%msdiff --dtype bfloat16 --rtol 0 --atol 0\naffine(x41)")
    assert "First difference at Default/Mul" in _text(outputs) or "First difference at Default/Add" in _text(outputs)


def test_parameters_are_put_back_so_a_training_step_repeats_exactly(kernel):
    status, outputs = kernel.run(
        "loss_fn = nn.MSELoss()\n"
        "opt = nn.SGD(net.trainable_params(), learning_rate=0.1)\n"
        "def forward(x):\n"
        "    return loss_fn(net(x), ms.Tensor(0.0, ms.float32))\n"
        "grad_fn = ms.value_and_grad(forward, None, opt.parameters)\n"
        "def train_step(x):\n"
        "    loss, grads = grad_fn(x)\n"
        "    opt(grads)\n"
        "    return loss\n"
        "before = net.fc1.weight.asnumpy().copy()"
    )
    assert status == "ok", outputs
    status, outputs = kernel.run("%%msdiff --repeat\ntrain_step(x)")
    text = _text(outputs)
    assert status == "ok", text
    assert "They agree" in text, text
    status, outputs = kernel.run("print(np.abs(net.fc1.weight.asnumpy() - before).max() > 0)")
    assert _text(outputs).strip() == "True"  # one step's update remains, as after running the cell once


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "--repeat --modes",
            "%%msdiff: choose one of --repeat, --modes, --dtype, --against; got --repeat and --modes.",
        ),
        ("", "%%msdiff: say what to compare: --repeat, --modes, --dtype, --against (or --save NAME"),
        ("--dtype float8", "%%msdiff: --dtype is float16 or bfloat16, got 'float8'."),
        ("--against befor", "--against 'befor': no saved run of that name in msdiff_runs/ and no such directory"),
        ("--save ../up", "--save '../up': a run's name is letters, digits"),
        ("--repeat --rtol x", "%%msdiff: --rtol needs a number, got 'x'."),
        ("--repeat --rtol -1", "rtol must be a finite number from 0, got -1.0."),
        ("--repeet", "%%msdiff: unknown option --repeet;"),
    ],
)
def test_mistakes_are_one_line(kernel, line, message):
    status, outputs = kernel.run(f"%%msdiff {line}\nnet(x)")
    text = _text(outputs)
    assert status == "error" and message in text, text
    assert "Traceback" not in text and "msdebug/" not in text


def test_a_saved_name_is_never_written_over(kernel):
    status, outputs = kernel.run("%%msdiff --save twice\nnet(x)")
    assert status == "ok", outputs
    status, outputs = kernel.run("%%msdiff --save twice\nnet(x)")
    text = _text(outputs)
    assert (
        status == "error" and "msdiff_runs/twice exists and msdebug never writes over a run; use --save twice-2" in text
    )


def test_saved_runs_compare_in_a_terminal_with_exit_statuses(kernel, tmp_path):
    status, outputs = kernel.run("%%msdiff --save term_a\nnet(x)")
    assert status == "ok", outputs
    kernel.run("net.scale = 2.0")
    status, outputs = kernel.run("%%msdiff --save term_b\nnet(x)")
    kernel.run("net.scale = 1.0")
    runs = f"{kernel.cwd}/msdiff_runs"

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "msdebug", "diff", *args], capture_output=True, text=True,
                              timeout=120, env=kernel_env())  # fmt: skip

    same = cli(f"{runs}/term_a", f"{runs}/term_a")
    assert same.returncode == 0 and "They agree" in same.stdout, same.stderr
    differ = cli(f"{runs}/term_b", f"{runs}/term_a")
    assert differ.returncode == 1 and "First difference at Default/Mul-op0 (Mul), output 0" in differ.stdout
    missing = cli(f"{runs}/nowhere", f"{runs}/term_a")
    assert missing.returncode == 2 and missing.stderr.startswith("msdebug diff: ") and missing.stderr.count("\n") == 1
    copied = tmp_path / "copied"
    shutil.copytree(f"{runs}/term_b", copied)  # a run moved to another machine still reads
    index = json.loads((copied / "run.json").read_text())
    assert index["format"] == "msdebug-run" and index["mode"] == "PyNative"
    assert cli(str(copied), f"{runs}/term_a").returncode == 1


def test_pynative_against_graph_aligns_every_op_and_agrees():
    k = Kernel()
    try:
        status, outputs = k.run("%load_ext msdebug\n" + NET)
        assert status == "ok", outputs
        status, outputs = k.run("%%msdiff --modes\nnet(x)")
        text = _text(outputs)
        assert status == "ok", text
        assert "GRAPH (data dump) against PyNative (msdebug run)" in text
        assert "They agree: 7 aligned ops" in text, text
        # the dump it switched on stays on for the process: said, as %%msnan says it
        assert re.search(r"msdebug set up a data dump in \S+ for this kernel's graphs \(GRAPH\): MindSpore dumps every "
                         r"op of every graph it runs, for the rest of this process", text), text  # fmt: skip
        assert "Only in" not in text
        status, outputs = k.run("print(msdebug.get('mode'))")
        assert _text(outputs).strip() == "1"  # PyNative again
    finally:
        k.close()


def test_modes_after_a_graph_compile_without_a_dump_gives_the_first_cell():
    k = Kernel()
    try:
        k.run("%load_ext msdebug\n" + NET + "ms.set_context(mode=ms.GRAPH_MODE)\nnet(x)")
        status, outputs = k.run("%%msdiff --modes\nnet(x)")
        text = _text(outputs)
        assert status == "error"
        assert "%%msdiff: too late" in text and "Run this first in a fresh kernel: import os;" in text
        assert "or compare in PyNative mode, where the hooks record every op" in text
        status, outputs = k.run("print(msdebug.get('mode'))")
        assert _text(outputs).strip() == "0"  # the context is back to GRAPH
    finally:
        k.close()


_GRAPH_DUMP = """
import sys
from msdebug.recorders import datadump
datadump.enable(sys.argv[1] if len(sys.argv) > 1 else {path!r}, inputs=True)
import numpy as np
import mindspore as ms
from mindspore import nn
ms.set_context(mode=ms.GRAPH_MODE)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(4, 8, weight_init="ones", bias_init="zeros")
        self.fc2 = nn.Dense(8, 2, weight_init="ones", bias_init="zeros")

    def construct(self, x):
        h = self.fc1(x)
        h = h * {gain}
        return self.fc2(h)


Net()(ms.Tensor(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4))).asnumpy()
"""


def test_two_graph_dumps_compare_in_a_terminal_at_the_changed_kernel_and_its_line(tmp_path):
    paths = {}
    for name, gain in (("before", "2.0"), ("after", "2.5")):
        script = tmp_path / f"{name}.py"  # GRAPH mode compiles from source: a file, not python -c
        script.write_text(_GRAPH_DUMP.format(path=str(tmp_path / name), gain=gain))
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                              env=kernel_env(), cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        paths[name] = str(tmp_path / name)
    done = subprocess.run([sys.executable, "-m", "msdebug", "diff", paths["after"], paths["before"], "--rank", "0"],
                          capture_output=True, text=True, timeout=180, env=kernel_env())  # fmt: skip
    assert done.returncode == 1, done.stderr
    # GRAPH mode makes the scalar a constant input of the kernel: that input is what changed.
    assert re.search(r"First difference at \S*Mul-op0 \(Mul\), input 1", done.stdout), done.stdout
    assert "first difference (a scalar): 2.5 against 2" in done.stdout
    assert "after.py:19: `h = h * 2.5`" in done.stdout
    same = subprocess.run([sys.executable, "-m", "msdebug", "diff", paths["before"], paths["before"]],
                          capture_output=True, text=True, timeout=180, env=kernel_env())  # fmt: skip
    assert same.returncode == 0 and "They agree" in same.stdout
    wrong_rank = subprocess.run([sys.executable, "-m", "msdebug", "diff", paths["before"], paths["before"], "--rank", "3"],
                                capture_output=True, text=True, timeout=180, env=kernel_env())  # fmt: skip
    assert wrong_rank.returncode == 2 and "no rank 3; it has rank 0" in wrong_rank.stderr


_VARIANT = """
import numpy as np, mindspore as ms
from mindspore import nn, ops
from msdebug.backend.hooks import OpHooks
from msdebug.recorders.diff import RunRecorder
from msdebug.dumps.diff import diff_runs

rng = np.random.default_rng(7)
W = [rng.standard_normal((16, 16)).astype(np.float32) / 4 for _ in range(4)]


class Block(nn.Cell):
    def __init__(self, weight, act):
        super().__init__()
        self.fc = nn.Dense(16, 16, weight_init=ms.Tensor(weight), bias_init="zeros")
        self.act = act

    def construct(self, x):
        return self.act(self.fc(x))


class Net(nn.Cell):
    def __init__(self, change):
        super().__init__()
        self.change = change
        acts = [nn.ReLU(), nn.ReLU(), nn.Sigmoid() if change == "activation" else nn.ReLU(), nn.ReLU()]
        weights = [w * 1.01 if change == "weight" and i == 2 else w for i, w in enumerate(W)]
        self.blocks = nn.CellList([Block(w, a) for w, a in zip(weights, acts)])

    def construct(self, x):
        h = self.blocks[0](x)
        h = self.blocks[1](h)
        h = h * (1.01 if self.change == "constant" else 1.0)  # CHANGED: constant
        if self.change == "inserted":
            h = h + 0.1  # CHANGED: inserted
        if self.change != "removed":
            h = ops.tanh(h)  # CHANGED: removed
        h = self.blocks[2](h)
        return self.blocks[3](h).sum()


def record(change, where):
    recorder = RunRecorder(where, change)
    hooks = OpHooks(recorder)
    hooks.install()
    try:
        Net(change)(ms.Tensor(np.linspace(-1, 1, 64, dtype=np.float32).reshape(4, 16)))
    finally:
        hooks.remove()
    return recorder.finish()


base = record("none", "base")
for change in ("constant", "activation", "inserted", "removed", "weight"):
    report = diff_runs(record(change, change), base)
    culprit, why = report.culprit
    print(change, "|", culprit.op_type, "|", why or report.first.first_difference.slot, "|", culprit.code)
"""


def test_one_change_mid_network_is_named_first_with_its_line(tmp_path):
    from helpers import run_python

    script = tmp_path / "variants.py"  # a file, so that each op's line can be read back
    script.write_text(_VARIANT)
    done = run_python(f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')")
    assert done.returncode == 0, done.stderr[-3000:]
    found = {line.split(" | ")[0]: line.split(" | ")[1:] for line in done.stdout.splitlines() if " | " in line}
    assert found["constant"][:2] == ["Mul", "output 0"] and "CHANGED: constant" in found["constant"][2]
    assert found["activation"][:2] == ["Sigmoid", "only this run has it; the reference runs ReLU there"]
    assert found["inserted"][0] in ("Add", "AddExt")  # PyNative runs Tensor + scalar as AddExt
    assert found["inserted"][1] == "only this run has it" and "CHANGED: inserted" in found["inserted"][2]
    assert found["removed"][:2] == ["Tanh", "only the reference has it: this run skips it"]
    assert "CHANGED: removed" in found["removed"][2]
    assert found["weight"][:2] == ["MatMul", "input 1"]
