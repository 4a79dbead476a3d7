"""Soak: double Ctrl-C at the end of captured cells in a real Jupyter kernel must never mute it.

Each round runs a cell under ``%msprint on``. The capture's end waits for MindSpore's queue;
here that wait is gated: it tells the test (one line on the kernel's stderr stream) that the
cell has reached it, then waits until it is interrupted. The first interrupt is sent when
that line arrives, so it always lands in the wait; the second follows after a random few
milliseconds and lands wherever the kernel is then (the switch back of fd 1 and
``sys.stdout``, IPython's post-cell hooks, ipykernel's reply, the idle loop). Afterwards
``%msprint off`` and a ``print()`` must be answered and shown. A kernel that does not answer
within ``--mute-after`` seconds is mute: its threads' stacks are written to stderr, it is
replaced, and the run goes on. Exits non-zero if any round muted the kernel.

    python benchmarks/soak_interrupts.py --minutes 20 [--seed 1] [--mute-after 60]

Prints one JSON line: rounds, mutes, rounds whose first interrupt stopped the wait, rounds
in which msdebug deferred an interrupt (it landed in a switch), and the seconds it ran.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_interrupts import GATE, Mute, double_interrupt_round  # noqa: E402

from helpers import Kernel  # noqa: E402


def _frames(frame: object) -> bytes:
    data = frame.bytes if hasattr(frame, "bytes") else bytes(frame)
    return data[:160]


def _naming_the_frames(deserialize):
    """Session.deserialize that names the frames it got when it refuses a message: which
    message was cut short, or which two ran together."""

    def named(msg_list, *args, **kwargs):
        try:
            return deserialize(msg_list, *args, **kwargs)
        except ValueError as error:
            raise ValueError(f"{error}; frames after the identities: {[_frames(f) for f in msg_list[:8]]}") from None

    return named


def start() -> Kernel:
    k = Kernel()
    k.client.session.deserialize = _naming_the_frames(k.client.session.deserialize)
    k.run("%load_ext msdebug\nimport mindspore as ms\nms.set_context(mode=ms.PYNATIVE_MODE)\n%msprint on")
    k.run(GATE)
    return k


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mute-after", type=float, default=60.0, help="seconds without an answer that count as mute")
    args = parser.parse_args()

    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))
    rng = random.Random(args.seed)
    began = time.monotonic()
    end = began + args.minutes * 60
    rounds = mutes = landed = deferred_rounds = 0
    deferred = 0
    k = start()
    try:
        while time.monotonic() < end:
            rounds += 1
            try:
                stopped, now = double_interrupt_round(k, rounds, rng, args.mute_after)
            except (Mute, ValueError) as why:  # ValueError: a garbled message (Invalid Signature)
                mutes += 1
                alive = k.manager.is_alive()
                print(f"round {rounds}: the kernel is mute ({why}); alive: {alive}; its stacks:", file=sys.stderr)
                if alive:
                    print(k.python_stacks()[-6000:], file=sys.stderr)
                k.close()
                k = start()
                deferred = 0
                continue
            landed += stopped
            deferred_rounds += now > deferred
            deferred = now
    finally:
        k.close()
    result = {
        "rounds": rounds,
        "mutes": mutes,
        "first_interrupt_in_the_wait": landed,
        "rounds_with_a_deferred_interrupt": deferred_rounds,
        "seconds": round(time.monotonic() - began, 1),
    }
    print(json.dumps(result))
    return 1 if mutes else 0


if __name__ == "__main__":
    sys.exit(main())
