"""Profiling: a ``%%msprofile`` cell against MindSpore's own profiler, and reading a big profile.

1. The same GRAPH loop (``--steps`` steps of a 3-layer MLP, steps 5..15 recorded) three ways,
   alternating, median of ``--repeat`` runs each:

   * baseline: ``mindspore.profiler.profile(start_profile=False)`` with
     ``tensorboard_trace_handler(dir, analyse_flag=False)``, ``start()`` at step 5 and ``stop()``
     at step 15, as the profiler guide does it by hand;
   * ``%%msprofile --steps 5:15`` in an IPython shell, the body marking steps with
     ``msdebug.step()``: also reads the files back and renders the report (HTML and text);
   * both again with the analysis (``analyse_flag=True`` / ``--timeline``).

   Goal: at most 1.1x the baseline plus a fixed cost of at most ``FIXED_MS`` (50 ms), that is
   ``msprofile <= 1.1 * mindspore + 50 ms``; the excess over 1.1x is reported as the fixed cost
   it took. The part of msdebug's work that does not grow with the steps, reading the
   output back and rendering the report (``open_profile`` + HTML + text of the same
   directory), is measured on its own, reported, and held to the same 50 ms.

2. Reading a generated profile of ``--ops`` x ``--steps-big`` op executions (the real CPU
   format: op-type CSV, op-detail CSV, timestamp file) with ``msdebug.open_profile`` against a
   bare ``csv.reader`` pass over the same files, interleaved, fastest of ``--repeat`` runs each.
   Goals: at least 0.5x the baseline's speed;
   peak memory under 200 MB (``tracemalloc`` peak of the read, and the peak RSS of a fresh
   interpreter that only reads).

The script exits 1 when any goal is missed.

    python benchmarks/bench_profile.py [--repeat 5] [--ops 1000] [--steps-big 1000]
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from goals import verdict

LOOP = 20
START, STOP = 5, 15
RATIO = 1.1
FIXED_MS = 50.0
READ_SPEED = 0.5
PEAK_MB = 200.0
BASE_NS = 1_795_448_225_925_894_390


def _net():
    import mindspore as ms
    import numpy as np
    from mindspore import nn

    ms.set_context(mode=ms.GRAPH_MODE)
    net = nn.SequentialCell([nn.Dense(256, 512), nn.ReLU(), nn.Dense(512, 512), nn.ReLU(), nn.Dense(512, 10)])
    x = ms.Tensor(np.ones((64, 256), np.float32))
    net(x).asnumpy()  # compile outside every measurement
    return net, x


def mindspore_loop(net, x, directory: str, analyse: bool) -> float:
    from mindspore.profiler import ProfilerActivity, profile, tensorboard_trace_handler

    start = time.perf_counter()
    prof = profile(
        activities=[ProfilerActivity.CPU],
        start_profile=False,
        on_trace_ready=tensorboard_trace_handler(directory, analyse_flag=analyse),
    )
    for step in range(LOOP):
        if step == START:
            prof.start()
        net(x).asnumpy()
        if step == STOP - 1:
            prof.stop()
    return time.perf_counter() - start


def read_and_render(directory: str) -> float:
    """msdebug's work that does not grow with the steps: the output read back, the report rendered."""
    import msdebug

    start = time.perf_counter()
    report = msdebug.open_profile(directory)
    report._repr_html_()
    repr(report)
    elapsed = time.perf_counter() - start
    assert len(report.steps.numbers) == STOP - START, report.steps
    return elapsed


def magic_loop(shell, directory: str, analyse: bool) -> float:
    timeline = " --timeline" if analyse else ""
    cell = f"for step in range({LOOP}):\n    net(x).asnumpy()\n    msdebug.step()\n"
    start = time.perf_counter()
    report = shell.run_cell_magic("msprofile", f"--steps {START}:{STOP} --output {directory}{timeline}", cell)
    report._repr_html_()
    repr(report)
    elapsed = time.perf_counter() - start
    assert len(report.steps.numbers) == STOP - START, report.steps
    return elapsed


def bench_cell(repeat: int) -> dict:
    from IPython.testing.globalipapp import start_ipython

    import msdebug

    shell = start_ipython()
    shell.run_line_magic("load_ext", "msdebug")
    net, x = _net()
    shell.user_ns.update(net=net, x=x, msdebug=msdebug)
    results = {}
    root = tempfile.mkdtemp(prefix="bench-profile-")
    try:
        for analyse in (False, True):
            base, ours, fixed = [], [], []
            for run in range(repeat):
                base.append(mindspore_loop(net, x, os.path.join(root, f"ms-{analyse}-{run}"), analyse))
                directory = os.path.join(root, f"msdebug-{analyse}-{run}")
                ours.append(magic_loop(shell, directory, analyse))
                fixed.append(read_and_render(directory))
            b, o, f = statistics.median(base), statistics.median(ours), statistics.median(fixed)
            results["timeline" if analyse else "tables"] = {
                "mindspore_s": round(b, 4),
                "msprofile_s": round(o, 4),
                "ratio": round(o / b, 3),
                "extra_ms": round((o - b) * 1000, 1),
                # what the cell took beyond 1.1x MindSpore's profiler: the fixed cost the goal bounds
                "fixed_cost_ms": round((o - RATIO * b) * 1000, 1),
                "read_and_render_ms": round(f * 1000, 1),
            }
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return results


# --------------------------------------------------------------------------- reading


def generate(directory: str, ops: int, steps: int) -> None:
    """A profile in the CPU profiler's format: ``ops`` ops, each run once per step."""
    framework = os.path.join(directory, "host_1_20261123000000000_ascend_ms", "FRAMEWORK")
    os.makedirs(framework)
    with open(os.path.join(framework, "cpu_op_execute_timestamp_0.txt"), "w") as handle:
        for op in range(ops):
            handle.write(f"Default/block{op // 10}-Dense/MatMul-op{op};HostCpuOps;")
            duration = f"{0.001 + (op % 7) * 0.0001:.6f}"
            handle.write(" ".join(f"{BASE_NS + s * 10_000_000 + op * 1000},{duration},0" for s in range(steps)))
            handle.write(" \n")
    with open(os.path.join(framework, "cpu_op_detail_info_0.csv"), "w") as handle:
        handle.write(
            "op_side,op_type,op_name,full_op_name,op_occurrences,op_total_time(ms),op_avg_time(ms),"
            "total_proportion,subgraph,pid\n"
        )
        for op in range(ops):
            total = steps * (0.001 + (op % 7) * 0.0001)
            handle.write(
                f"Host,MatMul,MatMul-op{op},Default/block{op // 10}-Dense/MatMul-op{op},{steps},{total:.6f},"
                f"{total / steps:.6f},{1 / ops:.6f},Default,1\n"
            )
    with open(os.path.join(framework, "cpu_op_type_info_0.csv"), "w") as handle:
        handle.write("op_type,type_occurrences,execution_frequency(per-step),total_compute_time,avg_time(ms),percent\n")
        handle.write(f"MatMul,{ops * steps},{ops},{ops * steps * 0.0013:.4f},0.0013,1\n")
    windows = [[s, BASE_NS + s * 10_000_000 - 1, BASE_NS + s * 10_000_000 + 5_000_000] for s in range(steps)]
    with open(os.path.join(directory, "msdebug_steps.json"), "w") as handle:
        json.dump({"steps": windows, "mode": "GRAPH"}, handle)


def bare_csv(directory: str) -> float:
    start = time.perf_counter()
    for path in glob.glob(os.path.join(directory, "*", "FRAMEWORK", "*")):
        with open(path, newline="") as handle:
            for _row in csv.reader(handle):
                pass
    return time.perf_counter() - start


def ours(directory: str) -> float:
    import msdebug

    start = time.perf_counter()
    report = msdebug.open_profile(directory)
    elapsed = time.perf_counter() - start
    assert report.runs[0].executions.count > 0 and report.runs[0].executions.outside == 0
    return elapsed


# VmHWM, not ru_maxrss: the latter keeps the peak of the forked parent across exec.
_PEAK = "print(int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) / 1024)"
_RSS_CHILD = f"""
import sys, msdebug
report = msdebug.open_profile(sys.argv[1])
assert report.runs[0].executions.count
{_PEAK}
"""
_RSS_IMPORT = f"""
import msdebug, numpy, msdebug.dumps.profile, msdebug.recorders.profile
{_PEAK}
"""


def bench_read(ops: int, steps: int, repeat: int) -> dict:
    import tracemalloc

    root = tempfile.mkdtemp(prefix="bench-profile-read-")
    try:
        generate(root, ops, steps)
        size = sum(os.path.getsize(p) for p in glob.glob(os.path.join(root, "*", "FRAMEWORK", "*")))
        base, mine = [], []
        for _ in range(repeat):
            base.append(bare_csv(root))
            mine.append(ours(root))
        tracemalloc.start()
        ours(root)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        env = {**os.environ}
        child = subprocess.run([sys.executable, "-c", _RSS_CHILD, root], capture_output=True, text=True, env=env)
        idle = subprocess.run([sys.executable, "-c", _RSS_IMPORT], capture_output=True, text=True, env=env)
        # The fastest run of each: on a shared machine the slower runs measure the neighbours.
        b, o = min(base), min(mine)
        return {
            "executions": ops * steps,
            "mb_on_disk": round(size / 2**20, 1),
            "bare_csv_s": round(b, 3),
            "open_profile_s": round(o, 3),
            "speed_vs_csv": round(b / o, 3),
            "tracemalloc_peak_mb": round(peak / 2**20, 1),
            "child_peak_rss_mb": float(child.stdout.strip() or "nan"),
            "child_rss_after_imports_mb": float(idle.stdout.strip() or "nan"),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def goals(results: dict) -> dict[str, bool]:
    read = results["read"]
    speed, traced, rss = read["speed_vs_csv"], read["tracemalloc_peak_mb"], read["child_peak_rss_mb"]
    out = {
        f"read: open_profile at least {READ_SPEED}x a bare csv pass ({speed}x)": speed >= READ_SPEED,
        f"read: tracemalloc peak under {PEAK_MB:.0f} MB ({traced} MB)": traced < PEAK_MB,
        f"read: peak RSS of a fresh reader under {PEAK_MB:.0f} MB ({rss:.0f} MB)": rss < PEAK_MB,
    }
    for name, row in results.get("cell", {}).items():
        ours, base = row["msprofile_s"] * 1000, row["mindspore_s"] * 1000
        budget = RATIO * base + FIXED_MS
        text = (
            f"{name}: %%msprofile {ours:.0f} ms <= {RATIO}x MindSpore's {base:.0f} ms + {FIXED_MS:.0f} ms "
            f"= {budget:.0f} ms (fixed cost beyond {RATIO}x: {row['fixed_cost_ms']} ms)"
        )
        out[text] = ours <= budget
        fixed = row["read_and_render_ms"]
        out[f"{name}: reading back and rendering the report under {FIXED_MS:.0f} ms ({fixed} ms)"] = fixed <= FIXED_MS
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--steps-big", type=int, default=1000)
    parser.add_argument("--skip-cell", action="store_true", help="only the reading benchmark")
    args = parser.parse_args()
    results = {"read": bench_read(args.ops, args.steps_big, args.repeat)}
    read = results["read"]
    print(
        f"read {read['executions']:,} executions ({read['mb_on_disk']} MB): open_profile {read['open_profile_s']} s, "
        f"bare csv {read['bare_csv_s']} s -> {read['speed_vs_csv']}x (goal >= 0.5x); peak "
        f"{read['tracemalloc_peak_mb']} MB traced, {read['child_peak_rss_mb']:.0f} MB RSS in a fresh interpreter "
        f"({read['child_rss_after_imports_mb']:.0f} MB of it imports) (goal < 200 MB)"
    )
    if not args.skip_cell:
        results["cell"] = bench_cell(args.repeat)
        for name, row in results["cell"].items():
            print(
                f"{name}: %%msprofile {row['msprofile_s']} s vs MindSpore's profiler {row['mindspore_s']} s -> "
                f"{row['ratio']}x, {row['extra_ms']} ms more; fixed cost beyond {RATIO}x {row['fixed_cost_ms']} ms "
                f"(goal <= {FIXED_MS:.0f} ms); "
                f"reading back + rendering {row['read_and_render_ms']} ms"
            )
    print(json.dumps(results))
    return verdict(goals(results))


if __name__ == "__main__":
    sys.exit(main())
