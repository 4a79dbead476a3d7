"""``%%mswatch`` in the real IPython shell and a real kernel, with the real MindSpore CPU build:
the grammar and its one-line errors, the live updates and their throttle, the report after a
stop, Ctrl-C, and ``msdebug watch-report DIR``."""

from __future__ import annotations

import time

import pytest
from IPython.core.error import UsageError

from msdebug.ipython.magics.watch import WATCH, Live

# --------------------------------------------------------------------------- the grammar


def test_conditions_are_bare_tokens_kept_whole_in_order_beside_the_options():
    parsed = WATCH.parse(
        "grads:*:vanishing(abs_mean_lt=1e-7) --every 5 weights:fc*:not_changed(rtol = 1e-5, atol=0) "
        "--no-stop --save runs/w1 loss:not_finite",
        cell="pass",
    )
    assert parsed.names == (
        "grads:*:vanishing(abs_mean_lt=1e-7)",
        "weights:fc*:not_changed(rtol = 1e-5, atol=0)",
        "loss:not_finite",
    )
    assert parsed.options == {"--every": 5, "--no-stop": True, "--save": "runs/w1"}
    assert WATCH.usage() == "%%mswatch [CONDITION ...] [--every N] [--stop] [--no-stop] [--save DIR]"


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("--every 0", "%%mswatch: --every is a whole number from 1 to 1000000, got '0'."),
        ("--every ten", "%%mswatch: --every is a whole number from 1 to 1000000, got 'ten'."),
        ("--evry 2", "Did you mean '--every'?"),
        ("--no_stop", "Did you mean '--no-stop'?"),
        ("--stop --no-stop", "%%mswatch: --stop and --no-stop are given together; choose one."),
        ("--save", "%%mswatch: --save needs a value: --save DIR."),
        ("grads:*:vanishing(abs_mean_lt=1e-7", "unclosed bracket"),
    ],
)
def test_a_bad_line_is_one_line_and_the_cell_does_not_run(ip, line, said):
    ip.user_ns["ran"] = False
    result = ip.run_cell(f"%%mswatch {line}\nran = True")
    error = result.error_in_exec
    assert type(error) is UsageError and said in str(error) and "\n" not in str(error), (line, error)
    assert ip.user_ns["ran"] is False


# --------------------------------------------------------------------------- the throttle


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_updates_are_throttled_by_the_clock_to_four_a_second_and_the_first_step_shows_at_once():
    clock, shown = Clock(), []
    live = Live(shown.append, clock=clock)
    for step in range(100):  # 100 steps in 2.5 s of clock: one every 25 ms
        live(step)
        clock.now += 0.025
    assert shown[0] == 0  # the first step is shown at once
    assert shown == list(range(0, 100, 10))  # then one every 0.25 s, never more
    assert (live.shown, live.skipped) == (10, 90)


# --------------------------------------------------------------------------- msdebug watch-report


def _saved(path, trip: bool, steps: int = 4, watched: bool = True):
    """A watch saved by dumps.watch, as %%mswatch --save writes it."""
    from msdebug.dumps.watch import STATS, Trip, Watched, WatchHistory

    history = WatchHistory(conditions=["grads:*:vanishing(abs_mean_lt=1e-07)"], stopped=trip)
    if watched:
        history.add(Watched("fc.weight", "grad", (4, 4), "float32", defined_at="cell [3], line 2"))
    for step in range(steps):
        history.record(step, {("grad", "fc.weight"): {s: 0.5 / (step + 1) for s in STATS}} if watched else {})
    if trip:
        history.trips.append(
            Trip(
                "grads:*:vanishing(abs_mean_lt=1e-07)",
                "fc.weight",
                "grad",
                steps - 1,
                {"abs_mean": 3e-9},
                {"abs_mean_lt": 1e-7},
                f"grads fc.weight: abs_mean 3e-09 < 1e-07 at step {steps - 1}",
            )  # fmt: skip
        )
    return history.save(path)


@pytest.mark.parametrize(
    ("trip", "steps", "watched", "status", "said"),
    [
        (True, 4, True, 1, "Tripped at step 3: grads fc.weight: abs_mean 3e-09 < 1e-07 at step 3"),
        (False, 4, True, 0, "4 steps watched, nothing tripped: conditions grads:*:vanishing(abs_mean_lt=1e-07)"),
        (False, 0, True, 3, "0 steps watched: 1 grad watched, but no step ended"),
        (False, 3, False, 3, "Nothing watched: no tensor matched the conditions"),
    ],
)
def test_watch_report_prints_the_saved_report_and_its_status_says_what_it_found(
    tmp_path, capsys, trip, steps, watched, status, said
):
    from msdebug.cli import main

    saved = _saved(tmp_path / "w", trip, steps, watched)
    assert main(["watch-report", str(saved)]) == status
    out = capsys.readouterr().out
    assert said in out.splitlines()[0]
    if trip:
        assert "defined at: cell [3], line 2" in out and "history of fc.weight over steps 0..3:" in out


def test_watch_report_on_a_bad_dir_is_one_line(tmp_path, capsys):
    from msdebug.cli import main

    (tmp_path / "file").write_text("x")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "watch.json").write_text('{"format": 1, "stats": ["max"]\n\n}')
    (tmp_path / "empty").mkdir()
    for path, said in (
        (tmp_path / "missing", "does not exist; give the DIR of %%mswatch --save DIR."),
        (tmp_path / "file", "is not a directory"),
        (tmp_path / "junk", "is not a saved watch:"),
        (tmp_path / "empty", "is not a saved watch:"),
    ):
        assert main(["watch-report", str(path)]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and said in captured.err and captured.err.count("\n") == 1, (path, captured.err)


# --------------------------------------------------------------------------- real trainings

SETUP = """
import numpy as np, mindspore as ms, msdebug
from mindspore import nn
ms.set_context(mode=ms.PYNATIVE_MODE)
ms.set_seed(0)  # the same networks every run: a test's answer must not depend on a draw
class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(8, 16)
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(16, 1)
    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))
def trainer(lr):
    net = Net()
    return net, nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), lr))
net, train = trainer(0.0)  # a learning rate of 0: the weights never change
x = ms.Tensor(np.random.default_rng(0).random((4, 8), np.float32))
y = ms.Tensor(np.zeros((4, 1), np.float32))
"""


@pytest.fixture
def trained(ip):
    """The session's shell with this module's training in it, and no network, optimizer or
    Model that other modules' tests left there: the watch looks at the whole namespace, and
    their names would come first in its messages."""
    from mindspore import nn
    from mindspore.train import Model

    for name, value in list(ip.user_ns.items()):
        if not name.startswith("_") and isinstance(value, (nn.Cell, nn.Optimizer, Model)):
            del ip.user_ns[name]
    ip.run_cell(SETUP).raise_error()
    return ip


def _shown(ip, cell: str):
    """Run ``cell``; the report it displayed (captured from the display publisher), and its result."""
    from msdebug.ipython.magics.watch import Watching

    shown = []
    original = ip.display_formatter.format

    def format(obj, *args, **kwargs):
        if isinstance(obj, Watching):
            shown.append(obj)
        return original(obj, *args, **kwargs)

    ip.display_formatter.format = format
    try:
        result = ip.run_cell(cell)
    finally:
        ip.display_formatter.format = original
    return shown, result


def test_a_frozen_layer_stops_the_training_at_its_first_step_and_the_report_says_where(trained):
    shown, result = _shown(
        trained, "%%mswatch weights:fc1*:not_changed\nfor i in range(20):\n    train(x, y)\ndone = True"
    )
    # Stopped at the end of step 0: the loop went no further, the cell ended cleanly.
    assert result.error_in_exec is None and trained.user_ns["i"] == 0 and "done" not in trained.user_ns
    assert len(shown) == 1 and shown[0].final
    history = shown[0].history
    assert history.stopped and history.first_trip.name == "fc1.weight" and history.first_trip.step == 0
    text = repr(shown[0])
    assert "Tripped at step 0: weights fc1.weight: unchanged" in text
    assert "condition: `weights:fc1*:not_changed(rtol=1e-05,atol=1e-08)`" in text
    assert "tensor: parameter fc1.weight, shape (16, 8)" in text and "stopped at the end of step 0" in text
    assert "* fc1.weight" in text
    assert "tripped at step 0" in shown[0]._repr_html_()


def test_nothing_tripped_says_the_steps_and_the_updates_were_throttled(trained):
    trained.run_cell("net, train = trainer(0.01)").raise_error()
    started = time.monotonic()
    shown, result = _shown(
        trained, "%%mswatch grads:*:vanishing(abs_mean_lt=1e-30)\nfor i in range(40):\n    train(x, y)"
    )
    seconds = time.monotonic() - started
    assert result.error_in_exec is None
    text = repr(shown[-1])
    assert text.startswith("40 steps watched, nothing tripped: conditions grads:*:vanishing(abs_mean_lt=1e-30)")
    live = trained.magics_manager.registry["WatchMagics"].last_live
    assert live.shown + live.skipped == 40 and live.shown >= 1  # the first step is shown at once
    assert live.shown <= 1 + 4 * seconds  # never more than 4 a second over the time the cell ran


@pytest.mark.parametrize(
    ("condition", "said"),
    [
        ("weights:fc9*:not_changed", "the pattern 'fc9*' matches no weights (fc1.weight, fc1.bias"),
        ("grads:*:vanishng", "Did you mean 'vanishing'?"),
        ("grads:*:vanishing(abs_mean_lt=abc)", "abs_mean_lt must be a number, got 'abc'."),
    ],
)
def test_a_bad_condition_is_one_line_and_the_training_does_not_start(trained, condition, said):
    trained.user_ns["ran"] = 0
    shown, result = _shown(trained, f"%%mswatch {condition}\nfor i in range(3):\n    ran += 1\n    train(x, y)")
    error = result.error_in_exec
    assert type(error) is UsageError and said in str(error) and "\n" not in str(error)
    assert trained.user_ns["ran"] == 0 and shown == []


def test_save_then_watch_report_reads_it(trained, tmp_path, capsys):
    from msdebug.cli import main

    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    result = trained.run_cell(f"%%mswatch --save {tmp_path / 'full'}\ntrain(x, y)")
    assert type(result.error_in_exec) is UsageError and "is not an empty directory" in str(result.error_in_exec)
    _shown(trained, f"%%mswatch weights:fc1*:not_changed --save {tmp_path / 'w'}\nfor i in range(5):\n    train(x, y)")
    capsys.readouterr()
    assert main(["watch-report", str(tmp_path / "w")]) == 1
    assert "Tripped at step 0: weights fc1.weight: unchanged" in capsys.readouterr().out


# --------------------------------------------------------------------------- a real kernel


def _messages(kernel, msg_id: str, timeout: float = 300) -> list[dict]:
    """Every iopub message of the request, update_display_data included (Kernel.finish drops those)."""
    found = []
    while True:
        msg = kernel.client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return found
        found.append(msg)


def test_in_a_kernel_the_table_updates_live_throttled_and_ctrl_c_shows_what_was_recorded():
    from helpers import Kernel

    kernel = Kernel()
    try:
        status, outputs = kernel.run("%load_ext msdebug\n" + SETUP + "net, train = trainer(0.01)")
        assert status == "ok", outputs
        code = "%%mswatch grads:*:vanishing(abs_mean_lt=1e-30)\nimport time\nt0 = time.monotonic()\nfor i in range(60):\n    train(x, y)\nseconds = time.monotonic() - t0"
        messages = _messages(kernel, kernel.client.execute(code))
        kinds = [m["msg_type"] for m in messages if m["msg_type"] in ("display_data", "update_display_data", "error")]
        assert kinds[0] == "display_data" and set(kinds[1:]) == {"update_display_data"}, kinds
        updates = kinds.count("update_display_data")
        seconds = float(kernel.evaluate("", "seconds"))
        # The first step shows at once, then at most 4 a second; the last update is the report.
        assert 1 <= updates <= 2 + 4 * seconds, (updates, seconds)
        first = messages[[m["msg_type"] for m in messages].index("display_data")]["content"]["data"]["text/plain"]
        assert first.startswith("watching 4 weights, 4 grads, 3 acts, the loss: 1 step recorded")
        last = [m for m in messages if m["msg_type"] == "update_display_data"][-1]["content"]["data"]
        assert (
            last["text/plain"].startswith("60 steps watched, nothing tripped") and "msdebug-spark" in last["text/html"]
        )

        msg_id = kernel.start_until(
            "%%mswatch\nfor i in range(100000):\n    train(x, y)\n    if i == 3:\n        open('stepped', 'w').close()",
            "stepped",
        )
        kernel.manager.interrupt_kernel()
        messages = _messages(kernel, msg_id)
        errors = [m["content"]["ename"] for m in messages if m["msg_type"] == "error"]
        assert errors == ["KeyboardInterrupt"]
        shown = [m for m in messages if m["msg_type"] in ("display_data", "update_display_data")]
        assert shown[-1]["content"]["data"]["text/plain"].startswith("partial watch: interrupted")
        # Every hook went with the interrupt: the next watched cell starts clean and records its own steps.
        messages = _messages(
            kernel, kernel.client.execute("%%mswatch loss:not_finite\nfor i in range(3):\n    train(x, y)")
        )
        assert not [m for m in messages if m["msg_type"] == "error"]
        shown = [m for m in messages if m["msg_type"] in ("display_data", "update_display_data")]
        assert shown[-1]["content"]["data"]["text/plain"].startswith("3 steps watched, nothing tripped")
    finally:
        kernel.close()
