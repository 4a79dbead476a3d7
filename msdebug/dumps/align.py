"""Alignment: which op of one run is which op of the other.

Pure. Ops pair by scope, type and occurrence first; between those anchors, by type and order
(two tools, two modes or two wrappers spell scopes differently); what is left on either side
is listed, never dropped. Near linear in the ops: see :func:`_pair_by_type`.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .runs import RunOp

__all__ = ["Alignment", "align", "normal_scope", "normal_type"]

_TYPE_SUFFIXES = ("ext", "v2", "v3")


def normal_type(op_type: str) -> str:
    """``matmul`` for ``MatMul``, ``MatMulExt``, ``matmul`` and ``__matmul__``: types as the
    modes and tools spell them differently."""
    name = op_type.strip("_").replace("_", "").lower()
    for suffix in _TYPE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name


def normal_scope(scope: str) -> str:
    """The Cell path of a scope without what GRAPH mode adds: ``h * 2`` runs as
    ``Expand/_Muls/Mul-op0`` in a graph and as ``Default/Mul-op0`` under the hooks."""
    parts = scope.split("/")
    kept = []
    skip = False
    for part in parts:
        if part == "Expand":
            skip = True
            continue
        if skip and part.startswith("_"):
            skip = False
            continue
        skip = False
        kept.append(part)
    return "/".join(kept) or "Default"


def _keys(ops: Sequence[RunOp], with_scope: bool) -> list[tuple]:
    seen: Counter = Counter()
    keys = []
    for op in ops:
        base = (normal_scope(op.scope), normal_type(op.op_type)) if with_scope else (normal_type(op.op_type),)
        keys.append((*base, seen[base]))
        seen[base] += 1
    return keys


@dataclass
class Alignment:
    """Pairs of op indices (a, b) in execution order; ops of either side that have no partner."""

    pairs: list[tuple[int, int]]
    only_a: list[int]
    only_b: list[int]
    by_type: int = 0  # pairs found by type and order only (their scopes differ)


_EXACT_PAIRING = 250_000  # gaps up to this many (a, b) cells are paired by difflib: the longest match
_WINDOW = 48  # beyond: the ops both sides are paired over, exactly, where the walk meets a mismatch
_BACK = 16  # and how far back it may take pairs just made


def _pair_by_type(types_a: Sequence[str], types_b: Sequence[str]) -> list[tuple[int, int]]:
    """Pairs of positions with the same type, in order, on both sides.

    Small gaps get difflib's longest matching blocks. difflib is quadratic where types repeat
    (8,000 ops took 88 s), and two runs whose scopes are spelled differently fall here whole;
    so a larger gap is walked once: equal types pair, and at a mismatch a window around it
    (from ``_BACK`` ops before it to ``_WINDOW`` ops on) is paired exactly, as many pairs as the
    window holds (a longest common subsequence), and the walk goes on from its middle. An op
    only one side has (an extra Cast, an op one tool does not record) is stepped over; a choice
    made in the last ``_BACK`` ops of a run of one type is taken back where it ends. Linear in
    the ops for runs that mostly agree, and for runs that share nothing.
    """
    if len(types_a) * len(types_b) <= _EXACT_PAIRING:
        matcher = difflib.SequenceMatcher(None, types_a, types_b, autojunk=False)
        return [(block.a + k, block.b + k) for block in matcher.get_matching_blocks() for k in range(block.size)]
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < len(types_a) and j < len(types_b):
        if types_a[i] == types_b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
            continue
        while pairs and pairs[-1][0] >= i - _BACK and pairs[-1][1] >= j - _BACK:  # the pairs just made
            pairs.pop()
        start_a, start_b = max(i - _BACK, 0), max(j - _BACK, 0)
        if pairs:
            start_a, start_b = max(start_a, pairs[-1][0] + 1), max(start_b, pairs[-1][1] + 1)
        surplus_a = len(types_a) - start_a > len(types_b) - start_b  # where a tie skips: the side with ops more
        local = _longest_common(types_a[start_a : i + _WINDOW], types_b[start_b : j + _WINDOW], surplus_a)
        ahead = [(start_a + x, start_b + y) for x, y in local]
        kept = [(x, y) for x, y in ahead if x < i + _WINDOW // 2 and y < j + _WINDOW // 2]
        if not any(x >= i or y >= j for x, y in kept):  # the first step forward, if it lies further
            kept += [(x, y) for x, y in ahead if x >= i or y >= j][:1]
        pairs.extend(kept)
        if not local:  # nothing in the window pairs: the first half of it on both sides stays alone
            i, j = i + _WINDOW // 2, j + _WINDOW // 2
            continue
        last = kept[-1] if kept else (start_a - 1, start_b - 1)
        moved = max(i, last[0] + 1), max(j, last[1] + 1)
        i, j = moved if moved != (i, j) else (i + 1, j + 1)  # nothing in the window pairs with these two
    return pairs


def _longest_common(a: Sequence[str], b: Sequence[str], skip_a: bool) -> list[tuple[int, int]]:
    """The pairs of a longest common subsequence of ``a`` and ``b`` (small: a window); where
    two are as long, the one that skips on ``a`` first when ``skip_a``, else on ``b``."""
    rows = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for x in range(len(a) - 1, -1, -1):
        row, below = rows[x], rows[x + 1]
        for y in range(len(b) - 1, -1, -1):
            row[y] = below[y + 1] + 1 if a[x] == b[y] else max(below[y], row[y + 1])
    pairs, x, y = [], 0, 0
    while x < len(a) and y < len(b):
        if a[x] == b[y]:
            pairs.append((x, y))
            x, y = x + 1, y + 1
        elif rows[x + 1][y] > rows[x][y + 1] or (skip_a and rows[x + 1][y] == rows[x][y + 1]):
            x += 1
        else:
            y += 1
    return pairs


def align(a: Sequence[RunOp], b: Sequence[RunOp]) -> Alignment:
    """Pair the ops of two runs: by scope, type and occurrence first; between those anchors, by
    type and order; what is left on either side is listed, never dropped."""
    matcher = difflib.SequenceMatcher(None, _keys(a, True), _keys(b, True), autojunk=False)
    anchors = [(block.a + k, block.b + k) for block in matcher.get_matching_blocks() for k in range(block.size)]
    pairs: list[tuple[int, int]] = []
    by_type = 0
    previous = (-1, -1)
    for anchor in [*anchors, (len(a), len(b))]:
        gap_a, gap_b = range(previous[0] + 1, anchor[0]), range(previous[1] + 1, anchor[1])
        if gap_a and gap_b:
            types_a = [normal_type(a[i].op_type) for i in gap_a]
            types_b = [normal_type(b[i].op_type) for i in gap_b]
            for i, j in _pair_by_type(types_a, types_b):
                pairs.append((gap_a[i], gap_b[j]))
                by_type += 1
        if anchor != (len(a), len(b)):
            pairs.append(anchor)
        previous = anchor
    pairs.sort()
    paired_a, paired_b = {i for i, _ in pairs}, {j for _, j in pairs}
    return Alignment(
        pairs,
        [i for i in range(len(a)) if i not in paired_a],
        [j for j in range(len(b)) if j not in paired_b],
        by_type,
    )
