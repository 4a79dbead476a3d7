"""``%%msnan`` and ``%%msdiff`` on real networks, with faults put where the tests cannot guess them.

LeNet-5 and a ResNet BasicBlock written as MindSpore's model zoo writes them, MindSpore's own
``nn.TransformerEncoderLayer``, a training step (``nn.TrainOneStepCell``) and ``Model.train`` with
a callback (``tests/real_networks.py``), run in the real in-process IPython shell. Each fault's
place is drawn from the network's parameters and layers by a seeded random choice (the seed is
``MSDEBUG_FAULT_SEED``, 35 unless set; each test records what it drew as the ``fault`` property
and in its failure message), and what the answer must be is worked out without msdebug: from
the construct methods (which op reads which parameter), or from MindSpore's own forward hooks
and numpy (where float16 first moves beyond its tolerance).

What the hooks cannot see, found by comparing the ops a ``%%msdiff --save`` run records with
a GRAPH data dump of the same network and with the construct methods (MindSpore 2.10, CPU):

* LeNet-5, the ResNet block: nothing; every kernel the GRAPH dump lists is recorded, in order.
* ``nn.TransformerEncoderLayer``: the reshapes (``Tensor.view``, nine in
  ``multi_head_attention_forward``; ``reshape``, ``tile`` of a padding mask) and
  ``scalar_to_tensor_`` of the head size: shape changes and a constant, no value computed. (The
  softmax, which ``ops.softmax`` runs through ``pyboost_inner_prim``, and LayerNorm's
  ``gamma.astype`` were not seen either, until the hooks wrapped those: a NaN in a LayerNorm
  parameter is now named as that parameter, at the ``Cast``.)
* ``nn.TrainOneStepCell`` and ``Model.train``: the whole backward pass (``GradOperation`` runs it
  in C++) and the optimizer, whose ``construct`` is ``@jit`` (``ApplyMomentum``/``SGD``,
  ``AssignAdd`` of its step); ``%%msnan`` checks the gradients as the optimizer Cell receives
  them and the parameters after the cell instead, and ``%%msdiff`` records those gradients as
  one op of the optimizer's type.
"""

from __future__ import annotations

import inspect
import os
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import real_networks

SEED = int(os.environ.get("MSDEBUG_FAULT_SEED", "35"))
SOURCE = Path(real_networks.__file__).read_text(encoding="utf-8")
FLOAT16 = (1e-2, 1e-3)  # rtol, atol: the README's float16 tolerance
OVERFLOW = 4e5  # a layer scaled to outputs this large overflows float16 (max 65504)

# Which op reads each kind of parameter first, and in which slot: read from MindSpore's construct
# methods (Conv2d: conv2d(x, weight); Dense: matmul(x, weight), bias_add(x, bias); BatchNorm:
# bn(x, gamma, beta, moving_mean, moving_variance); LayerNorm: layer_norm(x, gamma, beta); the
# attention's linear(): matmul(x, w.swapaxes(-1, -2)) + b).
FIRST_READER = {
    ("Conv2d", "weight"): ("Conv2D", "input 1"),
    ("Dense", "weight"): ("MatMul", "input 1"),
    ("Dense", "bias"): ("BiasAdd", "input 1"),
    ("BatchNorm2d", "gamma"): ("BatchNorm", "input 1"),
    ("BatchNorm2d", "beta"): ("BatchNorm", "input 2"),
    ("BatchNorm2d", "moving_mean"): ("BatchNorm", "input 3"),
    ("BatchNorm2d", "moving_variance"): ("BatchNorm", "input 4"),
    ("LayerNorm", "gamma"): ("Cast", "input 0"),  # nn.LayerNorm passes gamma.astype(x.dtype)
    ("LayerNorm", "beta"): ("Cast", "input 0"),
    ("MultiheadAttention", "in_proj_weight"): ("Transpose", "input 0"),
    ("MultiheadAttention", "in_proj_bias"): ("Add", "input 1"),
    ("MultiheadAttention", "out_proj.weight"): ("Transpose", "input 0"),
    ("MultiheadAttention", "out_proj.bias"): ("Add", "input 1"),
}
# The op a layer runs on its input first (float16 moves its output, not a reshape's, beyond tolerance).
LAYER_OP = {"Conv2d": "Conv2D", "Dense": "MatMul", "BatchNorm2d": "BatchNorm", "LayerNorm": "LayerNorm"}


# --------------------------------------------------------------------------- the shell


@pytest.fixture(scope="module")
def defined(shell):
    """``tests/real_networks.py`` run as one cell of the shell; the cell's number (its lines are the
    file's lines). The names it added go when the module ends."""
    before = set(shell.user_ns)
    number = shell.execution_count
    result = shell.run_cell(SOURCE, store_history=True)
    assert result.success, result.error_in_exec
    yield number
    for name in set(shell.user_ns) - before:
        shell.user_ns.pop(name, None)


@pytest.fixture
def sh(ip, defined, request):
    """The shell, with the names each test defines removed after it (``%%msdiff`` runs and
    restores every network of the namespace: leftovers would only cost time)."""
    before = set(ip.user_ns)
    yield Shell(ip, defined, request)
    for name in set(ip.user_ns) - before:
        ip.user_ns.pop(name, None)


class Shell:
    def __init__(self, ip, defined: int, request) -> None:
        self.ip, self.defined, self.request = ip, defined, request
        self.drawn: list[str] = []

    def __getitem__(self, name: str):
        return self.ip.user_ns[name]

    def run(self, code: str):
        result = self.ip.run_cell(code, store_history=True)
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            raise AssertionError(f"the cell failed: {type(error).__name__}: {error}\n{code}") from error
        return result.result

    def msnan(self, code: str):
        """Run ``%%msnan`` on ``code``; the report it displayed."""
        import IPython.display

        from msdebug.dumps.nan import NanReport

        shown = []
        real = IPython.display.display

        def display(*objects, **kwargs):
            shown.extend(o for o in objects if isinstance(o, NanReport))
            return real(*objects, **kwargs)

        IPython.display.display = display
        try:
            self.run("%%msnan\n" + code)
        finally:
            IPython.display.display = real
        assert len(shown) == 1, shown
        return shown[0]

    def msdiff(self, options: str, code: str):
        return self.run(f"%%msdiff {options}\n{code}")

    def rng(self, salt: str = "") -> random.Random:
        return random.Random(f"{SEED}/{self.request.node.name}/{salt}")

    def draw(self, what: str) -> str:
        """Record what a test drew: the ``fault`` property, and in every failure message."""
        self.drawn.append(what)
        self.request.node.user_properties.append(("fault", what))
        return what

    @property
    def fault(self) -> str:
        return f"(MSDEBUG_FAULT_SEED={SEED}; drawn: {'; '.join(self.drawn)})"


# --------------------------------------------------------------------------- expectations


def cell_at(root, dotted: str):
    cell = root
    for part in dotted.split(".") if dotted else ():
        cell = cell._cells[part]
    return cell


def scope_of(root, dotted: str) -> str:
    """MindSpore's scope of a sub-cell: ``Default/down_sample_layer-SequentialCell/0-Conv2d``."""
    labels, cell = ["Default"], root
    for part in dotted.split(".") if dotted else ():
        cell = cell._cells[part]
        labels.append(f"{part}-{type(cell).__name__}")
    return "/".join(labels)


def line_of(fragment: str, within=None) -> int:
    """The line of ``real_networks.py`` (so of the cell) with ``fragment``; in ``within`` only, when given."""
    if within is None:
        lines, start = SOURCE.splitlines(), 1
    else:
        lines, start = inspect.getsourcelines(within)
    found = [start + i for i, text in enumerate(lines) if fragment in text]
    assert len(found) == 1, (fragment, found)
    return found[0]


@dataclass
class Expected:
    scope: str
    op_type: str
    slot: str
    line: int
    made: bool
    parameter: str = ""  # a parameter the answer must name


def first_reader(root, dotted_root: str, name: str) -> tuple[str, str, str]:
    """``(scope, op type, slot)`` of the op that reads parameter ``name`` (of the network at
    ``dotted_root`` below ``root``) first, by ``FIRST_READER``."""
    owner, _, attribute = name.rpartition(".")
    kind = type(cell_at(cell_at(root, dotted_root), owner)).__name__
    if kind == "Dense" and owner.endswith("out_proj"):  # the attention reads it; this Dense is never called
        owner, attribute, kind = owner.rpartition(".")[0], "out_proj." + attribute, "MultiheadAttention"
    return (scope_of(root, _join(dotted_root, owner)), *FIRST_READER[(kind, attribute)])


def parameter_fault(sh: Shell, root, dotted_root: str, caller) -> Expected:
    """A NaN in one element of a parameter drawn from the network at ``dotted_root`` below ``root``
    (the Cell the cell calls); ``caller``: the class whose construct calls the layer."""
    rng = sh.rng("parameter")
    parameters = dict(cell_at(root, dotted_root).parameters_and_names())
    name = rng.choice(list(parameters))
    index = rng.randrange(int(np.prod(parameters[name].shape)) or 1)
    sh.draw(f"NaN at {name}[flat {index}]")
    sh["nan_at"](parameters[name], index)
    scope, op_type, slot = first_reader(root, dotted_root, name)
    top = name.split(".")[0]
    named = parameters[name].name
    return Expected(scope, op_type, slot, line_of(f"self.{top}(", caller), made=False, parameter=named)


def log_fault(sh: Shell, root, dotted_root: str, layers: list[str]) -> Expected:
    """A layer drawn from ``layers`` whose output goes through ``ops.log`` of a negative number."""
    layer = sh.rng("layer").choice(layers)
    sh.draw(f"ops.log of a negative after {layer}")
    sh["log_of_negative"](cell_at(root, _join(dotted_root, layer)))
    return Expected(scope_of(root, _join(dotted_root, layer)), "Log", "output 0",
                    line_of("poisoned = ops.log(first - ops.abs(first) - 1.0)"), made=True)  # fmt: skip


def _join(*parts: str) -> str:
    return ".".join(p for p in parts if p)


def check_culprit(sh: Shell, report, expected: Expected) -> None:
    culprit = report.culprit
    assert culprit is not None, f"no culprit {sh.fault}"
    got = (culprit.name.rsplit("/", 1)[0], culprit.op_type, culprit.slot, culprit.made_here)
    assert got == (expected.scope, expected.op_type, expected.slot, expected.made), f"{got} {sh.fault}"
    assert culprit.name.startswith(f"{expected.scope}/{expected.op_type}-op"), culprit.name
    assert culprit.cell == f"cell [{sh.defined}], line {expected.line}", f"{culprit.cell} {sh.fault}"
    assert culprit.code.strip() == SOURCE.splitlines()[expected.line - 1].strip()
    if expected.parameter:
        assert f"parameter {expected.parameter} already holds it" in culprit.note, f"{culprit.note} {sh.fault}"


def trace(net, *args) -> list[tuple[str, list[np.ndarray]]]:
    """Each Cell call of ``net(*args)`` as it ends (inner Cells first), with its tensor outputs,
    by MindSpore's own forward hooks."""
    import mindspore as ms

    calls: list[tuple[str, list[np.ndarray]]] = []

    def hook(name):
        def record(cell, inputs, output):
            outputs = output if isinstance(output, (tuple, list)) else (output,)
            calls.append((name, [o.asnumpy().astype(np.float64) for o in outputs if isinstance(o, ms.Tensor)]))

        return record

    handles = [cell.register_forward_hook(hook(name)) for name, cell in net.cells_and_names() if name]
    try:
        net(*args)
    finally:
        for handle in handles:
            handle.remove()
    return calls


def within_float16(values: np.ndarray, reference: np.ndarray) -> bool:
    rtol, atol = FLOAT16
    close = np.abs(values - reference) <= atol + rtol * np.abs(reference)
    same = (values == reference) | (np.isnan(values) & np.isnan(reference))
    return bool(np.all(close | same))


def first_layer_beyond_float16(make, net, *args) -> str | None:
    """The first Cell (dotted name) whose output in float16 is beyond float16's tolerance of its
    float32 output, or None: two copies of ``net`` made by ``make``, one through
    ``Cell.to_float(float16)``, compared call by call with numpy. No msdebug involved."""
    import mindspore as ms

    runs = []
    for dtype in (None, ms.float16):
        twin = make()
        for (_, mine), (_, theirs) in zip(twin.parameters_and_names(), net.parameters_and_names(), strict=True):
            mine.set_data(ms.Tensor(theirs.asnumpy().copy()))
        twin.set_train(net.training)
        if dtype is not None:
            twin.to_float(dtype)
        runs.append(trace(twin, *args))
    for (name, reference), (other, values) in zip(*runs, strict=True):
        assert name == other
        if not all(within_float16(v, r) for v, r in zip(values, reference, strict=True)):
            return name
    return None


def overflow(sh: Shell, net, layers: list[str], *args) -> str:
    """A layer drawn from ``layers``, its weight scaled beyond float16 (``overflow_at``)."""
    layer = sh.rng("overflow").choice(layers)
    sh.draw(f"{layer}'s output scaled beyond float16")
    overflow_at(net, layer, *args)
    return layer


def overflow_at(net, layer: str, *args) -> None:
    """Scale a Dense's or Conv2d's weight so that its float32 output reaches ``OVERFLOW``, which
    float16 (largest 65504) cannot hold."""
    cell = cell_at(net, layer)
    bias = cell.bias.asnumpy() if getattr(cell, "bias", None) is not None else 0.0
    largest = np.abs(dict(trace(net, *args))[layer][0] - bias).max()
    cell.weight.set_data(cell.weight * float(OVERFLOW / largest))
    assert np.abs(dict(trace(net, *args))[layer][0]).max() > 2 * 65504, layer


def check_diff_names(sh: Shell, report, scope: str, op_type: str | None = None, slot: str | None = None) -> None:
    assert report.culprit is not None, f"they agree {sh.fault}"
    op, how = report.culprit
    difference = report.first.first_difference
    got = (op.scope, op.op_type, difference.slot)
    assert op.scope == scope, f"{got}, expected {scope} {sh.fault}"
    if op_type is not None:
        assert op.op_type == op_type, f"{got} {sh.fault}"
    if slot is not None:
        assert difference.slot == slot, f"{got} {sh.fault}"
    assert how == "", how


def check_agree(report, ops: int) -> None:
    assert not report.differs, report.first and report.first.a.name
    assert report.nothing_compared == ""
    assert report.compared_ops == ops and report.compared_tensors > 0
    assert not report.alignment.only_a and not report.alignment.only_b


def changed_parameter(sh: Shell, root, dotted_root: str) -> tuple[str, str, str]:
    """A parameter drawn from the network, moved a little (x 1.05 + 0.05, so zeros move too);
    ``(scope, op type, slot)`` of the op that reads it first."""
    from mindspore import ops

    parameters = dict(cell_at(root, dotted_root).parameters_and_names())
    name = sh.rng("change").choice(list(parameters))
    sh.draw(f"{name} changed")
    ops.assign(parameters[name], parameters[name] * 1.05 + 0.05)
    return first_reader(root, dotted_root, name)


def values_of(*cells) -> list[tuple]:
    return [(p, p.asnumpy().copy()) for cell in cells for _, p in cell.parameters_and_names()]


def put_back(saved) -> None:
    """In place, as ``%%msdiff`` does: an optimizer that ran keeps the Parameters' storage."""
    import mindspore as ms
    from mindspore import ops

    for parameter, values in saved:
        ops.assign(parameter, ms.Tensor(values))


# --------------------------------------------------------------------------- LeNet-5

LENET = "ms.set_seed(0)\nlenet = LeNet5()\nimage = images((2, 1, 32, 32))"
LENET_LAYERS = ["conv1", "relu", "max_pool2d", "conv2", "flatten", "fc1", "fc2", "fc3"]
LENET_WEIGHTED = ["conv1", "conv2", "fc1", "fc2", "fc3"]


@pytest.mark.parametrize("kind", ["parameter", "log"])
def test_lenet_msnan_names_the_fault(sh, kind):
    sh.run(LENET)
    lenet = sh["lenet"]
    if kind == "parameter":
        expected = parameter_fault(sh, lenet, "", real_networks.LeNet5)
    else:
        expected = log_fault(sh, lenet, "", LENET_LAYERS)
    check_culprit(sh, sh.msnan("lenet(image)"), expected)


def test_lenet_msdiff_repeat_agrees(sh):
    sh.run(LENET)
    check_agree(sh.msdiff("--repeat", "lenet(image)"), 15)


def test_lenet_msdiff_float16_names_the_first_layer_beyond_its_tolerance(sh):
    sh.run(LENET)
    lenet, image = sh["lenet"], sh["image"]
    layer = overflow(sh, lenet, LENET_WEIGHTED, image)
    expected = first_layer_beyond_float16(real_networks.LeNet5, lenet, image)
    assert expected is not None and LENET_LAYERS.index(expected) <= LENET_LAYERS.index(layer), sh.fault
    report = sh.msdiff("--dtype float16", "lenet(image)")
    check_diff_names(
        sh, report, scope_of(lenet, expected), LAYER_OP[type(cell_at(lenet, expected)).__name__], "output 0"
    )


def test_lenet_msdiff_against_a_saved_run_names_the_changed_layer(sh):
    sh.run(LENET)
    sh.msdiff("--save lenet_before", "lenet(image)")
    expected = changed_parameter(sh, sh["lenet"], "")
    check_diff_names(sh, sh.msdiff("--against lenet_before", "lenet(image)"), *expected)


# --------------------------------------------------------------------------- the ResNet block

BLOCK = "ms.set_seed(0)\nblock = BasicBlock(8, 8, stride=2)\nfeatures = images((2, 8, 8, 8), seed=1)"
BLOCK_LAYERS = ["conv1", "bn1", "relu", "conv2", "bn2", "down_sample_layer.0", "down_sample_layer.1"]


# BatchNorm's CPU kernel leaves outputs 1-2 unwritten in training and 1-4 in inference (nn.BatchNorm2d
# keeps output 0 only): they hold whatever the memory pool's block held before, a NaN an earlier
# cell left there or values that differ between two runs. No op reads them, so %%msnan blames them
# only when an op does, and %%msdiff shows them without letting them decide.


@pytest.mark.parametrize("kind", ["parameter", "log"])
def test_resnet_block_msnan_names_the_fault(sh, kind):
    sh.run(BLOCK)
    block = sh["block"]
    if kind == "parameter":
        expected = parameter_fault(sh, block, "", real_networks.BasicBlock)
    else:
        expected = log_fault(sh, block, "", BLOCK_LAYERS)
    check_culprit(sh, sh.msnan("block(features)"), expected)


def test_resnet_block_msdiff_repeat_agrees(sh):
    sh.run(BLOCK)
    check_agree(sh.msdiff("--repeat", "block(features)"), 9)


def test_resnet_block_msdiff_float16_names_the_first_layer_beyond_its_tolerance(sh):
    sh.run(BLOCK)
    block, features = sh["block"], sh["features"]
    sh.draw("no fault: float16's own rounding")
    expected = first_layer_beyond_float16(lambda: real_networks.BasicBlock(8, 8, stride=2), block, features)
    assert expected == "conv2", expected  # 0.8% of conv2's outputs are off by more than atol + rtol * |x|
    report = sh.msdiff("--dtype float16", "block(features)")
    check_diff_names(sh, report, scope_of(block, expected), "Conv2D", "output 0")


def test_resnet_block_msdiff_against_a_saved_run_names_the_changed_layer(sh):
    sh.run(BLOCK)
    block = sh["block"]
    saved = values_of(block)  # training mode: BatchNorm moves its statistics at every call
    sh.msdiff("--save block_before", "block(features)")
    put_back(saved)
    expected = changed_parameter(sh, block, "")
    check_diff_names(sh, sh.msdiff("--against block_before", "block(features)"), *expected)


# --------------------------------------------------------------------------- the Transformer encoder layer

ENCODER = "ms.set_seed(0)\nencoder = Encoder()\ntokens = images((2, 5, 16), seed=2)"
ENCODER_LAYERS = ["layer.self_attn", "layer.dropout1", "layer.norm1", "layer.dense1", "layer.dropout",
                  "layer.dense2", "layer.dropout2", "layer.norm2", "head"]  # fmt: skip


@pytest.mark.parametrize("kind", ["parameter", "log"])
def test_transformer_msnan_names_the_fault(sh, kind):
    sh.run(ENCODER)
    encoder = sh["encoder"]
    if kind == "parameter":
        expected = parameter_fault(sh, encoder, "", real_networks.Encoder)
    else:
        expected = log_fault(sh, encoder, "", ENCODER_LAYERS)
    check_culprit(sh, sh.msnan("encoder(tokens)"), expected)


def test_transformer_msdiff_repeat_finds_the_attention_dropout(sh):
    sh.run("ms.set_seed(0)\nencoder = Encoder(dropout=0.1)\nencoder.set_train()\ntokens = images((2, 5, 16), seed=2)")
    encoder = sh["encoder"]
    report = sh.msdiff("--repeat", "encoder(tokens)")
    # The first dropout that runs is the attention's own: multi_head_attention_forward's
    # _inner_dropout (a P.Dropout) on the softmax's output, before dropout1; a GRAPH dump runs
    # a Dropout kernel there too. Its input agrees: the dropout made the difference.
    check_diff_names(sh, report, scope_of(encoder, "layer.self_attn"), "Dropout", "output 0")
    assert all(t.agrees for t in report.first.tensors if t.slot.startswith("input"))
    assert report.culprit[0].cell == f"cell [{sh.defined}], line {line_of('h = self.layer(x, src_key_padding_mask')}"
    sh.run("encoder.set_train(False)")
    check_agree(sh.msdiff("--repeat", "encoder(tokens)"), 43)


def test_transformer_msdiff_float16_names_the_first_layer_beyond_its_tolerance(sh):
    sh.run(ENCODER)
    encoder, tokens = sh["encoder"], sh["tokens"]
    layer = sh.rng("overflow").choice(["layer.self_attn", "layer.dense1", "layer.dense2", "head"])
    sh.draw(f"{layer}'s output scaled beyond float16")
    if layer == "layer.self_attn":  # its in-projection: linear(x, in_proj_weight, in_proj_bias)
        weight = encoder.layer.self_attn.in_proj_weight
        largest = np.abs(tokens.asnumpy() @ weight.asnumpy().T).max()
        weight.set_data(weight * float(OVERFLOW / largest))
    else:
        overflow_at(encoder, layer, tokens)
    expected = first_layer_beyond_float16(real_networks.Encoder, encoder, tokens)
    assert expected == layer, (expected, sh.fault)
    report = sh.msdiff("--dtype float16", "encoder(tokens)")
    # The product with the scaled weight overflows: the in-projection's ops.matmul, or the Dense's MatMul.
    matmul = "MatMulExt" if layer == "layer.self_attn" else "MatMul"
    check_diff_names(sh, report, scope_of(encoder, expected), matmul, "output 0")


def test_transformer_msdiff_against_a_saved_run_names_the_changed_layer(sh):
    sh.run(ENCODER)
    sh.msdiff("--save encoder_before", "encoder(tokens)")
    expected = changed_parameter(sh, sh["encoder"], "")
    check_diff_names(sh, sh.msdiff("--against encoder_before", "encoder(tokens)"), *expected)


def test_transformer_msnan_with_a_fully_masked_row_blames_no_op_for_the_mask(sh):
    """A ``-inf`` key-padding mask on the padded positions; the second sequence is padding only.

    On MindSpore 2.10's CPU the softmax of a row that is ``-inf`` throughout is a row of zeros,
    not NaN (checked below with the network's own output): no op makes a NaN or an infinity
    from finite values, and the ``-inf`` comes in as data. So nothing is to blame; the answer
    says where the infinity came in (the attention's ``attn + attn_mask``, whose input 1 is the
    mask after the reshapes the hooks do not see)."""
    sh.run(ENCODER + "\npadding = ms.Tensor(np.array([[0, 0, 0, -np.inf, -np.inf], [-np.inf] * 5], np.float32))")
    encoder = sh["encoder"]
    sh.draw("a -inf padding mask, one sequence masked throughout")
    assert np.isfinite(encoder(sh["tokens"], sh["padding"]).asnumpy()).all()
    report = sh.msnan("scores = encoder(tokens, padding)")
    assert np.isfinite(sh["scores"].asnumpy()).all()
    culprit = report.culprit
    assert culprit is not None and getattr(culprit, "came_in", False), culprit
    assert (culprit.name.rsplit("/", 1)[0], culprit.op_type, culprit.slot, culprit.kind) == (
        scope_of(encoder, "layer.self_attn"), "Add", "input 1", "-Inf",
    )  # fmt: skip


# --------------------------------------------------------------------------- the training step

STEP = ("ms.set_seed(0)\nmlp = MLP()\nstep = train_step_of(mlp, {optimizer!r})\n"
        "xs, ys = images((2, 8), seed=3), labels(2, seed=3)")  # fmt: skip
MLP_LAYERS = ["fc1", "relu", "fc2", "fc3"]
MLP_DENSE = ["fc1", "fc2", "fc3"]


@pytest.mark.parametrize("kind", ["parameter", "log"])
def test_train_step_msnan_names_a_forward_fault(sh, kind):
    sh.run(STEP.format(optimizer="momentum"))
    step = sh["step"]
    if kind == "parameter":
        expected = parameter_fault(sh, step, "network._backbone", real_networks.MLP)
    else:
        expected = log_fault(sh, step, "network._backbone", MLP_LAYERS)
    check_culprit(sh, sh.msnan("step(xs, ys)"), expected)


@pytest.mark.parametrize("optimizer", ["momentum", "sgd"])
def test_train_step_msnan_names_a_gradient_only_the_backward_pass_made(sh, optimizer):
    sh.run(STEP.format(optimizer=optimizer))
    step, mlp = sh["step"], sh["mlp"]
    layer = sh.rng("gradient").choice(MLP_DENSE)
    sh.draw(f"a NaN gradient of {layer}.weight")
    sh["nan_gradient"](cell_at(mlp, layer))
    culprit = sh.msnan("loss = step(xs, ys)").culprit
    assert np.isfinite(sh["loss"].asnumpy()).all()  # every forward value is finite
    kind = type(step.optimizer).__name__
    assert (culprit.name, culprit.op_type, culprit.slot, culprit.kind) == (
        f"Default/optimizer-{kind}", kind, f"gradient of {layer}.weight", "NaN",
    ), sh.fault  # fmt: skip
    assert culprit.note.startswith("the backward pass made it") and "the hooks see forward ops only" in culprit.note
    assert culprit.code == "loss = step(xs, ys)"


def test_train_step_msnan_names_a_parameter_only_the_update_made_infinite(sh):
    layer = sh.rng("rate").choice(MLP_DENSE)
    sh.draw(f"an infinite learning rate for {layer}")
    sh.run(STEP.format(optimizer="momentum").replace("'momentum')", f"'momentum', own_rate=mlp.{layer})"))
    sh["infinite_rate"](sh["step"])
    culprit = sh.msnan("loss = step(xs, ys)").culprit
    assert np.isfinite(sh["loss"].asnumpy()).all()
    assert (culprit.name, culprit.op_type, culprit.slot) == (f"{layer}.weight", "Parameter", "value after the cell"), (
        culprit.name, sh.fault,
    )  # fmt: skip
    assert "the hooks see forward ops only" in culprit.note


def test_train_step_msdiff_repeat_agrees(sh):
    sh.run(STEP.format(optimizer="momentum"))
    # Parameters and the optimizer's moments are put back before the second step.
    check_agree(sh.msdiff("--repeat", "step(xs, ys)"), 10)  # the forward ops, and the gradients Momentum got


def test_train_step_msdiff_float16_names_the_first_layer_beyond_its_tolerance(sh):
    sh.run(STEP.format(optimizer="momentum"))
    mlp, xs = sh["mlp"], sh["xs"]
    layer = overflow(sh, mlp, MLP_DENSE, xs)
    expected = first_layer_beyond_float16(real_networks.MLP, mlp, xs)
    assert expected is not None and MLP_LAYERS.index(expected) <= MLP_LAYERS.index(layer), sh.fault
    report = sh.msdiff("--dtype float16", "step(xs, ys)")
    check_diff_names(sh, report, scope_of(sh["step"], "network._backbone." + expected), "MatMul", "output 0")


def test_train_step_msdiff_against_a_saved_run_names_the_changed_layer(sh):
    sh.run(STEP.format(optimizer="momentum"))
    step = sh["step"]
    saved = values_of(step)  # the step moves the parameters and the moments
    sh.msdiff("--save step_before", "step(xs, ys)")
    put_back(saved)
    expected = changed_parameter(sh, step, "network._backbone")
    check_diff_names(sh, sh.msdiff("--against step_before", "step(xs, ys)"), *expected)


# --------------------------------------------------------------------------- Model.train with a callback

MODEL = "ms.set_seed(0)\nclassifier = MLP()\nmodel = model_of(classifier)\nlog = LossLog()"
TRAIN = "model.train(1, samples(), callbacks=[log], dataset_sink_mode=False)"


@pytest.mark.parametrize("kind", ["parameter", "log", "gradient"])
def test_model_train_msnan_names_the_fault(sh, kind):
    sh.run(MODEL)
    step = sh["model"]._train_network
    if kind == "parameter":
        expected = parameter_fault(sh, step, "network._backbone", real_networks.MLP)
    elif kind == "log":
        expected = log_fault(sh, step, "network._backbone", MLP_LAYERS)
    else:
        layer = sh.rng("gradient").choice(MLP_DENSE)
        sh.draw(f"a NaN gradient of {layer}.weight")
        sh["nan_gradient"](cell_at(sh["classifier"], layer))
    report = sh.msnan(TRAIN)
    assert len(sh["log"].losses) == 3  # the callback saw every step: the cell ran to its end
    if kind == "gradient":
        culprit = report.culprit
        assert (culprit.name, culprit.op_type, culprit.slot) == (
            "Default/optimizer-Momentum", "Momentum", f"gradient of {layer}.weight",
        ), sh.fault  # fmt: skip
        assert culprit.code == TRAIN
    else:
        check_culprit(sh, report, expected)


def test_model_train_msdiff_repeat_agrees(sh):
    sh.run(MODEL)
    check_agree(sh.msdiff("--repeat", TRAIN), 30)
    assert len(sh["log"].losses) == 6


def test_model_train_msdiff_float16_names_the_first_layer_beyond_its_tolerance(sh):
    sh.run(MODEL + "\nfirst_batch = ms.Tensor(next(samples().create_tuple_iterator())[0])")
    classifier, batch = sh["classifier"], sh["first_batch"]
    layer = overflow(sh, classifier, MLP_DENSE, batch)
    expected = first_layer_beyond_float16(real_networks.MLP, classifier, batch)
    assert expected is not None and MLP_LAYERS.index(expected) <= MLP_LAYERS.index(layer), sh.fault
    report = sh.msdiff("--dtype float16", TRAIN)
    check_diff_names(sh, report, scope_of(sh["model"]._train_network, "network._backbone." + expected), "MatMul",
                     "output 0")  # fmt: skip


def test_model_train_msdiff_against_a_saved_run_names_the_changed_layer(sh):
    sh.run(MODEL)
    step = sh["model"]._train_network
    saved = values_of(step)
    sh.msdiff("--save model_before", TRAIN)
    put_back(saved)
    expected = changed_parameter(sh, step, "network._backbone")
    report = sh.msdiff("--against model_before", TRAIN)
    check_diff_names(sh, report, *expected)
    assert report.culprit[0].name.endswith("-op0")  # in the first step


# --------------------------------------------------------------------------- what the hooks see

LENET_OPS = [("conv1", "Conv2D"), ("relu", "ReLU"), ("max_pool2d", "MaxPool"), ("conv2", "Conv2D"), ("relu", "ReLU"),
             ("max_pool2d", "MaxPool"), ("flatten", "Flatten"), ("fc1", "MatMul"), ("fc1", "BiasAdd"),
             ("relu", "ReLU"), ("fc2", "MatMul"), ("fc2", "BiasAdd"), ("relu", "ReLU"), ("fc3", "MatMul"),
             ("fc3", "BiasAdd")]  # fmt: skip
BLOCK_OPS = [("conv1", "Conv2D"), ("bn1", "BatchNorm"), ("relu", "ReLU"), ("conv2", "Conv2D"), ("bn2", "BatchNorm"),
             ("down_sample_layer.0", "Conv2D"), ("down_sample_layer.1", "BatchNorm"), ("", "Add"),
             ("relu", "ReLU")]  # fmt: skip
MLP_OPS = [("fc1", "MatMul"), ("fc1", "BiasAdd"), ("relu", "ReLU"), ("fc2", "MatMul"), ("fc2", "BiasAdd"),
           ("relu", "ReLU"), ("fc3", "MatMul"), ("fc3", "BiasAdd")]  # fmt: skip


def recorded(sh: Shell, name: str, code: str) -> list[tuple[str, str]]:
    """The ops a saved run recorded that made a tensor, as (scope, type)."""
    run = sh.msdiff(f"--save {name}", code).run
    return [(op.scope, op.op_type) for op in run.ops if op.outputs]


def test_the_hooks_record_every_kernel_of_lenet_and_the_resnet_block(sh):
    """The kernels a GRAPH data dump of each network lists (MindSpore 2.10, CPU), in order."""
    sh.run(LENET + "\n" + BLOCK)
    lenet, block = sh["lenet"], sh["block"]
    assert recorded(sh, "lenet_ops", "lenet(image)") == [(scope_of(lenet, s), t) for s, t in LENET_OPS]
    assert recorded(sh, "block_ops", "block(features)") == [(scope_of(block, s), t) for s, t in BLOCK_OPS]


def test_the_hooks_record_the_training_steps_forward_ops_only(sh):
    """The backward pass runs in C++ and the optimizer's construct is @jit: neither is recorded.
    A GRAPH dump of the same step also runs SparseSoftmaxCrossEntropyWithLogits' gradient,
    MatMul x6, BiasAddGrad x3, ReluGrad x2, AssignAdd and ApplyMomentum x6."""
    sh.run(STEP.format(optimizer="momentum"))
    step = sh["step"]
    loss = (scope_of(step, "network._loss_fn"), "SparseSoftmaxCrossEntropyWithLogits")
    forward = [(scope_of(step, "network._backbone." + s if s else "network._backbone"), t) for s, t in MLP_OPS]
    assert recorded(sh, "step_ops", "step(xs, ys)") == [*forward, loss]


def test_the_hooks_record_the_attention_softmax(sh):
    sh.run(ENCODER)
    attention = scope_of(sh["encoder"], "layer.self_attn")
    ops = recorded(sh, "encoder_ops", "encoder(tokens)")
    kinds = [t for s, t in ops if s == attention]
    # multi_head_attention_forward: q @ k^T, softmax, (dropout), @ v
    assert kinds[kinds.index("MatMulExt", kinds.index("MatMulExt") + 1) + 1] == "Softmax", kinds
