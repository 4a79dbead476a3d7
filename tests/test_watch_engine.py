"""``msdebug.watch`` on real MindSpore CPU trainings, PyNative and GRAPH: the three trainings
of the tutorial (a frozen layer, a learning rate that makes gradients explode, a dead ReLU
layer), each found at the step an independent computation says; a healthy training that trips
nothing; the statistics against numpy's on the same tensors; steps marked by ``msdebug.step``,
by the optimizer, by ``Model.train``'s callback and by a GRAPH TrainOneStepCell; a Ctrl-C inside
a watched step leaves nothing behind.
"""

import inspect
import signal

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn
from real_networks import BasicBlock, LossLog, images, labels, train_step_of

import msdebug
from msdebug.backend import watch as backend
from msdebug.dumps.watch import STATS, Needs
from msdebug.errors import InvalidValueError, MagicUsageError
from msdebug.recorders import watch as recorder

pytestmark = pytest.mark.usefixtures("restored_context")

STEPS = 6
CELL_CALL = vars(nn.Cell)["__call__"]  # MindSpore's own, before any watch


class Classifier(nn.Cell):
    """Three Dense layers, each with its own ReLU (so a dead layer has an activation of its own)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(8, 16)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Dense(16, 16)
        self.relu2 = nn.ReLU()
        self.fc3 = nn.Dense(16, 4)

    def construct(self, x):
        return self.fc3(self.relu2(self.fc2(self.relu1(self.fc1(x)))))


def regression():
    """A small regression: with learning rate 0.6 its gradients grow by orders of magnitude."""
    ms.set_seed(0)
    net = nn.SequentialCell([nn.Dense(8, 16), nn.Tanh(), nn.Dense(16, 1)])
    x = images((16, 8))
    y = ms.Tensor(np.random.default_rng(1).normal(size=(16, 1)).astype(np.float32) * 3)
    return net, x, y


def values(net):
    return {p.name: p.asnumpy().copy() for p in net.get_parameters()}


def load(net, saved):
    for p in net.get_parameters():
        p.set_data(ms.Tensor(saved[p.name]))


def numpy_stats(a):
    a = np.asarray(a, dtype=np.float64)
    return np.array([a.max(), a.min(), a.mean(), np.abs(a).mean(), np.sqrt((a * a).sum()),
                     (a == 0).mean(), (~np.isfinite(a)).sum()])  # fmt: skip


_handler_before: list = [None]


@pytest.fixture(autouse=True)
def _sigint_handler_before():
    """The SIGINT handler each test starts with: another module of this process may hold one of
    its own (``%msprint on`` holds msdebug's for as long as it lasts); the watch must leave it
    as it found it."""
    _handler_before[0] = signal.getsignal(signal.SIGINT)
    yield


def nothing_left():
    """No patch, hook, callback or SIGINT handler of the watch is left."""
    assert "__call__" not in vars(nn.Optimizer) and "__call__" not in vars(nn.TrainOneStepCell)
    assert vars(nn.Cell)["__call__"] is CELL_CALL
    assert backend._current is None and recorder._active == []
    assert signal.getsignal(signal.SIGINT) is _handler_before[0]  # as the test found it


def jit_train_step(net, loss_fn, optimizer):
    """MindSpore's own idiom: ``value_and_grad`` and the optimizer's call inside one ``@ms.jit``
    function, where no Python hook sees the optimizer."""

    def forward(x, y):
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)

    @ms.jit
    def train_step(x, y):
        loss, grads = grad_fn(x, y)
        optimizer(grads)
        return loss

    return train_step


def classifier_step(net, lr=0.05):
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.Momentum(net.trainable_params(), lr, 0.9))


# --------------------------------------------------------------------------- healthy, and the numbers


def test_a_healthy_training_trips_nothing_and_its_statistics_are_numpys():
    ms.set_seed(0)
    net = Classifier()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.05)
    grad_fn = ms.value_and_grad(nn.WithLossCell(net, loss_fn), None, optimizer.parameters)
    x, y = images((16, 8)), labels(16)
    seen = []
    with msdebug.watch() as w:
        for _ in range(STEPS):
            loss, grads = grad_fn(x, y)
            optimizer(grads)
            seen.append((values(net), [g.asnumpy().copy() for g in grads], float(loss.asnumpy())))
            msdebug.step(loss)
    nothing_left()
    assert w.history.trips == [] and not w.history.stopped and w.number == STEPS
    assert list(w.history.steps) == list(range(STEPS))
    names = [p.name for p in optimizer.parameters]
    for step, (weights, grads, loss) in enumerate(seen):
        for name in names:
            np.testing.assert_allclose(
                w.history.stats(name, "weight")[step], numpy_stats(weights[name]), rtol=2e-6, atol=1e-7
            )
        for name, grad in zip(names, grads, strict=True):
            np.testing.assert_allclose(w.history.stats(name, "grad")[step], numpy_stats(grad), rtol=2e-5, atol=1e-7)
        assert w.history.stats("loss")[step][2] == pytest.approx(loss)
    relu1 = w.history.stats("relu1")
    assert relu1.shape == (STEPS, len(STATS)) and 0 < relu1[0][5] < 1  # some ReLU outputs are zero, not all
    rows = msdebug.last_watch()
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else rows
    assert {"step", "name", "kind", *STATS} <= set(rows[0]) and len({r["name"] for r in rows}) >= 11


# --------------------------------------------------------------------------- the three trainings


def test_a_layer_frozen_with_a_learning_rate_of_zero_is_found_at_step_0_and_the_loop_stops():
    ms.set_seed(0)
    net = Classifier()
    frozen = list(net.fc2.trainable_params())
    rest = [p for p in net.trainable_params() if all(p is not q for q in frozen)]
    optimizer = nn.Momentum([{"params": rest}, {"params": frozen, "lr": 0.0}], learning_rate=0.05, momentum=0.9)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")), optimizer)  # fmt: skip
    x, y = images((16, 8)), labels(16)
    ran = 0
    with msdebug.watch() as w:
        for _ in range(STEPS):
            step(x, y)
            ran += 1
    nothing_left()
    assert ran == 0 and w.number == 1 and w.history.stopped  # stopped at the end of step 0, inside its call
    trip = w.history.first_trip
    assert (trip.condition, trip.kind, trip.step) == ("weights:*:not_changed(rtol=1e-05,atol=1e-08)", "weight", 0)
    assert {t.name for t in w.history.trips if t.condition.startswith("weights:*:not_changed")} == {
        "fc2.weight",
        "fc2.bias",
    }
    assert "unchanged" in trip.message and "step 0" in trip.message


def test_a_layer_frozen_with_requires_grad_false_before_the_optimizer_is_found_too():
    ms.set_seed(0)
    net = Classifier()
    net.fc1.weight.requires_grad = False  # by mistake: the optimizer below never sees it
    step = classifier_step(net)
    x, y = images((16, 8)), labels(16)
    with msdebug.watch("weights:fc1.*:not_changed") as w:
        for _ in range(STEPS):
            step(x, y)
    assert [(t.name, t.step) for t in w.history.trips] == [("fc1.weight", 0)]


@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_a_learning_rate_too_high_is_found_where_the_gradient_norm_first_passes_the_threshold(mode):
    threshold = 100.0
    net, x, y = regression()
    start = values(net)
    # the reference, without msdebug: the first step where a gradient's L2 norm passes the threshold
    optimizer = nn.SGD(net.trainable_params(), learning_rate=0.6)
    grad_fn = ms.value_and_grad(nn.WithLossCell(net, nn.MSELoss()), None, optimizer.parameters)
    expected, after = None, None
    for number in range(12):
        _, grads = grad_fn(x, y)
        optimizer(grads)
        if max(np.linalg.norm(g.asnumpy()) for g in grads) > threshold:
            expected, after = number, values(net)
            break
    assert expected is not None and expected >= 3

    load(net, start)
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    train = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), learning_rate=0.6))
    with msdebug.watch(f"grads:*:exploding(l2_gt={threshold})") as w:
        for _ in range(12):
            train(x, y)
    nothing_left()
    assert w.history.first_trip.step == expected and w.number == expected + 1
    assert w.history.first_trip.condition == "grads:*:exploding(l2_gt=100)"
    assert w.history.first_trip.values["l2"] > threshold
    for name, value in values(net).items():  # as after the tripping step, not one more
        np.testing.assert_allclose(value, after[name], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_a_dead_relu_layer_is_found_at_step_0(mode):
    ms.set_seed(0)
    net = Classifier()
    net.fc2.bias.set_data(ms.Tensor(np.full(16, -100.0, np.float32)))
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    step = classifier_step(net)
    x, y = images((16, 8)), labels(16)
    with msdebug.watch(stop=False) as w:
        for _ in range(3):
            step(x, y)
    found = {(t.condition.split("(")[0], t.name) for t in w.history.trips if t.step == 0}
    # in GRAPH mode through hooks compiled into the watched graph (the sub-cells are attributes)
    assert ("acts:*:all_zero", "relu2") in found
    assert w.history.stats("relu2")[:, 5].tolist() == [1.0, 1.0, 1.0]
    assert not w.history.notes
    assert ("grads:*:vanishing", "fc3.weight") in found and ("weights:*:not_changed", "fc3.weight") in found
    assert w.number == 3 and not w.history.stopped


@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_a_jit_training_step_is_watched_from_step_0_and_what_it_hides_is_said(mode):
    """MindSpore's own idiom: ``value_and_grad`` and the optimizer inside one ``@ms.jit`` function.
    The optimizer's call is compiled, so the watch learns of it only at the step's end: the weights
    are copied at the start anyway, and the dead layer's "not changed" is found at step 0, not 1.
    The gradients and activations it cannot see are named in the notes, with the conditions that
    were therefore not checked."""
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    ms.set_seed(0)
    net = Classifier()
    net.fc2.bias.set_data(
        ms.Tensor(np.full(16, -100.0, np.float32))
    )  # relu2 dead: fc1, fc2, fc3.weight get no gradient
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.SGD(net.trainable_params(), 0.05)
    train_step = jit_train_step(net, loss_fn, optimizer)
    x, y = images((16, 8)), labels(16)
    with msdebug.watch(stop=False) as w:
        for _ in range(3):
            msdebug.step(train_step(x, y))
    nothing_left()
    unchanged = {t.name: t.step for t in w.history.trips if t.condition.startswith("weights:*:not_changed")}
    assert unchanged == dict.fromkeys(["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight"], 0)
    notes = " ".join(w.history.notes)
    assert "gradients are not watched: the optimizer ran inside a compiled function" in notes
    assert (
        "Not checked: grads:*:vanishing(abs_mean_lt=1e-09), grads:*:exploding(l2_gt=1000), grads:*:overflow." in notes
    )
    assert (
        "GRAPH mode: activations are watched only in the step of a training Cell"
        if mode == "graph"
        else "the network ran inside a compiled function (@jit)"
    ) in notes
    assert {i.kind for i in w.history.watched} == {"weight", "loss"}


class ResNetTiny(nn.Cell):
    """Two of ResNet's basic blocks (convolutions, BatchNorm, a down-sampling shortcut) and a head."""

    def __init__(self):
        super().__init__()
        self.b1 = BasicBlock(3, 8, 2)
        self.b2 = BasicBlock(8, 8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Dense(8, 4)

    def construct(self, x):
        return self.fc(self.flatten(self.pool(self.b2(self.b1(x)))))


@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_a_healthy_resnet_trips_no_default_condition_and_one_out_of_training_mode_is_named(mode):
    """The recommended conditions on real network code. A healthy ResNet used to be stopped at
    step 1: its BatchNorm ``beta`` and ``moving_mean`` start at zeros, so each early update is
    "large" against them. Left out of training mode (no ``set_train()``), its moving statistics
    never move: that is found at step 0, with the likely reason."""
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    x, y = images((4, 3, 16, 16)), labels(4, 4)
    ms.set_seed(0)
    net = ResNetTiny()
    net.set_train()
    step = train_step_of(net)
    with msdebug.watch() as w:
        for _ in range(5):
            step(x, y)
    assert w.history.trips == [] and w.number == 5
    assert {"b1.bn1.moving_mean", "b1.bn1.beta"} <= {i.name for i in w.history.watched if i.kind == "weight"}

    ms.set_seed(0)
    net = ResNetTiny()  # not in training mode: BatchNorm uses, and keeps, its moving statistics
    step = train_step_of(net)
    with msdebug.watch() as w:
        for _ in range(5):
            step(x, y)
    trip = w.history.first_trip
    assert (trip.condition.split("(")[0], trip.name, trip.step) == ("weights:*:not_changed", "b1.bn1.moving_mean", 0)
    assert trip.message.endswith("or a statistic the forward pass updates only in training mode (net.set_train())")


# --------------------------------------------------------------------------- where steps end


def test_without_msdebug_step_the_optimizer_call_ends_each_step_and_every_skips_steps():
    ms.set_seed(0)
    net = Classifier()
    optimizer = nn.Adam(net.trainable_params(), learning_rate=0.01)
    grad_fn = ms.grad(nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")), None, optimizer.parameters)  # fmt: skip
    x, y = images((16, 8)), labels(16)
    with msdebug.watch(every=3) as w:
        for _ in range(7):
            optimizer(grad_fn(x, y))
    assert w.number == 7 and list(w.history.steps) == [0, 3, 6] and w.history.trips == []


def test_model_train_with_the_callback_stops_at_the_tripping_step():
    ms.set_seed(0)
    net = Classifier()
    net.fc2.bias.set_data(ms.Tensor(np.full(16, -100.0, np.float32)))
    model = ms.train.Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                           nn.Momentum(net.trainable_params(), 0.05, 0.9))  # fmt: skip
    rng = np.random.default_rng(0)
    data = ms.dataset.GeneratorDataset(
        [(rng.normal(size=8).astype(np.float32), np.int32(i % 4)) for i in range(40)], ["x", "y"], shuffle=False
    ).batch(8)
    log = LossLog()
    with msdebug.watch("acts:relu2:all_zero") as w:
        model.train(1, data, callbacks=[w.callback(), log])
    nothing_left()
    assert w.history.first_trip.step == 0 and w.history.stopped
    assert len(log.losses) == 1  # Model stopped after step 0
    assert w.history.stats("loss")[0][2] == pytest.approx(log.losses[0])
    with pytest.raises(InvalidValueError, match="this watch is not running; pass w.callback"):
        model.train(1, data, callbacks=[w.callback()])  # its with block has ended


# --------------------------------------------------------------------------- Ctrl-C, bad input


class Interrupting(Classifier):
    """Sends itself SIGINT in the forward of its third step."""

    calls = 0

    def construct(self, x):
        Interrupting.calls += 1
        if Interrupting.calls == 3:
            signal.raise_signal(signal.SIGINT)
        return super().construct(x)


def test_ctrl_c_inside_a_watched_step_leaves_no_hook_patch_or_handler():
    ms.set_seed(0)
    net = Interrupting()
    step = classifier_step(net)
    x, y = images((16, 8)), labels(16)
    with pytest.raises(KeyboardInterrupt), msdebug.watch() as w:
        for _ in range(STEPS):
            step(x, y)
    nothing_left()
    assert w.number == 2
    assert all(not cell._forward_hook for _, cell in net.cells_and_names())
    step(x, y)  # trains on, unwatched


def test_a_pattern_that_matches_nothing_is_one_line_and_training_does_not_start():
    ms.set_seed(0)
    net = Classifier()
    step = classifier_step(net)
    before = values(net)
    with pytest.raises(MagicUsageError, match=r"'fc9\*' matches no weights .*fc1\.weight"):  # noqa: SIM117
        with msdebug.watch("weights:fc9*:not_changed"):
            step(images((16, 8)), labels(16))
    nothing_left()
    assert all((values(net)[k] == v).all() for k, v in before.items())
    with pytest.raises(MagicUsageError, match="'relu9' matches no acts .*relu1, fc2.*Did you mean 'relu2'"):  # noqa: SIM117
        with msdebug.watch("acts:relu9:all_zero"):
            step(images((16, 8)), labels(16))  # activations are known after the first forward
    nothing_left()
    with pytest.raises(InvalidValueError, match="every must be a whole number"):
        msdebug.watch(every=0)


# --------------------------------------------------------------------------- the two ways to compute


def test_the_host_statistics_equal_the_device_kernels_on_every_kind_of_value(monkeypatch):
    """Where the device is the host (this CPU build) numpy reads the tensors in place; elsewhere
    one compiled MindSpore function computes the rows. Both must give the same matrix: every
    statistic, the share in a range, and the change since a copy, with NaN, Inf, zeros and
    float16 among the values."""
    from msdebug.dumps.watch import Evaluator, parse_conditions

    needs = Evaluator(parse_conditions(["weights:not_changed(rtol=0.01)", "acts:range(range_start_inclusive=-1,"
                                        "range_end_inclusive=0.5,range_percentage_lt=50)"])).needs  # fmt: skip
    assert needs.update and needs.ranges
    rng = np.random.default_rng(3)
    before = [rng.standard_normal((8, 5)).astype(np.float32), np.zeros(7, np.float32)]
    after = [
        before[0] + 0.001 * rng.standard_normal((8, 5)).astype(np.float32),
        np.linspace(-2, 2, 7).astype(np.float32),
    ]
    weights = [ms.Parameter(ms.Tensor(a), name=f"w{i}") for i, a in enumerate(after)]
    odd = np.array([0.0, 1.0, -3.0, np.nan, np.inf, 0.0], np.float32)
    others = [ms.Tensor(odd), ms.Tensor(rng.standard_normal(9).astype(np.float16)), ms.Tensor(np.zeros(4, np.float32))]
    monkeypatch.delenv("MSDEBUG_WATCH_DEVICE_KERNELS", raising=False)
    assert backend.on_host()
    host = backend.statistics(weights, backend.copies([ms.Tensor(b) for b in before]), others, needs)
    monkeypatch.setenv("MSDEBUG_WATCH_DEVICE_KERNELS", "1")
    assert not backend.on_host()
    device = backend.statistics(weights, backend.copies([ms.Tensor(b) for b in before]), others, needs)
    monkeypatch.delenv("MSDEBUG_WATCH_DEVICE_KERNELS")
    monkeypatch.setattr(backend, "_THREADED", 1)  # every buffer read in 3 pieces on the thread pool
    monkeypatch.setattr(backend, "_pieces", lambda: 3)
    threaded = backend.statistics(weights, backend.copies([ms.Tensor(b) for b in before]), others, needs)
    np.testing.assert_array_equal(threaded[:, [0, 1, 5, 6]], host[:, [0, 1, 5, 6]])  # extremes and counts exact
    np.testing.assert_allclose(threaded, host, rtol=1e-6, equal_nan=True)  # sums added up in another order
    assert host.shape == device.shape == (5, len(STATS) + len(needs.extras))
    np.testing.assert_allclose(host, device, rtol=1e-5, atol=1e-6, equal_nan=True)
    assert host[2][STATS.index("nonfinite")] == 2 and host[2][STATS.index("zero_share")] == pytest.approx(2 / 6)
    assert np.isnan(host[2][len(STATS) + len(needs.ranges) :]).all()  # not a weight: no change


@pytest.mark.parametrize("laid", [1 << 16, 100], ids=["laid", "some-in-place"])
def test_a_graph_step_gives_numpys_statistics_and_follows_a_set_data_between_steps(monkeypatch, laid):
    """GRAPH on the host: the gradients come out of the compiled step laid end to end, the weights
    are read where they are (numpy views kept from step to step) and laid before and after the
    step. Every statistic, and the change the ratio condition shows, against numpy; after a
    ``set_data`` between steps (a checkpoint loaded) the new storage is read, not the old one.
    ``some-in-place``: the two larger weights and their gradients are read where they are, the
    others laid, so each row must still land on its own tensor."""
    monkeypatch.setattr(backend, "_LAID", laid)
    ms.set_seed(0)
    net = Classifier()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = classifier_step(net)
    grad_fn = ms.grad(nn.WithLossCell(net, loss_fn), None, step.weights)
    x, y = images((16, 8)), labels(16)
    seen = []
    with msdebug.watch("weights:*:change_too_large(abs_mean_update_ratio_gt=0)", stop=False) as w:
        for number in range(3):
            if number == 2:
                net.fc1.weight.set_data(ms.Tensor(np.full((16, 8), 0.25, np.float32)))
            before = values(net)
            # the reference gradients in PyNative: a GRAPH ms.grad function keeps reading the
            # storage fc1.weight had before its set_data (MindSpore 2.10), the training step does not
            ms.set_context(mode=ms.PYNATIVE_MODE)
            grads = [g.asnumpy().copy() for g in grad_fn(x, y)]
            ms.set_context(mode=ms.GRAPH_MODE)
            step(x, y)
            seen.append((before, values(net), grads))
    nothing_left()
    assert list(w.history.steps) == [0, 1, 2]
    names = [p.name for p in step.weights]
    for number, (_, after, grads) in enumerate(seen):
        for name, grad in zip(names, grads, strict=True):
            np.testing.assert_allclose(w.history.stats(name, "weight")[number], numpy_stats(after[name]), rtol=2e-6,
                                       atol=1e-7)  # fmt: skip
            np.testing.assert_allclose(w.history.stats(name, "grad")[number], numpy_stats(grad), rtol=1e-4, atol=1e-7)
    assert w.history.stats("fc1.weight", "weight")[2][0] < 0.26  # the new storage, not the old one
    trips = {t.name: t for t in w.history.trips}
    assert set(trips) == set(names) and {t.step for t in trips.values()} == {0}  # each weight, at once
    for name, trip in trips.items():
        before, after, _ = seen[trip.step]
        expected = (np.abs(after[name] - before[name]).mean() - 1e-9) / np.abs(before[name]).mean()
        assert trip.values["abs_mean_update_ratio"] == pytest.approx(expected, rel=1e-5), name


def test_a_second_watch_of_a_graph_step_keeps_its_compiled_graph_until_the_step_has_other_parts():
    """Each watch of a GRAPH step would otherwise compile its watched graph again (a second here,
    minutes for a large network): the step keeps it, and the next watch takes it while the step is
    made of the same network, optimizer and weights. With another optimizer (learning rate 0, so
    that nothing changes) the graph is made anew: a kept one would still train with the old."""
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = Classifier()
    step = classifier_step(net)
    x, y = images((16, 8)), labels(16)
    made = []
    for _ in range(2):
        with msdebug.watch(stop=False, net=step) as w:
            step(x, y)
        made.append(vars(step)[backend._KEPT])
    nothing_left()
    assert made[0] is made[1]
    after = values(net)
    for name in after:  # the kept graph's statistics are still those of the tensors
        np.testing.assert_allclose(w.history.stats(name, "weight")[0], numpy_stats(after[name]), rtol=2e-6, atol=1e-7)
    step.optimizer = nn.SGD(net.trainable_params(), learning_rate=0.0)
    with msdebug.watch("weights:*:not_changed", stop=False) as w:
        step(x, y)
    assert vars(step)[backend._KEPT] is not made[1]
    assert {t.name for t in w.history.trips} == set(after)  # the new optimizer's step: nothing changed
    assert all((values(net)[name] == value).all() for name, value in after.items())


class ClippedStep(nn.TrainOneStepCell):
    """A training step of one's own, as real code writes them: the gradients clipped to a global
    norm of 0.05 before the update, and the optimizer asked for its learning rate."""

    def construct(self, *inputs):
        loss = self.network(*inputs)
        grads = self.grad_no_sens(self.network, self.weights)(*inputs)
        grads = ms.ops.clip_by_global_norm(grads, 0.05)
        return ms.ops.depend(loss, self.optimizer(grads)), self.optimizer.get_lr()


class SkippingStep(nn.TrainOneStepCell):
    """A step that updates only when told (as a loss scale skips an overflow)."""

    def construct(self, x, y, update):
        loss = self.network(x, y)
        grads = self.grad_no_sens(self.network, self.weights)(x, y)
        if update > 0:
            loss = ms.ops.depend(loss, self.optimizer(grads))
        return loss


@pytest.mark.parametrize("where", ["host", "host-in-place", "device-kernels"])
def test_a_graph_step_of_its_own_construct_gives_the_gradients_its_optimizer_is_given(monkeypatch, where):
    """A subclass of TrainOneStepCell with a ``construct`` of its own runs as its twin, whose
    optimizer keeps what it is given: the clipped gradients, not the network's. The statistics
    against numpy's, the training the same as an unwatched twin's, the step's own optimizer left in
    place, and the twin kept for the next watch. ``host-in-place``: the larger gradients kept one
    by one; ``device-kernels``: the statistics computed inside the graph, as on a GPU or Ascend."""
    if where == "host-in-place":
        monkeypatch.setattr(backend, "_LAID", 100)
    if where == "device-kernels":
        monkeypatch.setenv("MSDEBUG_WATCH_DEVICE_KERNELS", "1")
    ms.set_context(mode=ms.GRAPH_MODE)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    steps = []
    for _ in range(2):
        ms.set_seed(0)
        net = Classifier()
        steps.append((net, ClippedStep(nn.WithLossCell(net, loss_fn), nn.Momentum(net.trainable_params(), 0.1, 0.9))))
    (net, step), (twin_net, twin_step) = steps
    grad_fn = ms.grad(nn.WithLossCell(net, loss_fn), None, step.weights)
    x, y = images((16, 8)), labels(16)
    seen = []
    for _ in range(2):
        with msdebug.watch(stop=False, net=step) as w:
            for _ in range(2):
                ms.set_context(mode=ms.PYNATIVE_MODE)
                grads = [g.asnumpy().copy() for g in ms.ops.clip_by_global_norm(grad_fn(x, y), 0.05)]
                ms.set_context(mode=ms.GRAPH_MODE)
                loss, lr = step(x, y)
                seen.append((values(net), grads, w.history))
        nothing_left()
        assert type(step.optimizer) is nn.Momentum and float(lr) == pytest.approx(0.1)
        assert vars(step)[backend._KEPT].recorder is not None
    for _ in range(4):
        twin_step(x, y)
    assert all(
        (p.asnumpy() == q.asnumpy()).all() for p, q in zip(net.get_parameters(), twin_net.get_parameters(), strict=True)
    )
    for number, (after, grads, history) in enumerate(seen):
        at = number % 2
        for p, grad in zip(step.weights, grads, strict=True):
            np.testing.assert_allclose(history.stats(p.name, "weight")[at], numpy_stats(after[p.name]), rtol=2e-5,
                                       atol=1e-7)  # fmt: skip
            np.testing.assert_allclose(history.stats(p.name, "grad")[at], numpy_stats(grad), rtol=1e-4, atol=1e-7)
    assert not any("not watched: the optimizer" in note for note in seen[-1][2].notes)


def test_a_graph_step_that_skips_its_update_has_no_gradient_or_change_judged():
    """A step whose ``construct`` did not call its optimizer (as a loss scale skips an overflow)
    gives NaN for its gradients and its weights' change, and says so once: a "not changed" there
    would be a confident answer about an update that never ran. Conditions that hold on any value
    trip at the first step that updated."""
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = Classifier()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = SkippingStep(nn.WithLossCell(net, loss_fn), nn.SGD(net.trainable_params(), 0.05))
    x, y = images((16, 8)), labels(16)
    conditions = ("weights:*:not_changed", "grads:*:vanishing(abs_mean_lt=1e30)")
    with msdebug.watch(*conditions, stop=False, net=step) as w:
        for update in (0, 0, 1, 0):
            step(x, y, ms.Tensor(update, ms.int32))
    nothing_left()
    trips = {(t.kind, t.step) for t in w.history.trips}
    assert trips == {("grad", 2)}, trips
    assert len([t for t in w.history.trips if t.kind == "grad"]) == len(step.weights)
    notes = " ".join(w.history.notes)
    assert "did not call its optimizer in step 0" in notes and "not watched: the optimizer" not in notes
    assert np.isnan(w.history.stats("fc1.weight", "grad")[[0, 1, 3]]).all()
    assert np.isfinite(w.history.stats("fc1.weight", "weight")[[0, 1, 3]]).all()  # the weights still shown


@pytest.mark.parametrize("marked", [True, False], ids=["one-step-for-both", "each-call-a-step"])
def test_two_graph_steps_of_networks_with_the_same_names_are_each_watched_with_their_own_change(marked):
    """Two networks of one class (their Parameters have the same names), each with its own GRAPH
    training step, in one watch: as a GAN trains its two networks. Each step's graph reads the
    weights it holds; with one ``msdebug.step`` for both, each network keeps the rows of its own
    step (gradients, and a change): the first, frozen after one step, is "not changed" at once and
    the second never. With each call a step, the network that did not train in it gets no change
    to judge. Before, the second network's weights were read by the first's graph: a crash, or a
    change of 0 that tripped."""
    ms.set_context(mode=ms.GRAPH_MODE)
    nets, steps = [], []
    for lr in (0.05, 0.01):
        ms.set_seed(0)
        nets.append(Classifier())
        steps.append(classifier_step(nets[-1], lr))
    x, y = images((16, 8)), labels(16)
    seen = []
    with msdebug.watch("weights:*:not_changed", stop=False) as w:
        for iteration in range(3):
            if iteration == 1:  # the first network frozen from here on (its learning rate a Parameter its graph reads)
                steps[0].optimizer.learning_rate.set_data(ms.Tensor(0.0, ms.float32))
            for step in steps:
                step(x, y)
                if not marked:
                    seen.append([values(net) for net in nets])
            if marked:
                msdebug.step()
                seen.append([values(net) for net in nets])
    nothing_left()
    names = [p.name for p in nets[0].get_parameters()]
    assert {(t.name, t.step) for t in w.history.trips} == {(name, 2) for name in names}
    # Until the first msdebug.step, each call ends a step (the watch learns of the marks then):
    # marked, steps 0 and 1 are the first iteration's two calls, and the two others one step each.
    recorded = list(w.history.steps)
    assert recorded == ([0, 1, 2, 3] if marked else list(range(6)))
    checked = (
        list(zip(recorded[-2:], seen[-2:], strict=True)) if marked else list(zip(recorded[1:], seen[1:], strict=True))
    )
    for number, after in checked:
        for index in range(2):
            for name in names:
                key = name if index == 0 else f"{name}#2"
                np.testing.assert_allclose(w.history.stats(key, "weight")[number], numpy_stats(after[index][name]),
                                           rtol=2e-6, atol=1e-7)  # fmt: skip
                grad = w.history.stats(key, "grad")[number]
                trained = marked or number % 2 == index
                assert np.isfinite(grad).all() if trained else np.isnan(grad).all(), (key, number)


def graph_classifier_step(kind):
    """A Classifier and its GRAPH training step: a TrainOneStepCell, or ``ClippedStep`` (a
    subclass with a construct of its own)."""
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = Classifier()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Momentum(net.trainable_params(), 0.1, 0.9)
    return net, (nn.TrainOneStepCell if kind == "TrainOneStepCell" else ClippedStep)(
        nn.WithLossCell(net, loss_fn), optimizer
    )


def pynative_acts(net, x):
    """Each sub-cell's output in PyNative, by name (the reference for a GRAPH step's)."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    out, h = {}, x
    for name in ("fc1", "relu1", "fc2", "relu2", "fc3"):
        h = getattr(net, name)(h)
        out[name] = h.asnumpy().copy()
    ms.set_context(mode=ms.GRAPH_MODE)
    return out


@pytest.mark.parametrize("kind", ["TrainOneStepCell", "subclass"])
def test_graph_activations_come_from_hooks_compiled_into_the_watched_graph_alone(kind):
    """In GRAPH mode each sub-cell's output is read by a forward hook MindSpore compiles into the
    watched graph: the statistics against numpy's at every step, also after the batch changes
    size (a graph compiled again, the hooks in it). The hooks are registered only while that
    graph compiles: none is left on a Cell, and no other graph takes one in, neither one compiled
    during the watch (an evaluation) nor one compiled after it."""
    net, step = graph_classifier_step(kind)
    batches = [(images((16, 8)), labels(16)), (images((16, 8)), labels(16)), (images((12, 8)), labels(12))]
    expected = []
    conditions = (
        "acts:*:all_zero",
        "acts:relu1:range(range_start_inclusive=0,range_end_inclusive=0,range_percentage_gt=30)",
    )
    with msdebug.watch(*conditions, stop=False, net=step) as w:
        for number, (x, y) in enumerate(batches):
            expected.append(pynative_acts(net, x))
            step(x, y)
            if number == 0:
                net(x)  # an evaluation compiled during the watch
    nothing_left()
    assert all(not cell._forward_hook for _, cell in net.cells_and_names())
    for number, acts in enumerate(expected):
        for name, value in acts.items():
            np.testing.assert_allclose(w.history.stats(name, "act")[number], numpy_stats(value), rtol=1e-5, atol=1e-6)
    (trip,) = w.history.trips  # the share of relu1's values in [0, 0]: its zeros, at step 0
    assert (trip.name, trip.step) == ("relu1", 0)
    assert trip.values["range_percentage"] == pytest.approx((expected[0]["relu1"] == 0).mean() * 100)
    shapes = {i.name: i.shape for i in w.history.watched if i.kind == "act"}
    assert shapes == {"fc1": (16, 16), "relu1": (16, 16), "fc2": (16, 16), "relu2": (16, 16), "fc3": (16, 4)}
    assert not w.history.notes
    stats = vars(step)[backend._KEPT].acts.recorder.stats
    stats.set_data(ms.Tensor(np.full(stats.shape, np.nan, np.float32)))
    net(images((16, 8)))  # the graph compiled during the watch
    net(images((8, 8)))  # one compiled now
    step(images((16, 8)), labels(16))  # the person's own step
    assert np.isnan(stats.asnumpy()).all()


def test_a_ctrl_c_while_a_graph_compiles_with_the_activation_hooks_leaves_none(monkeypatch):
    """The hooks are registered one by one around the graph's compile: a KeyboardInterrupt in the
    compile, or between two registrations, leaves none on any Cell."""
    net = Classifier()
    cells = [(name, "", cell) for name, cell in net.cells_and_names() if name]
    acts = backend._GraphActs(cells, Needs(acts="all"))
    args = (images((4, 8)),)

    def interrupted():
        assert all(cell._forward_hook for _, _, cell in cells)  # all registered while it runs
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        acts.call(lambda: None, interrupted, args)
    assert all(not cell._forward_hook for _, cell in net.cells_and_names())
    register = nn.Cell.register_forward_hook

    def second_interrupts(cell, hook):
        if cell is net.relu1:
            raise KeyboardInterrupt
        return register(cell, hook)

    monkeypatch.setattr(nn.Cell, "register_forward_hook", second_interrupts)
    with pytest.raises(KeyboardInterrupt):
        acts.call(lambda: None, lambda: None, args)
    assert all(not cell._forward_hook for _, cell in net.cells_and_names())
    assert acts.compiled == set()  # neither call compiled: the next registers the hooks again


def _broken_hook(recorder, index):
    def hook(cell, inputs, output):
        return no_such_name  # noqa: F821 - MindSpore refuses to compile it

    return hook


@pytest.mark.parametrize("kind", ["TrainOneStepCell", "subclass"])
def test_a_graph_step_that_does_not_compile_with_the_hooks_trains_without_them_and_says_so(monkeypatch, kind):
    """Whatever MindSpore refuses of the activations' hooks, the step compiles and trains without
    them: its weights and gradients still watched, the activations said to be unseen, and why."""
    monkeypatch.setattr(backend, "_act_hook", _broken_hook)
    net, step = graph_classifier_step(kind)
    before = values(net)
    with msdebug.watch(stop=False, net=step) as w:
        for _ in range(2):
            step(images((16, 8)), labels(16))
    nothing_left()
    assert all((values(net)[name] != value).any() for name, value in before.items() if "bias" not in name)
    assert {i.kind for i in w.history.watched} == {"weight", "grad", "loss"}
    notes = " ".join(w.history.notes)
    assert "did not compile with msdebug's hooks on its sub-cells" in notes and "no_such_name" in notes, notes


class Stacked(nn.Cell):
    """Two layers called as attributes, two more through a SequentialCell (called as one), and
    one called only for a batch of more than 12 (a branch decided as the graph compiles)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(8, 16)
        self.relu1 = nn.ReLU()
        self.body = nn.SequentialCell([nn.Dense(16, 16), nn.ReLU()])
        self.extra = nn.Tanh()
        self.fc2 = nn.Dense(16, 4)

    def construct(self, x):
        x = self.body(self.relu1(self.fc1(x)))
        if x.shape[0] > 12:
            x = self.extra(x)
        return self.fc2(x)


def test_graph_activations_of_cells_a_sequential_cell_calls_are_said_to_be_unseen():
    """MindSpore compiles no hook for a Cell called through a SequentialCell: the SequentialCell's
    own output is watched, its layers' are named in the notes as not seen. A sub-cell the step's
    graph did not call has no row in that step (not the last one's)."""
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = Stacked()
    step = classifier_step(net)
    with msdebug.watch(stop=False, net=step) as w:
        step(images((16, 8)), labels(16))
        step(images((12, 8)), labels(12))
    nothing_left()
    assert {i.name for i in w.history.watched if i.kind == "act"} == {"fc1", "relu1", "body", "extra", "fc2"}
    notes = " ".join(w.history.notes)
    assert "the outputs of 2 of 7 sub-cells were not seen in step 0 (body.0, body.1)" in notes, notes
    assert "not one called through a SequentialCell" in notes
    # the recommended conditions ask only for the share of zeros: the hooks count zeros alone
    zero = STATS.index("zero_share")
    extra = w.history.stats("extra", "act")
    assert np.isfinite(extra[0, zero]) and np.isnan(extra[1]).all()
    assert np.isfinite(w.history.stats("fc2", "act")[:, zero]).all()
    assert np.isnan(np.delete(w.history.stats("fc2", "act"), zero, axis=1)).all()


class PrivateStep(nn.TrainOneStepCell):
    """A step that reads a private attribute of its optimizer, which the recorder does not hand on."""

    def construct(self, *inputs):
        loss = self.network(*inputs)
        grads = self.grad_no_sens(self.network, self.optimizer._parameters)(*inputs)
        return ms.ops.depend(loss, self.optimizer(grads))


def test_a_graph_step_whose_twin_does_not_compile_trains_as_it_is_and_says_why():
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = Classifier()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = PrivateStep(nn.WithLossCell(net, loss_fn), nn.SGD(net.trainable_params(), 0.05))
    before = values(net)
    with msdebug.watch(stop=False, net=step) as w:
        step(images((16, 8)), labels(16))
    nothing_left()
    assert any((values(net)[name] != value).any() for name, value in before.items())  # it trained
    notes = " ".join(w.history.notes)
    assert "gradients are not watched: the GRAPH training step could not be compiled" in notes, notes
    assert "_parameters" in notes
    assert {i.kind for i in w.history.watched} == {"weight", "loss"}


def test_an_ended_watch_holds_none_of_the_networks_it_watched():
    """``msdebug.last_watch()`` keeps the last watch for its statistics; the training step it was
    given, and its network, are let go when it ends (in PyNative nothing else of MindSpore's holds
    them). Named with ``net=``: reading a function's locals (the namespace form) keeps them in the
    frame's own snapshot for as long as the function runs, which no watch can undo."""
    import gc
    import weakref

    ms.set_context(mode=ms.PYNATIVE_MODE)
    net = Classifier()
    step = classifier_step(net)
    with msdebug.watch(stop=False, net=step):
        step(images((16, 8)), labels(16))
    gone = weakref.ref(step)
    del step, net
    gc.collect()
    assert gone() is None
    assert len(msdebug.last_watch()) > 0  # the statistics stay


def test_on_the_host_a_parameter_and_an_op_output_are_read_in_place_not_copied():
    parameter = ms.Parameter(ms.Tensor(np.ones(1000, np.float32)), name="in_place")
    output = ms.ops.exp(ms.Tensor(np.zeros(1000, np.float32)))
    for tensor in (parameter, output):
        assert np.shares_memory(backend._flat(tensor), tensor.asnumpy())  # the tensor's own memory
    assert not np.shares_memory(backend._flat(parameter.value()), parameter.asnumpy())  # value() copies


# --------------------------------------------------------------------------- what is watched


def test_only_what_the_cell_trains_is_watched_not_another_network_of_the_notebook():
    """An earlier cell's network and optimizer stay in the namespace, untrained here: they used
    to be watched, and "not changed" tripped on them at step 0."""
    ms.set_seed(0)
    earlier = Classifier()
    earlier_step = classifier_step(earlier)  # noqa: F841 - in the namespace the watch looks at
    net = Classifier()
    step = classifier_step(net)
    x, y = images((16, 8)), labels(16)
    with msdebug.watch("weights:*:not_changed", "grads:*:vanishing") as w:
        for _ in range(3):
            step(x, y)
    assert w.history.trips == [] and w.number == 3
    watched = {(item.kind, item.name) for item in w.history.watched}
    assert {name for kind, name in watched if kind == "weight"} == {p.name for p in net.get_parameters()}
    assert all(not name.endswith("#2") for _, name in watched)  # the untrained twin's names are not taken


def test_a_weight_is_named_with_the_line_of_the_cell_class_that_holds_it():
    ms.set_seed(0)
    net = Classifier()
    net.fc2.weight.requires_grad = False
    step = classifier_step(net)
    with msdebug.watch("weights:fc2.weight:not_changed") as w:
        step(images((16, 8)), labels(16))
    item = next(i for i in w.history.watched if (i.kind, i.name) == ("weight", "fc2.weight"))
    source, first = inspect.getsourcelines(Classifier.__init__)
    line = first + next(i for i, text in enumerate(source) if "self.fc2 = " in text)  # where fc2 is made
    assert item.defined_at == f"test_watch_engine.py:{line}", item


def test_in_a_notebook_cell_a_weight_is_named_at_its_cell_and_line(ip):
    """A class defined in a cell has no source file ``inspect`` finds: the cell and line come
    from its functions' code (it said "defined at: unknown" in the tutorial). The loss is
    named at the line whose call gave it."""
    ip.run_cell("import mindspore as ms\nfrom mindspore import nn\nimport msdebug", store_history=True)
    result = ip.run_cell(
        "\nclass Tiny(nn.Cell):\n    def __init__(self):\n        super().__init__()\n"
        "        self.dense = nn.Dense(2, 1)\n\n    def construct(self, x):\n        return self.dense(x)",
        store_history=True,
    )
    defined = result.execution_count
    result = ip.run_cell(
        "net = Tiny()\nnet.dense.bias.requires_grad = False\n"
        "step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 0.1))\n"
        "x = ms.Tensor([[1.0, 2.0]])\nwith msdebug.watch('weights:*:not_changed') as w:\n    step(x, ms.Tensor([[1.0]]))",
        store_history=True,
    )
    assert result.success, result.error_in_exec
    item = next(i for i in ip.user_ns["w"].history.watched if i.name == "dense.bias")
    assert item.defined_at == f"cell [{defined}], line 5", item
    loss = next(i for i in ip.user_ns["w"].history.watched if i.kind == "loss")
    assert loss.defined_at == f"cell [{result.execution_count}], line 6", loss  # the training step's call


def test_an_update_inside_a_jit_function_is_watched_through_the_namespace_s_optimizer():
    """The optimizer runs inside ``@jit`` (no Python call to see): the namespace's optimizer and
    its network are watched at each ``msdebug.step(loss)``; a frozen layer is found at step 0 (its
    weights were copied at the step's start, before the watch knew of the optimizer)."""
    ms.set_seed(0)
    net = Classifier()
    frozen = list(net.fc3.trainable_params())
    rest = [p for p in net.trainable_params() if all(p is not q for q in frozen)]
    optimizer = nn.SGD([{"params": rest}, {"params": frozen, "lr": 0.0}], learning_rate=0.05)
    train_step = jit_train_step(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), optimizer)
    x, y = images((16, 8)), labels(16)
    with msdebug.watch("weights:*:not_changed") as w:
        for _ in range(3):
            msdebug.step(train_step(x, y))
    assert w.history.stopped and [(t.name, t.step) for t in w.history.trips] == [("fc3.weight", 0), ("fc3.bias", 0)]
