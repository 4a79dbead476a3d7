"""``%load_ext msdebug`` against ``import mindspore``, each in fresh interpreters, same run.

Goals: loading takes at most 20 ms and under 1% of importing MindSpore, as README.md states it
(msdebug must not import it); the script exits 1 when it misses either. Both sides run with bytecode caches, as
an installed package has them: the interpreters write theirs into a private
``PYTHONPYCACHEPREFIX`` (a warm-up run fills it), whatever ``PYTHONDONTWRITEBYTECODE`` says;
without caches the load measured compiling msdebug's 20 modules (about 100 ms), not loading.

    python benchmarks/bench_load.py [--runs 9]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from goals import verdict

GOAL = 0.01  # of import mindspore: README.md's "under 1% of `import mindspore`"
GOAL_MS = 20.0

IMPORT = """
import time
t = time.perf_counter()
import mindspore
print(time.perf_counter() - t)
"""

LOAD = """
import sys, time
from IPython.testing.globalipapp import start_ipython
ip = start_ipython()
t = time.perf_counter()
ip.run_line_magic("load_ext", "msdebug")
elapsed = time.perf_counter() - t
assert "mindspore" not in sys.modules, "loading imported MindSpore"
print(elapsed)
print(sorted(name for name in set(sys.modules) - before), file=sys.stderr)
"""
LOAD = LOAD.replace("t = time.perf_counter()", "before = set(sys.modules)\nt = time.perf_counter()")

_ENV = dict(os.environ)


def _seconds(code: str) -> float:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=_ENV)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    cache = tempfile.TemporaryDirectory(prefix="msdebug-bench-pyc-")
    _ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    _ENV["PYTHONPYCACHEPREFIX"] = cache.name
    _seconds(IMPORT)  # one cold run of each first: warm file caches, bytecode written
    _seconds(LOAD)
    out = subprocess.run([sys.executable, "-c", LOAD], capture_output=True, text=True, check=True, env=_ENV)
    print("%load_ext msdebug imports:", out.stderr.strip().splitlines()[-1])
    imports, loads = [], []
    for _ in range(args.runs):  # interleaved, so drift on the machine hits both alike
        imports.append(_seconds(IMPORT))
        loads.append(_seconds(LOAD))
    result = {
        "runs": args.runs,
        "import_mindspore_s": statistics.median(imports),
        "load_ext_msdebug_s": statistics.median(loads),
    }
    result["ratio"] = result["load_ext_msdebug_s"] / result["import_mindspore_s"]
    print(f"import mindspore     median {result['import_mindspore_s'] * 1e3:8.1f} ms  ({args.runs} fresh processes)")
    print(f"%load_ext msdebug    median {result['load_ext_msdebug_s'] * 1e3:8.1f} ms")
    print(f"ratio                {result['ratio']:.2%}   (goal: under {GOAL:.0%})")
    print(json.dumps(result))
    cache.cleanup()
    load_ms = result["load_ext_msdebug_s"] * 1e3
    return verdict(
        {
            f"%load_ext msdebug at most {GOAL_MS:.0f} ms ({load_ms:.1f} ms)": load_ms <= GOAL_MS,
            f"%load_ext msdebug under {GOAL:.0%} of import mindspore ({result['ratio']:.2%})": result["ratio"] < GOAL,
        }
    )


if __name__ == "__main__":
    sys.exit(main())
