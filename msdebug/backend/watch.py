"""What ``%%mswatch`` needs from MindSpore: statistics where the tensors are, and what is trained.

* :func:`statistics`: max, min, mean, mean of ``|x|``, L2 norm, share of zeros and count of
  NaN/Inf of many tensors at once, with the change of the weights since a copy. On a device,
  one compiled function (``mindspore.jit`` over a tuple of tensors) returns one small matrix:
  one copy to the host per step, never a whole tensor. Where the device is the host (the CPU
  build), numpy reads the tensors' own memory (:func:`packed_rows`: the small ones laid end to
  end, one ``reduceat`` pass per statistic; the large ones where they are, on threads).
* :class:`Tracker`: in PyNative, the optimizer's call (``nn.Optimizer.__call__``, wrapped with
  :class:`~msdebug.backend.hooks.Patches`) gives the weights it updates and the gradients it
  receives; a wrapped ``Cell.__call__`` gives the sub-cells' outputs (the activations).
  ``nn.TrainOneStepCell``'s call is wrapped too: its end ends a step, with its output as the
  loss. In GRAPH mode a TrainOneStepCell runs as :class:`WatchedStep`, a Cell that does what its
  ``construct`` does and also returns the statistics (a device) or the gradients (the host), so
  one graph run gives them; no dump. A training Cell with a ``construct`` of its own runs as
  its twin, whose optimizer (:class:`RecordingOptimizer`) keeps what it is given. Inside
  ``@jit`` no call is seen: the namespace's optimizers whose call count moved in the step are
  watched.
* :func:`watch_callback`: the ``Model.train`` callback.

MindSpore's statistics-only dump (``saved_data: "statistic"``) does the same on GPU and Ascend
for every op; the CPU build refuses it (``storing statistic dump is only supported on GPU and
Ascend``), so here it is only named by :func:`statistic_dump_available` and not used: the graph
wrapper works on every device and gives the session the same rows.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import interrupts
from ..dumps.watch import STATS, Needs, Watched
from .hooks import Patches, tensors_in

__all__ = [
    "Targets",
    "Tracker",
    "WatchedStep",
    "find_targets",
    "graph_mode",
    "statistic_dump_available",
    "statistics",
    "watch_callback",
]


# --------------------------------------------------------------------------- statistics


@functools.cache
def _kernels() -> tuple[Callable, Callable, Callable]:
    """The functions MindSpore compiles (in ``jit`` and inside :class:`WatchedStep`): ``rows``,
    ``copies`` and ``laid``; made on first use, so that importing this module imports no MindSpore."""
    from mindspore import dtype as mstype
    from mindspore import ops

    def rows(weights, prevs, others, ranges):
        """One row per tensor, weights first: :data:`STATS`, the share of values in each range,
        then for the weights that have a copy in ``prevs`` (the first ``len(prevs)``) the mean
        ``|update|``, the mean ``|before|`` and the share of zeros before; zeros where a tensor has
        no such value."""
        out = []
        count = len(weights) + len(others)
        for i in range(count):
            if i < len(weights):
                x = weights[i].astype(mstype.float32)
            else:
                x = others[i - len(weights)].astype(mstype.float32)
            n = x.size
            zero = x.max() * 0
            row = [x.max(), x.min(), x.mean(), ops.abs(x).mean(), ops.sqrt((x * x).sum()),
                   (x == 0).astype(mstype.float32).sum() / n, n - ops.isfinite(x).astype(mstype.float32).sum()]  # fmt: skip
            for low, high in ranges:
                row.append(((x >= low) & (x <= high)).astype(mstype.float32).sum() / n)
            if len(prevs) > 0:
                if i < len(prevs):
                    before = prevs[i].astype(mstype.float32)
                    change = ops.abs(x - before)
                    size = ops.abs(before)
                    row.append(change.mean())
                    row.append(size.mean())
                    row.append((before == 0).astype(mstype.float32).sum() / n)
                else:
                    for _ in range(3):
                        row.append(zero)
            out.append(ops.stack(row))
        return ops.stack(out)

    def copies(tensors):
        """Copies of ``tensors`` on the device."""
        out = []
        for tensor in tensors:
            out.append(tensor + 0)
        return tuple(out)

    def laid(tensors):
        """``tensors`` end to end, as one flat float32 tensor (a copy)."""
        out = []
        for tensor in tensors:
            out.append(tensor.astype(mstype.float32).reshape(-1))
        return ops.concat(out)

    return rows, copies, laid


@functools.cache
def _compiled() -> tuple[Callable, Callable]:
    import mindspore as ms

    rows, copy, _ = _kernels()
    return ms.jit(rows), ms.jit(copy)


def _value(tensor: Any) -> Any:
    """A Parameter's current data as a Tensor a compiled function takes (taken anew each step:
    ``set_data`` gives a Parameter new storage)."""
    value = getattr(tensor, "value", None)
    return value() if callable(value) and type(tensor).__name__ == "Parameter" else tensor


def statistics(weights: list, prevs: list, others: list, needs: Needs, read: Callable | None = None) -> np.ndarray:
    """float64 matrix, one row per tensor (``weights`` then ``others``): :data:`STATS`, then
    ``needs.extras``; NaN where a value does not apply (no copy of a weight, not a weight).

    Where the device is the host (the CPU build), the tensors' own memory is read in place with
    numpy (``asnumpy`` of a Parameter or of an op's output is a view there, no copy): a handful of
    vectorised passes over the tensors laid end to end (:func:`packed_rows`), where MindSpore's CPU
    kernels cost about 15 launches per tensor (10 to 30 times slower on the benchmark's step).
    Elsewhere, one compiled MindSpore function.
    ``read`` gives a tensor's values on the host (:meth:`_Views.flat` keeps the Parameters' views)."""
    if on_host():  # full width already, the change NaN where there is no copy
        return _host_rows(weights, prevs, others, needs, read or _flat)
    rows, _ = _compiled()
    # mutable: tensors in a tuple are otherwise constants, and each new value compiles anew
    matrix = rows(_tuple(weights), _tuple(prevs), _tuple(others), needs.ranges)
    return _finish(matrix.asnumpy(), len(prevs), needs)


def on_host() -> bool:
    """Whether MindSpore's tensors live in host memory (the CPU build): statistics and copies
    are then made by numpy on the tensors' own memory."""
    import mindspore as ms

    return ms.get_context("device_target") == "CPU" and not os.environ.get("MSDEBUG_WATCH_DEVICE_KERNELS")


def _flat(tensor: Any) -> np.ndarray:
    """``tensor``'s values as a flat float array, in place where its memory allows (numpy has no
    bfloat16: such a tensor is cast first)."""
    if isinstance(tensor, np.ndarray):
        values = tensor
    else:  # a Parameter's own asnumpy is the view (its value() is a copy)
        if str(tensor.dtype) == "BFloat16":
            from mindspore import dtype as mstype

            tensor = tensor.astype(mstype.float32)
        values = tensor.asnumpy()
    values = values.reshape(-1)
    return values if values.dtype in (np.float32, np.float64) else values.astype(np.float32)


class _Views:
    """Where the device is the host: numpy views of the watched Parameters' own memory, made once
    (``asnumpy`` costs microseconds, times every tensor, every step) and again only when a
    Parameter's storage moves (``set_data``), which its ``data_ptr()`` tells."""

    def __init__(self) -> None:
        self._held: dict[int, tuple[Any, int, np.ndarray]] = {}  # id -> (the Parameter, its data_ptr, the view)

    def flat(self, tensor: Any) -> np.ndarray:
        """:func:`_flat` of ``tensor``, a Parameter's view kept while its storage stays."""
        entry = self._held.get(id(tensor))
        if entry is not None and entry[0] is tensor and entry[1] == tensor.data_ptr():
            return entry[2]
        pointer = getattr(tensor, "data_ptr", None)
        if pointer is None or type(tensor).__name__ != "Parameter" or str(tensor.dtype) not in ("Float32", "Float64"):
            return _flat(tensor)
        entry = self._held[id(tensor)] = (tensor, pointer(), _flat(tensor))
        return entry[2]

    def clear(self) -> None:
        self._held = {}


def _host_rows(weights: list, prevs: list, others: list, needs: Needs, read: Callable = _flat) -> np.ndarray:
    """What the compiled ``rows`` gives, computed by numpy on the host (see :func:`statistics`):
    the tensors under :data:`_LAID` values laid end to end and read at once, each larger one
    where it is (:func:`packed_rows`). A weight with no copy gets NaN for its change."""
    tensors = [*weights, *others]
    out = np.full((len(tensors), _width(needs)), np.nan)
    flats = [read(tensor) for tensor in tensors]
    befores = [read(prevs[i]) if i < len(prevs) else None for i in range(len(tensors))]
    small, large = _split([flat.size for flat in flats])
    if small:
        laid = np.concatenate([flats[i] for i in small]) if len(small) > 1 else flats[small[0]]
        copied = [befores[i] for i in small if befores[i] is not None]  # the first ones: weights with a copy
        before = (np.concatenate(copied) if len(copied) > 1 else copied[0]) if copied else None
        out[small] = packed_rows(laid, np.array([flats[i].size for i in small]), needs, before)

    def fill(i: int) -> None:
        out[i] = packed_rows(flats[i], np.array([flats[i].size]), needs, befores[i], threads=len(large) == 1)[0]

    if len(large) > 1:  # each on a thread of its own (one thread would wait on another's pieces)
        list(_threads().map(fill, large))
    elif large:
        fill(large[0])
    return out


def _split(sizes: Any) -> tuple[list[int], list[int]]:
    """The indices of the tensors under :data:`_LAID` values (laid end to end to be read), and of
    the others (read where they are)."""
    return [i for i, size in enumerate(sizes) if size < _LAID], [i for i, size in enumerate(sizes) if size >= _LAID]


def _width(needs: Needs) -> int:
    return len(STATS) + len(needs.ranges) + (3 if needs.update else 0)


#: Tensors under this many values are laid end to end (a copy) to be read at once.
_LAID = 1 << 16
#: A buffer of at least this many values is read in pieces, on a few threads (numpy lets go of
#: the GIL in its reductions).
_THREADED = 1 << 19
#: A buffer is read in pieces of at most this many values, each passed over about ten times
#: while it is still in the CPU's cache (not ten times from memory).
_BLOCK = 1 << 18


@functools.cache
def _threads():
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(_pieces(), thread_name_prefix="msdebug-watch")


def _pieces() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def packed_rows(flat: np.ndarray, sizes: np.ndarray, needs: Needs, before: np.ndarray | None = None,
                threads: bool = True) -> np.ndarray:  # fmt: skip
    """The rows of :func:`statistics` for tensors laid end to end in ``flat``, ``sizes[i]``
    values each, with ``before`` (their copies before the step, laid out alike) for the change:
    a few vectorised passes over the whole buffer (``ufunc.reduceat``), however many tensors; a
    large buffer in pieces on threads (unless ``threads`` is false), whose sums, extremes and
    counts are then added up. An empty tensor's row is NaN. ``before`` may cover only the first
    tensors (it then ends where one of them does); the change columns of the others, and of all
    without ``before``, are NaN.

    As MindSpore's ``max`` and ``min``, NaN is passed over (an Inf still shows). The counts of
    zeros and of NaN/Inf take a pass of their own only where there are any."""
    layout = _layout(tuple(np.asarray(sizes, dtype=np.intp).tolist()), threads)
    out = np.full((len(layout.sizes), _width(needs)), np.nan)
    if not layout.kept.size:
        return out
    update = before if needs.update else None
    if len(layout.jobs) > 1 and layout.threaded:
        parts = list(_threads().map(lambda job: _piece(flat, update, needs, job), layout.jobs))
    else:
        parts = [_piece(flat, update, needs, job) for job in layout.jobs]
    if len(parts) == 1:
        total = parts[0][1]
    else:
        total = np.zeros((len(layout.kept), _PARTS + len(needs.ranges) + 3))
        total[:, 0], total[:, 1] = -np.inf, np.inf
        with np.errstate(invalid="ignore"):  # Inf + -Inf: NaN, as the sum of the whole would be
            for first, part in parts:
                rows = total[first : first + len(part)]
                rows[:, 0] = np.fmax(rows[:, 0], part[:, 0])  # an all-NaN piece leaves the others' extremes
                rows[:, 1] = np.fmin(rows[:, 1], part[:, 1])
                rows[:, 2:] += part[:, 2:]
    counts = layout.counts
    rows = np.empty((len(layout.kept), out.shape[1]))
    all_nan = total[:, 7] == counts
    rows[:, :2] = total[:, :2]
    rows[all_nan, :2] = np.nan  # as numpy's fmax of only NaN
    rows[:, 2:4] = total[:, 2:4] / counts[:, None]
    rows[:, 4] = np.sqrt(total[:, 4])
    rows[:, 5] = total[:, 5] / counts
    rows[:, 6] = total[:, 6]
    rows[:, len(STATS) : len(STATS) + len(needs.ranges)] = (
        total[:, _PARTS : _PARTS + len(needs.ranges)] / counts[:, None]
    )
    if needs.update:
        rows[:, -3:] = total[:, -3:] / counts[:, None]
        rows[layout.ends > (0 if update is None else len(update)), -3:] = np.nan  # no copy
    out[layout.kept] = rows
    return out


class _Layout:
    """Where the tensors of one layout (their sizes, in order) lie in the buffer, and the pieces
    it is read in: worked out once, used every step (:func:`packed_rows`)."""

    def __init__(self, sizes: tuple[int, ...], threaded: bool, block: int, pieces: int) -> None:
        self.sizes = np.array(sizes, dtype=np.intp)
        self.kept = np.flatnonzero(self.sizes)
        self.counts = self.sizes[self.kept].astype(np.float64)
        starts = (np.cumsum(self.sizes) - self.sizes)[self.kept]
        self.ends = starts + self.sizes[self.kept]
        total = int(self.sizes.sum())
        self.threaded = threaded
        pieces = max(pieces, -(-total // block))
        cuts = np.linspace(0, total, pieces + 1).astype(np.intp)
        #: per piece: its values lo:hi, the index of its first tensor, where each of its tensors starts in it
        self.jobs: list[tuple[int, int, int, np.ndarray]] = []
        for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
            if hi > lo:
                first = int(np.searchsorted(starts, lo, side="right")) - 1
                last = int(np.searchsorted(starts, hi, side="left"))
                self.jobs.append((lo, hi, first, np.maximum(starts[first:last], lo) - lo))


def _layout(sizes: tuple[int, ...], threads: bool) -> _Layout:
    threaded = threads and sum(sizes) >= _THREADED
    return _cached_layout(sizes, threaded, _BLOCK, _pieces() if threaded else 1)


@functools.lru_cache(maxsize=64)
def _cached_layout(sizes: tuple[int, ...], threaded: bool, block: int, pieces: int) -> _Layout:
    return _Layout(sizes, threaded, block, pieces)


#: The columns of a piece before the ranges: max, min, sum, sum |x|, sum x*x, zeros, NaN/Inf, NaN.
_PARTS = 8


def _piece(flat: np.ndarray, before: np.ndarray | None, needs: Needs,
           job: tuple[int, int, int, np.ndarray]) -> tuple[int, np.ndarray]:  # fmt: skip
    """The sums, extremes and counts of the values ``lo:hi`` of ``flat``, per tensor that has
    values there (``local``: where each starts in the piece): the index of the first such tensor,
    and a row each."""
    lo, hi, first, local = job
    x = flat[lo:hi]
    buffer = np.empty_like(x)
    part = np.zeros((len(local), _PARTS + len(needs.ranges) + 3))
    with np.errstate(over="ignore", invalid="ignore"):  # Inf - Inf, and squares past float32: shown, not warned
        _fill_piece(part, x, buffer, local, needs, None if before is None else before[lo:hi])
    return first, part


def _fill_piece(part: np.ndarray, x: np.ndarray, buffer: np.ndarray, local: np.ndarray, needs: Needs,
                b: np.ndarray | None) -> None:  # fmt: skip
    if len(local) == 1:  # one tensor (a large one's piece): BLAS's dot for the squares, no pass to square
        squares = np.array([np.dot(x, x)])
    else:
        squares = np.add.reduceat(np.multiply(x, x, out=buffer), local)
    part[:, 0] = np.fmax.reduceat(x, local)
    part[:, 1] = np.fmin.reduceat(x, local)
    part[:, 2] = _sums(x, local)
    part[:, 3] = _sums(np.abs(x, out=buffer), local)
    part[:, 4] = squares
    part[:, 5] = _counts(x == 0, local)
    if not np.isfinite(squares.sum()):  # a NaN or Inf somewhere (or squares past float32)
        ends = np.append(local[1:], len(x))
        for j in np.flatnonzero(~np.isfinite(squares)):
            values = x[local[j] : ends[j]]
            part[j, 6] = len(values) - np.count_nonzero(np.isfinite(values))
            part[j, 7] = np.count_nonzero(np.isnan(values))
    for k, (low, high) in enumerate(needs.ranges):
        part[:, _PARTS + k] = _counts((x >= low) & (x <= high), local)
    if b is not None and len(b):  # the copies cover the tensors that start before its end
        covered = int(np.searchsorted(local, len(b), side="left"))
        xb, into, at = x[: len(b)], buffer[: len(b)], local[:covered]
        part[:covered, -3] = _sums(np.abs(np.subtract(xb, b, out=into), out=into), at)
        part[:covered, -2] = _sums(np.abs(b, out=into), at)
        part[:covered, -1] = _counts(b == 0, at)


def _sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each segment's sum: one ``reduceat``, or for a single segment numpy's vectorised
    ``einsum`` (about three times as fast as ``add.reduce`` on float32)."""
    if len(starts) == 1:
        return np.array([np.einsum("i->", values)])
    return np.add.reduceat(values, starts)


def _counts(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """How many of each segment's values ``mask`` holds (no second pass when none anywhere)."""
    if len(starts) == 1:
        return np.array([float(np.count_nonzero(mask))])
    if not mask.any():
        return np.zeros(len(starts))
    return np.add.reduceat(mask, starts, dtype=np.intp).astype(np.float64)


def _finish(matrix: np.ndarray, with_prevs: int, needs: Needs) -> np.ndarray:
    values = np.asarray(matrix, dtype=np.float64)
    first = len(STATS) + len(needs.ranges)
    if needs.update:
        if values.shape[1] == first:  # no copies this step: the update columns are missing
            values = np.concatenate([values, np.zeros((len(values), 3))], axis=1)
        values[with_prevs:, first:] = np.nan
    return values


def copies(tensors: list, read: Callable = _flat) -> list:
    """Copies on the device (one compiled call; numpy copies where the device is the host), for
    the change of the weights over a step."""
    if not tensors:
        return []
    if on_host():
        return [np.array(read(tensor), copy=True) for tensor in tensors]
    _, copy = _compiled()
    return list(copy(_tuple(tensors)))


def _tuple(tensors: list) -> Any:
    from mindspore import mutable

    values = tuple(_value(t) for t in tensors)
    return mutable(values) if values else values


def statistic_dump_available() -> bool:
    """Whether MindSpore's statistics-only dump exists on this device (GPU, Ascend; not CPU)."""
    import mindspore as ms

    return ms.get_context("device_target") in ("GPU", "Ascend")


def graph_mode() -> bool:
    import mindspore as ms

    return ms.get_context("mode") == ms.GRAPH_MODE


# --------------------------------------------------------------------------- what is trained


class Targets:
    """The networks (for activations and weights), optimizers, training steps and Models of a
    namespace."""

    def __init__(self) -> None:
        self.nets: list[Any] = []
        self.optimizers: list[Any] = []
        self.steps: list[Any] = []
        self.models: list[Any] = []
        self.given = False  # the network or optimizer was named (net=, optimizer=)

    def __bool__(self) -> bool:
        return bool(self.nets or self.optimizers or self.steps)


def _backbone(cell: Any) -> Any:
    from mindspore import nn

    if isinstance(cell, nn.WithLossCell):
        return cell._backbone
    return cell


def find_targets(namespace: dict | None, net: Any = None, optimizer: Any = None) -> Targets:
    """What to watch: ``net`` and ``optimizer`` when given, else every Optimizer,
    TrainOneStepCell, Model and network the namespace holds (names starting with ``_`` left out).
    Networks inside another one found are watched as part of it."""
    from mindspore import nn
    from mindspore.train import Model

    found = Targets()
    candidates: list[Any] = []

    def take(value: Any) -> None:
        if isinstance(value, Model):
            found.models.append(value)
            if getattr(value, "_optimizer", None) is not None:
                found.optimizers.append(value._optimizer)
            if getattr(value, "_network", None) is not None:
                candidates.append(_backbone(value._network))
        elif isinstance(value, nn.Optimizer):
            found.optimizers.append(value)
        elif isinstance(value, nn.TrainOneStepCell):
            found.steps.append(value)
            found.optimizers.append(value.optimizer)
            candidates.append(_backbone(value.network))
        elif isinstance(value, nn.WithLossCell):
            candidates.append(value._backbone)
        elif isinstance(value, nn.Cell) and not isinstance(value, nn.LossBase):
            candidates.append(value)

    if net is not None or optimizer is not None:
        found.given = True
        for value in (net, optimizer):
            if value is not None:
                take(value)
    else:
        for name, value in list((namespace or {}).items()):
            if not name.startswith("_"):
                take(value)
    inside: set[int] = set()
    for cell in candidates:
        inside.update(id(child) for _, child in cell.cells_and_names() if child is not cell)
    for cell in candidates:
        if id(cell) not in inside and all(cell is not other for other in found.nets):
            found.nets.append(cell)
    found.optimizers = list({id(o): o for o in found.optimizers}.values())
    found.steps = list({id(s): s for s in found.steps}.values())
    return found


@functools.cache
def _defined_at(cls: type, attribute: str = "") -> str:
    """``cell [3], line 5`` or ``model.py:12``: where a Cell class of the person's own is defined,
    or, with ``attribute``, the line of its ``__init__`` that sets ``self.<attribute>`` (the
    layer a parameter belongs to). Found through the code of the class's own functions: a class
    defined in a notebook has no source file ``inspect`` can find (``__main__`` has none)."""
    import linecache

    from ..dumps.cells import is_cell, place

    codes = [f.__code__ for f in vars(cls).values() if inspect.isfunction(f)]
    if not codes:
        return ""
    path = codes[0].co_filename
    if "site-packages" in path or path.startswith("<") and not is_cell(path):
        return ""
    lines = linecache.getlines(path)
    line = 0
    if attribute:
        init = vars(cls).get("__init__")
        if inspect.isfunction(init):
            start = init.__code__.co_firstlineno
            end = max((at for _, _, at in init.__code__.co_lines() if at), default=start)
            wanted = re.compile(rf"^\s*self\.{re.escape(attribute)}\s*(:[^=]*)?=")
            line = next((n for n in range(start, end + 1) if n <= len(lines) and wanted.match(lines[n - 1])), 0)
    if not line:  # the class statement, above its first function
        first = min(code.co_firstlineno for code in codes)
        statement = re.compile(rf"^\s*class\s+{re.escape(cls.__name__)}\b")
        line = next((n for n in range(first, 0, -1) if n <= len(lines) and statement.match(lines[n - 1])), first)
    return place(path, line)


class _Net:
    """One watched network: the names of its sub-cells."""

    def __init__(self, net: Any) -> None:
        self.net = net
        self.names = {id(cell): name for name, cell in net.cells_and_names() if name}
        self.cells = [cell for name, cell in net.cells_and_names() if name]
        self.root_at = _defined_at(type(net))
        #: id of each parameter -> where its layer is set up: the line of the person's own ``__init__``
        #: that makes the Cell holding it, else that Cell's class, else the network's
        self.where = {}
        parents = {id(child): (parent, attribute) for _, parent in net.cells_and_names()
                   for attribute, child in parent._cells.items()}  # fmt: skip
        for _, cell in net.cells_and_names():
            parent, attribute = parents.get(id(cell), (None, ""))
            at = (_defined_at(type(parent), attribute) if parent is not None else "") or _defined_at(type(cell))
            for parameter in cell._params.values():
                self.where[id(parameter)] = at or self.root_at
        self.parameters = [parameter for _, parameter in net.parameters_and_names()]


_current: Tracker | None = None


class Tracker:
    """The tensors of a training, seen step by step. ``session`` is told when a watched call
    begins and ends (:meth:`~msdebug.recorders.watch.WatchSession` ``_call_began`` /
    ``_call_ended``) and says whether the step is watched (``watching``)."""

    def __init__(self, session: Any, targets: Targets, needs: Needs) -> None:
        self.session = session
        self.needs = needs
        self.weights: dict[str, Any] = {}
        self.grads: dict[str, Any] = {}
        self.acts: list[tuple[str, str, Any, str]] = []  # name, scope, tensor, defined_at
        self.prevs: dict[str, Any] = {}
        self.busy = False
        self.notes: list[str] = []
        self._nets = [_Net(net) for net in targets.nets]
        self._optimizers: dict[int, list[str]] = {}
        self._graph_steps: dict[int, _GraphPlan] = {}  # id of a training step -> how its GRAPH steps run
        #: a GRAPH step's keys, rows and how many of them are its own (the others: weights it does not hold)
        self._graph_rows: tuple[list[tuple[str, str]], np.ndarray, int] | None = None
        self._calls: dict[str, int] = {}
        self._patches = Patches()
        #: id of each sub-cell of a watched network -> (that cell, the network): the cell is held, so its id stays its own
        self._owners = {id(cell): (cell, net) for net in self._nets for cell in net.cells}
        self._keys: dict[int, str] = {}  # id of a watched parameter -> its name here
        self._trained: set[str] = set()  # the names of the weights an optimizer updates
        self._watched_now = False
        self._where: dict[int, str] = {}
        self._described: dict[tuple[str, str], Watched] = {}
        self._last_described: tuple[list[tuple[str, str]], list[Watched]] = ([], [])
        self._views = _Views()
        self._skipped = False  # a step that did not call its optimizer was noted
        self._acts_noted = False  # the sub-cells a GRAPH step's hooks did not see were noted
        self._acts_failed = False  # a GRAPH step that did not compile with the hooks was noted
        self._twin_error = ""  # why a training step's twin did not compile
        self._early: dict[int, tuple[Any, Any]] = {}  # id -> (a Parameter, its copy): see _copy_early
        self._counts: dict[int, tuple[Any, int | None]] = {}  # id -> (an optimizer, its global_step then)
        #: every parameter name of what was found, trained or not (a pattern is checked against these)
        self.names = dict.fromkeys(p.name for net in self._nets for p in net.parameters)
        # What is watched is what the cell trains: the optimizers called (with their networks), or
        # those given. Only if a step ends with no optimizer call seen (the update inside a @jit
        # function) are the optimizers found in the namespace taken, then its networks.
        self._found = targets
        if targets.given:
            for net in self._nets:
                self._watch_net(net)
            for optimizer in targets.optimizers:
                self._add_optimizer(optimizer)

    # ---- lifecycle
    @interrupts.protected
    def install(self) -> None:
        """Wrap the optimizer's and the training step's call, and ``Cell.__call__`` for the
        sub-cells' outputs. Not forward hooks: MindSpore compiles a Cell's forward hooks into any
        graph that calls the Cell (a ``@jit`` training step in PyNative, or GRAPH mode), where
        ours cannot run; a wrapped ``__call__`` is simply not called inside a graph."""
        global _current
        from mindspore import nn

        plan = [(nn.Optimizer, "__call__", _tracked_call(nn.Optimizer.__call__, "optimizer_call")),
                (nn.TrainOneStepCell, "__call__", _tracked_call(nn.TrainOneStepCell.__call__, "step_call")),
                (nn.Cell, "__call__", _cell_call(nn.Cell.__call__))]  # fmt: skip
        try:
            self._patches.apply(plan)
        except BaseException:
            self.remove()
            raise
        _current = self

    @interrupts.protected
    def remove(self) -> None:
        """Every patch and hook off, the held tensors let go; once, however often it is called."""
        global _current
        if _current is self:
            _current = None
        try:
            self._patches.restore()
        finally:
            self.grads, self.acts, self.prevs, self._early = {}, [], {}, {}
            self._views.clear()

    # ---- what is watched
    def _key(self, parameter: Any) -> str:
        """The name ``parameter`` is watched under: its own, or with ``#2``... when another
        watched parameter has that name (two instances of one network)."""
        key = self._keys.get(id(parameter))
        if key is None:
            key, count = parameter.name, 1
            while key in self.weights and self.weights[key] is not parameter:
                count += 1
                key = f"{parameter.name}#{count}"
            self._keys[id(parameter)] = key
            self.weights[key] = parameter
        return key

    def _watch_net(self, net: _Net) -> None:
        for parameter in net.parameters:
            self._key(parameter)
            self._where.setdefault(id(parameter), net.where.get(id(parameter), net.root_at))

    def _add_optimizer(self, optimizer: Any, before_update: bool = True) -> None:
        """Watch what ``optimizer`` trains: its parameters, and every parameter of the networks
        that hold one of them (a layer frozen by mistake is not in the optimizer, but in its
        network). A network nothing trains is not watched."""
        if id(optimizer) in self._optimizers:
            return
        parameters = _parameters_of(optimizer)
        for net in self._nets_holding(parameters):
            self._watch_net(net)
        self._optimizers[id(optimizer)] = [self._key(p) for p in parameters]
        self._trained.update(self._optimizers[id(optimizer)])
        self.names.update(dict.fromkeys(p.name for p in parameters))
        if before_update:  # their copies for this step's change (at a step's end, it is too late)
            self._copy_missing()

    def _nets_holding(self, parameters: list) -> list[_Net]:
        """The found networks that hold one of ``parameters`` (what an optimizer of them trains)."""
        held = {id(p) for p in parameters}
        return [net for net in self._nets if any(id(p) in held for p in net.parameters)]

    @property
    def known_kinds(self) -> set[str]:
        kinds = {"weights"} if (self.weights or self.names) else set()
        if self._optimizers:
            kinds.add("grads")
        return kinds

    def unseen(self, kind: str) -> str:
        """Why no tensor of ``kind`` (``grad``, ``act``) was seen in a step that showed weights."""
        if kind == "act" and graph_mode():
            hooked = [plan.acts for plan in self._graph_steps.values() if plan.acts is not None]
            failed = next((acts.error for acts in hooked if acts.error), "")
            if failed:
                return f"GRAPH mode: no sub-cell's output was seen: {_FAILED.format(failed)}"
            if hooked:
                return f"GRAPH mode: no sub-cell's output was seen: {_HOOKED}"
            return ("GRAPH mode: activations are watched only in the step of a training Cell (nn.TrainOneStepCell "
                    "or a subclass), whose graph msdebug compiles with its hooks")  # fmt: skip
        if kind == "act" and not any(net.cells for net in self._nets):
            return "activations are not watched: the network has no sub-cells"
        if kind == "act":
            return "activations are not watched: the network ran inside a compiled function (@jit), where its Cells' calls are not seen"
        if self._twin_error:
            return ("gradients are not watched: the GRAPH training step could not be compiled with an optimizer "
                    f"that records what it is given ({self._twin_error})")  # fmt: skip
        return ("gradients are not watched: the optimizer ran inside a compiled function (@jit, or a GRAPH step "
                "whose optimizer is not an nn.Optimizer), where what it is given is not seen; call the optimizer "
                "outside @jit, or train with an nn.TrainOneStepCell, to watch them")  # fmt: skip

    def cell_output(self, cell: Any, output: Any) -> None:
        """A sub-cell of a watched network returned ``output`` (its activation) in PyNative."""
        found = self._owners.get(id(cell))
        if found is None or found[0] is not cell or not self.session.watching:
            return
        tensors = tensors_in(output)
        if tensors:
            watched = found[1]
            scope = watched.names.get(id(cell), type(cell).__name__)
            calls = self._calls.get(scope, 0)
            self._calls[scope] = calls + 1
            name = scope if calls == 0 else f"{scope}#{calls}"
            self.acts.append((name, scope, tensors[0], _defined_at(type(cell)) or watched.root_at))

    # ---- steps
    def begin_step(self, watched: bool) -> None:
        """A new step: let the last one's tensors go; copy the weights when the step is watched
        and a condition needs their change (not for a GRAPH step, which copies inside its graph)."""
        self.grads, self.acts, self.prevs, self._calls = {}, [], {}, {}
        self._graph_rows, self._early = None, {}
        self._watched_now = watched
        self._copy_missing()
        self._copy_early()

    def _copy_early(self) -> None:
        """While no optimizer call has been seen, copies of what :meth:`_fall_back` would watch:
        when the update runs inside a compiled function (``@jit``), the step's end is the first
        the watch knows of the optimizer, too late to copy the weights for the change of that
        step."""
        if not self._watched_now or self._optimizers or self._found.given:
            return
        self._counts = {id(o): (o, _step_count(o)) for o in self._found.optimizers}
        if not self.needs.update:
            return
        trained = [p for optimizer in self._found.optimizers for p in _parameters_of(optimizer)]
        nets = self._nets_holding(trained) if trained else self._nets
        parameters = list({id(p): p for p in [*trained, *(p for net in nets for p in net.parameters)]}.values())
        self.busy = True
        try:
            self._early = {id(p): (p, copy) for p, copy in
                           zip(parameters, copies(parameters, self._views.flat), strict=True)}  # fmt: skip
        finally:
            self.busy = False

    def _copy_missing(self) -> None:
        """Copies of the watched weights that have none this step (all at its start; those of an
        optimizer first called in it, before it updates them)."""
        if not (self._watched_now and self.needs.update) or (self._graph_steps and graph_mode()):
            return  # a GRAPH step copies as it starts (inside its graph on a device)
        missing = [name for name in self.weights if name not in self.prevs]
        if not missing:
            return
        self.busy = True
        try:
            self.prevs.update(zip(missing, copies([self.weights[n] for n in missing], self._views.flat), strict=True))
        finally:
            self.busy = False

    def _fall_back(self) -> None:
        """No optimizer was called where the hooks see it: watch the namespace's optimizers and
        their networks, or, with none, its networks."""
        if self._optimizers or self._found.given:
            return
        # MindSpore's optimizers count their calls (global_step): those whose count moved in this
        # step ran in it, inside the compiled function; one that counts nothing may have
        called = []
        for optimizer in self._found.optimizers:
            _, before = self._counts.get(id(optimizer), (None, None))
            after = _step_count(optimizer)
            if before is None or after is None or after != before:
                called.append(optimizer)
        if self._found.optimizers and not called:
            return  # none ran in this step: nothing trained yet, nothing to watch
        for optimizer in called:
            self._add_optimizer(optimizer, before_update=False)
        if not self._found.optimizers:
            for net in self._nets:
                self._watch_net(net)
        for name, parameter in self.weights.items():  # the copies made at the step's start
            early = self._early.get(id(parameter))
            if early is not None and early[0] is parameter and name not in self.prevs:
                self.prevs[name] = early[1]
        self._early = {}

    def collect(self) -> tuple[list[Watched], np.ndarray]:
        """The watched tensors of this step and their statistics: a row per tensor, a column per
        :data:`STATS` and ``needs.extras``."""
        self._fall_back()
        if self._graph_rows is not None:
            keys, matrix, _ = self._graph_rows
            return self._describe(keys), matrix
        names = list(self.weights)
        with_prev = [n for n in names if n in self.prevs]
        without = [n for n in names if n not in self.prevs]
        weight_keys = [("weight", n) for n in with_prev + without]
        others = [(("grad", n), t) for n, t in self.grads.items()] + [(("act", a[0]), a[2]) for a in self.acts]
        others = [(key, tensor) for key, tensor in others if _size(tensor)]
        keys = weight_keys + [key for key, _ in others]
        if not keys:
            return [], np.empty((0, _width(self.needs)))
        self.busy = True
        try:
            matrix = statistics([self.weights[n] for n in with_prev + without], [self.prevs[n] for n in with_prev],
                                [tensor for _, tensor in others], self.needs, self._views.flat)  # fmt: skip
        finally:
            self.busy = False
        return self._describe(keys), matrix

    def _describe(self, keys: list[tuple[str, str]]) -> list[Watched]:
        """The :class:`Watched` of each key: the same objects step after step (the conditions and
        the history work out once what they need of a list they have seen). With no activations
        among them, the list of the last step when its keys are the same."""
        if not self.acts and self._last_described[0] == keys:
            return self._last_described[1]
        acts = {a[0]: a for a in self.acts}
        out = []
        for kind, name in keys:
            if kind == "act":
                _, scope, tensor, at = acts[name]
            else:
                tensor = self.weights.get(name) if kind == "weight" else self.grads.get(name, self.weights.get(name))
                scope, at = "", self._where.get(id(self.weights.get(name)), "")
            trained = kind != "weight" or not self._optimizers or name in self._trained
            shape = tuple(int(s) for s in getattr(tensor, "shape", ()))
            known = self._described.get((kind, name))
            wanted = (shape, scope, at, trained)
            if known is None or (known.shape, known.scope, known.defined_at, known.trained) != wanted:
                known = self._described[(kind, name)] = Watched(name, kind, shape, str(getattr(tensor, "dtype", "")),
                                                                scope, at, trained)  # fmt: skip
            out.append(known)
        self._last_described = (list(keys), out)
        return out

    # ---- the wrapped calls
    def optimizer_call(self, original: Callable, optimizer: Any, args: tuple, kwargs: dict) -> Any:
        self._add_optimizer(optimizer)
        self.session._call_began()
        done = False
        try:
            output = original(optimizer, *args, **kwargs)
            done = True
        finally:
            if done and self.session.watching and args:
                names = self._optimizers[id(optimizer)]
                gradients = args[0] if isinstance(args[0], (tuple, list)) else (args[0],)
                for name, gradient in zip(names, gradients, strict=False):
                    self.grads[name] = gradient
            self.session._call_ended(None, done)
        return output

    def step_call(self, original: Callable, cell: Any, args: tuple, kwargs: dict) -> Any:
        self._add_optimizer(cell.optimizer)
        self.session._call_began()
        done = False
        output = None
        try:
            if self.session.watching and not kwargs and graph_mode() and _exact_step(cell):
                output = self._graph_step(cell, args)
            elif self.session.watching and not kwargs and graph_mode() and _recordable(cell):
                output = self._recorded_step(original, cell, args)
            else:
                output = original(cell, *args, **kwargs)
            done = True
        finally:
            self.session._call_ended(output, done)
        return output

    def _graph_step(self, cell: Any, args: tuple) -> Any:
        plan = self._plan(cell, lambda weights, host, acts: _wrapper_for(cell, weights, self.needs, host, acts))
        wrapper, reader, names = plan.step, plan.reader, plan.names
        if reader is not None and self.needs.update:  # the step's copies, as it starts
            reader.copy([self._views.flat(self.weights[n]) for n in names])
        if plan.acts is None:
            loss, *out = wrapper(*args)
        else:
            loss, *out = plan.acts.call(lambda: wrapper(*args), lambda: wrapper.compile(*args), args)
        grads = self._step_grads(cell)
        if reader is not None:  # the weights read where they are (their views again: the first run may move them)
            matrix = reader.rows([self._views.flat(self.weights[n]) for n in names], *out)
        else:
            matrix = _finish(out[0].asnumpy(), len(names) if self.needs.update else 0, self.needs)
        self._set_graph_rows(plan, grads, matrix)
        return loss

    def _recorded_step(self, original: Callable, cell: Any, args: tuple) -> Any:
        """A GRAPH step of another training Cell (a subclass of ``nn.TrainOneStepCell`` with its
        own ``construct``, one that returns its gradients...): its twin runs, whose optimizer
        keeps what it is given (:class:`RecordingOptimizer`). In a step whose ``construct`` did not
        call the optimizer (an overflow a loss scale skips) the gradients and the weights' change
        are NaN: an update that did not happen is not judged."""
        plan = self._plan(cell, lambda weights, host, acts: _twin_for(cell, weights, self.needs, host, acts, args))
        twin, reader, names = plan.step, plan.reader, plan.names
        recorder = twin.recorder
        if recorder is None:  # its twin did not compile: the step runs as it is, its gradients unseen
            self._twin_error = twin.error
            return original(cell, *args)
        calls = recorder.count()
        if reader is not None and self.needs.update:
            reader.copy([self._views.flat(self.weights[n]) for n in names])
        if plan.acts is None:
            output = original(twin.cell, *args)
        else:
            output = plan.acts.call(lambda: original(twin.cell, *args), lambda: twin.cell.compile(*args), args)
        ran = recorder.count() != calls
        grads = self._step_grads(cell)
        if reader is not None:
            matrix = reader.rows([self._views.flat(self.weights[n]) for n in names], recorder.laid, recorder.kept)
        elif ran:
            matrix = _finish(recorder.stats.asnumpy(), len(names) if self.needs.update else 0, self.needs)
        else:  # the recorder's statistics are an earlier step's
            matrix = np.full((len(names) + len(grads), _width(self.needs)), np.nan)
            matrix[: len(names)] = statistics([self.weights[n] for n in names], [], [], self.needs)
        if not ran:  # no gradient, no update: NaN, which no condition holds on
            matrix[len(names) :] = np.nan
            matrix[: len(names), len(STATS) + len(self.needs.ranges) :] = np.nan
            if not self._skipped:
                self._skipped = True
                self.notes.append(f"the training step did not call its optimizer in step {self.session.number} (a "
                                  "loss scale skipping an overflow, for example): the gradients and the weights' "
                                  "change of such a step are not judged")  # fmt: skip
        self._set_graph_rows(plan, grads, matrix)
        return output

    def _plan(self, cell: Any, make: Callable[[list, bool, list], Any]) -> _GraphPlan:
        """How ``cell``'s GRAPH steps are watched: the last plan while the watched weights and the
        device stay, else a new one, whose graph (:class:`WatchedStep` or a :class:`_Twin`)
        ``make(weights, host, acts)`` gives for the watched weights ``cell`` holds and the
        sub-cells whose outputs are watched. Two networks with the same Parameter names can be
        watched at once, but not read by one graph; a weight of another network is read on its
        own, with no change."""
        keys, host = list(self.weights), on_host()
        plan = self._graph_steps.get(id(cell))
        if plan is not None and plan.keys == keys and plan.host == host:
            return plan
        parameters = list(cell.get_parameters())
        held = {id(p) for p in parameters}
        names = [n for n in keys if id(self.weights[n]) in held]
        weights = [self.weights[n] for n in names]
        step = make(weights, host, self._act_cells(parameters) if self.needs.acts else [])
        read = step.recorder if isinstance(step, _Twin) else step
        reader = _HostStep(read, weights, self.needs) if host and read is not None else None
        others = [n for n in keys if id(self.weights[n]) not in held]
        plan = _GraphPlan(keys, host, names, others, step, reader, step.acts)
        self._graph_steps[id(cell)] = plan
        return plan

    def _act_cells(self, parameters: list) -> list[tuple[str, str, Any]]:
        """The sub-cells of the watched networks that hold one of ``parameters``: their scope,
        the line that defines them, the Cell."""
        out, seen = [], set()
        for net in self._nets_holding(parameters):
            for cell in net.cells:
                if id(cell) not in seen:
                    seen.add(id(cell))
                    out.append((net.names[id(cell)], _defined_at(type(cell)) or net.root_at, cell))
        return out

    def _step_grads(self, cell: Any) -> list[str]:
        """The names of the gradients ``cell``'s optimizer is given, noted as this step's."""
        grads = self._optimizers[id(cell.optimizer)]
        for name, parameter in zip(grads, cell.weights, strict=False):
            self.grads[name] = parameter  # for its shape and dtype: the gradient itself stays in the graph
        return grads

    def _set_graph_rows(self, plan: _GraphPlan, grads: list[str], matrix: np.ndarray) -> None:
        """This GRAPH step's rows: its own weights and gradients, then the other watched weights.
        When another GRAPH step ran earlier in the same watched step (a GAN's two networks), its
        own rows stay, in place of this step's reading of them."""
        keys = [("weight", n) for n in plan.names] + [("grad", n) for n in grads]
        if plan.acts is not None:
            keys, matrix = self._with_acts(plan.acts, keys, matrix)
        own = len(keys)
        if plan.others:  # watched, but not in this step's graph: read here, with no change
            keys += [("weight", n) for n in plan.others]
            others = statistics([self.weights[n] for n in plan.others], [], [], self.needs, self._views.flat)
            matrix = np.concatenate([matrix, others])
        if self._graph_rows is not None:
            old_keys, old_matrix, old_own = self._graph_rows
            mine = set(keys[:own])
            kept = [i for i in range(old_own) if old_keys[i] not in mine]
            superseded = {old_keys[i] for i in kept}
            new = [i for i in range(len(keys)) if i < own or keys[i] not in superseded]
            keys = [old_keys[i] for i in kept] + [keys[i] for i in new]
            matrix = np.concatenate([old_matrix[kept], matrix[new]])
            own += len(kept)
        self._graph_rows = (keys, matrix, own)

    def _with_acts(self, acts: _GraphActs, keys: list, matrix: np.ndarray) -> tuple[list, np.ndarray]:
        """``keys`` and ``matrix`` with the activations the step's hooks wrote; the sub-cells whose
        output was never seen said once in the notes."""
        ran, rows, shapes = acts.read(self.needs)
        if acts.error and ran and not self._acts_failed:  # with none seen, the notes of the unseen kinds say it
            self._acts_failed = True
            self.notes.append(f"GRAPH mode: {_FAILED.format(acts.error)} (for a batch of another shape)")
        for i, shape in zip(ran, shapes, strict=True):
            name = acts.names[i]
            keys.append(("act", name))
            self.acts.append((name, name, _Shaped(shape), acts.where[i]))
        unseen = [] if self._acts_noted or not ran else [acts.names[i] for i in np.flatnonzero(~acts.seen)]
        if unseen:
            self._acts_noted = True
            shown = ", ".join(unseen[:4]) + (f" and {len(unseen) - 4} more" if len(unseen) > 4 else "")
            self.notes.append(f"GRAPH mode: the outputs of {len(unseen)} of {len(acts.names)} sub-cells were not "
                              f"seen in step {self.session.number} ({shown}): {_HOOKED}")  # fmt: skip
        return keys, np.concatenate([matrix, rows]) if ran else matrix


#: Why a GRAPH step showed no activation when its graph refused the hooks.
_FAILED = "the training step did not compile with msdebug's hooks on its sub-cells ({}): it ran without them"

#: Which sub-cells' outputs a GRAPH step shows.
_HOOKED = ("MindSpore compiles a forward hook only for a sub-cell called as an attribute (self.fc1(x)), "
           "not one called through a SequentialCell, a CellList or a loop over cells")  # fmt: skip


class _GraphPlan:
    """A GRAPH training step as it is watched: for the watched weights ``keys`` (the step is
    planned again when they change) and where the device is the host (``host``); the graph that
    runs it (``step``) and how it is read (``reader``, on the host); the watched weights it holds
    (``names``) and the others; the hooks that give its activations (``acts``), if any."""

    def __init__(self, keys: list[str], host: bool, names: list[str], others: list[str], step: Any,
                 reader: _HostStep | None, acts: _GraphActs | None) -> None:  # fmt: skip
        self.keys, self.host, self.names, self.others, self.step, self.reader = keys, host, names, others, step, reader
        self.acts = acts


#: The attribute of a training step that keeps its :class:`WatchedStep` from one watch to the next
#: (a new one compiles its graph again: seconds). The wrapper refers to the step: a cycle, which
#: holds the step no longer than the step holds itself (MindSpore 2.10 keeps a GRAPH-compiled Cell
#: alive after ``del`` in any case). Nothing the step does changes.
_KEPT = "_msdebug_watched_step"


def _wrapper_for(cell: Any, weights: list, needs: Needs, host: bool, acts: list) -> Any:
    """The :class:`WatchedStep` of ``cell`` for these weights, needs and sub-cells whose outputs
    are watched (``acts``): the one an earlier watch made when it was made of the same parts (its
    graph holds that watch's hooks), else a new one (kept for the next watch)."""
    made = (cell.network, cell.optimizer, cell.grad_reducer, cell.sens, *weights, None, *cell.weights, None,
            *(c for _, _, c in acts))  # fmt: skip
    kept = _kept(cell, made, needs, host)
    if kept is not None:
        return kept
    wrapper = WatchedStep(cell, weights, needs, host)
    object.__setattr__(wrapper, "made", made)  # not Cell.__setattr__: they are not the wrapper's own cells
    object.__setattr__(wrapper, "acts", _GraphActs(acts, needs) if acts else None)
    object.__setattr__(cell, _KEPT, wrapper)
    return wrapper


def _kept(cell: Any, made: tuple, needs: Needs, host: bool) -> Any:
    """What an earlier watch kept on ``cell`` (:data:`_KEPT`) if it was made of the same parts
    (``made``, compared by identity) for the same needs; else None."""
    kept = vars(cell).get(_KEPT)
    if (kept is not None and kept.host == host and kept.update == needs.update and kept.ranges == needs.ranges
            and (kept.acts is None or kept.acts.mode == needs.acts) and len(kept.made) == len(made)
            and all(a is b for a, b in zip(kept.made, made, strict=True))):  # fmt: skip
        return kept
    return None


class _Twin:
    """A training Cell's twin: the same Cell with a :class:`RecordingOptimizer` for its optimizer
    (``recorder``; None when the twin did not compile, then the Cell runs as it is), and the
    hooks that give its activations (``acts``), if any."""

    def __init__(self, cell: Any, recorder: Any, needs: Needs, host: bool, made: tuple, error: str,
                 acts: _GraphActs | None) -> None:  # fmt: skip
        self.cell, self.recorder, self.made, self.error, self.acts = cell, recorder, made, error, acts
        self.host, self.update, self.ranges = host, needs.update, needs.ranges


def _twin_for(cell: Any, weights: list, needs: Needs, host: bool, acts: list, args: tuple) -> _Twin:
    """The twin of ``cell`` (kept for the next watch, like :func:`_wrapper_for`'s wrapper),
    compiled for ``args``. ``cell`` itself is not changed: the twin has its own attribute
    dictionaries, sharing every value (the networks, the Parameters) but the optimizer."""
    import copy

    made = (*cell._cells.values(), None, *weights, None, *cell.weights, None, *(c for _, _, c in acts))
    kept = _kept(cell, made, needs, host)
    if kept is not None:
        return kept
    twin = copy.copy(cell)  # Cell's __setstate__ hands the twin the cell's own __dict__: replaced below
    own = {k: copy.copy(v) if isinstance(v, (dict, list, set)) else v for k, v in vars(cell).items() if k != _KEPT}
    object.__setattr__(twin, "__dict__", own)
    recorder, error = None, ""
    graph_acts = _GraphActs(acts, needs) if acts else None
    try:
        recorder = RecordingOptimizer(cell.optimizer, weights, needs, host)
        twin._cells["optimizer"] = recorder  # not setattr: a Cell with auto_prefix would rename its Parameters
        if graph_acts is None or not graph_acts.compile(lambda: twin.compile(*args), args):
            twin.compile(*args)
    except Exception as e:  # noqa: BLE001 - whatever the twin's graph refused, the cell itself runs as it is
        recorder, error = None, _first_line(e)
    kept = _Twin(twin, recorder, needs, host, made, error, graph_acts if recorder is not None else None)
    object.__setattr__(cell, _KEPT, kept)
    return kept


class _HostStep:
    """Where the device is the host, how a :class:`WatchedStep`'s tensors are read each step: its
    small weights laid end to end as the step starts (their copies, for the change) and again
    after it, its small gradients (laid by its graph) after them in the same buffer, all read by
    one :func:`packed_rows`; the large weights and gradients where they are, on threads
    (:func:`_host_rows`). Rows: the weights in the wrapper's order, then the gradients in the
    optimizer's."""

    def __init__(self, wrapper: Any, weights: list, needs: Needs) -> None:
        sizes = [_size(w) for w in weights]
        self.needs = needs
        self.small, self.large = _split(sizes)
        self.count = len(sizes)
        self.grads = len(wrapper.grad_sizes)
        self.small_grads, self.large_grads = wrapper.small, wrapper.large
        self.sizes = np.array([sizes[i] for i in self.small] + list(wrapper.grad_sizes[wrapper.small]), np.intp)
        self.split = sum(sizes[i] for i in self.small)  # where the gradients start in the buffer
        dtype = np.result_type(np.float32, *(_NUMPY.get(str(weights[i].dtype), np.float32) for i in self.small))
        self.laid = np.empty(int(self.sizes.sum()), dtype)
        self.before = np.empty(self.split, dtype) if needs.update else None
        self.large_before: list[np.ndarray] = []

    def copy(self, weights: list[np.ndarray]) -> None:
        """Copies of the weights (their flat views, in the wrapper's order) before the step, into
        buffers kept from step to step."""
        if self.small:
            np.concatenate([weights[i] for i in self.small], out=self.before)
        if len(self.large_before) != len(self.large) or any(
            kept.shape != weights[i].shape or kept.dtype != weights[i].dtype
            for kept, i in zip(self.large_before, self.large, strict=False)
        ):
            self.large_before = [np.empty_like(weights[i]) for i in self.large]
        for kept, i in zip(self.large_before, self.large, strict=True):
            np.copyto(kept, weights[i])

    def rows(self, weights: list[np.ndarray], small: Any, large: tuple) -> np.ndarray:
        """The statistics after the step: ``weights`` as in :meth:`copy`, ``small`` the laid
        gradients the graph returned and ``large`` the others."""
        out = np.empty((self.count + self.grads, _width(self.needs)))
        if len(self.sizes):
            if self.small:
                np.concatenate([weights[i] for i in self.small], out=self.laid[: self.split])
            if self.small_grads:
                self.laid[self.split :] = small.asnumpy()
            rows = packed_rows(self.laid, self.sizes, self.needs, self.before)
            out[self.small] = rows[: len(self.small)]
            out[[self.count + i for i in self.small_grads]] = rows[len(self.small) :]
        if self.large or self.large_grads:
            copies = self.large_before if self.needs.update else []
            rows = _host_rows([weights[i] for i in self.large], copies, list(large), self.needs)
            out[self.large] = rows[: len(self.large)]
            out[[self.count + i for i in self.large_grads]] = rows[len(self.large) :]
        return out


#: MindSpore's float dtypes as numpy's (bfloat16, which numpy lacks, is read as float32)
_NUMPY = {"Float16": np.float16, "Float32": np.float32, "Float64": np.float64}


def _first_line(error: BaseException) -> str:
    """The first line of ``error``'s message that says something (MindSpore's start with a rule)."""
    for line in str(error).splitlines():
        if line.strip() and not set(line.strip()) <= set("-="):
            return line.strip()[:200]
    return type(error).__name__


def _recordable(cell: Any) -> bool:
    """A training Cell whose optimizer is a MindSpore ``nn.Optimizer`` (what its twin records)."""
    from mindspore import nn

    return isinstance(cell._cells.get("optimizer"), nn.Optimizer)


def _step_count(optimizer: Any) -> int | None:
    """How many times ``optimizer`` ran (MindSpore's optimizers add one to their ``global_step``
    at each call); None for one without such a count."""
    count = getattr(optimizer, "global_step", None)
    if type(count).__name__ != "Parameter":
        return None
    try:
        return int(count.asnumpy().reshape(-1)[0])
    except (TypeError, ValueError, IndexError, RuntimeError):
        return None


def _parameters_of(optimizer: Any) -> list:
    return list(getattr(optimizer, "_parameters", None) or optimizer.parameters)


def _size(tensor: Any) -> int:
    try:
        return int(np.prod(tensor.shape))
    except (AttributeError, TypeError):
        return 0


def _exact_step(cell: Any) -> bool:
    """A plain ``nn.TrainOneStepCell`` (a subclass may change its ``construct``), with nothing
    :class:`WatchedStep` does not redo."""
    from mindspore import nn

    return (type(cell) is nn.TrainOneStepCell and not cell.return_grad
            and not getattr(cell, "use_graceful_exit", False))  # fmt: skip


def _tracked_call(original: Callable, handle: str) -> Callable:
    """``original`` (a class's ``__call__``), handed to the running tracker's method ``handle``
    while a watch runs (``optimizer_call``, ``step_call``)."""

    @functools.wraps(original)
    def __call__(cell, *args, **kwargs):
        tracker = _current
        if tracker is None or tracker.busy:
            return original(cell, *args, **kwargs)
        return getattr(tracker, handle)(original, cell, args, kwargs)

    return __call__


def _cell_call(original: Callable) -> Callable:
    @functools.wraps(original)
    def __call__(cell, *args, **kwargs):
        output = original(cell, *args, **kwargs)
        tracker = _current
        if tracker is not None and not tracker.busy:
            tracker.cell_output(cell, output)
        return output

    return __call__


def _watched_step_class() -> type:
    """:class:`WatchedStep`, made on first use (it derives from ``nn.Cell``)."""
    from mindspore import ParameterTuple, nn, ops
    from mindspore import dtype as mstype

    rows, copy, laid = _kernels()

    class _WatchedStep(nn.Cell):
        def __init__(self, step: Any, weights: list, needs: Needs, host: bool) -> None:
            super().__init__(auto_prefix=False)
            self.host = host
            self.step = step
            self.watched = ParameterTuple(weights)
            self.update = needs.update
            self.ranges = needs.ranges
            self.grad_sizes = np.array([_size(w) for w in step.weights], dtype=np.intp)
            #: where the device is the host: the gradients laid end to end (a copy), and those read in place
            self.small, self.large = _split(self.grad_sizes)

        def construct(self, *inputs):
            step = self.step
            before = ()
            if self.update and not self.host:
                before = copy(self.watched)
            loss = step.network(*inputs)
            sens = ops.fill(loss.dtype, loss.shape, step.sens)
            grads = step.grad(step.network, step.weights)(*inputs, sens)
            grads = step.grad_reducer(grads)
            if self.update and not self.host:
                grads = ops.depend(grads, before)  # the copy is taken before the update
            loss = ops.depend(loss, step.optimizer(grads))
            if not self.host:
                return loss, rows(self.watched, before, grads, self.ranges)
            small = []
            for i in self.small:
                small.append(grads[i])
            large = []
            for i in self.large:
                large.append(grads[i])
            if self.small:
                return loss, laid(small), tuple(large)
            return loss, ops.zeros((0,), mstype.float32), tuple(large)

    return _WatchedStep


#: The dimensions of an activation's shape kept beside its statistics (a larger rank shows its first ones).
_DIMS = 6
#: The sums an activation's row starts with: of x, x * x and |x|, the count of zeros and of finite values.
_ACT_SUMS = 5


def _activation_class() -> type:
    """:class:`ActivationRecorder`, made on first use (it derives from ``nn.Cell``)."""
    from mindspore import Parameter, Tensor, nn, ops
    from mindspore import dtype as mstype

    class _ActivationRecorder(nn.Cell):
        def __init__(self, count: int, ranges: tuple, every: bool) -> None:
            super().__init__(auto_prefix=False)
            self.ranges = ranges
            self.every = every  # every statistic, else the count of zeros alone
            # the sums, the counts in ranges, max and -min, then the size, the rank and the dims
            width = _ACT_SUMS + len(ranges) + 2 + 2 + _DIMS
            self.stats = Parameter(Tensor(np.full((count, width), np.nan, np.float32)), name="msdebug_watch.acts",
                                   requires_grad=False)  # fmt: skip

        def record(self, index, output):
            x = output
            if isinstance(x, (tuple, list)):
                x = x[0]
            if isinstance(x, (tuple, list)):
                x = x[0]
            if not isinstance(x, Tensor):
                return None
            shape = x.shape
            x = x.astype(mstype.float32).reshape(-1)
            n = x.size
            if n == 0:
                return None
            known = [n, len(shape)]
            for i in range(_DIMS):
                known.append(shape[i] if i < len(shape) else -1)
            if not self.every:  # what all_zero needs: three kernels
                zeros = (x == 0).astype(mstype.float32).sum().reshape(1)
                rest = Tensor([math.nan] * (len(self.ranges) + 3), mstype.float32)
                self.stats[index] = ops.concat([Tensor([math.nan] * 3, mstype.float32), zeros, rest,
                                                Tensor(known, mstype.float32)])  # fmt: skip
                return None
            # Few kernels (each costs microseconds on the CPU): one sum over the stacked rows,
            # one max over x and -x; the host works out the means, the norm and the shares.
            rows = [x, x * x, ops.abs(x), (x == 0).astype(mstype.float32), ops.isfinite(x).astype(mstype.float32)]
            for low, high in self.ranges:
                rows.append(((x >= low) & (x <= high)).astype(mstype.float32))
            sums = ops.stack(rows).sum(axis=1)
            extremes = ops.stack([x, -x]).max(axis=1)
            self.stats[index] = ops.concat([sums, extremes, Tensor(known, mstype.float32)])
            return None

    return _ActivationRecorder


class ActivationRecorder:
    """The statistics of the sub-cells' outputs in a GRAPH step: a row of one Parameter per
    sub-cell, written by a forward hook on it that MindSpore compiles into the step's graph
    (:class:`_GraphActs`): the sums the statistics come from, or (not ``every``) the count of
    zeros alone, the others NaN; then the output's size (NaN: the hook did not run in the step),
    rank and dimensions."""

    def __new__(cls, count: int, ranges: tuple, every: bool = True):  # noqa: D102 - a Cell made on first use
        return _cached_activation()(count, ranges, every)


@functools.cache
def _cached_activation() -> type:
    return _activation_class()


def _act_hook(recorder: Any, index: int) -> Callable:
    """A forward hook (compiled into a graph, not run in Python) writing row ``index``."""

    def hook(cell, inputs, output):
        return recorder.record(index, output)

    return hook


class _GraphActs:
    """The activations a GRAPH step shows: a hook on each sub-cell of the watched networks it
    holds, registered only while a graph of the step compiles (the first call with arguments of a
    new shape), so that no other graph (the person's own step, an evaluation compiled meanwhile)
    takes one in. MindSpore compiles a hook only for a sub-cell called as an attribute
    (``self.fc1(x)``), not one called through a SequentialCell, a CellList or a loop over cells:
    their rows stay unwritten, and :meth:`read` says which."""

    def __init__(self, cells: list[tuple[str, str, Any]], needs: Needs) -> None:
        self.names = [name for name, _, _ in cells]
        self.where = [at for _, at, _ in cells]
        self.cells = [cell for _, _, cell in cells]
        self.ranges = needs.ranges
        self.mode = needs.acts
        self.recorder = ActivationRecorder(len(cells), needs.ranges, needs.acts != "zeros")
        self.hooks = [_act_hook(self.recorder, i) for i in range(len(cells))]
        self.compiled: set = set()  # the signatures of the arguments the graph was compiled for
        self.seen = np.zeros(len(cells), bool)  # written in some step
        self.host = on_host()
        self.error = ""  # why the graph did not compile with the hooks (it runs without them)

    def call(self, run: Callable[[], Any], compile_: Callable[[], Any], args: tuple) -> Any:
        """``run()`` (a call of the step's graph), compiled first by ``compile_()`` with the hooks
        for arguments of a new signature."""
        self._reset()
        if _signature(args) not in self.compiled:
            self.compile(compile_, args)
        return run()

    def compile(self, compile_: Callable[[], Any], args: tuple) -> bool:
        """``compile_()`` (the step's graph compiled for ``args``) with the hooks registered;
        False when it failed with them (the reason in :attr:`error`): the graph then compiles
        without them at its call, and its activations are not seen."""
        handles = []
        try:
            for cell, hook in zip(self.cells, self.hooks, strict=True):  # each kept at once: a Ctrl-C removes it
                handles.append(cell.register_forward_hook(hook))
            compile_()
        except Exception as e:  # noqa: BLE001 - whatever the graph refused of the hooks, it runs without them
            self.error = self.error or _first_line(e)
            return False
        finally:
            for handle in handles:
                handle.remove()
        self.compiled.add(_signature(args))
        return True

    def _reset(self) -> None:
        stats = self.recorder.stats
        if self.host:  # the Parameter's own memory (the graph reads it in place)
            stats.asnumpy().fill(np.nan)
        else:
            from mindspore import Tensor

            stats.set_data(Tensor(np.full(stats.shape, np.nan, np.float32)))

    def read(self, needs: Needs) -> tuple[list[int], np.ndarray, list[tuple[int, ...]]]:
        """The sub-cells whose hook ran in the step (their indices), their rows (the full width
        of ``needs``, NaN for a weight's change) and their shapes."""
        stats = self.recorder.stats.asnumpy()
        ranges = len(self.ranges)
        at = _ACT_SUMS + ranges  # max, -min, then the size, the rank and the dims
        ran = np.flatnonzero(np.isfinite(stats[:, at + 2]))
        if not len(ran):  # none (a SequentialCell's layers): nothing more to read
            return [], np.empty((0, _width(needs))), []
        self.seen[ran] = True
        v = stats[ran].astype(np.float64)
        n = v[:, at + 2]
        rows = np.full((len(ran), _width(needs)), np.nan)
        rows[:, : len(STATS)] = np.stack([v[:, at], -v[:, at + 1], v[:, 0] / n, v[:, 2] / n, np.sqrt(v[:, 1]),
                                          v[:, 3] / n, n - v[:, 4]], axis=1)  # fmt: skip
        rows[:, len(STATS) : len(STATS) + ranges] = v[:, _ACT_SUMS:at] / n[:, None]
        shapes = [tuple(int(d) for d in row[at + 4 : at + 4 + min(int(row[at + 3]), _DIMS)]) for row in v]
        return [int(i) for i in ran], rows, shapes


def _signature(args: tuple) -> tuple:
    """What of a graph's arguments makes MindSpore compile it again: a tensor's shape and dtype,
    another value itself."""
    out = []
    for arg in args:
        shape = getattr(arg, "shape", None)
        out.append(
            (tuple(shape), str(arg.dtype)) if shape is not None and hasattr(arg, "dtype") else (type(arg), repr(arg))
        )
    return tuple(out)


class _Shaped:
    """What :meth:`Tracker._describe` reads of an activation seen in a graph: its shape and dtype."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape, self.dtype = shape, "Float32"


def _recording_class() -> type:
    """:class:`RecordingOptimizer`, made on first use (it derives from ``nn.Cell``)."""
    from mindspore import Parameter, ParameterTuple, Tensor, nn, ops
    from mindspore import dtype as mstype

    rows, copy, laid = _kernels()

    class _RecordingOptimizer(nn.Cell):
        def __init__(self, optimizer: Any, weights: list, needs: Needs, host: bool) -> None:
            super().__init__(auto_prefix=False)
            # read inside the graph on a device (set before the optimizer, whose Parameters they are too)
            self.watched = () if host else ParameterTuple(weights)
            self.optimizer = optimizer
            self.host = host
            self.update = needs.update
            self.ranges = needs.ranges
            parameters = list(optimizer.parameters)
            self.grad_sizes = np.array([_size(p) for p in parameters], dtype=np.intp)
            self.small, self.large = _split(self.grad_sizes)
            self.calls = Parameter(Tensor(np.zeros((), np.int32)), name="msdebug_watch.calls", requires_grad=False)
            if host:  # the gradients kept for numpy: the small ones laid end to end, each large one as it is
                size = max(int(self.grad_sizes[self.small].sum()), 1)
                self.laid = Parameter(
                    Tensor(np.zeros(size, np.float32)), name="msdebug_watch.laid", requires_grad=False
                )
                self.kept = ParameterTuple([Parameter(Tensor(np.zeros(parameters[i].shape, np.float32)),
                                                      name=f"msdebug_watch.grad{i}", requires_grad=False)
                                            for i in self.large])  # fmt: skip
            else:  # the statistics, computed where the tensors are: one small matrix
                shape = (len(weights) + len(parameters), _width(needs))
                self.stats = Parameter(
                    Tensor(np.zeros(shape, np.float32)), name="msdebug_watch.stats", requires_grad=False
                )

        def __getattr__(self, name: str) -> Any:
            try:
                return super().__getattr__(name)
            except AttributeError:
                if name.startswith("_") or "optimizer" not in self._cells:
                    raise
                return getattr(self._cells["optimizer"], name)  # what the step asks of its optimizer (its lr...)

        def count(self) -> int:
            """How many times the optimizer was called through this recorder."""
            return int(self.calls.asnumpy())

        def construct(self, gradients):
            before = ()
            if self.update and not self.host:
                before = copy(self.watched)
                gradients = ops.depend(gradients, before)  # the copy is taken before the update
            done = self.optimizer(gradients)
            if self.host:
                small = []
                for i in self.small:
                    small.append(gradients[i])
                if self.small:
                    done = ops.depend(done, ops.assign(self.laid, laid(small)))
                for j, i in enumerate(self.large):
                    done = ops.depend(done, ops.assign(self.kept[j], gradients[i].astype(mstype.float32)))
            else:
                done = ops.depend(done, ops.assign(self.stats, rows(self.watched, before, gradients, self.ranges)))
            return ops.depend(done, ops.assign_add(self.calls, ops.ones((), mstype.int32)))

    return _RecordingOptimizer


class RecordingOptimizer:
    """An ``nn.Optimizer`` that keeps what it is given, in place of a training Cell's own in its
    twin (:func:`_twin_for`), so that a GRAPH step of any training Cell that calls
    ``self.optimizer(grads)`` gives its gradients: where the device is the host, the gradients
    themselves in Parameters of the recorder (the small ones laid end to end); on a device, the
    statistics of the weights and gradients (one small matrix). ``calls`` counts its calls (a
    step that skipped its update did not call it). Anything else the step asks of it is the
    optimizer's."""

    def __new__(cls, optimizer: Any, weights: list, needs: Needs, host: bool = False):  # noqa: D102 - a Cell made on first use
        return _cached_recording()(optimizer, weights, needs, host)


@functools.cache
def _cached_recording() -> type:
    return _recording_class()


class WatchedStep:
    """A plain ``nn.TrainOneStepCell`` run in GRAPH mode that also returns what the statistics
    need: on a device, the statistics of its weights (after the update, and their change) and
    gradients; where the device is the host (``host``), its small gradients laid end to end in one
    flat tensor and its large ones as they are, all read by numpy, as are the weights, where
    they are."""

    def __new__(cls, step: Any, weights: list, needs: Needs, host: bool = False):  # noqa: D102 - a Cell made on first use
        return _cached_class()(step, weights, needs, host)


@functools.cache
def _cached_class() -> type:
    return _watched_step_class()


# --------------------------------------------------------------------------- Model.train


@functools.cache
def _callback_class() -> type:
    from mindspore.train import Callback

    class WatchCallback(Callback):
        """``Model.train(..., callbacks=[session.callback()])``: each step's end ends a watched
        step, with the step's ``net_outputs`` as the loss; a trip with ``stop`` asks Model to stop."""

        def __init__(self, session: Any) -> None:
            super().__init__()
            self.session = session

        def on_train_step_end(self, run_context):
            outputs = run_context.original_args().net_outputs
            if self.session._callback_step(outputs):
                run_context.request_stop()

    return WatchCallback


def watch_callback(session: Any) -> Any:
    """A ``mindspore.train.Callback`` that reports each step's end to ``session``."""
    return _callback_class()(session)


def loss_value(output: Any) -> float | None:
    """The loss in a step's output (the first tensor of a tuple), as a float; None if none."""
    found = tensors_in(output)
    if not found:
        if isinstance(output, (int, float)) and not isinstance(output, bool):
            return float(output)
        return None
    values = np.asarray(found[0].asnumpy(), dtype=np.float64)
    return float(values.reshape(-1)[0]) if values.size == 1 else float(values.mean())
