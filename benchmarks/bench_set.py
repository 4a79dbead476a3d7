"""``%mscontext key=value`` against a bare ``mindspore.set_context`` of the same key, same run.

Both are warm (MindSpore imported, first call done). Each call of the magic is split as it
runs: IPython's dispatch (the call less the time inside msdebug's magic), the MindSpore setter
msdebug ends in (the time inside MindSpore's setter functions, timed where msdebug calls them),
and msdebug's own work (the time inside the magic less the time inside the setter: nested
intervals of one call, so it cannot come out negative; the timer around the setter counts as
msdebug's). Each part is the median over ``--number`` calls, as is the bare set_context,
timed call by call alternately with the magic; every call changes the value.

Both sides do the same MindSpore work: MindSpore's logger is set to ERROR while they are timed,
so the deprecation line a bare ``set_context`` logs for a deprecated key (``save_graphs``,
``pynative_synchronize``, ``max_call_depth``), which msdebug's path does not write, costs the
baseline only the logger's level check. The script lists which keys log one.

Goal: msdebug's own work under 1.5x the bare set_context, for every key. The script exits 1
when a key misses it.

    python benchmarks/bench_set.py [--number 2000]
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import statistics
import sys
import timeit
from time import perf_counter

from goals import verdict

GOAL = 1.5

CASES = [
    # key, two values for set_context, the same two as typed after %mscontext
    ("mode", (0, 1), ("graph", "pynative")),
    ("pynative_synchronize", (True, False), ("true", "false")),
    ("save_graphs", (1, 0), ("1", "0")),
    ("max_call_depth", (2000, 1000), ("2000", "1000")),
    # set_auto_parallel_context's: its baseline is that function
    ("parallel_mode", ("data_parallel", "stand_alone"), ("data_parallel", "stand_alone")),
    ("device_num", (8, 1), ("8", "1")),
]
PARALLEL = ("parallel_mode", "device_num")


def _best(stmt, number: int, repeat: int = 7) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number


class _Inside:
    """Seconds spent inside the wrapped functions; a call nested in another wrapped one counts
    once, in the outer."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._depth = 0

    def wrap(self, fn):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            if self._depth:
                return fn(*args, **kwargs)
            self._depth += 1
            start = perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += perf_counter() - start
                self._depth -= 1

        return timed


class _Timed:
    """Entered around each call of the magic only (the bare set_context goes through the same
    ``set_param``), it measures the time inside msdebug's ``%mscontext`` function (``magic``) and inside the
    MindSpore setters any path of msdebug's ends in (``setter``): the per-key setters and
    ``set_param`` of MindSpore's context object, ``set_context`` and
    ``set_auto_parallel_context``."""

    def __init__(self, ip, backend) -> None:
        self.ip, self.backend = ip, backend
        self.magic, self.setter = _Inside(), _Inside()

    def __enter__(self) -> _Timed:
        import mindspore as ms

        self.magic.seconds = self.setter.seconds = 0.0
        backend, line = self.backend, self.ip.magics_manager.magics["line"]
        self._saved = (line["mscontext"], dict(backend._setters), ms.set_context, ms.set_auto_parallel_context)
        line["mscontext"] = self.magic.wrap(line["mscontext"])
        backend._setters.update({name: self.setter.wrap(fn) for name, fn in backend._setters.items()})
        backend._ctx.set_param = self.setter.wrap(backend._ctx.set_param)  # an instance attribute, deleted after
        ms.set_context = self.setter.wrap(ms.set_context)
        ms.set_auto_parallel_context = self.setter.wrap(ms.set_auto_parallel_context)
        return self

    def __exit__(self, *exc) -> None:
        import mindspore as ms

        magic, setters, ms.set_context, ms.set_auto_parallel_context = self._saved
        self.ip.magics_manager.magics["line"]["mscontext"] = magic
        self.backend._setters.clear()
        self.backend._setters.update(setters)
        del self.backend._ctx.set_param


def _logs(key, values) -> int:
    """How many records MindSpore's logger gets from two bare calls with ``key``."""
    import mindspore as ms

    logger, count = ms.log._get_logger(), [0]

    class Count(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            count[0] += 1
            return False

    counter = Count()
    logger.addFilter(counter)
    try:
        set_bare = ms.set_auto_parallel_context if key in PARALLEL else ms.set_context
        for value in values:
            set_bare(**{key: value})
    finally:
        logger.removeFilter(counter)
    return count[0]


def _measure(ip, backend, key, values, typed, number: int) -> dict:
    import mindspore as ms

    set_bare = ms.set_auto_parallel_context if key in PARALLEL else ms.set_context
    for value, text in zip(values, typed, strict=True):  # warm
        set_bare(**{key: value})
        ip.run_line_magic("mscontext", f"{key}={text}")
    bare, total, dispatch, own, setter = [], [], [], [], []
    timed = _Timed(ip, backend)

    def set_with_msdebug(text: str) -> None:
        with timed:
            start = perf_counter()
            ip.run_line_magic("mscontext", f"{key}={text}")
            call = perf_counter() - start
        total.append(call)
        dispatch.append(call - timed.magic.seconds)
        own.append(timed.magic.seconds - timed.setter.seconds)
        setter.append(timed.setter.seconds)

    def set_bare_timed(value) -> None:
        start = perf_counter()
        set_bare(**{key: value})
        bare.append(perf_counter() - start)

    # Every call changes the value (msdebug writes nothing for a value already set): the bare call
    # sets the first value and the magic the second, then the magic the first and the bare call
    # the second, and so on; each side sets both values and goes first equally often.
    for i in range(number):
        if i % 2 == 0:
            set_bare_timed(values[0])
            set_with_msdebug(typed[1])
        else:
            set_with_msdebug(typed[0])
            set_bare_timed(values[1])
    assert min(own) >= 0 and min(dispatch) >= 0, "nested intervals came out negative"
    assert max(setter) > 0, f"%mscontext {key}=... never reached a MindSpore setter"
    t_bare, t_own = statistics.median(bare), statistics.median(own)
    return {
        "key": key,
        "set_context_us": t_bare * 1e6,
        "mscontext_us": statistics.median(total) * 1e6,
        "ipython_dispatch_us": statistics.median(dispatch) * 1e6,
        "mindspore_setter_us": statistics.median(setter) * 1e6,
        "msdebug_own_us": t_own * 1e6,
        "ratio": statistics.median(total) / t_bare,
        "ratio_msdebug_own": t_own / t_bare,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()

    import mindspore as ms
    from IPython.testing.globalipapp import start_ipython

    from msdebug.backend import get_backend

    ip = start_ipython()
    ip.run_line_magic("load_ext", "msdebug")
    ip.run_line_magic("mscontext", "mode=pynative")  # MindSpore imported, msdebug's backend made
    logged = {key: _logs(key, values) for key, values, _ in CASES}
    # Neither side's deprecation lines are written while timed: msdebug's path does not log
    # them, and for the bare set_context the logger's level check drops them.
    logger = ms.log._get_logger()
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        rows = [_measure(ip, get_backend(), key, values, typed, args.number) for key, values, typed in CASES]
    finally:
        logger.setLevel(level)
    scoped_empty = _best(lambda: ip.run_cell("pass", store_history=False), 300)
    scoped = _best(lambda: ip.run_cell("%%mscontext mode=graph\npass", store_history=False), 300)
    ip.run_line_magic("mscontext", "mode=pynative")
    print(
        f"{'key':22s} {'set_context':>11s} {'%mscontext':>11s}  = {'IPython':>8s} + {'msdebug':>8s} + "
        f"{'MindSpore':>9s}   {'ratio':>6s} {'msdebug/set_context':>20s}"
    )
    for row in rows:
        row["set_context_logs_per_call"] = logged[row["key"]] / 2
        print(
            f"{row['key']:22s} {row['set_context_us']:9.1f}us {row['mscontext_us']:9.1f}us  = "
            f"{row['ipython_dispatch_us']:6.1f}us + {row['msdebug_own_us']:6.1f}us + {row['mindspore_setter_us']:7.1f}us"
            f"   {row['ratio']:5.2f}x {row['ratio_msdebug_own']:19.2f}x"
        )
    print(f"medians of {args.number} calls; keys whose bare set_context logs a deprecation line (not written while "
          f"timed): {', '.join(key for key, n in logged.items() if n) or 'none'}")  # fmt: skip
    print(f"goal: under {GOAL}x a bare set_context, excluding IPython's dispatch and MindSpore's own work")
    print(
        f"%%mscontext cell (snapshot, apply, restore) {scoped * 1e6:.0f}us vs an empty cell {scoped_empty * 1e6:.0f}us"
    )
    print(json.dumps({"rows": rows, "scoped_cell_us": scoped * 1e6, "empty_cell_us": scoped_empty * 1e6}))
    goals = {}
    for row in rows:
        own = row["ratio_msdebug_own"]
        goals[f"{row['key']}: msdebug's own work under {GOAL}x set_context ({own:.2f}x)"] = own < GOAL
    return verdict(goals)


if __name__ == "__main__":
    sys.exit(main())
