"""The hang policy of ``%%msrun``: when busy ranks are a deadlock, and where the ranks differ.

Pure: it reads the ranks' flight records (:mod:`msdebug.ranks.flight`) and places
(:mod:`msdebug.ranks.stacks`) and touches no process; :class:`msdebug.ranks.pool.Pool` asks it.

**Where the ranks differ** (:func:`differences`). Each stream of communication (a group's
collectives; the messages from one rank to another) is numbered on every rank from 1. The first
number at which the ranks of a stream disagree is where the job went wrong: a rank never
reached it, or the ranks launched different ops there (AllReduce on one, AllGather on another;
another dtype or shape).

**When a cell is hung** (:func:`judge`). A rank that is merely slower is not an error: the
cell goes on until it ends, Ctrl-C, or a real deadlock:

* a rank that has finished the cell (or does not run it, or died) never launched a collective
  that a busy rank launched, or launched another op at that number: the busy rank can never
  complete it. This needs the records only;
* a busy rank's own stack is inside a communication function while another rank has finished;
* every busy rank waits (in communication, for the ops it launched, in a graph run, at the end
  of the cell), and each has launched a collective where the ranks' records differ.

**When to look** (:class:`Schedule`). The records are read at every check (``hang_after``
seconds after the cell starts, again every ``hang_after`` seconds, and ``hang_after`` seconds
after a rank is done): a file read, nothing asked of a rank. Stacks are read (a signal to each
busy rank) only for a report, or for a live note on a backoff: after ``hang_after`` seconds,
then twice as long each time, at most every :data:`MAX_STACKS_INTERVAL_S` seconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .collectives import COLLECTIVE, POINT_TO_POINT
from .flight import Flight, Record
from .stacks import Place

__all__ = ["MAX_STACKS_INTERVAL_S", "Difference", "RankNow", "Schedule", "Verdict", "differences", "judge"]

MAX_STACKS_INTERVAL_S = 60.0


@dataclass(frozen=True)
class Difference:
    """The first number at which the ranks of one stream disagree."""

    stream: str
    group: str
    seq: int
    kind: str  # COLLECTIVE or POINT_TO_POINT
    records: dict[int, Record | None]  # each rank's record there (None: it never got there)
    counts: dict[int, int]  # how many each rank launched in the stream

    @property
    def missing(self) -> list[int]:
        """The ranks that never reached it."""
        return sorted(rank for rank, record in self.records.items() if record is None)

    @property
    def reached(self) -> list[int]:
        return sorted(rank for rank, record in self.records.items() if record is not None)

    @property
    def mismatched(self) -> bool:
        """Whether ranks that reached it launched different ops there."""
        return len({record.signature for record in self.records.values() if record is not None}) > 1

    def _order(self) -> tuple:
        present = [record for record in self.records.values() if record is not None]
        return (min((record.cell or 0) for record in present), min(record.index for record in present))


def _members(stream: str, records: list[Record], flights: Mapping[int, Flight]) -> set[int]:
    """The ranks that take part in ``stream`` and whose records are here."""
    if ":" in stream:
        sender, _, receiver = stream.rpartition(":")[2].partition(">")
        members = {int(sender), int(receiver)} if sender.isdigit() and receiver.isdigit() else set()
    else:
        members = {rank for record in records for rank in record.ranks}
        if not members:
            # MindSpore did not say who is in the group: its world group has every rank, another
            # group the ranks that used it.
            world = stream.endswith("world_group")
            members = (
                set(flights) if world else {rank for rank, flight in flights.items() if stream in flight.streams()}
            )
    return {rank for rank in members if rank in flights}


def differences(flights: Mapping[int, Flight]) -> list[Difference]:
    """For each stream where the ranks disagree, the first number where they do; the earliest
    launched first."""
    by_stream: dict[str, dict[int, list[Record]]] = {}
    for rank, flight in flights.items():
        for stream, records in flight.streams().items():
            by_stream.setdefault(stream, {})[rank] = records
    found = []
    for stream, per_rank in by_stream.items():
        if stream.endswith(":batch"):
            continue  # a batch of sends and receives to several ranks: not paired here
        every = [record for records in per_rank.values() for record in records]
        members = _members(stream, every, flights)
        difference = _first_difference(stream, members, per_rank, flights)
        if difference is not None:
            found.append(difference)
    return sorted(found, key=Difference._order)


def _first_difference(
    stream: str, members: set[int], per_rank: Mapping[int, list[Record]], flights: Mapping[int, Flight]
) -> Difference | None:
    if len(members) < 2:
        return None
    seqs: dict[int, dict[int, Record]] = {}
    counts: dict[int, int] = {}
    low = 1
    for rank in sorted(members):
        records = per_rank.get(rank, [])
        flight = flights[rank]
        lost = flight.written > len(flight.records)  # its ring has wrapped: early records are gone
        if not records and lost:
            return None  # it may have launched in this stream long ago: nothing certain
        seqs[rank] = {record.seq: record for record in records}
        counts[rank] = max(seqs[rank], default=0)
        if lost and records:
            low = max(low, min(seqs[rank]))
    first = next(iter(per_rank.values()))[0]
    for seq in range(low, max(counts.values(), default=0) + 1):
        at = {rank: seqs[rank].get(seq) if seq <= counts[rank] else None for rank in sorted(members)}
        if any(seq <= counts[rank] and at[rank] is None for rank in members):
            continue  # dropped from a ring: unknown here
        present = [record for record in at.values() if record is not None]
        if len(present) < len(at) or len({record.signature for record in present}) > 1:
            return Difference(stream, first.group, seq, first.kind, at, counts)
    return None


@dataclass(frozen=True)
class RankNow:
    """One rank of the pool as the watch sees it: ``busy`` with the cell, and where its stacks
    put it (``place``: None when they were not read)."""

    rank: int
    busy: bool
    place: Place | None = None


@dataclass(frozen=True)
class Verdict:
    """Whether the busy ranks are a deadlock, why (one line), and the first difference."""

    deadlock: bool
    why: str = ""
    difference: Difference | None = None
    differences: tuple[Difference, ...] = field(default=())


def _what(record: Record) -> str:
    return f"{record.op} #{record.seq}"


def judge(ranks: Mapping[int, RankNow], flights: Mapping[int, Flight]) -> Verdict:
    """The verdict on the busy ranks of ``ranks`` (every rank of the pool: idle ones too)."""
    found = tuple(differences(flights))
    busy = {rank for rank, now in ranks.items() if now.busy}
    done = set(ranks) - busy
    for difference in found:
        stuck = [rank for rank in difference.reached if rank in busy]
        absent = [rank for rank in difference.missing if rank in done]
        other = [
            rank for rank in difference.reached if rank in done
            and difference.records[rank].signature != difference.records[stuck[0]].signature
        ] if stuck else []  # fmt: skip
        if stuck and (absent or other):
            return Verdict(True, _why(difference, stuck, absent, other, ranks, flights), difference, found)
    places = {rank: ranks[rank].place for rank in busy}
    if not busy or any(place is None for place in places.values()):
        return Verdict(False, "", found[0] if found else None, found)
    inside = [rank for rank in sorted(busy) if places[rank].in_communication]
    if done and inside:
        op = places[inside[0]].op or "a communication op"
        finished = ", ".join(map(str, sorted(done)))
        why = f"rank {', '.join(map(str, inside))} waits in {op} while rank {finished} is done"
        return Verdict(True, why, found[0] if found else None, found)
    # Each busy rank waits, and each has launched something the others have not (a rank that
    # waits for its own computing, behind the others, may still come).
    ahead = {rank for difference in found for rank in difference.reached}
    if found and all(places[rank].waiting and rank in ahead for rank in busy):
        difference = found[0]
        why = f"every rank waits, and the ranks differ at {_kind(difference)} #{difference.seq} of {difference.group}"
        return Verdict(True, why, difference, found)
    return Verdict(False, "", found[0] if found else None, found)


def _why(
    difference: Difference,
    stuck: list[int],
    absent: list[int],
    other: list[int],
    ranks: Mapping[int, RankNow],
    flights: Mapping[int, Flight],
) -> str:
    """``rank 0 waits in AllReduce #7 of G, which rank 1 never reached``: the busy rank's last
    launch in the stream (what it waits for), and how the ranks first differ there or before."""
    rank = stuck[0]
    last = flights[rank].streams()[difference.stream][-1]
    place = ranks[rank].place
    verb = "waits in" if place is None or place.waiting else "launched"  # and will wait in it
    why = f"rank {', '.join(map(str, stuck))} {verb} {_what(last)} of {difference.group}"
    if last.seq != difference.seq:
        mine = difference.records[rank]
        head = f"; the ranks differ from #{difference.seq} on ({mine.op} on rank {rank}"
        if absent:
            return why + head + f", never reached by rank {', '.join(map(str, absent))})"
        return why + head + f", {difference.records[other[0]].op} on rank {other[0]})"
    if absent:
        return why + f", which rank {', '.join(map(str, absent))} never reached"
    return why + f", where rank {other[0]} launched {difference.records[other[0]].op}"


def _kind(difference: Difference) -> str:
    return "collective" if difference.kind == COLLECTIVE else "message" if difference.kind == POINT_TO_POINT else "op"


class Schedule:
    """When the pool looks at the busy ranks of one cell (times from ``time.monotonic``)."""

    def __init__(self, hang_after: float, start: float) -> None:
        self.hang_after = hang_after
        self.start = start
        self.check_at = start + hang_after  # the records
        self.stacks_at = start + hang_after  # the stacks, for a note
        self._interval = hang_after

    def rank_done(self, now: float) -> None:
        """A rank has finished: the others get ``hang_after`` seconds from now at most."""
        self.check_at = min(self.check_at, now + self.hang_after)
        self.stacks_at = min(self.stacks_at, now + self.hang_after)

    def stacks_due(self, now: float) -> bool:
        return now >= self.stacks_at

    def checked(self, now: float, stacks_read: bool) -> None:
        self.check_at = now + self.hang_after
        if stacks_read:
            self._interval = min(2 * self._interval, max(self.hang_after, MAX_STACKS_INTERVAL_S))
            self.stacks_at = now + self._interval
