"""Where two runs differ: ``msdebug diff`` of two dumps against bare numpy, and ``%%msdiff --repeat``
against the plain step.

1. Two data dumps in MindSpore's layout are generated in a temporary directory: ``--ops`` ops
   with one input and one output each, ``--kb`` KB per tensor (defaults: 1024 ops, 2048 tensors,
   1 GB per dump); they differ only in the last op's output, so every pair is compared.
   msdebug's diff (:func:`msdebug.dumps.diff.diff_runs` over :func:`read_any_run`: layout,
   alignment, chunked memmap comparison with every metric) runs against ``np.load`` of both
   files + ``np.allclose`` per pair, in the same order. Each runs in its own fresh interpreter,
   which reports its peak resident memory. The dumps are deleted afterwards.
2. One training step of a 20-layer MLP (PyNative, ``TrainOneStepCell`` + SGD) as
   ``%%msdiff --repeat`` runs it (the step twice under the recorder, Parameters put back in
   between, then compared), against the same step run once without msdebug.

Goals: the diff at least 0.5x numpy's throughput with a peak under 300 MB; ``--repeat`` at most
4x the plain step. The script exits 1 when it misses one.

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

import numpy as np
from bench_nan import make_dump
from goals import verdict

DIFF_RATIO = 0.5
DIFF_PEAK_MB = 300
REPEAT_RATIO = 4.0

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


def bench_repeat(args) -> dict:
    import mindspore as ms
    from mindspore import nn

    from msdebug.recorders.diff import DiffSession

    ms.set_context(mode=ms.PYNATIVE_MODE)
    layers = []
    for _ in range(20):
        layers += [nn.Dense(64, 64), nn.ReLU()]
    net = nn.SequentialCell(layers)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 1e-3))
    x = ms.Tensor(np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32))
    y = ms.Tensor(np.zeros((32, 64), np.float32))
    namespace = {"step": step, "x": x, "y": y}

    def plain() -> None:
        step(x, y).asnumpy()

    def repeated():
        session = DiffSession("step(x, y)", namespace, "repeat")
        for side in session.sides:
            with side:
                step(x, y).asnumpy()
        report = session.report()
        shutil.rmtree(session.scratch, ignore_errors=True)
        return report

    plain()
    repeated()
    times = {"plain": [], "repeat": []}
    for _ in range(args.steps):
        for name, body in (("plain", plain), ("repeat", repeated)):
            start = time.perf_counter()
            body()
            times[name].append(time.perf_counter() - start)
    report = repeated()
    assert not report.differs, report
    plain_s, repeat_s = statistics.median(times["plain"]), statistics.median(times["repeat"])
    result = {
        "step_ms": round(plain_s * 1e3, 2),
        "msdiff_repeat_ms": round(repeat_s * 1e3, 2),
        "ratio": round(repeat_s / plain_s, 2),
        "ops_compared": report.compared_ops,
        "tensor_pairs": report.compared_tensors,
    }
    print(
        f"20-layer MLP training step (PyNative, batch 32, width 64), median of {args.steps}\n"
        f"  plain step           {plain_s * 1e3:.2f} ms\n"
        f"  %%msdiff --repeat    {repeat_s * 1e3:.2f} ms (two runs recorded, {report.compared_ops} ops and "
        f"{report.compared_tensors} tensor pairs compared)\n"
        f"  ratio {result['ratio']}x (goal <= {REPEAT_RATIO})"
    )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1024, help="ops in each generated dump (2 tensors each)")
    parser.add_argument("--kb", type=int, default=512, help="KB per tensor")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    result = {"diff": bench_diff(args), "repeat": bench_repeat(args)}
    print(json.dumps(result))
    ratio, peak, repeat = result["diff"]["throughput_ratio"], result["diff"]["diff_peak_mb"], result["repeat"]["ratio"]
    return verdict(
        {
            f"msdebug diff at least {DIFF_RATIO}x numpy's throughput ({ratio}x)": ratio >= DIFF_RATIO,
            f"msdebug diff peak under {DIFF_PEAK_MB} MB ({peak} MB)": peak < DIFF_PEAK_MB,
            f"%%msdiff --repeat at most {REPEAT_RATIO}x the plain step ({repeat}x)": repeat <= REPEAT_RATIO,
        }
    )


if __name__ == "__main__":
    sys.exit(main())
