"""``%%mswatch`` inside ``%%msrun``: each rank's watch, brought to the notebook and merged.

Each rank runs its own watch (``%%mswatch`` or ``msdebug.watch`` in the cell it was sent). When
the cell ends, the rank saves the history of the watch that ended in it into the pool's
directory, ``<pool>/watch/rank<R>`` (:func:`save`, renamed into place whole, before the rank's
cell is idle, so the notebook never reads half of one); the notebook empties ``<pool>/watch``
before it sends a cell (:func:`clear`) and reads what the ranks saved after it (:func:`collect`).
No message and no collective is added to a training step: a rank's watch costs what it costs
alone, and the merge is a few file reads and array comparisons once per cell.

The merge (:class:`RanksWatch`) says which ranks tripped, at which step, and where the ranks
diverge: data-parallel ranks hold the same weights, and after AllReduce the same gradients, so
the statistics of a weight or a gradient that differ between ranks at a step are a finding of
their own (a rank that skipped or scaled its reduction, another initialisation, a rank-local
update), even when no condition trips. Activations and the loss are each rank's own data and are
not compared. Pure: numpy and the saved histories, no MindSpore, no IPython.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..dumps.watch import STATS, WatchHistory
from ..errors import MsDebugError

__all__ = ["COMPARED", "Divergence", "RanksWatch", "clear", "collect", "diverge", "save", "where"]

FOLDER = "watch"  # under the pool's directory
#: What data parallelism keeps equal on every rank, in the order a cause comes before its effect
#: (a gradient that differs at a step makes the weight differ from that step's update on).
COMPARED = ("grad", "weight")
RTOL, ATOL = 1e-5, 1e-12  # statistics of float32 tensors that AllReduce made equal are equal bit for bit
#: The statistic a finding names, by preference when several differ as much: the norm first.
_PREFERRED = ("l2", "abs_mean", "mean", "max", "min", "zero_share", "nonfinite")


def where(pool: str | os.PathLike, rank: int | str) -> Path:
    """The directory rank ``rank`` saves its watch to."""
    return Path(pool) / FOLDER / f"rank{rank}"  # as the rank's other files (worker.role_name)


def clear(pool: str | os.PathLike) -> None:
    """Forget the watches of the last cell (the notebook, before it sends the next one)."""
    shutil.rmtree(Path(pool) / FOLDER, ignore_errors=True)


def save(pool: str | os.PathLike, rank: int | str, history: WatchHistory) -> Path:
    """Save ``history`` as rank ``rank``'s watch of this cell, replacing an earlier one of the
    same cell: written beside, then renamed into place whole."""
    target = where(pool, rank)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    history.save(partial)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(partial, target)
    return target


@dataclass(frozen=True)
class Divergence:
    """One watched weight or gradient whose statistics differ between ranks at its first such
    step: ``ranks`` differ from ``agree`` (the larger group; with two ranks, the lower one)."""

    kind: str  # "grad" | "weight"
    name: str
    step: int
    stat: str  # the statistic named: the one that differs most
    values: dict[int, float]  # that statistic on every rank compared, by rank
    ranks: tuple[int, ...]
    agree: tuple[int, ...]

    @property
    def ratio(self) -> float:
        """The largest relative difference of ``stat`` between a differing rank and the others."""
        reference = self.values[self.agree[0]]
        return max(abs(self.values[r] - reference) / max(abs(reference), abs(self.values[r]), 1e-300)
                   for r in self.ranks)  # fmt: skip


@dataclass
class RanksWatch:
    """The watches the ranks of one ``%%msrun`` cell saved, merged."""

    histories: dict[int, WatchHistory]
    ranks: list[int]  # the ranks the cell was sent to
    unreadable: dict[int, str] = field(default_factory=dict)  # rank -> why its saved watch could not be read
    divergences: list[Divergence] = field(default_factory=list)
    compared: int = 0  # weights and gradients watched on two ranks or more
    common_steps: int = 0  # steps recorded on every rank that watched

    @property
    def missing(self) -> list[int]:
        """The ranks that ran the cell but saved no watch (it raised first, or watched nothing)."""
        return [r for r in self.ranks if r not in self.histories]

    @property
    def tripped(self) -> dict[int, object]:
        """Each rank's first trip, for the ranks that tripped (by rank)."""
        return {r: h.first_trip for r, h in sorted(self.histories.items()) if h.first_trip is not None}

    def _repr_html_(self) -> str:
        from ..views import watch

        return watch.html_ranks(self)

    def __repr__(self) -> str:
        from ..views import watch

        return watch.text_ranks(self)


def _groups(rows: dict[int, np.ndarray], rtol: float, atol: float) -> list[list[int]]:
    """Ranks whose rows of statistics are equal (each compared with its group's first rank)."""
    groups: list[list[int]] = []
    for rank, row in rows.items():
        for group in groups:
            if np.allclose(row, rows[group[0]], rtol=rtol, atol=atol, equal_nan=True):
                group.append(rank)
                break
        else:
            groups.append([rank])
    return groups


def _named(rows: dict[int, np.ndarray], ranks: list[int], agree: list[int]) -> str:
    """The statistic that differs most between ``ranks`` and ``agree`` (ties: the norm first)."""
    reference = rows[agree[0]]

    def spread(stat: str) -> float:
        i = STATS.index(stat)
        a = reference[i]
        worst = 0.0
        for r in ranks:
            b = rows[r][i]
            if np.isnan(a) != np.isnan(b):
                return np.inf
            if not np.isnan(a) and a != b:
                worst = max(worst, abs(b - a) / max(abs(a), abs(b), 1e-300))
        return worst

    return max(_PREFERRED, key=lambda stat: (round(spread(stat), 9), -_PREFERRED.index(stat)))


def diverge(
    histories: dict[int, WatchHistory], rtol: float = RTOL, atol: float = ATOL
) -> tuple[list[Divergence], int, int]:
    """Where data-parallel ranks' weights and gradients differ: one :class:`Divergence` per
    tensor, at the first step recorded on the ranks that differs, ordered by step (a gradient
    before the weights at the same step). Also returns how many tensors were compared and on how
    many common steps. Tensors watched on one rank only, or with other shapes, are not compared."""
    ranks = sorted(histories)
    steps = {r: [int(s) for s in histories[r].steps] for r in ranks}
    common = sorted(set.intersection(*(set(s) for s in steps.values()))) if ranks else []
    keys: list[tuple[str, str]] = []
    for r in ranks:
        for w in histories[r].watched:
            if w.kind in COMPARED and (w.kind, w.name) not in keys:
                keys.append((w.kind, w.name))
    shapes = {r: {(w.kind, w.name): tuple(w.shape) for w in histories[r].watched} for r in ranks}
    rows_of = {r: [steps[r].index(s) for s in common] if steps[r] != common else slice(None) for r in ranks}
    found: list[Divergence] = []
    compared = 0
    for kind, name in keys:
        having = [r for r in ranks if (kind, name) in shapes[r]]
        if len(having) < 2 or len({shapes[r][(kind, name)] for r in having}) > 1 or not common:
            continue
        compared += 1
        tables = {r: histories[r].stats(name, kind)[rows_of[r]] for r in having}
        recorded = np.all([~np.isnan(t).all(axis=1) for t in tables.values()], axis=0)  # a step every rank recorded
        first = tables[having[0]]
        differs = np.zeros(len(common), dtype=bool)
        for r in having[1:]:
            differs |= ~np.isclose(tables[r], first, rtol=rtol, atol=atol, equal_nan=True).all(axis=1)
        hits = np.flatnonzero(differs & recorded)
        if not len(hits):
            continue
        at = int(hits[0])
        rows = {r: tables[r][at] for r in having}
        groups = sorted(_groups(rows, rtol, atol), key=lambda g: (-len(g), g[0]))
        agree, apart = groups[0], sorted(r for g in groups[1:] for r in g)
        stat = _named(rows, apart, agree)
        values = {r: float(rows[r][STATS.index(stat)]) for r in having}
        found.append(Divergence(kind, name, common[at], stat, values, tuple(apart), tuple(agree)))
    found.sort(key=lambda d: (d.step, COMPARED.index(d.kind)))
    return found, compared, len(common)


def collect(pool: str | os.PathLike, ranks: list[int]) -> RanksWatch | None:
    """The watches the ranks saved for the cell just run, merged; None when no rank watched."""
    root = Path(pool) / FOLDER
    if not root.is_dir():
        return None
    histories: dict[int, WatchHistory] = {}
    unreadable: dict[int, str] = {}
    for rank in ranks:
        saved = where(pool, rank)
        if not saved.is_dir():
            continue
        try:
            histories[rank] = WatchHistory.load(saved)
        except MsDebugError as error:
            unreadable[rank] = str(error)
    if not histories and not unreadable:
        return None
    found, compared, common = diverge(histories)
    return RanksWatch(histories, list(ranks), unreadable, found, compared, common)
