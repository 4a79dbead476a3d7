"""The verdict every benchmark ends with: each goal met or missed, and the exit status.

A benchmark that misses a goal exits 1, so a run in a script or CI fails where the goal does.
"""

from __future__ import annotations

__all__ = ["verdict"]


def verdict(goals: dict[str, bool]) -> int:
    """Print one line per goal; 0 when every goal is met, 1 otherwise (the process's exit status).

    A goal whose measurement failed (a NaN compares false) counts as missed.
    """
    if not goals:
        raise ValueError("a benchmark with no goal cannot be met or missed")
    for text, met in goals.items():
        print(f"{'met   ' if met else 'MISSED'}  {text}")
    missed = sum(not met for met in goals.values())
    print(f"{len(goals) - missed} of {len(goals)} goals met")
    return 1 if missed else 0
