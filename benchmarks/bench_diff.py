"""Where two runs differ: ``msdebug diff`` of two dumps against bare numpy, and ``%%msdiff --repeat``
against the plain step.

1. Two data dumps in MindSpore's layout are generated in a temporary directory: ``--ops`` ops
   with one input and one output each, ``--kb`` KB per tensor (defaults: 1024 ops, 2048 tensors,
   1 GB per dump); they differ only in the last op's output, so every pair is compared.
   msdebug's diff (:func:`msdebug.dumps.diff.diff_runs` over :func:`read_any_run`: layout,
   alignment, chunked memmap comparison with every metric) runs against ``np.load`` of both
   files + ``np.allclose`` per pair, in the same order. Each runs in its own fresh interpreter,
   which reports its peak resident memory. The dumps are deleted afterwards.
2. One training step of a 20-layer MLP (PyNative, ``TrainOneStepCell`` + SGD) in a real
   IPython kernel (``jupyter_client``): a ``%%msdiff --repeat`` cell (the step twice under the
   recorder, Parameters put back in between, compared, and the report rendered: the HTML the
   kernel sends as the cell's value), against the same cell without the magic line: the step run
   once without msdebug. Each cell is timed from its execute request to its idle status, with
   its outputs received. The plain cell is timed ``--steps`` times before ``%load_ext msdebug``
   and ``--steps`` times after, alternating with the magic's; the faster of the two medians is
   the baseline. The magic's scratch directories are left to it (they go when the kernel ends).

3. Alignment across tools: two runs of 8,000 and of 200,000 ops whose scopes are spelled
   differently (``Default/block3-Block/MatMul-op31`` against ``Net/layers.3/matmul.33``, types
   as ``MatMul`` against ``matmulExt``), the second with an extra Cast every 50 ops: nothing
   aligns by scope, so every op is paired by type and order. The pairing must be the true one.

Goals: the diff at least 0.5x numpy's throughput with a peak under 300 MB; ``--repeat`` at most
4x the plain step; 8,000 ops aligned in under 2 s and 200,000 in under 60 s, every op with its
true partner. The script exits 1 when it misses one.

    python benchmarks/bench_diff.py [--ops 1024] [--kb 512] [--runs 3] [--steps 10]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from queue import Empty

import numpy as np
from bench_nan import make_dump
from goals import verdict

DIFF_RATIO = 0.5
DIFF_PEAK_MB = 300
REPEAT_RATIO = 4.0
ALIGN_GOALS = {8_000: 2.0, 200_000: 60.0}  # ops: seconds

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DIFF = """
import resource, sys, time
sys.path.insert(0, {root!r})
from msdebug.dumps.diff import diff_runs, read_any_run
start = time.perf_counter()
report = diff_runs(read_any_run({a!r}), read_any_run({b!r}))
seconds = time.perf_counter() - start
assert report.differs and report.first.a.index == {last} and report.compared_tensors == {tensors}, report
print(seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
BASELINE = """
import resource, sys, time
import numpy as np
pairs = [line.split() for line in open({listing!r}).read().splitlines()]
start = time.perf_counter()
first = None
for index, (a, b) in enumerate(pairs):
    if not np.allclose(np.load(a), np.load(b), rtol=1e-4, atol=1e-6) and first is None:
        first = index
seconds = time.perf_counter() - start
assert first == len(pairs) - 1
print(seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _one_more(values: np.ndarray) -> np.ndarray:
    changed = values.copy()
    changed[-1] += 1.0
    return changed


def run(code: str) -> tuple[float, int]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return float(out[-2]), int(out[-1]) // 1024


def bench_diff(args) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="msdebug-bench-diff-"))
    try:
        a, files_a = make_dump(scratch / "a", args.ops, args.kb, last=_one_more)
        b, files_b = make_dump(scratch / "b", args.ops, args.kb, last=None)
        listing = scratch / "pairs.txt"
        listing.write_text("\n".join(f"{x} {y}" for x, y in zip(files_a, files_b, strict=True)))
        size = sum(Path(f).stat().st_size for f in files_a + files_b)
        ours, base = [], []
        code = DIFF.format(root=str(ROOT), a=str(a), b=str(b), last=args.ops - 1, tensors=len(files_a))
        for _ in range(args.runs):  # interleaved; the page cache is as warm for one as for the other
            base.append(run(BASELINE.format(listing=str(listing))))
            ours.append(run(code))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    our_s, base_s = statistics.median(t for t, _ in ours), statistics.median(t for t, _ in base)
    result = {
        "tensor_pairs": len(files_a),
        "bytes": size,
        "diff_s": round(our_s, 3),
        "numpy_s": round(base_s, 3),
        "diff_gb_per_s": round(size / our_s / 1e9, 2),
        "numpy_gb_per_s": round(size / base_s / 1e9, 2),
        "throughput_ratio": round(base_s / our_s, 2),
        "diff_peak_mb": max(m for _, m in ours),
        "numpy_peak_mb": max(m for _, m in base),
    }
    print(
        f"diff of two dumps, {len(files_a)} tensor pairs, {size / 1e9:.2f} GB in all\n"
        f"  msdebug diff_runs      {our_s:.3f} s  {result['diff_gb_per_s']} GB/s  peak {result['diff_peak_mb']} MB\n"
        f"  np.load + allclose     {base_s:.3f} s  {result['numpy_gb_per_s']} GB/s  peak {result['numpy_peak_mb']} MB\n"
        f"  throughput ratio {result['throughput_ratio']}x (goal >= {DIFF_RATIO}), "
        f"peak {result['diff_peak_mb']} MB (goal < {DIFF_PEAK_MB})"
    )
    return result


SETUP = """
import numpy as np
import mindspore as ms
from mindspore import nn
ms.set_context(mode=ms.PYNATIVE_MODE)
layers = []
for _ in range(20):
    layers += [nn.Dense(64, 64), nn.ReLU()]
net = nn.SequentialCell(layers)
step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 1e-3))
x = ms.Tensor(np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32))
y = ms.Tensor(np.zeros((32, 64), np.float32))
"""
STEP = "step(x, y).asnumpy()"
MSDIFF = "%%msdiff --repeat\n" + STEP


def _cell(client, code: str, timeout: float = 300) -> tuple[float, list[dict]]:
    """Run ``code`` in the kernel: seconds from the execute request to its idle status, with
    every output of it received; and those outputs. Raises when the cell failed."""
    start = time.perf_counter()
    msg_id = client.execute(code)
    outputs = []
    while True:
        try:
            msg = client.get_iopub_msg(timeout=timeout)
        except Empty:
            raise RuntimeError(f"no idle status for {code!r} in {timeout} s; outputs: {outputs!r:.2000}") from None
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "status" and content["execution_state"] == "idle":
            break
        if kind in ("stream", "execute_result", "display_data", "error"):
            outputs.append({"type": kind, **content})
    seconds = time.perf_counter() - start
    reply = client.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = client.get_shell_msg(timeout=timeout)
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"{code!r} failed: {reply['content']} {outputs!r:.2000}")
    return seconds, outputs


def _evaluate(client, expression: str) -> list[str]:
    msg_id = client.execute("", silent=True, user_expressions={"value": expression})
    reply = client.get_shell_msg(timeout=60)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = client.get_shell_msg(timeout=60)
    value = reply["content"]["user_expressions"]["value"]
    if value["status"] != "ok":
        raise RuntimeError(f"{expression!r}: {value}")
    return value["data"]["text/plain"].strip("()").split(", ")


def bench_repeat(args) -> dict:
    from jupyter_client.manager import start_new_kernel

    cwd = tempfile.mkdtemp(prefix="msdebug-bench-kernel-")  # MindSpore may write into it
    manager, client = start_new_kernel(kernel_name="python3", cwd=cwd, startup_timeout=120)
    try:
        _cell(client, SETUP)
        for _ in range(3):  # warm: PyNative's first steps build its caches
            _cell(client, STEP)
        before = [_cell(client, STEP)[0] for _ in range(args.steps)]  # no msdebug in the kernel yet
        _cell(client, "%load_ext msdebug")
        _cell(client, MSDIFF)  # warm
        times = {"plain": [], "repeat": []}
        for _ in range(args.steps):
            for name, code in (("plain", STEP), ("repeat", MSDIFF)):
                seconds, outputs = _cell(client, code)
                times[name].append(seconds)
        results = [out for out in outputs if out["type"] == "execute_result"]
        assert results and "text/html" in results[-1]["data"], (
            f"the %%msdiff cell sent no HTML report: {outputs!r:.2000}"
        )
        html = results[-1]["data"]["text/html"]
        report = f"Out[{results[-1]['execution_count']}]"
        differs, ops, tensors = _evaluate(
            client, f"({report}.differs, {report}.compared_ops, {report}.compared_tensors)"
        )
        assert differs == "False" and int(ops) > 0, (differs, ops, tensors)
    finally:
        manager.shutdown_kernel(now=False)  # the kernel's exit removes the magic's scratch
        client.stop_channels()
        shutil.rmtree(cwd, ignore_errors=True)
    before_s, plain_s = statistics.median(before), statistics.median(times["plain"])
    base_s, repeat_s = min(before_s, plain_s), statistics.median(times["repeat"])
    result = {
        "step_ms_without_msdebug": round(before_s * 1e3, 2),
        "step_ms_msdebug_loaded": round(plain_s * 1e3, 2),
        "msdiff_repeat_ms": round(repeat_s * 1e3, 2),
        "ratio": round(repeat_s / base_s, 2),
        "ops_compared": int(ops),
        "tensor_pairs": int(tensors),
        "report_html_chars": len(html),
    }
    print(
        f"20-layer MLP training step (PyNative, batch 32, width 64) as a cell of a real kernel, median of "
        f"{args.steps}\n"
        f"  plain cell, before %load_ext msdebug   {before_s * 1e3:.2f} ms\n"
        f"  plain cell, msdebug loaded             {plain_s * 1e3:.2f} ms\n"
        f"  %%msdiff --repeat cell                 {repeat_s * 1e3:.2f} ms (two runs recorded, {ops} ops and "
        f"{tensors} tensor pairs compared, a {len(html):,}-character HTML report sent)\n"
        f"  ratio {result['ratio']}x the faster plain cell (goal <= {REPEAT_RATIO})"
    )
    return result


def _runs_across_tools(n: int) -> tuple[list, list, list[tuple[int, int]]]:
    """Two runs of ``n`` ops as two tools spell them, the second with a Cast every 50 ops; and
    the true pairs."""
    import random

    from msdebug.dumps.runs import RunOp

    rng = random.Random(n)
    types = [
        rng.choice(("MatMul", "BiasAdd", "ReLU", "Add", "Mul", "Softmax", "LayerNorm", "Reshape")) for _ in range(n)
    ]
    a = [
        RunOp(i, f"Default/block{i // 10}-Block/{t}-op{i}", t, f"Default/block{i // 10}-Block")
        for i, t in enumerate(types)
    ]
    b: list = []
    truth = []
    for i, t in enumerate(types):
        scope = f"Net/layers.{i // 10}"
        if i % 50 == 0:
            b.append(RunOp(len(b), f"{scope}/cast.{len(b)}", "Cast", scope))
        truth.append((i, len(b)))
        b.append(RunOp(len(b), f"{scope}/{t.lower()}.{len(b)}", t.lower() + "Ext", scope))
    return a, b, truth


def bench_align() -> dict:
    from msdebug.dumps.align import align

    result = {}
    print("alignment across tools (scopes spelled differently, a Cast every 50 ops)")
    for n in ALIGN_GOALS:
        a, b, truth = _runs_across_tools(n)
        start = time.perf_counter()
        found = align(a, b)
        seconds = time.perf_counter() - start
        right = found.pairs == truth
        print(f"  {n:>7,} ops  {seconds:7.2f} s  {'every op with its true partner' if right else 'WRONG PAIRS'}")
        result[n] = {"seconds": round(seconds, 3), "right": right}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1024, help="ops in each generated dump (2 tensors each)")
    parser.add_argument("--kb", type=int, default=512, help="KB per tensor")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    result = {"align": bench_align(), "diff": bench_diff(args), "repeat": bench_repeat(args)}
    print(json.dumps(result))
    ratio, peak, repeat = result["diff"]["throughput_ratio"], result["diff"]["diff_peak_mb"], result["repeat"]["ratio"]
    goals = {
        f"msdebug diff at least {DIFF_RATIO}x numpy's throughput ({ratio}x)": ratio >= DIFF_RATIO,
        f"msdebug diff peak under {DIFF_PEAK_MB} MB ({peak} MB)": peak < DIFF_PEAK_MB,
        f"%%msdiff --repeat at most {REPEAT_RATIO}x the plain step ({repeat}x)": repeat <= REPEAT_RATIO,
    }
    for n, limit in ALIGN_GOALS.items():
        took = result["align"][n]
        goals[f"{n:,} ops aligned across tools in under {limit:g} s, rightly ({took['seconds']} s)"] = (
            took["right"] and took["seconds"] < limit
        )
    return verdict(goals)


if __name__ == "__main__":
    sys.exit(main())
