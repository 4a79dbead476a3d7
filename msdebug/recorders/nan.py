"""The ``%%msnan`` engine: find the first op whose value is not finite, in PyNative or from a dump.

* PyNative: :class:`NanWatch` observes every primitive call, Tensor operator and Cell call
  through :class:`msdebug.backend.hooks.OpHooks`, installed for the block and removed in
  ``finally``. Each new tensor is checked once (an op's unseen inputs, such as data and
  parameters, before its outputs). The culprit is the first op that made a value (a NaN from
  inputs that hold none, an infinity from finite inputs) or the first NaN that came in;
  infinities that came in as data (a ``-inf`` mask) are listed, not blamed, and are the answer
  only when nothing was made (:mod:`msdebug.dumps.nan` states the rule; ``inf=True`` is the
  first non-finite value of any kind).
* GRAPH and ``@jit``: the ops run inside graphs that no hook sees, so the block runs with a
  data dump (:mod:`msdebug.recorders.datadump`) and the iterations it wrote are scanned
  (:func:`msdebug.dumps.nan.scan_dump`).
"""

from __future__ import annotations

import linecache
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .. import interrupts
from ..backend.hooks import tensors_in
from ..dumps.datadump import is_finite, read_data_dump, tensor_stats
from ..dumps.nan import (
    FINITE,
    INF,
    MAX_DOWNSTREAM,
    MAX_ENTERED,
    NAN,
    Culprit,
    Entered,
    NanReport,
    Reached,
    SlotStats,
    holds_nan,
    scan_dump,
    source_text,
)
from .datadump import graph_only_reason
from .hooked import HookedCell

__all__ = ["NanSession", "NanWatch", "graph_only_reason", "scan_new_iterations", "watch_pynative"]


class NanWatch:
    """Observer of :class:`OpHooks`: keeps the culprit under the rule, what it reached, and the
    infinities that came in as data.

    The rule (``inf=False``): the first op that made a NaN (its inputs hold none) or an infinity
    (its inputs are finite), or the first NaN that came in (in a tensor no hooked op made: data,
    a parameter, a graph's result). An infinity that came in (a ``-inf`` mask) is listed, not
    blamed, and so is one an op passed on from it; when nothing was made, the report names where
    the first non-finite value came in. ``inf=True``: the first non-finite value of any kind.
    """

    def __init__(self, inf: bool = False) -> None:
        from ..backend.hooks import OpNames

        self.inf = inf
        self.started = time.perf_counter()
        self.names = OpNames()  # scopes and op names, as the diff recorder spells them too
        self.ops = 0
        self.tensors = 0
        self.unreadable = 0
        self.culprit: Culprit | None = None
        self.when_us = 0
        self._seen: dict[int, tuple[weakref.ref, int]] = {}  # every tensor checked, and what it held
        self._bad: dict[int, weakref.ref] = {}
        self._reached: list[Reached] = []
        self._name = ""  # the name of the op being checked
        self._roots: dict[int, weakref.ref] = {}
        self._entered: list[Entered] = []  # infinities that came in as data, the first few
        self._entered_count = 0
        self._first_in: Culprit | None = None  # where the first one came in: the answer when nothing is made
        # Later outputs (after the first) an op made non-finite that no op has read yet: BatchNorm's
        # saved mean and variance are memory the CPU kernel never writes. Blamed when read.
        self._unread: list[tuple[weakref.ref, Culprit]] = []

    # -- cells give the scope; optimizers get the gradients, which no forward hook sees
    def enter_cell(self, cell: Any, args: tuple = ()) -> None:
        from ..backend.hooks import optimizer_parameters

        if not self.names.stack and len(self._roots) < 64:
            self._remember(self._roots, cell)
        self.names.enter(cell)
        names = optimizer_parameters(cell) if self.culprit is None else None
        if names is None:
            return
        for position, gradient in enumerate(tensors_in(args)):
            if self._check(gradient) is False:
                target = names[position] if position < len(names) else f"parameter {position}"
                self._blame_value(
                    self.names.scope,
                    type(cell).__name__,
                    f"gradient of {target}",
                    gradient,
                    f"the backward pass made it: the gradient of {target} reached the optimizer already not finite "
                    "(the hooks see forward ops only, and every forward op was finite)",
                )
                return

    def exit_cell(self, cell: Any) -> None:
        self.names.exit(cell)

    # -- ops
    @staticmethod
    def _known(table: dict[int, weakref.ref], tensor: Any) -> bool:
        ref = table.get(id(tensor))
        return ref is not None and ref() is tensor

    def _remember(self, table: dict[int, weakref.ref], tensor: Any) -> None:
        try:
            table[id(tensor)] = weakref.ref(tensor)
        except TypeError:  # a Tensor subclass without weak references: its id may be reused later
            pass

    def _store(self, tensor: Any, held: int) -> None:
        try:
            self._seen[id(tensor)] = (weakref.ref(tensor), held)
        except TypeError:  # a Tensor subclass without weak references: its id may be reused later
            pass

    def _held_before(self, tensor: Any) -> int | None:
        """What ``tensor`` held when last checked; None when it was never checked."""
        entry = self._seen.get(id(tensor))
        return entry[1] if entry is not None and entry[0]() is tensor else None

    def op(self, op_type: str, args: tuple, output: Any) -> None:
        outputs = tensors_in(output)
        if self.names.repeated(outputs):
            return  # the same op seen again by an outer wrapper (Tensor.__sub__ around SubExt)
        self.ops += 1
        self._name = self.names.name(op_type)
        inputs = tensors_in(args)
        if self.culprit is not None:
            self._follow(op_type, inputs, outputs)
            return
        # Inputs no hooked op made (data, parameters, results of graphs) are checked once;
        # outputs always, also when an op returns a tensor it updated in place.
        held = FINITE  # the most any input holds
        following = self._first_in is not None  # an infinity came in before this op
        for position, tensor in enumerate(inputs):
            if self._unread and self._read_unread(tensor):
                self._follow(op_type, inputs, outputs)
                return
            before = self._held_before(tensor)
            if before is None:
                before = self._state(tensor)
                self._store(tensor, before)
                if before != FINITE and (self.inf or before == NAN):
                    self._blame(op_type, inputs, outputs, f"input {position}")
                    return
                if before == INF:
                    self._came_in(op_type, inputs, outputs, position, tensor)
            if before > held:
                held = before
        states = []
        for position, tensor in enumerate(outputs):
            state = self._state(tensor)
            self._store(tensor, state)
            if (state > held or (self.inf and state != FINITE)) and position and len(self._unread) < MAX_ENTERED:
                self._unread.append(
                    (weakref.ref(tensor), self._culprit(op_type, inputs, outputs, f"output {position}"))
                )
            elif state > held or (self.inf and state != FINITE):
                self._blame(op_type, inputs, outputs, f"output {position}")
                return
            states.append(state)
        if held and following:
            self._follow_first_in(op_type, inputs, outputs, states)

    def _read(self, tensor: Any):
        """The tensor's values, counted; None when MindSpore cannot hand them to numpy (bfloat16,
        say), which is counted too and said in the report."""
        from ..backend.hooks import to_numpy

        try:
            values = to_numpy(tensor)
        except Exception:  # noqa: BLE001 - MindSpore raises TypeError or RuntimeError for such dtypes
            self.unreadable += 1
            return None
        self.tensors += 1
        return values

    def _state(self, tensor: Any) -> int:
        """FINITE, INF or NAN; FINITE also when its values cannot be read."""
        values = self._read(tensor)
        if values is None or is_finite(values):
            return FINITE
        return NAN if holds_nan(values) else INF

    def _check(self, tensor: Any) -> bool | None:
        """Whether ``tensor`` is finite; None when its values cannot be read."""
        values = self._read(tensor)
        return None if values is None else is_finite(values)

    def _slot(self, label: str, tensor: Any) -> SlotStats:
        from ..backend.hooks import to_numpy

        name = getattr(tensor, "name", "") if type(tensor).__name__ == "Parameter" else ""
        try:
            stats = tensor_stats(to_numpy(tensor))
        except Exception:  # noqa: BLE001 - a tensor MindSpore cannot hand back (a failed op): shown as unreadable
            stats = None
        return SlotStats(f"{label} ({name})" if name else label, name, stats)

    def _culprit(self, op_type: str, inputs: list, outputs: list, slot: str) -> Culprit:
        from ..backend.hooks import user_frame

        when_us = time.time_ns() // 1000
        ins = tuple(self._slot(f"input {i}", t) for i, t in enumerate(inputs))
        outs = tuple(self._slot(f"output {i}", t) for i, t in enumerate(outputs))
        stats = (ins if slot.startswith("input") else outs)[int(slot.split()[1])].stats
        made_here = slot.startswith("output")
        if self.inf:
            made_here = made_here and all(s.stats is None or s.stats.finite for s in ins)
        frame = user_frame()
        source = code = cell = ""
        if frame is not None:
            path, line = frame.f_code.co_filename, frame.f_lineno
            source, code, cell = source_text(path, line, linecache.getline(path, line))
        note = ""
        if not made_here:
            params = [s.name for s in ins if s.name and s.stats is not None and not s.stats.finite]
            note = (
                f"parameter {', '.join(params)} already holds it (its value before this step)"
                if params
                else "no earlier op in this cell made it: it comes from the data, a parameter, or code "
                "the hooks do not see (@jit functions, graphs)"
            )
        return Culprit(
            self._name, op_type, slot, stats, made_here, ins, outs, source, code, cell, note=note, when_us=when_us
        )

    def _blame(self, op_type: str, inputs: list, outputs: list, slot: str) -> None:
        self.culprit = self._culprit(op_type, inputs, outputs, slot)
        self.when_us = self.culprit.when_us
        self._bad.clear()  # from here on, what the culprit's value reached (not the first infinity's)
        self._reached.clear()
        for tensor in outputs:
            if not is_finite(to_numpy_quiet(tensor)):
                self._remember(self._bad, tensor)
        if not self.culprit.made_here:
            for tensor in inputs:
                if not is_finite(to_numpy_quiet(tensor)):
                    self._remember(self._bad, tensor)

    def _read_unread(self, tensor: Any) -> bool:
        """Whether ``tensor`` is a non-finite later output no op had read: then its op is the culprit."""
        for ref, culprit in self._unread:
            if ref() is tensor:
                self.culprit, self.when_us = culprit, culprit.when_us
                self._bad.clear()
                self._reached.clear()
                self._remember(self._bad, tensor)
                self._unread.clear()
                return True
        return False

    def _came_in(self, op_type: str, inputs: list, outputs: list, position: int, tensor: Any) -> None:
        """An infinity came in as data at ``input position``: listed (the first few), and the
        first one kept as the answer for when no op makes a value."""
        from ..backend.hooks import user_frame

        self._entered_count += 1
        if self._first_in is None:
            self._first_in = self._culprit(op_type, inputs, outputs, f"input {position}")
            self._remember(self._bad, tensor)
            for out in outputs:
                if not is_finite(to_numpy_quiet(out)):
                    self._remember(self._bad, out)
        if len(self._entered) > MAX_ENTERED:  # one more than listed: the first may be the answer itself
            return
        frame = user_frame()
        source = code = cell = ""
        if frame is not None:
            path, line = frame.f_code.co_filename, frame.f_lineno
            source, code, cell = source_text(path, line, linecache.getline(path, line))
        value = self._slot(f"input {position}", tensor)
        self._entered.append(
            Entered(
                self._name, op_type, f"input {position}", value.stats, value.name or _bound_to(tensor, frame),
                source, code, cell,
            )
        )  # fmt: skip

    def _follow_first_in(self, op_type: str, inputs: list, outputs: list, states: list[int]) -> None:
        """Before any op made a value: the ops the first infinity that came in reached."""
        if len(self._reached) >= MAX_DOWNSTREAM or not any(self._known(self._bad, t) for t in inputs):
            return
        for tensor, state in zip(outputs, states, strict=True):
            if state != FINITE:
                self._remember(self._bad, tensor)
        outcome = "passed it on" if any(states) else "masked it: its output is finite"
        self._reached.append(Reached(self._name, op_type, outcome))

    def _follow(self, op_type: str, inputs: list, outputs: list) -> None:
        if len(self._reached) >= MAX_DOWNSTREAM or not any(self._known(self._bad, t) for t in inputs):
            return
        name = self._name
        bad = [t for t in outputs if not is_finite(to_numpy_quiet(t))]
        for tensor in bad:
            self._remember(self._bad, tensor)
        outcome = "passed it on" if bad else "masked it: its output is finite"
        self._reached.append(Reached(name, op_type, outcome))

    def _blame_value(self, name: str, op_type: str, slot: str, tensor: Any, note: str, source: bool = True) -> None:
        """A culprit that is one value rather than an op's output: a gradient, a parameter."""
        from ..backend.hooks import user_frame

        self.when_us = time.time_ns() // 1000
        value = self._slot(slot, tensor)
        where = code = cell = ""
        frame = user_frame() if source else None
        if frame is not None:
            path, line = frame.f_code.co_filename, frame.f_lineno
            where, code, cell = source_text(path, line, linecache.getline(path, line))
        self._reached.clear()  # what the first infinity that came in reached, if one did
        self._bad.clear()
        self.culprit = Culprit(
            name, op_type, slot, value.stats, False, (value,), (), where, code, cell, note=note, when_us=self.when_us
        )

    def _check_parameters(self) -> None:
        """After the block: parameters that are no longer finite, though every op the hooks saw
        was (that held more than they did when an op used them: an infinity that came in as a
        parameter is no finding)."""
        from ..backend.hooks import cell_parameters

        checked: set[int] = set()
        for ref in list(self._roots.values()):
            root = ref()
            if root is None:
                continue
            for name, parameter in cell_parameters(root):
                if id(parameter) in checked:
                    continue
                checked.add(id(parameter))
                before = self._held_before(parameter) or FINITE
                if self._state(parameter) > before:
                    self._blame_value(
                        name,
                        "Parameter",
                        "value after the cell",
                        parameter,
                        "every op the hooks saw was finite, so the backward pass or the optimizer's update made it "
                        "(the hooks see forward ops only)",
                        source=False,
                    )
                    return

    def report(self, notes: list[str] | None = None) -> NanReport:
        if self.culprit is None:
            self._check_parameters()
        culprit = self.culprit
        entered, count = tuple(self._entered), self._entered_count
        if culprit is None and self._first_in is not None:
            first = self._first_in
            came = "no op made a NaN, or an infinity from finite values: the first non-finite value came in here"
            note = (
                f"{came}; {first.note}"
                if first.note.startswith("parameter")
                else f"{came}: it comes from the data, a parameter, or code the hooks do not see (@jit functions, "
                "graphs)"
            )
            culprit = Culprit(**{**first.__dict__, "came_in": True, "note": note})
            self.when_us = first.when_us
        if culprit is not None and self._reached:
            culprit = Culprit(**{**culprit.__dict__, "reached": tuple(self._reached)})
        notes = list(notes or [])
        if self.culprit is None:
            notes.extend(
                f"{c.name} ({c.op_type}) made {c.kind} in its {c.slot}, which no later op read: an output a kernel "
                "may leave unwritten (BatchNorm's saved mean and variance on CPU), not blamed"
                for ref, c in self._unread
            )
        if self.unreadable:
            notes.append(
                f"{self.unreadable} tensors could not be read as numpy arrays (bfloat16?) and were not checked"
            )
        if self.ops == 0:
            notes.append(
                "no PyNative op ran under the hooks: GRAPH-mode cells and @jit functions run as graphs; "
                "%%msnan checks those from a data dump"
            )
        return NanReport(
            "PyNative hooks",
            culprit,
            self.ops,
            self.tensors,
            seconds=time.perf_counter() - self.started,
            notes=notes,
            rule="any" if self.inf else "made",
            entered=entered,
            entered_count=count,
        )


def _bound_to(tensor: Any, frame) -> str:
    """The name the person's code holds ``tensor`` under at ``frame`` (``mask``), or ''."""
    if frame is None:
        return ""
    for scope in (frame.f_locals, frame.f_globals):
        for name, value in list(scope.items()):
            if value is tensor and not name.startswith("_"):
                return name
    return ""


def to_numpy_quiet(tensor: Any):
    import numpy as np

    from ..backend.hooks import to_numpy

    try:
        return to_numpy(tensor)
    except Exception:  # noqa: BLE001 - an unreadable tensor counts as finite here: only the culprit is judged strictly
        return np.zeros(0)


class _Watched(HookedCell):
    """The hooks alone, for :func:`watch_pynative`: no mode scope, no dump, no report."""

    def __init__(self, inf: bool = False) -> None:
        super().__init__()
        self.observer = NanWatch(inf)

    def _setup(self) -> None:
        self.watch(self.observer)

    def _finished(self, failed: bool) -> None:
        pass


@contextmanager
def watch_pynative(inf: bool = False) -> Iterator[NanWatch]:
    """``with watch_pynative() as watch:`` the block runs with the hooks; ``watch.report()``
    afterwards. The hooks are removed when the block ends, however it ends. ``inf``: the
    culprit is the first non-finite value of any kind (``%%msnan --inf``)."""
    with _Watched(inf) as watched:
        yield watched.observer


def scan_new_iterations(root: str, before: set[str], progress=None, inf: bool = False) -> NanReport:
    """Scan the iterations of the dump at ``root`` that are not in ``before``."""
    dump = read_data_dump(root, skip=before)
    report = scan_dump(dump, progress=progress, inf=inf)
    if not any(where.iterations for where in dump.ranks):
        report.notes.append(
            "the dump has no new iteration: the cell ran no graph, or the dump's iteration setting skipped its steps"
        )
    return report


class NanSession(HookedCell):
    """The context manager behind ``%%msnan``: the block runs watched, ``.report`` says what it found.

    * ``pynative=True``: the block runs in PyNative mode (the context is put back after it)
      under the hooks;
    * PyNative mode: the hooks; when a data dump is also on, the ``@jit`` graphs the block ran
      are scanned from it as well, and the earlier finding wins;
    * GRAPH mode: the block runs with a data dump (set up now if no graph was compiled yet)
      and the iterations it wrote are scanned.

    The lifecycle (SIGINT held, scopes, hooks, close) is :class:`~msdebug.recorders.hooked.HookedCell`'s;
    the report is made also when the block failed: it covers the ops before the error.

    Raises
    ------
    DumpTooLateError
        On entry, in GRAPH mode after the first compile without a dump: the message gives
        the fresh-kernel first cell and says whether ``--pynative`` can help.
    """

    def __init__(
        self,
        code: str = "",
        *,
        pynative: bool = False,
        progress=None,
        inf: bool = False,
        namespace: dict | None = None,
    ) -> None:
        super().__init__()
        self.code = code
        self.namespace = namespace if namespace is not None else {}  # where the cell's @jit functions are
        self.pynative = pynative
        self.progress = progress
        self.inf = inf  # --inf: the first non-finite value of any kind
        self.report: NanReport | None = None
        self._watch: NanWatch | None = None
        self._compiled = False
        self._graph = False

    def _setup(self) -> None:
        from .. import settings
        from ..backend import datadump as _switch
        from ..backend import get_backend
        from . import datadump

        backend = get_backend()
        graph = self._graph = backend.read("mode") == 0 and not self.pynative
        if graph:
            self.use_dump(*datadump.dump_for_cell(self.code))
        else:
            status = datadump.dump_status()
            if status.config_file and not status.error and (status.in_effect or not status.compiled):
                self.use_dump(status.dump_path, False)
            elif graph_only_reason(self.code, self.namespace) and not status.config_file and not status.compiled:
                # @jit functions run as graphs in PyNative too: their ops need a dump.
                self.use_dump(*datadump.dump_for_cell(self.code))
        self._compiled = _switch.graph_compiled()
        if self.pynative and backend.read("mode") == 0:
            self.enter_scope(settings.context(mode="pynative"))
        # In GRAPH mode too: the ops a cell runs outside its networks (before them, on their
        # results) run one by one, as in PyNative, and no dump holds them.
        self._watch = NanWatch(inf=self.inf)
        self.watch(self._watch)

    def _finished(self, failed: bool) -> None:
        self._finish()  # also after an error: the report covers the ops before it

    @interrupts.interruptible  # Ctrl-C may stop a long dump scan
    def _finish(self) -> None:
        from ..backend import datadump as _switch

        notes = []
        if self.dump_new:
            notes.append(f"msdebug set up a data dump in {self.dump_path} for this kernel's graphs")
        watched = self._watch is not None and (self._watch.ops or not self._graph)  # GRAPH: only if ops ran outside
        hooked = self._watch.report() if watched else None
        if hooked is not None and self.hook_errors:
            hooked.notes.append(
                f"{len(self.hook_errors)} checks failed and were skipped; the first: {self.hook_errors[0]}"
            )
        if hooked is not None and not self.dump_path and graph_only_reason(self.code, self.namespace):
            hooked.notes.append(
                "this cell calls @jit functions, whose ops the hooks do not see; a data dump would show them, "
                "but this process compiled a graph before one was set up"
            )
        elif hooked is not None and not self.dump_path and not self._compiled and _switch.graph_compiled():
            hooked.notes.append(
                "a graph (a GRAPH-mode Cell or an @jit function) ran in this cell: the hooks do not see its ops, "
                "and no data dump can be set up any more in this process"
            )
        dumped = None
        if self.dump_path and (hooked is None or self.new_iterations()):
            dumped = scan_new_iterations(self.dump_path, self._before, self.progress, inf=self.inf)
        if hooked is not None and dumped is not None:
            # The earlier finding is the report; the other says what it found, a value or none.
            _list_entered(hooked, dumped)
            if _dump_first(hooked, dumped, self._watch.when_us):
                found = (
                    f"; they found {_found(hooked.culprit, later=_first_us(dumped) > 0)}"
                    if hooked.culprit is not None
                    else ", all finite"
                )
                dumped.notes.append(f"PyNative hooks: {hooked.checked_ops} ops checked as well{found}")
                self.report = dumped
            elif dumped.culprit is not None:
                hooked.notes.append(
                    f"the data dump of the graphs this cell ran found {_found(dumped.culprit, later=True)}"
                )
                self.report = hooked
            else:
                hooked.notes.append(
                    f"the data dump of the graphs this cell ran: {dumped.checked_tensors} tensors, finite"
                )
                self.report = hooked
        else:
            self.report = hooked or dumped
        if self.report is not None:
            self.report.notes[:0] = notes


def _found(culprit: Culprit, later: bool) -> str:
    """``NaN later, at Default/Log-op0 (Log), input 0, which received it``: what the other look found."""
    how = "made it" if culprit.made_here else "received it"
    return (
        f"{culprit.kind}{' later,' if later else ''} at {culprit.name} ({culprit.op_type}), {culprit.slot}, which {how}"
    )


def _dump_first(hooked: NanReport, dumped: NanReport, hooked_us: int) -> bool:
    """Whether the dump's finding is the report: a value made (or a NaN that came in) before one
    that only came in as data, else the earlier of the two."""
    if dumped.culprit is None:
        return False
    if hooked.culprit is None:
        return True
    if dumped.culprit.came_in != hooked.culprit.came_in:
        return hooked.culprit.came_in
    return _first_us(dumped) < hooked_us


def _list_entered(hooked: NanReport, dumped: NanReport) -> None:
    """Both reports list the infinities that came in as data, the hooks' and the dump's."""
    entered = (*hooked.entered, *dumped.entered)[: MAX_ENTERED + 1]
    count = hooked.entered_count + dumped.entered_count
    for report in (hooked, dumped):
        report.entered, report.entered_count = entered, count


def _first_us(report: NanReport) -> int:
    """When the culprit of a dump scan was written (µs since the epoch, from its file name)."""
    culprit = report.culprit
    return culprit.when_us if culprit is not None and culprit.when_us else 0
