"""The conditions of ``%%mswatch`` (msdebug.dumps.watch, pure): the grammar, MindInsight's
parameters and their meaning on statistics, the bounded history, and its files."""

import math

import numpy as np
import pytest

from msdebug.dumps.watch import (
    CATALOG,
    DEFAULTS,
    STATS,
    Evaluator,
    Needs,
    Watched,
    WatchHistory,
    parse_condition,
    parse_conditions,
)
from msdebug.errors import DumpFormatError, MagicUsageError

W = Watched("fc1.weight", "weight", (4, 4), "Float32")
G = Watched("fc1.weight", "grad", (4, 4), "Float32")
A = Watched("encoder.layer0.relu", "act", (2, 4), "Float32", scope="encoder.layer0.relu")
L = Watched("loss", "loss", (), "float")


def row(**values):
    base = dict.fromkeys(STATS, 0.5)
    base.update(nonfinite=0.0, zero_share=0.0)
    base.update(values)
    return base


def trips(token, item, step=0, **values):
    return Evaluator([parse_condition(token)]).evaluate(step, [item], {(item.kind, item.name): row(**values)})


def test_no_condition_is_the_recommended_set_written_back_with_every_threshold():
    assert [c.token for c in parse_conditions(None)] == [
        "weights:*:not_changed(rtol=1e-05,atol=1e-08)",
        "weights:*:change_too_large(abs_mean_update_ratio_gt=0.1,epsilon=1e-09)",
        "grads:*:vanishing(abs_mean_lt=1e-09)",
        "grads:*:exploding(l2_gt=1000)",
        "grads:*:overflow",
        "acts:*:all_zero(zero_percentage_ge=100)",
        "loss:not_finite",
        "loss:not_decreasing(steps=20)",
    ]
    assert len(DEFAULTS) == 8 and parse_conditions("loss:not_finite grads:fc*:overflow")[1].pattern == "fc*"


@pytest.mark.parametrize(
    ("token", "line"),
    [
        ("wieghts:not_changed", "unknown kind 'wieghts'; one of weights, grads, acts, loss. Did you mean 'weights'?"),
        ("grads:fc*:vanishin", "unknown condition 'vanishin' for grads; one of too_large, too_small, vanishing, "
         "exploding, overflow, not_finite, all_zero, range. Did you mean 'vanishing'?"),
        ("grads:vanishing(abs_mean_l=1e-7)", "vanishing has no parameter 'abs_mean_l' (its parameters: abs_mean_lt, "
         "max_lt, min_lt, mean_lt). Did you mean 'abs_mean_lt'?"),
        ("grads:vanishing(abs_mean_lt=tiny)", "abs_mean_lt must be a number, got 'tiny'."),
        ("weights:*:vanishing", "vanishing applies to grads, not to weights."),
        ("loss:not_decreasing(steps=2.5)", "steps must be a whole number of at least 1, got '2.5'."),
        ("acts:all_zero(zero_percentage_ge=150)", "zero_percentage_ge is a percentage, 0 to 100; got 150."),
        ("acts:range(range_percentage_lt=3)", "range_percentage_lt/gt need range_start_inclusive or range_end_inclusive."),
        ("weights:too_large", "too_large needs at least one of abs_mean_gt, max_gt, min_gt, mean_gt"),
        ("loss:*:not_finite", "the loss has no pattern; write e.g. 'loss:not_finite'."),
        ("grads:vanishing(abs_mean_lt=1", "the parameters need a closing ')'."),
        ("vanishing", "write KIND:PATTERN:NAME(PARAM=VALUE,...)"),
    ],
)  # fmt: skip
def test_each_bad_condition_is_one_line_with_did_you_mean(token, line):
    with pytest.raises(MagicUsageError) as caught:
        parse_condition(token)
    message = str(caught.value)
    assert line in message and "\n" not in message and message.startswith(f"condition {token!r}")


def test_mindinsights_too_large_and_too_small_trip_on_any_parameter_and_name_the_ones_that_did():
    (trip,) = trips("weights:*:too_large(abs_mean_gt=1,max_gt=2)", W, step=4, abs_mean=1.5, max=1.9)
    assert trip.values == {"abs_mean": 1.5} and trip.thresholds == {"abs_mean_gt": 1.0}
    assert trip.message == "weights fc1.weight: abs_mean 1.5 > 1 at step 4"
    assert trips("weights:*:too_large(abs_mean_gt=1,max_gt=2)", W, abs_mean=0.5, max=1.9) == []
    (trip,) = trips("grads:vanishing(abs_mean_lt=1e-7)", G, abs_mean=3e-9)
    assert trip.message == "grads fc1.weight: abs_mean 3.0e-09 < 1e-07 at step 0"
    assert trip.condition == "grads:*:vanishing(abs_mean_lt=1e-07)"


def test_change_conditions_follow_mindinsights_formulas():
    # TensorUnchangedCondition: mean|d| <= atol + rtol * mean|before| (MindInsight's docstring)
    assert trips("weights:not_changed", W, update_abs_mean=0.5e-5, prev_abs_mean=1.0, prev_zero_share=0.0)
    assert not trips("weights:not_changed", W, update_abs_mean=2e-5, prev_abs_mean=1.0, prev_zero_share=0.0)
    # TensorChangeAboveThresholdCondition: mean|d| > epsilon + ratio_gt * mean|before|
    ratio = {"update_abs_mean": 0.3, "prev_abs_mean": 1.0, "prev_zero_share": 0.0}
    (trip,) = trips("weights:change_too_large(abs_mean_update_ratio_gt=0.2)", W, **ratio)
    assert trip.values["abs_mean_update_ratio"] == pytest.approx((0.3 - 1e-9) / 1.0)
    assert not trips("weights:change_too_large(abs_mean_update_ratio_gt=0.3,epsilon=0.01)", W, **ratio)
    assert not trips("weights:change_too_small(abs_mean_update_ratio_lt=0.2)", W, **ratio)
    # a tensor all zeros before (a fresh bias) has no relative change
    assert not trips("weights:change_too_large", W, update_abs_mean=0.1, prev_abs_mean=0.0, prev_zero_share=1.0)
    assert Needs.of(parse_conditions(["weights:not_changed(rtol=0.1)", "acts:range(range_start_inclusive=0,range_percentage_gt=50)"])).extras == (
        "range_share@0.0,inf", "update_abs_mean", "prev_abs_mean", "prev_zero_share")  # fmt: skip


@pytest.mark.parametrize(
    ("conditions", "acts"),
    [
        (None, "zeros"),  # the recommended set: all_zero
        (["acts:relu*:dead"], "zeros"),
        (["acts:*:all_zero", "acts:*:range(range_start_inclusive=0,range_percentage_gt=50)"], "all"),
        (["acts:*:overflow"], "all"),
        (["weights:*:not_changed", "grads:*:vanishing"], ""),
    ],
)
def test_what_a_graph_step_s_hooks_compute_of_the_activations_is_what_the_conditions_need(conditions, acts):
    """The share of zeros alone for all_zero and dead (three kernels a layer in a GRAPH step),
    every statistic for any other condition on activations, nothing (no hook) without one."""
    assert Needs.of(parse_conditions(conditions)).acts == acts


def test_the_ratio_conditions_skip_a_tensor_that_started_at_zeros_or_that_no_optimizer_trains():
    bias = Watched("fc1.bias", "weight", (4,), "Float32")
    moving = Watched("bn.moving_variance", "weight", (4,), "Float32", trained=False)
    evaluator = Evaluator(parse_conditions(["weights:*:change_too_large", "weights:*:not_changed"]))
    first = {"update_abs_mean": 0.01, "prev_abs_mean": 0.0, "prev_zero_share": 1.0}  # a fresh bias
    later = {"update_abs_mean": 0.01, "prev_abs_mean": 0.02, "prev_zero_share": 0.0}  # ratio 0.5 > 0.1
    still = {"update_abs_mean": 0.0, "prev_abs_mean": 1.0, "prev_zero_share": 0.0}
    assert evaluator.evaluate(0, [bias, moving], {("weight", "fc1.bias"): row(**first),
                                                  ("weight", "bn.moving_variance"): row(**later)}) == []  # fmt: skip
    assert evaluator.evaluate(1, [bias], {("weight", "fc1.bias"): row(**later)}) == []  # its own few updates
    (trip,) = evaluator.evaluate(2, [moving], {("weight", "bn.moving_variance"): row(**still)})
    assert trip.condition.startswith("weights:*:not_changed") and "no optimizer trains it" in trip.message
    # a tensor that did not start at zeros trips as MindInsight's condition says
    weight = Watched("fc1.weight", "weight", (4, 4), "Float32")
    fresh = Evaluator(parse_conditions(["weights:*:change_too_large"]))
    assert fresh.evaluate(0, [weight], {("weight", "fc1.weight"): row(**later)})[0].step == 0


def test_the_recommended_change_too_large_leaves_1d_tensors_to_not_changed_a_written_one_does_not():
    """A bias of a few values drawn near zero: its update is "large" against it in a healthy
    training (3 of 40 random initialisations of a small network tripped at step 0)."""
    bias = Watched("fc2.bias", "weight", (1,), "Float32")
    kernel = Watched("fc2.weight", "weight", (1, 16), "Float32")
    large = row(update_abs_mean=0.02, prev_abs_mean=0.05, prev_zero_share=0.0)  # ratio 0.4
    rows = {("weight", "fc2.bias"): large, ("weight", "fc2.weight"): large}
    recommended = Evaluator(parse_conditions(None)).evaluate(0, [bias, kernel], rows)
    assert [(t.condition.split(":")[-1].split("(")[0], t.name) for t in recommended] == [
        ("change_too_large", "fc2.weight")
    ]
    written = Evaluator(parse_conditions(["weights:*:change_too_large"])).evaluate(0, [bias, kernel], rows)
    assert [t.name for t in written] == ["fc2.bias", "fc2.weight"]


def test_all_zero_range_exploding_and_the_loss():
    assert trips("acts:encoder/layer0/*:all_zero", A, zero_share=1.0)[0].name == "encoder.layer0.relu"
    assert not trips("acts:all_zero", A, zero_share=0.99)
    assert trips("acts:range(range_start_inclusive=0,range_percentage_lt=50)", A, **{"range_share@0.0,inf": 0.4})
    assert trips("acts:range(max_min_gt=1)", A, max=3.0, min=1.5)[0].values == {"max_min": 1.5}
    assert trips("grads:exploding(l2_gt=10)", G, l2=11.0)[0].values == {"l2": 11.0}
    assert trips("grads:exploding", G, nonfinite=2.0)[0].values == {"nonfinite": 2.0}
    assert trips("loss:not_finite", L, nonfinite=1.0)[0].message == "loss: 1 NaN/Inf values at step 0"
    evaluator = Evaluator([parse_condition("loss:not_decreasing(steps=3)")])
    losses = [2.0, 1.0, 1.5, 1.2, 1.1, 0.9]  # best 1.0 at step 1; step 4 is 3 steps on
    fired = [s for s, v in enumerate(losses) if evaluator.evaluate(s, [L], {("loss", "loss"): row(mean=v)})]
    assert fired == [4]


def test_every_catalog_entry_names_its_mindinsight_counterpart_or_is_msdebugs_own():
    own = {"not_finite", "not_decreasing", "dead"}
    assert {name for name, spec in CATALOG.items() if not spec.mindinsight} == own


def test_a_long_run_of_a_big_model_stays_under_50_mb_and_spans_the_whole_run():
    # a 100M-parameter transformer: ~400 parameter tensors, their gradients and ~200 activations
    watched = [Watched(f"t{i}", "weight", (1,), "f") for i in range(1000)]
    history = WatchHistory(list(watched))
    rows = {(w.kind, w.name): row() for w in watched}
    for step in range(1000):
        history.record(step, rows)
    assert history.nbytes < 50e6 and history._data.nbytes < 100e6
    steps = history.steps
    assert steps[0] == 0 and steps[-1] >= 990 and len(steps) >= 500


def test_save_and_load_round_trip_and_a_foreign_directory_is_one_line(tmp_path):
    history = WatchHistory([W, G], ["grads:*:overflow"])
    history.record(0, {("weight", W.name): row(max=1.0), ("grad", G.name): row(max=math.inf, nonfinite=1.0)})
    history.record(1, {("weight", W.name): row(max=2.0)})
    history.trips.extend(trips("grads:overflow", G, nonfinite=1.0))
    history.stopped = True
    history.save(tmp_path / "run")
    back = WatchHistory.load(tmp_path / "run")
    assert back.watched == history.watched and back.trips == history.trips and back.stopped
    np.testing.assert_array_equal(back.stats("fc1.weight", "grad"), history.stats("fc1.weight", "grad"))
    assert back.rows() == history.rows() and list(back.steps) == [0, 1]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "watch.json").write_text("{]")
    with pytest.raises(DumpFormatError, match="is no watch msdebug saved"):
        WatchHistory.load(tmp_path / "other")
