"""The settings panel's costs against baselines measured in the same run.

* ``panel.refresh()`` (what every open panel does after each cell and each write) against
  ``settings.state()`` (the read behind ``%mscontext``) and against reading the same keys
  with ``mindspore.get_context`` (freezing keys left out);
* the post_run_cell hook with no panel open, against calling an empty function;
* ``msdebug.set(mode=...)`` with one panel open (outside a cell, and inside one, where
  panels wait for its end), against the same with none;
* building a panel, against ``settings.state()``.

Goals: refresh under 3x ``settings.state()``; the idle hook under 1 µs. The script exits 1
when it misses one.

    python benchmarks/bench_panel.py [--number 300]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import timeit

from goals import verdict

REFRESH_OVER_STATE = 3.0
IDLE_HOOK_US = 1.0


def _best(stmt, number: int, repeat: int = 5) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=repeat)) / number


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=300)
    args = parser.parse_args()
    number = args.number

    import mindspore as ms

    import msdebug
    from msdebug import backend, settings
    from msdebug.ipython.hooks import refresh_after_cell

    ms.log._get_logger().setLevel(logging.ERROR)  # set_context's deprecation lines are not the point here
    live = backend.get_backend()
    readable = [name for name in live.live_keys() if live.readable(name) and name != "device_id"]

    def get_context_all():
        for name in readable:
            ms.get_context(name)

    def nothing(result=None):
        return None

    flip = [0]

    def set_mode():
        flip[0] ^= 1
        msdebug.set(mode=flip[0])

    t_state = _best(settings.state, number)
    t_get = _best(get_context_all, number // 10 or 1)
    t_idle_hook = _best(refresh_after_cell, number * 100)
    t_nothing = _best(nothing, number * 100)
    t_set_alone = _best(set_mode, number)

    start = time.perf_counter()
    panel = msdebug.panel()
    t_build = time.perf_counter() - start
    widgets = len(panel._widgets)
    t_refresh = _best(panel.refresh, number)
    t_set_panel = _best(set_mode, number)
    settings.hold()  # as while a cell runs: the panel refreshes once, at its end
    t_set_held = _best(set_mode, number)
    settings.release()
    t_hook_panel = _best(refresh_after_cell, number)
    panel.close()

    result = {
        "refresh_us": t_refresh * 1e6,
        "state_us": t_state * 1e6,
        "get_context_all_us": t_get * 1e6,
        "refresh_over_state": t_refresh / t_state,
        "refresh_over_get_context_all": t_refresh / t_get,
        "idle_hook_us": t_idle_hook * 1e6,
        "empty_call_us": t_nothing * 1e6,
        "hook_with_panel_us": t_hook_panel * 1e6,
        "set_mode_us": t_set_alone * 1e6,
        "set_mode_with_panel_us": t_set_panel * 1e6,
        "set_mode_with_panel_in_a_cell_us": t_set_held * 1e6,
        "build_ms": t_build * 1e3,
        "build_over_state": t_build / t_state,
        "widgets": widgets,
    }
    print(f"panel.refresh()              {result['refresh_us']:8.1f} µs")
    print(
        f"  settings.state()           {result['state_us']:8.1f} µs   refresh/state = {result['refresh_over_state']:.2f}"
    )
    print(
        f"  get_context of {len(readable)} keys     {result['get_context_all_us']:8.1f} µs   "
        f"refresh/get_context = {result['refresh_over_get_context_all']:.2f}"
    )
    print(
        f"post_run_cell, no panel      {result['idle_hook_us']:8.3f} µs   (empty call {result['empty_call_us']:.3f} µs)"
    )
    print(f"post_run_cell, one panel     {result['hook_with_panel_us']:8.1f} µs")
    print(
        f"msdebug.set(mode=...)        {result['set_mode_us']:8.1f} µs   with one panel: "
        f"{result['set_mode_with_panel_us']:.1f} µs outside cells, "
        f"{result['set_mode_with_panel_in_a_cell_us']:.1f} µs inside one"
    )
    print(f"building a panel             {result['build_ms']:8.1f} ms   ({widgets} widgets)")
    print(json.dumps(result))
    refresh, idle = result["refresh_over_state"], result["idle_hook_us"]
    return verdict(
        {
            f"panel.refresh() under {REFRESH_OVER_STATE:.0f}x settings.state() ({refresh:.2f}x)": refresh
            < REFRESH_OVER_STATE,
            f"post_run_cell with no panel under {IDLE_HOOK_US:.0f} µs ({idle:.3f} µs)": idle < IDLE_HOOK_US,
        }
    )


if __name__ == "__main__":
    sys.exit(main())
