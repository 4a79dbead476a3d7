"""The views of ``%%mswatch`` (msdebug/views/watch.py): the live table and the report, as HTML
and as text, from small watch histories written here as plain data (the view reads a history
by duck typing: dumps.watch's WatchHistory in a real run, tested in test_watch_magic.py)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from html import unescape

import numpy as np
import pytest

from msdebug.views import watch as view

STATS = ("max", "min", "mean", "abs_mean", "l2", "zero_share", "nonfinite")
VANISHING = "grads:*:vanishing(abs_mean_lt=1e-07)"


@dataclass(frozen=True)
class Watched:
    name: str
    kind: str
    shape: tuple = ()
    dtype: str = "float32"
    scope: str = ""
    defined_at: str = ""


@dataclass(frozen=True)
class Trip:
    condition: str
    name: str
    kind: str
    step: int
    values: dict = field(default_factory=dict)
    thresholds: dict = field(default_factory=dict)
    message: str = ""


class History:
    """A watch history as the contract describes it: watched tensors, steps, a stats table per name, trips."""

    def __init__(self, watched, steps, trips=(), stopped=False, conditions=(VANISHING,), seed=0):
        rng = np.random.default_rng(seed)
        self.watched = list(watched)
        self.steps = np.asarray(steps, np.int64)
        self._stats = {(w.kind, w.name): rng.random((len(self.steps), len(STATS))) for w in self.watched}
        self.trips = list(trips)
        self.first_trip = self.trips[0] if self.trips else None
        self.stopped = stopped
        self.conditions = list(conditions)

    def stats(self, name, kind=None):
        """A weight and its gradient share a name: ``kind`` picks one (the weight first without it)."""
        for each in (kind,) if kind else ("weight", "grad", "act", "loss"):
            if (each, name) in self._stats:
                return self._stats[(each, name)]
        raise KeyError(name)


def _trip(name="fc3.weight", step=12, kind="grad"):
    return Trip(
        VANISHING, name, kind, step, {"abs_mean": 3e-9}, {"abs_mean_lt": 1e-7},
        f"grads {name}: abs_mean 3.0e-09 < 1e-07 at step {step}",
    )  # fmt: skip


def _net(trips=(), steps=range(13), **kw):
    watched = [
        Watched("loss", "loss", (), defined_at="cell [2], line 7"),
        Watched("fc1.weight", "weight", (64, 32), defined_at="cell [1], line 4"),
        Watched("fc3.weight", "grad", (10, 64), defined_at="cell [1], line 6"),
        Watched("encoder.layers.0.relu", "act", (16, 64), scope="encoder/layers/0/relu", defined_at="cell [1], line 9"),
    ]
    return History(watched, list(steps), trips, **kw)


def _plain(html: str) -> str:
    """What a browser shows of ``html`` (outside its pictures), as text."""
    return unescape(re.sub(r"<[^>]+>", "", re.sub(r"<svg.*?</svg>", "", html)))


def _rows(html: str) -> list[str]:
    return re.findall(r"<tr[ >].*?</tr>", html.split("<tbody>", 1)[1])


# --------------------------------------------------------------------------- the live table


def test_the_live_table_has_a_row_per_tensor_with_its_last_values_and_a_sparkline_per_statistic():
    history = _net()
    html = view.html_live(history)
    rows = _rows(html)
    assert len(rows) == 4
    fc1 = next(row for row in rows if "fc1.weight" in row)
    assert "weight" in fc1 and "(64, 32)" in fc1
    last = history.stats("fc1.weight", "weight")[-1]
    for value in last:
        assert view._num(value) in fc1
    assert fc1.count('class="msdebug-spark"') == len(STATS)
    assert "13 values" in fc1  # a sparkline's tooltip: every step
    assert "<style" not in html and "<script" not in html
    text = view.text_live(history)
    assert "13 steps recorded, last step 12" in text
    line = next(line for line in text.splitlines() if line.startswith("fc1.weight"))
    assert line.split()[1:4] == ["weight", "(64,", "32)"] and view._num(last[0]) in line


def test_a_statistic_a_step_did_not_compute_shows_as_a_dash_and_a_nan_it_found_as_nan():
    """A GRAPH step's hooks count an activation's zeros alone when that is all the conditions ask:
    its other statistics (and its non-finite count) are NaN and show as "-"; a NaN in a tensor
    that was computed (its non-finite count known) shows as nan."""
    history = _net()
    act = history._stats[("act", "encoder.layers.0.relu")]
    act[:] = np.nan
    act[:, STATS.index("zero_share")] = 0.25
    history._stats[("weight", "fc1.weight")][-1, 0] = np.nan  # a NaN max, its count known
    text = view.text_live(history)
    relu = next(line for line in text.splitlines() if line.startswith("encod"))  # the name cut in the middle
    assert relu.split()[4:] == ["-", "-", "-", "-", "-", "0.25", "-"], relu
    fc1 = next(line for line in text.splitlines() if line.startswith("fc1.weight"))
    assert fc1.split()[4] == "nan", fc1


def test_the_first_tripping_step_is_highlighted_in_its_row_and_on_each_sparkline():
    history = _net([_trip(step=9)], steps=range(13))
    rows = _rows(view.html_live(history))
    tripped = [row for row in rows if "tripped at step 9" in row]
    assert len(tripped) == 1 and "fc3.weight" in tripped[0]
    assert "background:#fdecea" in tripped[0]  # the row's highlight
    # One red mark per sparkline, at step 9 of 0..12 (x = 1 + 94 * 9 / 12).
    marks = re.findall(r'<line x1="([\d.]+)" y1="0" x2="[\d.]+" y2="22" stroke="#cf222e"', tripped[0])
    assert marks == ["71.5"] * len(STATS)
    # The compared statistic (abs_mean) is marked in its cell; the other rows are plain.
    assert tripped[0].count("border-left:3px solid #e69500") == 1
    others = [row for row in rows if row is not tripped[0]]
    assert not any("fdecea" in row or 'stroke="#cf222e" stroke-width="1.5"' in row for row in others)
    # The tripped tensor comes right after the loss; the text marks it too.
    assert "fc3.weight" in rows[1]
    text = view.text_live(history)
    assert "* fc3.weight" in text and "(* tripped)" in text
    assert "Tripped: grads fc3.weight: abs_mean 3.0e-09 < 1e-07 at step 9" in text


def test_a_weight_and_its_gradient_share_a_name_and_each_row_shows_its_own():
    watched = [
        Watched("fc.weight", "weight", (4, 4)),
        Watched("fc.weight", "grad", (4, 4), defined_at="cell [1], line 2"),
    ]
    history = History(watched, range(6), [_trip("fc.weight", step=3)], stopped=True)
    history._stats[("grad", "fc.weight")][:, :] = 7e-9
    history._stats[("weight", "fc.weight")][:, :] = 0.5
    rows = _rows(view.html_live(history))
    assert "tripped at step 3" in rows[0] and "grad" in rows[0] and "7e-09" in rows[0] and "0.5" not in rows[0]
    assert "tripped" not in rows[1] and "weight" in rows[1] and "0.5" in rows[1]
    text = view.text_report(history)
    assert "tensor: gradient of fc.weight" in text and "defined at: cell [1], line 2" in text
    assert "|mean|: 7e-09 7e-09" in text  # the gradient's history, not the weight's


def test_a_hostile_name_is_escaped_everywhere_and_stays_whole_in_text():
    name = '<script>alert("x")</script>&\x00\x1b[2J/\u202e'
    watched = [Watched(name, "act", (2,), scope=name + "/scope", defined_at=f"cell [1], line 3 {name}")]
    history = History(watched, range(5), [_trip(name, step=2, kind="act")])
    for html in (view.html_live(history), view.html_report(history)):
        assert "<script" not in html and "alert(&quot;x&quot;)" in html
        for svg in re.findall(r"<svg.*?</svg>", html):
            assert "\x00" not in svg and "\x1b" not in svg
    assert name in view.text_report(history)


def test_thousands_of_tensors_show_the_tripped_and_the_first_ones_and_say_how_many_were_left_out():
    watched = [Watched(f"layers.{i}.weight", "weight", (8, 8)) for i in range(5000)]
    history = History(watched, range(300), [_trip("layers.4999.weight", step=250, kind="weight")])
    started = time.perf_counter()
    html = view.html_live(history)
    text = view.text_live(history)
    seconds = time.perf_counter() - started
    rows = _rows(html)
    assert len(rows) == view.MAX_ROWS
    assert "layers.4999.weight" in rows[0] and "tripped at step 250" in rows[0]
    assert "showing 40 of 5000 tensors" in html and "4960 left out" in text
    assert len(html) < 2_000_000 and seconds < 5
    # 300 steps on a 96-pixel sparkline: bucketed, never 300 points.
    spark = re.search(r'<polyline points="([^"]*)"', rows[1]).group(1)
    assert len(spark.split()) <= 2 * 96


# --------------------------------------------------------------------------- the report


def test_the_report_after_a_stop_says_condition_threshold_tensor_step_values_line_and_history():
    history = _net([_trip(step=12)], stopped=True)
    text = view.text_report(history)
    assert "Tripped at step 12: grads fc3.weight: abs_mean 3.0e-09 < 1e-07 at step 12" in text
    assert f"condition: `{VANISHING}`" in text
    assert "threshold: abs_mean_lt=1e-07" in text
    assert "tensor: gradient of fc3.weight, shape (10, 64) float32" in text
    assert "step: 12" in text
    assert "values: abs_mean 3e-09 against abs_mean_lt 1e-07" in text
    assert "defined at: cell [1], line 6" in text
    assert "stopped at the end of step 12" in text
    assert "history of fc3.weight over steps 0..12:" in text
    html = view.html_report(history)
    chart = re.findall(r'<svg[^>]*class="msdebug-chart".*?</svg>', html)
    assert len(chart) == 1 and "tripped: step 12" in chart[0] and "|mean|" in chart[0]
    assert "cell [1], line 6" in html and "abs_mean_lt=1e-07" in html


def test_an_activation_is_named_with_its_cell_scope_and_no_stop_says_the_training_went_on():
    trip = Trip("acts:encoder/*:all_zero(zero_percentage_ge=100)", "encoder.layers.0.relu", "act", 4,
                {"zero_share": 1.0}, {"zero_percentage_ge": 100.0}, "acts encoder.layers.0.relu: all zero at step 4")  # fmt: skip
    history = _net([trip, _trip(step=7)], stopped=False)
    text = view.text_report(history)
    assert "tensor: activation of Cell encoder.layers.0.relu (scope encoder/layers/0/relu)" in text
    assert "defined at: cell [1], line 9" in text
    assert "went on (--no-stop); 13 steps watched in all" in text
    assert "also tripped (1):" in text and "grads fc3.weight: abs_mean 3.0e-09 < 1e-07 at step 7" in text


def test_nothing_tripped_says_how_many_steps_and_the_conditions():
    text = view.text_report(_net(conditions=(VANISHING, "loss:not_finite")))
    assert text.splitlines()[0] == (
        f"13 steps watched, nothing tripped: conditions {VANISHING}, loss:not_finite; 1 weight, 1 grad, 1 act, the loss."
    )


@pytest.mark.parametrize(
    ("history", "said"),
    [
        (_net(steps=[]), "0 steps watched: 1 weight, 1 grad, 1 act, the loss watched, but no step ended"),
        (History([], []), "Nothing watched: no tensor matched the conditions"),
        (History([], range(3)), "Nothing watched: no tensor matched the conditions"),
    ],
)
def test_nothing_watched_is_said_plainly_never_nothing_tripped(history, said):
    for form in (view.text_report(history), _plain(view.html_report(history))):
        assert said in form and "nothing tripped" not in form


def test_a_partial_report_says_why():
    text = view.text_report(_net(), "interrupted: what was recorded until then")
    assert text.splitlines()[0] == "partial watch: interrupted: what was recorded until then"
