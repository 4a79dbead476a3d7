"""``%%mswatch`` in the real IPython shell and a real kernel, with the real MindSpore CPU build:
the grammar and its one-line errors, the live updates and their throttle, the report after a
stop, Ctrl-C, and ``msdebug watch-report DIR``."""

from __future__ import annotations

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
