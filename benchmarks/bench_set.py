"""``%mscontext key=value`` against a bare ``mindspore.set_context`` of the same key, same run.

Both are warm (MindSpore imported, first call done). The magic's time is split into
IPython's dispatch of any line magic, msdebug's own work, and the MindSpore setter it ends
in.
Goal: msdebug's own work (the magic less IPython's dispatch of any line magic and less the
MindSpore setter it ends in) under 1.5x the bare set_context, for every key. The script exits 1
when a key misses it.

    python benchmarks/bench_set.py [--number 2000]
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import sys
import timeit

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


def _best(stmt, number: int, repeat: int = 7) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number


def _measure(ip, ctx, params, key, values, typed, number: int, dispatch: float) -> dict:
    import mindspore as ms

    setters = getattr(type(ctx), "setters", {})
    flip = [0]

    def alternate(pair):
        flip[0] ^= 1
        return pair[flip[0]]

    parallel = key in ("parallel_mode", "device_num")
    set_bare = ms.set_auto_parallel_context if parallel else ms.set_context

    def bare():
        set_bare(**{key: alternate(values)})

    def magic():
        ip.run_line_magic("mscontext", f"{key}={alternate(typed)}")

    def setter():  # the MindSpore work msdebug's own path ends in
        value = alternate(values)
        if parallel:
            set_bare(**{key: value})
        elif key in setters:
            setters[key](ctx, value)
        else:
            ctx.set_param(params[key], value)

    for fn in (bare, magic, setter):
        fn(), fn()  # warm
    t_bare, t_magic, t_setter = (_best(fn, number) for fn in (bare, magic, setter))
    own = t_magic - t_setter - dispatch
    return {
        "key": key,
        "set_context_us": t_bare * 1e6,
        "mscontext_us": t_magic * 1e6,
        "ipython_dispatch_us": dispatch * 1e6,
        "mindspore_setter_us": t_setter * 1e6,
        "msdebug_own_us": own * 1e6,
        "ratio": t_magic / t_bare,
        "ratio_msdebug_own": own / t_bare,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()

    import mindspore as ms
    from IPython.core.magic import register_line_magic
    from IPython.testing.globalipapp import start_ipython
    from mindspore._c_expression import ms_ctx_param
    from mindspore.context import _context

    ip = start_ipython()
    ip.run_line_magic("load_ext", "msdebug")
    # MindSpore logs a deprecation line on every set_context of a deprecated key; send its
    # handler to memory so the terminal is not flooded (the logging cost is still paid).
    handler = ms.log._get_logger().handlers[0]
    if isinstance(handler, logging.StreamHandler):
        handler.setStream(io.StringIO())

    @register_line_magic
    def bench_noop(line):  # what IPython costs for any line magic, before msdebug runs
        return None

    dispatch = _best(lambda: ip.run_line_magic("bench_noop", "mode=graph"), args.number)
    ctx, params = _context(), dict(ms_ctx_param.__members__)
    rows = [_measure(ip, ctx, params, key, values, typed, args.number, dispatch) for key, values, typed in CASES]
    scoped_empty = _best(lambda: ip.run_cell("pass", store_history=False), 300)
    scoped = _best(lambda: ip.run_cell("%%mscontext mode=graph\npass", store_history=False), 300)
    ip.run_line_magic("mscontext", "mode=pynative")
    print(
        f"{'key':22s} {'set_context':>11s} {'%mscontext':>11s}  = {'IPython':>8s} + {'msdebug':>8s} + "
        f"{'MindSpore':>9s}   {'ratio':>6s} {'msdebug/set_context':>20s}"
    )
    for row in rows:
        print(
            f"{row['key']:22s} {row['set_context_us']:9.1f}us {row['mscontext_us']:9.1f}us  = "
            f"{row['ipython_dispatch_us']:6.1f}us + {row['msdebug_own_us']:6.1f}us + {row['mindspore_setter_us']:7.1f}us"
            f"   {row['ratio']:5.2f}x {row['ratio_msdebug_own']:19.2f}x"
        )
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
