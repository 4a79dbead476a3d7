"""``%msrun``: starting ranks, an empty cell's round trip, hangs found, and orphans after a kill.

1. **Start**: ``Pool(n).start()`` plus ``init()`` on every rank (what ``%msrun start -n N`` and a
   first ``init()`` cell do), against msrun itself launching N scripts that ``import mindspore``,
   call ``init()`` and write a file (the baseline ends when every file is there), for N = 2 and
   4, each run ``--runs`` times (the median counts). The baseline's ranks beat as often as
   msdebug's (``init()`` returns at a heartbeat): its environment gets the heartbeat variables
   with the values :meth:`Pool.environment` gives msdebug's ranks.
2. **Round trip**: ``Pool.execute("pass")`` on 4 ranks (an empty ``%%msrun`` cell) once they
   have imported MindSpore and called ``init()`` (so each cell ends with the wait for the ops it
   launched, and the flight recorder's watch is in place), against ipyparallel's ``%px`` path
   (``DirectView.execute("pass", block=True)``) on 4 engines. ipyparallel is installed for this
   benchmark only, into a temporary directory.
3. **Hangs**: ``--hangs`` cells in which rank 1 launches an AllReduce that rank 0, done at once,
   never joins (a real deadlock); each must be reported within ``--hang-after`` plus 5 s, then
   rank 0 joins the AllReduce in a cell of its own, which frees rank 1.
4. **Orphans**: ``--trials`` times, a fresh interpreter (standing in for the notebook's kernel)
   starts 2 ranks and waits for a go-ahead on its stdin; the benchmark takes the job's pids
   (a supervisor and its process for the scheduler and each rank: 6; msrun itself, started with
   ``--join=False``, has ended once the ranks are up), sends the
   go-ahead, and the interpreter is SIGKILLed (even trials) or stops its pool with
   ``Pool.stop`` (odd ones, as a restart does); 5 s later no process of that job may be left.
   A trial that found fewer than 6 processes watched nothing worth counting: it fails.

Goals: start at most 1.2x msrun's; round trip at most 50 ms and no slower than ipyparallel's;
hangs named in time in every trial; every orphan trial watched the whole job, and no orphan
in any trial. The script exits 1 when it misses one.

    python benchmarks/bench_ranks.py [--runs 3] [--rounds 200] [--hangs 10] [--trials 100]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from goals import verdict

START_RATIO = 1.2
ROUND_TRIP_MS = 50.0
HANG_GRACE_S = 5.0
GONE_S = 5.0
#: A 2-rank job: for the scheduler and each rank a supervisor and its process (msrun, started
#: with --join=False, has ended by the time the pool is up).
JOB_PROCESSES = 2 * (1 + 2)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

INIT = "from mindspore.communication import init\ninit()"
ALLREDUCE = "import os\n{only}ms.ops.AllReduce()(ms.Tensor(np.ones(2, np.float32))).asnumpy()"

BASELINE_SCRIPT = """
import os, sys
import mindspore
from mindspore.communication import init
init()
open(os.path.join(sys.argv[1], "ready" + os.environ["RANK_ID"]), "w").close()
os._exit(0)  # as msdebug's ranks leave at the end: without waiting for the cluster
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def _heartbeat() -> dict[str, str]:
    """The heartbeat variables msdebug's ranks start with (``MS_RETRY_INTERVAL_LOWER/UPPER``),
    taken from the environment msdebug itself builds for them."""
    from msdebug.ranks.pool import _HEARTBEAT, Pool

    pool = Pool(1)  # only its environment: nothing is started
    try:
        env = pool.environment()
    finally:
        shutil.rmtree(pool.dir, ignore_errors=True)
    return {name: env[name] for name in _HEARTBEAT if name in env}


def _msrun_baseline(n: int, heartbeat: dict[str, str]) -> float:
    """Seconds from msrun's start until N scripts have imported MindSpore and built the cluster."""
    from msdebug.ranks.pool import _free_port, msrun_path

    work = Path(tempfile.mkdtemp(prefix="bench-msrun-"))
    script = work / "task.py"
    script.write_text(BASELINE_SCRIPT)
    reserved = _free_port()  # held as msdebug's pool holds its port, until the ranks are up
    port = reserved.getsockname()[1]
    command = [
        msrun_path(), f"--worker_num={n}", f"--local_worker_num={n}", f"--master_port={port}",
        f"--log_dir={work / 'logs'}", "--join=False", str(script), str(work),
    ]  # fmt: skip
    env = {**_env(), **heartbeat}  # the ranks beat as often as msdebug's
    said = work / "msrun.out"
    start = time.perf_counter()
    with open(said, "wb") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    while not all((work / f"ready{rank}").exists() for rank in range(n)):
        # msrun --join=False ends (0) once it has started the ranks; another status is its failure
        if process.poll() not in (None, 0) or time.perf_counter() - start > 300:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
            reserved.close()
            tail = said.read_text(errors="replace")[-2000:]
            shutil.rmtree(work, ignore_errors=True)
            raise RuntimeError(f"the msrun baseline did not start its {n} ranks (exit {process.returncode}):\n{tail}")
        time.sleep(0.01)
    seconds = time.perf_counter() - start
    try:
        os.killpg(process.pid, signal.SIGKILL)  # the scheduler, in msrun's group
    except ProcessLookupError:
        pass
    process.wait()
    reserved.close()
    shutil.rmtree(work, ignore_errors=True)
    return seconds


def _msdebug_start(n: int) -> float:
    from msdebug.ranks.pool import Pool

    start = time.perf_counter()
    pool = Pool(n)
    pool.start()
    run = pool.execute(INIT)
    seconds = time.perf_counter() - start
    assert run.ok, [(r.rank, r.state, r.evalue) for r in run.results]
    pool.stop()
    return seconds


def _round_trip_msdebug(rounds: int) -> float:
    from msdebug.ranks.pool import Pool

    pool = Pool(4)
    pool.start()
    try:
        run = pool.execute(INIT)
        assert run.ok, [(r.rank, r.state, r.evalue) for r in run.results]
        for _ in range(20):  # warm up
            pool.execute("pass")
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            pool.execute("pass")
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1000
    finally:
        pool.stop()


IPP = """
import statistics, sys, time
import ipyparallel as ipp
cluster = ipp.Cluster(n=4, log_level=40)
client = cluster.start_and_connect_sync()
view = client[:]
for _ in range(20):
    view.execute("pass", block=True)
times = []
for _ in range({rounds}):
    start = time.perf_counter()
    view.execute("pass", block=True)  # what %px does with a cell
    times.append(time.perf_counter() - start)
print(statistics.median(times) * 1000)
cluster.stop_cluster_sync()
"""


def _round_trip_ipyparallel(rounds: int) -> float:
    target = Path(tempfile.mkdtemp(prefix="bench-ipyparallel-"))
    try:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
             "ipyparallel", "decorator"],
            check=True,
        )  # fmt: skip
        env = _env()
        env["PYTHONPATH"] = os.pathsep.join([str(target), env.get("PYTHONPATH", "")])
        env["IPYTHONDIR"] = str(target / "ipython")
        done = subprocess.run([sys.executable, "-c", IPP.format(rounds=rounds)], env=env, capture_output=True,
                              text=True, timeout=600, check=False)  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"ipyparallel failed: {done.stderr[-2000:]}")
        return float(done.stdout.split()[-1])
    finally:
        shutil.rmtree(target, ignore_errors=True)


def _hangs(trials: int, hang_after: float) -> list[float]:
    """Seconds from each hung cell's start to its report (inf when it was not reported as hung)."""
    from msdebug.ranks.pool import Pool

    pool = Pool(2)
    pool.start()
    try:
        run = pool.execute(INIT + "\nimport numpy as np, mindspore as ms")
        assert run.ok, [(r.rank, r.state, r.evalue) for r in run.results]
        times = []
        for _ in range(trials):
            start = time.perf_counter()
            run = pool.execute(ALLREDUCE.format(only="if os.environ['RANK_ID'] == '1':\n    "), hang_after=hang_after)
            seconds = time.perf_counter() - start
            found = (
                [r.rank for r in run.busy] == [1] and run.results[0].state == "finished" and run.difference is not None
            )
            times.append(seconds if found else float("inf"))
            joined = pool.execute(ALLREDUCE.format(only=""), ranks=[0], hang_after=hang_after)
            assert joined.ok, [(r.rank, r.state, r.evalue) for r in joined.results]
            assert pool.wait_idle([1], timeout=30) == [], "rank 1 did not finish its AllReduce"
        return times
    finally:
        pool.stop()


ORPHAN = """
import os, sys
sys.path.insert(0, {root!r})
from msdebug.ranks.pool import Pool
pool = Pool(2)
pool.start()
print(pool.dir, flush=True)
sys.stdin.readline()  # the go-ahead: the benchmark has taken the job's pids
if {stop}:
    pool.stop()
    print("stopped", flush=True)
sys.stdin.read()  # the benchmark kills it (or closes stdin)
"""


def _job_processes(pool_dir: str) -> set[int]:
    found = subprocess.run(["pgrep", "-f", pool_dir], capture_output=True, text=True, check=False).stdout
    return {int(pid) for pid in found.split()}


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                    alive.add(pid)
        except OSError:
            continue
    return alive


def _orphans(trials: int) -> tuple[list[int], list[int]]:
    """Per trial, the processes of its job watched, and those still alive GONE_S seconds after its
    kernel was killed or its pool stopped."""
    watched, left = [], []
    for trial in range(trials):
        stop = trial % 2 == 1
        kernel = subprocess.Popen(
            [sys.executable, "-c", ORPHAN.format(root=str(ROOT), stop=stop)], env=_env(), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        pool_dir = kernel.stdout.readline().strip()
        job = _alive(_job_processes(pool_dir)) if pool_dir else set()
        watched.append(len(job))
        try:
            kernel.stdin.write("go\n")  # the pids are taken: now it may stop (or be killed)
            kernel.stdin.flush()
        except BrokenPipeError:  # it died before the go-ahead: the trial watched too little
            pass
        if stop:
            kernel.stdout.readline()
        else:
            kernel.kill()
        deadline = time.monotonic() + GONE_S
        while _alive(job) and time.monotonic() < deadline:
            time.sleep(0.05)
        still = _alive(job)
        left.append(len(still))
        for pid in still:
            os.kill(pid, signal.SIGKILL)
        kernel.kill()
        kernel.wait()
    return watched, left


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="starts per N and per side (median)")
    parser.add_argument("--rounds", type=int, default=200, help="empty cells timed per side")
    parser.add_argument("--hangs", type=int, default=10, help="injected hangs")
    parser.add_argument("--hang-after", type=float, default=3.0)
    parser.add_argument("--trials", type=int, default=100, help="kill and stop trials for orphans")
    args = parser.parse_args()

    result: dict[str, object] = {}
    goals: dict[str, bool] = {}
    heartbeat = _heartbeat()
    print("both sides' ranks beat with", " ".join(f"{name}={value}" for name, value in heartbeat.items()))
    result["heartbeat"] = heartbeat
    for n in (2, 4):
        ours = statistics.median(_msdebug_start(n) for _ in range(args.runs))
        base = statistics.median(_msrun_baseline(n, heartbeat) for _ in range(args.runs))
        ratio = ours / base
        print(f"start, {n} ranks: msdebug {ours:.2f} s, msrun + init() scripts {base:.2f} s: {ratio:.2f}x")
        result[f"start_{n}"] = {"msdebug_s": ours, "msrun_s": base, "ratio": ratio}
        goals[f"start of {n} ranks at most {START_RATIO}x msrun's ({ratio:.2f}x)"] = ratio <= START_RATIO

    ours = _round_trip_msdebug(args.rounds)
    theirs = _round_trip_ipyparallel(args.rounds)
    print(f"empty cell on 4 ranks: msdebug {ours:.1f} ms, ipyparallel %px {theirs:.1f} ms (median of {args.rounds})")
    result["round_trip"] = {"msdebug_ms": ours, "ipyparallel_ms": theirs}
    goals[f"round trip at most {ROUND_TRIP_MS:g} ms ({ours:.1f} ms)"] = ours <= ROUND_TRIP_MS
    goals[f"round trip no slower than ipyparallel's ({ours:.1f} against {theirs:.1f} ms)"] = ours <= theirs

    hangs = _hangs(args.hangs, args.hang_after)
    in_time = sum(seconds <= args.hang_after + HANG_GRACE_S for seconds in hangs)
    print(f"hangs: {in_time} of {len(hangs)} named within {args.hang_after:g} + {HANG_GRACE_S:g} s; "
          f"slowest {max(hangs):.2f} s")  # fmt: skip
    result["hangs"] = hangs
    goals[f"hangs named in time in {in_time} of {len(hangs)}"] = in_time == len(hangs)

    watched, left = _orphans(args.trials)
    short = sum(n < JOB_PROCESSES for n in watched)
    print(f"orphans: {sum(left)} processes left in {sum(1 for n in left if n)} of {len(left)} trials; "
          f"{min(watched, default=0)} to {max(watched, default=0)} processes watched per trial")  # fmt: skip
    result["orphans"] = {"watched": watched, "left": left}
    goals[f"every trial watched the whole job, {JOB_PROCESSES} processes ({short} of {len(watched)} watched fewer)"] = (
        bool(watched) and short == 0
    )
    goals[f"no orphan in {len(left)} kill and stop trials ({sum(left)} left)"] = sum(left) == 0

    print(json.dumps(result))
    return verdict(goals)


if __name__ == "__main__":
    sys.exit(main())
