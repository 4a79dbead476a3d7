"""Watch a training as it runs: ``msdebug.watch(...)`` and the session behind ``%%mswatch``.

A :class:`WatchSession` finds what is trained (the networks, optimizers, TrainOneStepCells and
Models of the namespace the cell uses, or the objects given), installs the backend's tracker
(:class:`msdebug.backend.watch.Tracker`), and at the end of each watched step computes the
statistics, records them, and evaluates the conditions (:mod:`msdebug.dumps.watch`).

Where a step ends, first that applies:

1. ``msdebug.step(loss)`` / ``session.step(loss)``, or the ``Model.train`` callback's step end
   (from the first such mark on, only these end steps);
2. the end of a ``nn.TrainOneStepCell`` call (its output is the loss);
3. the end of the optimizer's call.

With ``stop`` (the default) the first trip raises :class:`WatchStopped` at the end of its step:
the model and the optimizer are as that step left them, and ``__exit__`` swallows it (a
``Model.train`` callback asks Model to stop instead). SIGINT is held from ``__enter__`` to
``__exit__`` as ``%%msprofile`` does (MindSpore's graph runs cannot then take it over), and
``__exit__`` removes every patch and hook whatever ended the block.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import interrupts
from ..dumps.watch import KINDS, STATS, Evaluator, Trip, Watched, WatchHistory, parse_conditions
from ..errors import InvalidValueError, MagicUsageError, echo

__all__ = ["WatchSession", "WatchStopped", "last_ended", "last_watch", "step", "watch"]

_active: list[WatchSession] = []  # the innermost running session, for msdebug.step()
_last: WatchSession | None = None


class WatchStopped(BaseException):  # noqa: N818 - the contract's name: a stop, not an error
    """Raised at the end of the step where a condition tripped (``stop=True``)."""

    def __init__(self, trip: Trip) -> None:
        super().__init__(trip.message)
        self.trip = trip


def step(loss: Any = None) -> None:
    """End a step of the innermost running watch (nothing outside one)."""
    if _active:
        _active[-1].step(loss)


def last_ended() -> WatchSession | None:
    """The last watch, once it has ended (None while it runs, or before any)."""
    return _last if _last is not None and _last not in _active else None


def last_watch():
    """The statistics of the last watch (running or ended) as a table, or None."""
    return _last.history.table() if _last is not None else None


def _caller_namespace() -> dict:
    from ..backend.hooks import user_frame

    frame = user_frame()
    if frame is None:
        return {}
    return {**frame.f_globals, **frame.f_locals}


class WatchSession:
    """See the module's docstring; ``history`` is live while it runs and final after."""

    def __init__(
        self,
        conditions: list[str] | str | None = None,
        every: int = 1,
        stop: bool = True,
        namespace: dict | None = None,
        on_update: Callable[[WatchHistory], None] | None = None,
        save: str | None = None,
        net: Any = None,
        optimizer: Any = None,
    ) -> None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise InvalidValueError(f"every must be a whole number of steps, 1 or more; got {echo(every)}.")
        if not isinstance(stop, bool):
            raise InvalidValueError(f"stop must be True or False; got {echo(stop)}.")
        self.conditions = parse_conditions(conditions)
        self._explicit = bool(conditions)
        self.every, self.stop = every, stop
        self.on_update, self.save = on_update, save
        self._namespace = (
            namespace
            if namespace is not None
            else ({} if (net is not None or optimizer is not None) else _caller_namespace())
        )
        self._net, self._optimizer = net, optimizer
        self._evaluator = Evaluator(self.conditions)
        self.history = WatchHistory(conditions=[c.token for c in self.conditions], every=every)
        self.number = 0  # the step running now, counted from 0
        self._depth = 0
        self._marked = False  # steps are marked by step() or the callback
        self._just_ended = False  # a step ended by a call, and no call since
        self._call_loss: Any = None
        self._checked: set[str] = set()
        self._tracker: Any = None
        self._unseen: set[str] = set()  # the kinds of tensor said to be not watched (notes)
        self._loss: Watched | None = None
        self._described: list[Watched] | None = None  # the tracker's list of the last watched step

    # ---- lifecycle
    def __enter__(self) -> WatchSession:
        return interrupts.enter_held(self._enter, self._abandon)

    @interrupts.protected
    def _enter(self) -> WatchSession:
        global _last
        from ..backend.watch import Tracker, find_targets

        targets = find_targets(self._namespace, self._net, self._optimizer)
        tracker = Tracker(self, targets, self._evaluator.needs)
        self._check_patterns(tracker)  # before anything is installed: training not started
        if not targets:
            self.history.notes.append("no network or optimizer found yet: watching the first optimizer called.")
        tracker.install()
        self._tracker = tracker
        tracker.begin_step(self.watching)
        _active.append(self)
        _last = self
        return self

    @interrupts.protected
    def _abandon(self) -> None:
        try:
            self._close()
        finally:
            interrupts.let_go()

    @interrupts.protected
    def __exit__(self, kind, error, tb) -> bool:
        try:
            self._close()
        finally:
            interrupts.let_go()
        if self.save:
            self.history.save(self.save)
        return kind is not None and issubclass(kind, WatchStopped)

    def _close(self) -> None:
        try:
            if self._tracker is not None:
                self._tracker.remove()
        finally:
            # an ended watch (msdebug.last_watch() keeps it) holds none of the person's networks
            self._tracker, self._namespace, self._net, self._optimizer = None, {}, None, None
            if self in _active:
                _active.remove(self)

    def callback(self):
        """A ``mindspore.train.Callback`` for ``Model.train``: its step end ends each step."""
        from ..backend.watch import watch_callback

        self._marked = True
        return watch_callback(self)

    # ---- steps
    @property
    def watching(self) -> bool:
        """Whether the step running now is watched (every ``every``-th, from step 0)."""
        return self.number % self.every == 0

    def step(self, loss: Any = None) -> None:
        """End the current step by hand; ``loss`` (a Tensor or number) is checked with it."""
        if self._tracker is None:
            raise InvalidValueError("this watch is not running; call step() inside its with block.")
        if not self._marked and self._just_ended:
            # The call that ended the last step came before this mark: the mark belongs to it.
            self._marked = True
            self._just_ended = False
            self._end_loss_only(self.number - 1, loss)
            return
        self._marked = True
        self._end_step(loss if loss is not None else self._call_loss)

    def _callback_step(self, outputs: Any) -> bool:
        if self._tracker is None:
            raise InvalidValueError(
                "this watch is not running; pass w.callback() to a Model.train inside its with block."
            )
        try:
            self._end_step(outputs if outputs is not None else self._call_loss)
        except WatchStopped:
            return True
        return False

    def _call_began(self) -> None:
        self._depth += 1
        self._just_ended = False

    def _call_ended(self, output: Any, done: bool) -> None:
        self._depth = max(self._depth - 1, 0)
        if not done or self._depth:
            return
        if self._marked:
            if output is not None:
                self._call_loss = output
            return
        self._end_step(output)
        self._just_ended = True

    def _end_loss_only(self, number: int, loss: Any) -> None:
        from ..backend.watch import loss_value

        if loss is None or number % self.every:
            return
        value = loss_value(loss)
        if value is None:
            return
        matrix = _loss_row(value, len(self._evaluator.columns))
        loss = self._loss_item()
        self.history.add(loss)
        self._record(number, [loss], matrix)

    def _end_step(self, loss: Any) -> None:
        from ..backend.watch import loss_value

        number = self.number
        watched_now = self.watching
        self._call_loss = None
        trips: list[Trip] = []
        if watched_now:
            watched, matrix = self._tracker.collect()
            if watched is not self._described:  # the tracker hands the same list while the tensors stay
                self._described = watched
                for item in watched:
                    self.history.add(item)
                self._check_patterns(self._tracker, acts_seen=any(w.kind == "act" for w in watched))
                self._note_unseen(watched)
            value = loss_value(loss) if loss is not None else None
            if value is not None:
                watched = [*watched, self._loss_item()]
                matrix = np.concatenate([matrix, _loss_row(value, matrix.shape[1])])
                self.history.add(watched[-1])
            trips = self._record(number, watched, matrix, after=False)
        if self._tracker.notes:
            self.history.notes.extend(self._tracker.notes)
            self._tracker.notes.clear()
        self.number += 1
        self._tracker.begin_step(self.watching)
        if watched_now and self.on_update is not None:
            self.on_update(self.history)
        self._after(trips)

    def _loss_item(self) -> Watched:
        """The loss as a watched tensor, defined at the person's line that ends its first step:
        the training step's call, ``msdebug.step(loss)`` or ``model.train(...)``."""
        if self._loss is None:
            from ..backend.hooks import user_frame
            from ..dumps.cells import place

            frame = user_frame()
            where = place(frame.f_code.co_filename, frame.f_lineno) if frame is not None else ""
            self._loss = Watched("loss", "loss", (), "float", defined_at=where)
        return self._loss

    def _record(self, number: int, watched: list[Watched], matrix: np.ndarray, after: bool = True) -> list[Trip]:
        """The conditions evaluated on a step's statistics, which are recorded; its trips (each
        the first of its condition on its tensor) kept, and with ``after`` acted on."""
        trips = self._evaluator.evaluate(number, watched, matrix)
        self.history.trips.extend(trips)
        self.history.record(number, matrix, watched)
        if after:
            self._after(trips)
        return trips

    def _after(self, trips: list[Trip]) -> None:
        if trips and self.stop:
            self.history.stopped = True
            raise WatchStopped(trips[0])

    def _note_unseen(self, watched: list[Watched]) -> None:
        """A kind of tensor the conditions ask for that this step did not show, said once in the
        notes (the report shows them): "nothing tripped" is then not read as "all is well"."""
        if not any(w.kind == "weight" for w in watched):
            return  # nothing trained seen yet
        asked = {KINDS[c.kind] for c in self.conditions} - {w.kind for w in watched} - self._unseen
        for kind in sorted(asked & {"grad", "act"}):
            self._unseen.add(kind)
            conditions = ", ".join(c.token for c in self.conditions if KINDS[c.kind] == kind)
            self.history.notes.append(f"{self._tracker.unseen(kind)}. Not checked: {conditions}.")

    def _check_patterns(self, tracker: Any, acts_seen: bool = False) -> None:
        """A condition the person gave whose pattern matches nothing: one line, once the names of
        its kind are known (weights and gradients at the start, activations after a step)."""
        if not self._explicit:
            return
        kinds = set(tracker.known_kinds)
        if acts_seen:
            kinds.add("acts")
        kinds -= self._checked
        if not kinds:
            return
        names = list(dict.fromkeys([*tracker.names, *tracker.weights]))  # trained or not yet: a pattern may name either
        watched = [Watched(name, "weight", (), "") for name in names]
        watched += [Watched(name, "grad", (), "") for name in names]
        watched += [Watched(a[0], "act", (), "") for a in tracker.acts]
        lines = self._evaluator.unmatched(watched, kinds)
        self._checked |= kinds
        if lines:
            raise MagicUsageError(lines[0])


def _loss_row(value: float, width: int) -> np.ndarray:
    """The loss's statistics as a one-row matrix of ``width`` columns (NaN past :data:`STATS`)."""
    finite = math.isfinite(value)
    row = np.full((1, width), np.nan)
    row[0, : len(STATS)] = [value, value, value, abs(value), abs(value), 1.0 if value == 0 else 0.0,
                            0.0 if finite else 1.0]  # fmt: skip
    return row


def watch(*conditions: str, every: int = 1, stop: bool = True, net: Any = None, optimizer: Any = None,
          on_update: Callable[[WatchHistory], None] | None = None, save: str | None = None,
          namespace: dict | None = None) -> WatchSession:  # fmt: skip
    """``with msdebug.watch("grads:*:vanishing") as w:`` a watched training; ``w.callback()``
    for ``Model.train``."""
    flat: list[str] = []
    for item in conditions:
        flat.extend(item.split() if isinstance(item, str) else [item])
    return WatchSession(flat or None, every=every, stop=stop, namespace=namespace, on_update=on_update,
                        save=save, net=net, optimizer=optimizer)  # fmt: skip
