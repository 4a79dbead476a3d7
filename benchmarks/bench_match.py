"""Matching a data dump's files to its execution order, when the names do not help.

An unrolled ``@jit`` loop writes its ops in one scope, and the op numbers in the files' names
do not follow the execution order's (``Mul-op20001`` on disk for ``Mul-op7`` in the order):
every file falls to the last pass of the matcher (type and name without ``-opN``), one group
of ``--tensors`` ops. The dump is generated in a temporary directory (one float32 output per
op, the only NaN in the last op's), then, each in a fresh interpreter:

* ``read_data_dump`` (listing, ``mapping.csv``, matching);
* ``msdebug dump D --nan`` through the real command (reading, matching, opening every tensor).

The baseline is listing the same iteration folder (``os.scandir``) in the same run. Goal: the
whole ``--nan`` command under 5 s for 20,000 tensors (it took about 60 s when matching was
quadratic); the script exits 1 when it is not met.

    python benchmarks/bench_match.py [--tensors 20000] [--goal 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

READ = """
import sys, time
sys.path.insert(0, {root!r})
from msdebug.dumps.datadump import read_data_dump
start = time.perf_counter()
dump = read_data_dump({path!r})
seconds = time.perf_counter() - start
it = dump.ranks[0].iterations[0]
assert not it.unmatched and sum(len(op.outputs) for op in it.ops) == {tensors}, (len(it.unmatched), len(it.ops))
assert [op.outputs[0].timestamp for op in it.ops] == sorted(op.outputs[0].timestamp for op in it.ops)
print(seconds)
"""
LIST = """
import os, sys, time
start = time.perf_counter()
names = [(e.name, e.stat(follow_symlinks=False).st_size) for e in os.scandir({step!r})]
print(time.perf_counter() - start)
"""


def npy(value: float) -> bytes:
    """One float32 as a ``.npy`` file, written by numpy's own writer."""
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.array([value], np.float32))
    return buffer.getvalue()


def make_dump(root: Path, tensors: int, seed: int = 0) -> Path:
    """One iteration of ``tensors`` ``Mul`` ops in one scope; the files' op numbers are a shuffled
    range that starts past the execution order's, as a second instance of a graph numbers them."""
    rank = root / "dump" / "rank_0"
    step = rank / "Net" / "0" / "0"
    step.mkdir(parents=True)
    (rank / "execution_order").mkdir()
    names = [f"Default/Mul-op{i}" for i in range(tensors)]
    (rank / "execution_order" / "ms_execution_order_graph_0.csv").write_text(
        "NodeExecutionOrder-FullNameWithScope\n" + "\n".join(names) + "\n"
    )
    (rank / "execution_order" / "ms_global_execution_order_graph_0.csv").write_text("0\n")
    numbers = list(range(tensors, 2 * tensors))
    random.Random(seed).shuffle(numbers)
    finite, bad = npy(1.0), npy(float("nan"))
    stamp = 1_795_000_000_000_000
    for i, number in enumerate(numbers):
        path = step / f"Mul.Default_Mul-op{number}.0.0.{stamp + i}.output.0.DefaultFormat.Float32.npy"
        path.write_bytes(bad if i == tensors - 1 else finite)
    return root / "dump"


def run(code: str) -> float:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return float(done.stdout.split()[-1])


def run_cli(path: Path, tensors: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "msdebug", "dump", str(path), "--nan"], capture_output=True, text=True, env=env
    )
    seconds = time.perf_counter() - start
    if done.returncode != 1 or f"Default/Mul-op{tensors - 1}" not in done.stdout:
        raise SystemExit(f"--nan did not name the last op (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensors", type=int, default=20_000)
    parser.add_argument("--goal", type=float, default=5.0, help="seconds the --nan command may take")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="msdebug-bench-match-"))
    try:
        path = make_dump(scratch, args.tensors)
        step = path / "rank_0" / "Net" / "0" / "0"
        listing = run(LIST.format(step=str(step)))
        read = run(READ.format(root=str(ROOT), path=str(path), tensors=args.tensors))
        cli = run_cli(path, args.tensors)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    result = {
        "tensors": args.tensors,
        "list_s": round(listing, 3),
        "read_s": round(read, 3),
        "nan_cli_s": round(cli, 3),
    }
    print(
        f"{args.tensors} tensors in one scope, op numbers out of execution order\n"
        f"  os.scandir of the folder        {listing:.3f} s\n"
        f"  read_data_dump (with matching)  {read:.3f} s\n"
        f"  msdebug dump D --nan            {cli:.3f} s (goal < {args.goal:g} s)"
    )
    print(json.dumps(result))
    return 0 if cli < args.goal else 1


if __name__ == "__main__":
    sys.exit(main())
