"""The explorer's summary of a save_graphs directory against listing that directory.

The directory is made by a real ``MS_DEV_SAVE_GRAPHS=3`` run of a tiny network with the
installed MindSpore (about 620 files on 2.10), in a temporary directory. The summary lists
and classifies every file and renders it (text and HTML); it opens none of them.

Goal: the summary under 5x listing the directory with sizes (``os.walk`` + a ``stat`` per
file), the least any summary that gives sizes must do. The script exits 1 when it misses.

    python benchmarks/bench_graphs_dir.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from goals import verdict  # noqa: E402

import msdebug  # noqa: E402

GOAL = 5.0

NETWORK = """
import numpy as np, mindspore as ms
from mindspore import nn
class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 2)
    def construct(self, x):
        y = self.dense(x)
        if y.sum() > 0:
            y = y * 2
        return y
ms.set_context(mode=ms.GRAPH_MODE)
Net()(ms.Tensor(np.ones((1, 3), np.float32))).asnumpy()
"""


def make_dump(directory: Path) -> None:
    script = directory / "net.py"
    script.write_text(NETWORK)
    env = {**os.environ, "MS_DEV_SAVE_GRAPHS": "3", "MS_DEV_SAVE_GRAPHS_PATH": str(directory / "graphs"), "GLOG_v": "3"}
    subprocess.run([sys.executable, str(script)], cwd=directory, env=env, check=True, capture_output=True)


def listing(path: Path) -> int:
    count = 0
    for _, _, files in os.walk(path):
        count += len(files)
    return count


def listing_with_sizes(path: Path) -> int:
    """What any summary with sizes must do at least: every entry and its stat."""
    total, stack = 0, [str(path)]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir():
                    stack.append(entry.path)
                else:
                    total += entry.stat().st_size
    return total


def summary(path: Path) -> int:
    explorer = msdebug.open_dump(path)
    result = explorer.summary()
    repr(result)
    result._repr_html_()
    return result.files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="msdebug-bench-graphs-") as scratch:
        make_dump(Path(scratch))
        path = Path(scratch) / "graphs"
        files = listing(path)
        assert summary(path) == files >= 600, files
        list_times, sized_times, summary_times = [], [], []
        for _ in range(args.runs):  # interleaved, warm file-system cache for all
            start = time.perf_counter()
            listing(path)
            list_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            listing_with_sizes(path)
            sized_times.append(time.perf_counter() - start)
            start = time.perf_counter()
            summary(path)
            summary_times.append(time.perf_counter() - start)
    list_s, summary_s = statistics.median(list_times), statistics.median(summary_times)
    sized_s = statistics.median(sized_times)
    result = {
        "files": files,
        "listing_ms": round(list_s * 1e3, 2),
        "listing_with_sizes_ms": round(sized_s * 1e3, 2),
        "summary_ms": round(summary_s * 1e3, 2),
        "ratio": round(summary_s / list_s, 1),
        "ratio_to_listing_with_sizes": round(summary_s / sized_s, 1),
    }
    print(
        f"{files} files\nlisting (os.walk)             {list_s * 1e3:.2f} ms\n"
        f"listing with sizes (stat)     {sized_s * 1e3:.2f} ms\n"
        f"open_dump + summary + render  {summary_s * 1e3:.2f} ms\n"
        f"ratio {result['ratio']}x the listing, {result['ratio_to_listing_with_sizes']}x the listing with sizes"
    )
    print(json.dumps(result))
    ratio = result["ratio_to_listing_with_sizes"]
    return verdict({f"summary under {GOAL:.0f}x the listing with sizes ({ratio}x)": ratio < GOAL})


if __name__ == "__main__":
    sys.exit(main())
