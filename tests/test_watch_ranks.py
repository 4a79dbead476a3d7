"""``%%mswatch`` inside ``%%msrun``: each of 2 real ranks (msrun, this CPU build) watches its own
data-parallel training; the notebook gets one report that says which ranks tripped and where
their weights and gradients diverge after AllReduce. One job for the module, driven from a real
Jupyter kernel (rank-prefixed text, as in tests/test_ranks.py); the merge and its view also on
histories built by hand."""

from __future__ import annotations

import re

import pytest
from test_ranks import _job, _wait_gone

from msdebug.dumps.watch import STATS, Trip, Watched, WatchHistory
from msdebug.ranks import watch as ranks_watch
from msdebug.views import watch as view

from helpers import Kernel, text_of

SETUP = """%%msrun
import numpy as np, mindspore as ms, msdebug
from mindspore import nn
from mindspore.communication import init, get_rank
init()
ms.set_auto_parallel_context(parallel_mode="data_parallel", gradients_mean=True)
rng = np.random.default_rng(get_rank())  # each rank its own batch
x = ms.Tensor(rng.normal(size=(16, 4)).astype(np.float32))
y = ms.Tensor(rng.normal(size=(16, 2)).astype(np.float32))
def model():
    ms.set_seed(1)  # the same initial weights on every rank
    return nn.SequentialCell(nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 2))
def train_one_step(lr):  # TrainOneStepCell reduces the gradients itself in data_parallel mode
    net = model()
    return net, nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), lr))
"""


@pytest.fixture(scope="module")
def job():
    kernel = Kernel()
    try:
        status, outputs = kernel.run("%load_ext msdebug\n%msrun start -n 2", timeout=300)
        assert status == "ok", outputs
        status, outputs = kernel.run(SETUP, timeout=300)
        assert status == "ok", outputs
        yield kernel
    finally:
        pids = _job(kernel)
        kernel.run("%msrun stop", timeout=120)
        kernel.close()
        assert _wait_gone(pids, 10)


def _ok(kernel: Kernel, code: str) -> tuple[str, str, list[dict]]:
    """Run a cell that must succeed: its stdout, its reports (text) and its outputs."""
    status, outputs = kernel.run(code, timeout=180)
    assert status == "ok", outputs
    reports = [o for o in outputs if o["type"] == "display_data"]
    return text_of(outputs, "stream", "stdout"), "\n".join(o["data"]["text/plain"] for o in reports), outputs


def _per_rank(stdout: str) -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"(?m)^\[rank (\d)\] (.*)$", stdout)}


def test_a_healthy_data_parallel_training_is_one_report_both_ranks_watched_that_agree(job):
    _ok(job, "%%msrun\nnet, step = train_one_step(0.05)")
    stdout, report, outputs = _ok(
        job,
        "%%msrun\n%%mswatch grads:*:overflow loss:not_finite\nfor i in range(5):\n    loss = step(x, y)\n"
        "print(f'{float(loss):.6f}', f'{np.linalg.norm(net[0].weight.asnumpy()):.9g}')",
    )
    said = {rank: line.split() for rank, line in _per_rank(stdout).items()}
    assert said[0][0] != said[1][0]  # each rank's own loss: other data
    assert said[0][1] == said[1][1]  # the same weights after AllReduce (numpy's own norm)
    displays = [o for o in outputs if o["type"] == "display_data"]
    assert len(displays) == 1, outputs  # one report; the ranks showed no table of their own
    assert "watching" not in stdout
    assert "watch on ranks 0-1: 5 steps recorded on each" in report
    assert "no rank tripped" in report
    assert "ranks agree: 8 weights and gradients equal on ranks 0-1 at each of 5 common steps" in report
    assert "ranks agree" in displays[0]["data"]["text/html"]


def test_rank_1_scaling_its_reduced_gradient_is_a_divergence_named_at_its_step(job):
    _ok(
        job,
        "%%msrun\nnet = model()\nopt = nn.SGD(net.trainable_params(), 0.05)\n"
        "reducer = nn.DistributedGradReducer(opt.parameters, mean=True, degree=2)\n"
        "grad_fn = ms.value_and_grad(nn.WithLossCell(net, nn.MSELoss()), None, opt.parameters)",
    )
    stdout, report, outputs = _ok(
        job,
        "%%msrun\n%%mswatch --no-stop grads:*:overflow\nfor i in range(5):\n    loss, grads = grad_fn(x, y)\n"
        "    grads = reducer(grads)\n    if get_rank() == 1 and i >= 3:\n"
        "        grads = tuple(g * 2 for g in grads)  # rank 1 alone, after the AllReduce\n"
        "    if i == 3:\n        print(f'{np.linalg.norm(grads[0].asnumpy()):.4g}')\n    opt(grads)",
    )
    norms = {rank: float(text) for rank, text in _per_rank(stdout).items()}
    headline = re.search(
        r"Ranks diverge at step (\d+): gradient of (\S+): L2 (\S+) on rank 1, against (\S+) on rank 0", report
    )
    assert headline, report
    assert headline.group(1, 2) == ("3", "0.weight")
    assert float(headline.group(3)) == pytest.approx(norms[1], rel=1e-3)
    assert float(headline.group(4)) == pytest.approx(norms[0], rel=1e-3)
    assert norms[1] == pytest.approx(2 * norms[0], rel=1e-5)
    rows = re.findall(r"(?m)^\s*(\d+)\s+(gradient of|parameter)\s+(\S+)\s+\S+\s+1\s", report)
    assert {(kind, name) for _, kind, name in rows} == {
        (kind, name) for kind in ("gradient of", "parameter") for name in ("0.weight", "0.bias", "2.weight", "2.bias")
    }
    assert {step for step, kind, _ in rows if kind == "gradient of"} == {"3"}
    assert [kind for _, kind, _ in rows[:4]] == ["gradient of"] * 4  # the cause before its effect
    assert "no rank tripped" in report


def test_one_rank_tripping_alone_is_named_with_its_step_and_the_other_went_on(job):
    _ok(job, "%%msrun\nnet, step = train_one_step(1e-3)")
    stdout, report, outputs = _ok(
        job,
        "%%msrun\n%%mswatch --no-stop loss:too_large(max_gt=5)\nfor i in range(5):\n"
        "    spike = 20.0 if get_rank() == 1 and i == 2 else 1.0  # one outlier batch on rank 1\n"
        "    loss = step(x * spike, y)",
    )
    assert "rank 1 tripped at step 2 (of ranks 0-1 watched)" in report
    trip = re.search(r"rank 1: step (\d+): loss: max (\S+) > 5 at step (\d+) \(went on\)", report)
    assert trip and trip.group(1) == trip.group(3) == "2", report
    assert "rank 0: nothing tripped in 5 steps" in report
    assert "ranks agree" in report  # the outlier moved both ranks alike: AllReduce
    assert "rank 1's watch:" in report and "Tripped at step 2" in report


# ---------------------------------------------------------------- the merge and its view, by hand


def _history(values: dict[tuple[str, str], list[float]], shape=(3,), trips=()) -> WatchHistory:
    """A history whose every statistic of each tensor is ``values[(kind, name)][step]``."""
    history = WatchHistory(conditions=["grads:*:overflow"], trips=list(trips))
    for kind, name in values:
        history.add(Watched(name, kind, shape, "float32"))
    steps = len(next(iter(values.values())))
    for step in range(steps):
        history.record(step, {key: dict.fromkeys(STATS, row[step]) for key, row in values.items()})
    return history


def test_three_ranks_the_odd_one_out_differs_at_its_first_step_and_unrecorded_steps_are_skipped():
    same = [1.0, 2.0, 3.0, 4.0]
    odd = [1.0, 2.0, 3.5, 4.5]
    histories = {
        0: _history({("grad", "w"): same, ("weight", "w"): same, ("act", "a"): same}),
        1: _history({("grad", "w"): same, ("weight", "w"): odd, ("act", "a"): odd}),  # acts: each rank's own
        2: _history({("grad", "w"): same, ("weight", "w"): same, ("act", "a"): same}),
    }
    found, compared, common = ranks_watch.diverge(histories)
    assert (compared, common) == (2, 4)
    assert [(d.kind, d.name, d.step, d.ranks, d.agree, d.stat) for d in found] == [
        ("weight", "w", 2, (1,), (0, 2), "l2")
    ]
    assert found[0].values == {0: 3.0, 1: 3.5, 2: 3.0}
    histories[1] = _history({("grad", "w"): same, ("weight", "w"): same}, shape=(4,))  # another shape
    assert ranks_watch.diverge(histories)[:2] == ([], 0)


def test_the_report_on_ranks_is_escaped_and_bounded():
    names = [f"<script>p{i}</script>" for i in range(30)]
    base = {("grad", name): [1.0, 1.0] for name in names}
    other = {("grad", name): [1.0, 2.0] for name in names}
    trip = Trip(
        "grads:*:overflow", names[0], "grad", 1, {"nonfinite": 1.0}, {}, f"grads {names[0]}: overflow at step 1"
    )
    merged = ranks_watch.RanksWatch({0: _history(base), 1: _history(other, trips=[trip])}, [0, 1, 2])
    merged.divergences, merged.compared, merged.common_steps = ranks_watch.diverge(merged.histories)
    html, text = view.html_ranks(merged), view.text_ranks(merged)
    assert "<script>" not in html and "&lt;script&gt;p0&lt;/script&gt;" in html
    table = text.split("Ranks diverge at step 1")[1].split("showing 20 of 30 tensors that diverge")[0]
    assert len(re.findall(r"(?m)^\s*1\s+gradient of\s+<script>p\d+</script>", table)) == 20
    assert "rank 2: no watch saved" in text
    assert "rank 1 tripped at step 1 (of ranks 0-1 watched)" in text and "rank 0: nothing tripped in 2 steps" in text


def test_a_saved_watch_replaces_the_last_one_and_collect_reads_only_this_cell(tmp_path):
    assert ranks_watch.collect(tmp_path, [0, 1]) is None
    ranks_watch.save(tmp_path, 0, _history({("grad", "w"): [1.0]}))
    ranks_watch.save(tmp_path, 0, _history({("grad", "w"): [1.0, 2.0]}))
    merged = ranks_watch.collect(tmp_path, [0, 1])
    assert len(merged.histories[0].steps) == 2 and merged.missing == [1]
    ranks_watch.clear(tmp_path)
    assert ranks_watch.collect(tmp_path, [0, 1]) is None
