"""Finding the first NaN: a data-dump scan against bare numpy, and ``%%msnan``'s hooks against no hooks.

1. A data dump in MindSpore's layout (``rank_0/<net>/<graph>/<iteration>/<Type>.<name>...npy``,
   execution-order CSVs) is generated in a temporary directory: ``--ops`` ops with one input
   and one output each, ``--kb`` KB per tensor (defaults: 1024 ops, 2048 tensors, 1 GB), the
   only non-finite value in the last op's output, so every tensor is read. msdebug's scan
   (:func:`msdebug.dumps.nan.scan_dump`: layout, matching through the execution order,
   chunked memmap reads) runs against ``np.load`` + ``np.isfinite(a).all()`` over the same
   files in the same order. Each runs in its own fresh interpreter, which reports its peak
   resident memory. The dump is deleted afterwards.
2. One training step of a 20-layer MLP (PyNative, ``TrainOneStepCell`` + SGD) with the
   ``%%msnan`` hooks installed, against the same step without them.

Goals: the scan at least 0.7x numpy's throughput with a peak under 300 MB; the hooked step
under 3x the plain one. The script exits 1 when it misses one.

    python benchmarks/bench_nan.py [--ops 1024] [--kb 512] [--runs 3] [--steps 20]
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
from goals import verdict

SCAN_RATIO = 0.7
SCAN_PEAK_MB = 300
HOOKS_RATIO = 3.0

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCAN = """
import resource, sys, time
sys.path.insert(0, {root!r})
from msdebug.dumps.nan import scan_dump
start = time.perf_counter()
report = scan_dump({path!r})
seconds = time.perf_counter() - start
assert report.culprit is not None and report.checked_tensors == {tensors}, report
print(seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
BASELINE = """
import resource, sys, time
import numpy as np
files = open({listing!r}).read().split()
start = time.perf_counter()
bad = None
for name in files:
    if not np.isfinite(np.load(name)).all():
        bad = name
        break
seconds = time.perf_counter() - start
assert bad is not None
print(seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _nan_last(values: np.ndarray) -> np.ndarray:
    changed = values.copy()
    changed[-1] = np.nan
    return changed


def make_dump(root: Path, ops: int, kb: int, last=_nan_last) -> tuple[Path, list[str]]:
    """A one-iteration data dump in MindSpore's layout; returns its path and its files in scan
    order. ``last`` makes the last op's output from the values every other tensor holds (by
    default: a NaN at its end; None: the same values)."""
    rank = root / "dump" / "rank_0"
    step = rank / "Net" / "0" / "0"
    step.mkdir(parents=True)
    (rank / "execution_order").mkdir()
    (rank / ".dump_metadata").mkdir()
    (rank / ".dump_metadata" / "config.json").write_text('{"device_target":"CPU","ms_version":"2.10.0"}')
    names = [f"Default/layer{i}-Block/Mul-op{i}" for i in range(ops)]
    (rank / "execution_order" / "ms_execution_order_graph_0.csv").write_text(
        "NodeExecutionOrder-FullNameWithScope\n" + "\n".join(names) + "\n"
    )
    (rank / "execution_order" / "ms_global_execution_order_graph_0.csv").write_text("0\n")
    rng = np.random.default_rng(0)
    values = rng.standard_normal(kb * 256).astype(np.float32)
    order, stamp = [], 1_795_000_000_000_000
    for i, name in enumerate(names):
        flat = name.replace("/", "_")
        for io in ("input", "output"):
            stamp += 1
            path = step / f"Mul.{flat}.0.0.{stamp}.{io}.0.DefaultFormat.Float32.npy"
            np.save(path, last(values) if last is not None and i == ops - 1 and io == "output" else values)
            order.append(str(path))
    return root / "dump", order


def run(code: str) -> tuple[float, int]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return float(out[-2]), int(out[-1]) // 1024


def bench_scan(args) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="msdebug-bench-nan-"))
    try:
        path, files = make_dump(scratch, args.ops, args.kb)
        listing = scratch / "files.txt"
        listing.write_text("\n".join(files))
        size = sum(Path(f).stat().st_size for f in files)
        ours, base = [], []
        for _ in range(args.runs):  # interleaved; the page cache is warm for both after the first
            base.append(run(BASELINE.format(listing=str(listing))))
            ours.append(run(SCAN.format(root=str(ROOT), path=str(path), tensors=len(files))))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    our_s, base_s = statistics.median(t for t, _ in ours), statistics.median(t for t, _ in base)
    result = {
        "tensors": len(files),
        "bytes": size,
        "scan_s": round(our_s, 3),
        "numpy_s": round(base_s, 3),
        "scan_gb_per_s": round(size / our_s / 1e9, 2),
        "numpy_gb_per_s": round(size / base_s / 1e9, 2),
        "throughput_ratio": round(base_s / our_s, 2),
        "scan_peak_mb": max(m for _, m in ours),
        "numpy_peak_mb": max(m for _, m in base),
    }
    print(
        f"scan of {len(files)} tensors, {size / 1e9:.2f} GB\n"
        f"  msdebug scan_dump     {our_s:.3f} s  {result['scan_gb_per_s']} GB/s  peak {result['scan_peak_mb']} MB\n"
        f"  np.load + isfinite    {base_s:.3f} s  {result['numpy_gb_per_s']} GB/s  peak {result['numpy_peak_mb']} MB\n"
        f"  throughput ratio {result['throughput_ratio']}x (goal >= 0.7), peak {result['scan_peak_mb']} MB (goal < 300)"
    )
    return result


def bench_hooks(args) -> dict:
    import mindspore as ms
    from mindspore import nn

    from msdebug.recorders.nan import watch_pynative

    ms.set_context(mode=ms.PYNATIVE_MODE)
    layers = []
    for _ in range(20):
        layers += [nn.Dense(64, 64), nn.ReLU()]
    net = nn.SequentialCell(layers)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 1e-3))
    x = ms.Tensor(np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32))
    y = ms.Tensor(np.zeros((32, 64), np.float32))

    def plain() -> None:
        step(x, y).asnumpy()

    def hooked() -> None:
        with watch_pynative() as watch:
            step(x, y).asnumpy()
        assert watch.report().culprit is None

    for warm in (plain, hooked):
        warm()
    times = {"plain": [], "hooked": []}
    for _ in range(args.steps):
        for name, body in (("plain", plain), ("hooked", hooked)):
            start = time.perf_counter()
            body()
            times[name].append(time.perf_counter() - start)
    plain_s, hooked_s = statistics.median(times["plain"]), statistics.median(times["hooked"])
    with watch_pynative() as watch:
        step(x, y).asnumpy()
    report = watch.report()
    result = {
        "step_ms": round(plain_s * 1e3, 2),
        "msnan_step_ms": round(hooked_s * 1e3, 2),
        "ratio": round(hooked_s / plain_s, 2),
        "ops_checked": report.checked_ops,
        "tensors_checked": report.checked_tensors,
    }
    print(
        f"20-layer MLP training step (PyNative, batch 32, width 64), median of {args.steps}\n"
        f"  without hooks   {plain_s * 1e3:.2f} ms\n"
        f"  under %%msnan   {hooked_s * 1e3:.2f} ms ({report.checked_ops} ops, {report.checked_tensors} tensors checked)\n"
        f"  ratio {result['ratio']}x (goal < 3)"
    )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1024, help="ops in the generated dump (2 tensors each)")
    parser.add_argument("--kb", type=int, default=512, help="KB per tensor")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    result = {"scan": bench_scan(args), "msnan": bench_hooks(args)}
    print(json.dumps(result))
    scan, peak, hooks = result["scan"]["throughput_ratio"], result["scan"]["scan_peak_mb"], result["msnan"]["ratio"]
    return verdict(
        {
            f"scan_dump at least {SCAN_RATIO}x numpy's throughput ({scan}x)": scan >= SCAN_RATIO,
            f"scan_dump peak under {SCAN_PEAK_MB} MB ({peak} MB)": peak < SCAN_PEAK_MB,
            f"%%msnan hooks under {HOOKS_RATIO}x the plain step ({hooks}x)": hooks < HOOKS_RATIO,
        }
    )


if __name__ == "__main__":
    sys.exit(main())
