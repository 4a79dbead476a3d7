"""Soak: generated MindSpore programs, each with one known fault; every answer must be right.

Each program (``tests/programs.py``) is a few notebook cells of ordinary MindSpore code with one
constant or weight changed at a known op. In one in-process IPython shell with msdebug loaded,
``%%msnan`` must name the op that made the NaN or Inf (name, occurrence, notebook line), and
``%%msdiff --against`` the op where the program parts from its own saved run; the unchanged
program must be all finite and agree. One program in ``--kernels-every`` (drawn) is a GRAPH-mode
network or an ``@jit`` function instead, checked in a fresh kernel (MindSpore takes the data
dump's config at a process's first graph compile). Every shape that once got a wrong answer
(``tests/test_generated_programs.py`` forces each) is drawn too.

    python benchmarks/soak_answers.py --programs 5000 [--seed 1] [--kernels-every 25] [--asynchronous]

Prints ``wrong W of N programs (msnan P/GRAPH G, msdiff D)``, the first wrong programs in full,
and one JSON line; exits 1 if any answer was wrong. By default MindSpore launches each op before
returning (``runtime.launch_blocking``): msdebug reads every op's values, and on a loaded machine
each read of an asynchronous launch waits milliseconds on MindSpore's queue; ``--asynchronous``
keeps MindSpore's default.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=100, help="how many programs (default 100)")
    parser.add_argument("--seed", type=int, default=1, help="hypothesis's seed: the same programs for the same seed")
    parser.add_argument("--kernels-every", type=int, default=25,
                        help="one program in N is a GRAPH or @jit one, in a fresh kernel (0: none; default 25)")  # fmt: skip
    parser.add_argument("--asynchronous", action="store_true", help="MindSpore's asynchronous launch (its default)")
    parser.add_argument("--show", type=int, default=5, help="how many wrong programs to print in full (at most 5)")
    args = parser.parse_args(argv)

    if not args.asynchronous:
        import mindspore as ms

        ms.runtime.launch_blocking()  # one-way: before the first op of this process
    from warm import use_warm_kernels

    use_warm_kernels()  # fresh kernels are forks of one that has imported MindSpore
    import programs

    last, shown = [time.monotonic()], [0]

    def progress(tally: programs.Tally) -> None:
        for example in tally.examples[shown[0] : args.show]:  # a wrong program as soon as it is found
            print(f"{'=' * 72}\n{example}\n", flush=True)
        shown[0] = len(tally.examples)
        if time.monotonic() - last[0] >= 30 or tally.programs == args.programs:
            last[0] = time.monotonic()
            print(f"{tally.programs} programs, {tally.summary()}", file=sys.stderr, flush=True)

    tally = programs.run_programs(args.programs, seed=args.seed, kernels_every=args.kernels_every, progress=progress)
    print(tally.summary())
    checked = ", ".join(f"{name} {count}" for name, count in sorted(tally.checked.items()))
    print(f"checked: {checked}; {tally.seconds:.0f} s ({tally.seconds / max(tally.programs, 1):.2f} s a program)")
    result = tally.as_dict()
    result.pop("examples")
    print(json.dumps({"seed": args.seed, "asynchronous": args.asynchronous, **result}))
    return 1 if tally.wrong_programs or tally.programs < args.programs else 0


if __name__ == "__main__":
    sys.exit(main())
