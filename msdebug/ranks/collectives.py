"""MindSpore's communication ops, one list: which names are collectives, which point-to-point.

One meaning everywhere in msdebug. A **collective** is joined by every rank of its group, and
each rank waits in it until the last one arrives (AllReduce, AllGather, Broadcast, Barrier ...).
A **point-to-point** op joins two ranks, a sender and a receiver (Send, Receive, isend, irecv).
Both are **communication**: a rank can wait in either for another rank. A profile marks the
straggler of a collective only (:mod:`msdebug.dumps.profile`); the hang watch follows both
(:mod:`msdebug.ranks.hangs`), a collective by its place in its group's order, a point-to-point
op by its place among the messages from one rank to another.

Names come spelled many ways: ``AllReduce`` (``mindspore.ops``), ``InnerCommAllReduce`` and
``DistCommAllGatherIntoTensor`` (the primitives behind ``comm_func`` and ``mint.distributed``),
``all_gather_into_tensor`` (their functions), ``HcomAllReduce`` (Ascend's kernels in a profile).
Each has one name here. Compute ops whose names merely look alike (``BroadcastTo``, ``Gather``,
``ReduceSum``) are not communication; ``Gather`` and ``Scatter`` are only when the name says so
(``CollectiveGather``, ``DistCommScatter``) or the caller knows (a frame in ``comm_func``).

Pure data and text, nothing imported.
"""

from __future__ import annotations

__all__ = ["COLLECTIVE", "POINT_TO_POINT", "communication", "is_collective", "is_communication"]

COLLECTIVE = "collective"
POINT_TO_POINT = "point-to-point"

# Lower case, no underscores -> (the one name, kind). Unambiguous on their own.
_OPS = {
    "allreduce": ("AllReduce", COLLECTIVE),
    "allgather": ("AllGather", COLLECTIVE),
    "allgatherintotensor": ("AllGather", COLLECTIVE),
    "allgatherv": ("AllGatherV", COLLECTIVE),
    "allgatherintotensoruneven": ("AllGatherV", COLLECTIVE),
    "reducescatter": ("ReduceScatter", COLLECTIVE),
    "reducescattertensor": ("ReduceScatter", COLLECTIVE),
    "reducescatterv": ("ReduceScatterV", COLLECTIVE),
    "reducescattertensoruneven": ("ReduceScatterV", COLLECTIVE),
    "broadcast": ("Broadcast", COLLECTIVE),
    "barrier": ("Barrier", COLLECTIVE),
    "reduce": ("Reduce", COLLECTIVE),
    "alltoall": ("AllToAll", COLLECTIVE),
    "alltoallv": ("AllToAllV", COLLECTIVE),
    "alltoallvc": ("AllToAllVC", COLLECTIVE),
    "alltoallvsingle": ("AllToAllV", COLLECTIVE),
    "alltoallsingle": ("AllToAllV", COLLECTIVE),
    "alltoallwithoutputshape": ("AllToAllV", COLLECTIVE),
    "alltoallsinglewithoutputshape": ("AllToAllV", COLLECTIVE),
    "neighborexchange": ("NeighborExchange", COLLECTIVE),
    "neighborexchangev2": ("NeighborExchangeV2", COLLECTIVE),
    "collectivescatter": ("Scatter", COLLECTIVE),
    "collectivegather": ("Gather", COLLECTIVE),
    "send": ("Send", POINT_TO_POINT),
    "receive": ("Receive", POINT_TO_POINT),
    "isend": ("Send", POINT_TO_POINT),
    "irecv": ("Receive", POINT_TO_POINT),
    "batchisendirecv": ("BatchSendReceive", POINT_TO_POINT),
}
# Communication only where the name carries a communication prefix, or the caller knows.
_ONLY_KNOWN = {
    "gather": ("Gather", COLLECTIVE),
    "gatherintotensor": ("Gather", COLLECTIVE),
    "scatter": ("Scatter", COLLECTIVE),
    "scattertensor": ("Scatter", COLLECTIVE),
    "recv": ("Receive", POINT_TO_POINT),
    "allgatherobject": ("AllGather", COLLECTIVE),
    "broadcastobjectlist": ("Broadcast", COLLECTIVE),
}
_PREFIXES = ("innercomm", "distcomm", "hcom")


def communication(name: str, known: bool = False) -> tuple[str, str] | None:
    """``(the op's one name, its kind)`` when ``name`` is a communication op, else None.

    ``known``: the caller knows ``name`` is one of MindSpore's communication functions (a frame
    in ``comm_func``), so ``gather`` and ``scatter`` count too.
    """
    spelled = name.lower().replace("_", "")
    for prefix in _PREFIXES:
        if spelled.startswith(prefix) and len(spelled) > len(prefix):
            spelled, known = spelled[len(prefix) :], True
            break
    found = _OPS.get(spelled)
    if found is None and known:
        found = _ONLY_KNOWN.get(spelled)
    return found


def is_communication(name: str) -> bool:
    """Whether ``name`` is a communication op, collective or point-to-point."""
    return communication(name) is not None


def is_collective(name: str) -> bool:
    """Whether ``name`` is a collective (AllReduce, AllGather, Broadcast, ...; not Send/Receive)."""
    found = communication(name)
    return found is not None and found[1] == COLLECTIVE
