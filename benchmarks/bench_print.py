"""50 MB of C-level output through msdebug's Print capture, against a plain dup2 of fd 1.

The writer is C: ``write(2)`` on fd 1 in 64 KiB chunks (what a Print kernel's ``std::cout``
ends in), the same bytes for every case. Baseline: ``os.dup2`` of fd 1 onto a file, write,
``dup2`` back. Cases, each timed from before the redirection starts until the bytes are
where they belong (the file closed, or the bytes in memory):

* ``print_file_path``: ``msdebug.recorders.print.set_print_file`` (what ``%mscontext print_file_path``
  does on CPU/GPU); goal at least 0.8x of the baseline's throughput;
* ``capture(file=...)``: ``msdebug.capture_print(file=...)``, captured and written to a file;
  goal at least 0.8x too (output that ends in a file);
* ``capture (inline)``: ``msdebug.capture_print()`` into memory, bytes read back for the
  notebook; goal at least 0.8x.

A ``print()`` row compares 20 000 Python ``print`` lines captured with ``print`` to
``/dev/null`` (goal at least 0.3x; each line is also a MindSpore queue sync while MindSpore is
imported; here it is not). With ``--kernel`` (the default) the same loop runs in real Jupyter
kernels, as a cell's round trip (execute to idle, output received): a ``%%msprint`` cell in
a kernel with msdebug loaded against the plain cell in a kernel without msdebug; goal at
least 1.0x.

The script exits 1 when a case misses its goal.

    python benchmarks/bench_print.py [--mb 50] [--repeat 5]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import tempfile
import time

from goals import verdict

CHUNK = 64 * 1024


def _write(total: int) -> None:
    libc = ctypes.CDLL(None)
    block = b"p" * (CHUNK - 1) + b"\n"
    for _ in range(total // CHUNK):
        libc.write(1, block, CHUNK)


def baseline(total: int, path: str) -> float:
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    saved = os.dup(1)
    os.dup2(fd, 1)
    try:
        _write(total)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(fd)
    return time.perf_counter() - start


def print_file(total: int, path: str) -> float:
    from msdebug.recorders.print import set_print_file

    start = time.perf_counter()
    set_print_file(path)
    try:
        _write(total)
    finally:
        set_print_file("")
    return time.perf_counter() - start


def capture_to_file(total: int, path: str) -> float:
    import msdebug

    start = time.perf_counter()
    with msdebug.capture_print(file=path, show=False):
        _write(total)
    return time.perf_counter() - start


def capture_inline(total: int, path: str) -> float:
    import msdebug

    start = time.perf_counter()
    with msdebug.capture_print(show=False) as cap:
        _write(total)
    assert len(cap.log.raw) == total
    return time.perf_counter() - start


def _prints(n: int, capture: bool) -> float:
    import msdebug

    saved = sys.stdout
    start = time.perf_counter()
    if capture:
        with msdebug.capture_print(show=False):
            for i in range(n):
                print("loss", i)
    else:
        with open(os.devnull, "w") as sink:
            sys.stdout = sink
            try:
                for i in range(n):
                    print("loss", i)
            finally:
                sys.stdout = saved
    return time.perf_counter() - start


def _kernel_prints(n: int, repeat: int) -> tuple[float, float]:
    """Median round trips (plain kernel, %%msprint cell in a kernel with msdebug), interleaved."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
    from helpers import Kernel

    loop = f"for i in range({n}):\n    print('loss', i)"
    plain, captured = Kernel(), Kernel()
    try:
        status, _ = captured.run("%load_ext msdebug")
        assert status == "ok"
        times: tuple[list[float], list[float]] = ([], [])
        for _ in range(repeat + 1):  # the first round warms both up and is not counted
            for kernel, code, samples in ((plain, loop, times[0]), (captured, "%%msprint\n" + loop, times[1])):
                start = time.perf_counter()
                status, outputs = kernel.run(code)
                samples.append(time.perf_counter() - start)
                assert status == "ok" and outputs, outputs
        return statistics.median(times[0][1:]), statistics.median(times[1][1:])
    finally:
        plain.close()
        captured.close()


# throughput against the baseline's, at least
GOALS = {"print_file_path": 0.8, "capture(file=...)": 0.8, "capture (inline)": 0.8}
PRINT_GOAL = 0.3  # 20 000 captured print() lines against print() to /dev/null
KERNEL_GOAL = 1.0  # a %%msprint cell against the same cell in a kernel without msdebug


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-kernel", action="store_true", help="skip the print() loop in real kernels")
    args = parser.parse_args()
    total = args.mb * 1024 * 1024 // CHUNK * CHUNK
    cases = {
        "dup2 to a file (baseline)": baseline,
        "print_file_path": print_file,
        "capture(file=...)": capture_to_file,
        "capture (inline)": capture_inline,
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.repeat):
            for name, run in cases.items():  # interleaved, so drift hits every case alike
                path = os.path.join(scratch, f"{round_}-{len(times[name])}-{abs(hash(name))}.out")
                times[name].append(run(total, path))
                if os.path.exists(path):
                    assert os.path.getsize(path) == total, name
                    os.remove(path)
    base = statistics.median(times["dup2 to a file (baseline)"])
    result = {}
    for name, samples in times.items():
        median = statistics.median(samples)
        result[name] = {
            "seconds": round(median, 4),
            "MB/s": round(total / median / 1e6, 1),
            "throughput_vs_baseline": round(base / median, 2),
        }
        print(f"{name:28s} {median * 1000:8.1f} ms  {total / median / 1e6:8.1f} MB/s  {base / median:5.2f}x baseline")
    plain, captured = (statistics.median(_prints(20000, c) for _ in range(args.repeat)) for c in (False, True))
    print(
        f"{'20000 print() lines':28s} {captured * 1000:8.1f} ms captured vs {plain * 1000:.1f} ms to /dev/null "
        f"({plain / captured:.2f}x)"
    )
    result["print_lines"] = {"captured_s": round(captured, 4), "devnull_s": round(plain, 4)}
    if not args.no_kernel:
        in_plain, in_msprint = _kernel_prints(20000, args.repeat)
        print(
            f"{'20000 print() in a kernel':28s} {in_msprint * 1000:8.1f} ms %%msprint vs {in_plain * 1000:.1f} ms "
            f"without msdebug ({in_plain / in_msprint:.2f}x)"
        )
        result["print_lines"].update(kernel_msprint_s=round(in_msprint, 4), kernel_plain_s=round(in_plain, 4))
    print(json.dumps({"bench": "print", "mb": args.mb, **result}))
    goals = {}
    for name, least in GOALS.items():
        ratio = result[name]["throughput_vs_baseline"]
        goals[f"{name}: at least {least}x the throughput of dup2 to a file ({ratio}x)"] = ratio >= least
    ratio = round(plain / captured, 2)
    goals[f"20000 print() lines captured: at least {PRINT_GOAL}x print() to /dev/null ({ratio}x)"] = ratio >= PRINT_GOAL
    if not args.no_kernel:
        ratio = round(in_plain / in_msprint, 2)
        goals[
            f"20000 print() lines in a %%msprint cell: at least {KERNEL_GOAL}x a kernel without msdebug ({ratio}x)"
        ] = ratio >= KERNEL_GOAL
    return verdict(goals)


if __name__ == "__main__":
    sys.exit(main())
