"""What ``%%mswatch`` checks and what it recorded: conditions, their grammar, the history.

Pure: no MindSpore here. :mod:`msdebug.backend.watch` computes the statistics on the device,
:mod:`msdebug.recorders.watch` runs the session; this module parses what the person typed,
decides which condition trips on a step's statistics, and keeps (bounded) what was seen.

The grammar
-----------
One token per condition: ``KIND:PATTERN:NAME(PARAM=VALUE,...)`` or ``KIND:NAME(...)`` (the
pattern is then ``*``). KIND is ``weights``, ``grads``, ``acts`` or ``loss`` (no pattern);
PATTERN is an ``fnmatch`` pattern over the tensor's name (a parameter name such as
``fc1.weight``, a Cell's scope such as ``layers.3``; ``/`` may stand for ``.``).

The conditions and MindInsight's
--------------------------------
MindInsight's offline debugger (``mindinsight.debugger``, documented r2.0 to r2.3) had these
condition classes, and its online debugger the same checks per tensor kind (weight, gradient,
activation). Names and parameters here are theirs, with their meaning:

====================  ======================================================  ===============
here                  MindInsight                                              parameters
====================  ======================================================  ===============
``too_large``         ``TensorTooLargeCondition``, weight/gradient too large   abs_mean_gt, max_gt, min_gt, mean_gt
``too_small``         ``TensorTooSmallCondition``, weight too small            abs_mean_lt, max_lt, min_lt, mean_lt
``vanishing``         gradient vanishing (grads only)                          abs_mean_lt, max_lt, min_lt, mean_lt
``overflow``          ``TensorOverflowCondition``, weight overflow             (none): any NaN or Inf
``all_zero``          ``TensorAllZeroCondition``                               zero_percentage_ge (percent)
``range``             ``TensorRangeCondition``, activation range               range_start_inclusive, range_end_inclusive,
                                                                               range_percentage_lt, range_percentage_gt,
                                                                               max_min_lt, max_min_gt
``not_changed``       ``TensorUnchangedCondition``, weight not changed         rtol, atol
``change_too_large``  ``TensorChangeAboveThresholdCondition``                  abs_mean_update_ratio_gt, epsilon
``change_too_small``  ``TensorChangeBelowThresholdCondition``                  abs_mean_update_ratio_lt, epsilon
``initialization``    weight initialization (first watched step only)          zero_percentage_ge, max_gt, min_lt
====================  ======================================================  ===============

As in MindInsight, a condition with several parameters trips on any one of them, and the trip
names the ones that did. The change conditions use MindInsight's own inequalities (its
``conditions.py`` docstrings), on means, so no element-wise pass beyond the means is needed:
``not_changed``: ``mean|after - before| <= atol + rtol * mean|before|``;
``change_too_large``: ``mean|after - before| > epsilon + abs_mean_update_ratio_gt * mean|before|``;
``change_too_small``: the same with ``<`` and ``abs_mean_update_ratio_lt``. The ratio a trip
shows is ``(mean|after - before| - epsilon) / mean|before|``, which is above (below) the
threshold exactly when the inequality holds.

What MindInsight had that is not here, and why:

* ``OperatorOverflowCondition``: the overflow flag of Ascend's AI Core operators; there is no
  such flag on CPU or GPU, and the statistics here see the tensors, not the operators' status.
* the ``equal_nan`` flag of weight-not-changed (online only): a weight with a NaN trips
  ``overflow`` first, so it is left out rather than given a second meaning.
* MindInsight's "gradient exploding" was a NaN/Inf check only; ``exploding`` here also takes
  ``l2_gt``, the gradient's L2 norm above a threshold, so it trips steps before the overflow
  (``overflow`` is the NaN/Inf check alone).

msdebug's own, with no MindInsight counterpart: ``not_finite`` (the loss, or any tensor, NaN or
Inf), ``not_decreasing(steps=K)`` (the loss has not gone below its best for K steps), ``dead``
(activations: a Cell whose output is mostly zeros, ``zero_percentage_ge`` as ``all_zero``).

Deliberate differences in the two ratio conditions (``change_too_large``, ``change_too_small``),
each found on a healthy ResNet whose default watch stopped it at step 1:

* A tensor that was all zeros when the watch first saw it (a bias, BatchNorm's ``beta`` or
  ``moving_mean``, initialised to zeros) is skipped. Its size is then only the sum of its own
  few updates, so each update is "large" against it for many steps (a ratio near 1/k at step
  k); MindInsight divided by ``epsilon`` and tripped on every such tensor.
* A parameter no optimizer trains (BatchNorm's moving statistics, a layer frozen with
  ``requires_grad=False``) is skipped: its changes are not the optimizer's updates. It is still
  checked by ``not_changed``, which is how a layer frozen by mistake, or a BatchNorm left out of
  training mode (``net.set_train()`` not called), is found.
* The recommended set (no condition given) applies ``change_too_large`` to tensors of two or
  more dimensions (weight matrices, kernels, embeddings) only. The ratio is a weight-matrix
  heuristic: a bias of a few values drawn near zero made a healthy training trip it at step 0
  in 3 of 40 random initialisations. Written out (``weights:*:change_too_large``), the
  condition applies to every tensor its pattern matches, as MindInsight's did.

History
-------
:class:`WatchHistory` keeps seven statistics (:data:`STATS`) per watched tensor per recorded
step, as float64, and nothing else; past a memory budget (:data:`BUDGET`, 40 MB) every other
row is dropped and only every other step is recorded from then on, so a long run stays bounded
and still spans its whole length. The trips are kept apart, whole.
"""

from __future__ import annotations

import fnmatch
import io
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DumpFormatError, InvalidValueError, MagicUsageError, did_you_mean, echo
from ..files import MiB, read_regular

__all__ = [
    "BUDGET",
    "CATALOG",
    "DEFAULTS",
    "KINDS",
    "STATS",
    "Condition",
    "Evaluator",
    "Needs",
    "Spec",
    "Trip",
    "WatchHistory",
    "Watched",
    "parse_condition",
    "parse_conditions",
]

STATS = ("max", "min", "mean", "abs_mean", "l2", "zero_share", "nonfinite")
KINDS = {"weights": "weight", "grads": "grad", "acts": "act", "loss": "loss"}
BUDGET = 40 * 1000 * 1000  # bytes of statistics a history keeps at most (the issue allows 50 MB)

_TENSOR_KINDS = ("weights", "grads", "acts")
_ALL = (*_TENSOR_KINDS, "loss")
_TOO_LARGE = ("abs_mean_gt", "max_gt", "min_gt", "mean_gt")
_TOO_SMALL = ("abs_mean_lt", "max_lt", "min_lt", "mean_lt")


@dataclass(frozen=True)
class Spec:
    """One kind of condition: where it applies, its parameters (default, or None: optional),
    whether at least one must be given, and what it was in MindInsight."""

    name: str
    kinds: tuple[str, ...]
    params: dict[str, float | None]
    needs_one: bool = False
    whole: tuple[str, ...] = ()  # parameters that are whole numbers
    mindinsight: str = ""
    meaning: str = ""


def _spec(name, kinds, params, needs_one=False, whole=(), mindinsight="", meaning="") -> tuple[str, Spec]:
    return name, Spec(name, tuple(kinds), dict(params), needs_one, tuple(whole), mindinsight, meaning)


CATALOG: dict[str, Spec] = dict(
    [
        _spec("too_large", _ALL, dict.fromkeys(_TOO_LARGE), True, (), "TensorTooLargeCondition",
              "a statistic above its threshold"),
        _spec("too_small", _ALL, dict.fromkeys(_TOO_SMALL), True, (), "TensorTooSmallCondition",
              "a statistic below its threshold"),
        _spec("vanishing", ("grads",), {"abs_mean_lt": 1e-9, "max_lt": None, "min_lt": None, "mean_lt": None},
              False, (), "gradient vanishing", "a gradient near zero"),
        _spec("exploding", ("grads",), {"l2_gt": 1e3}, False, (), "gradient exploding (NaN/Inf only there)",
              "a gradient's L2 norm above l2_gt, or any NaN/Inf in it"),
        _spec("overflow", _TENSOR_KINDS, {}, False, (), "TensorOverflowCondition", "any NaN or Inf"),
        _spec("not_finite", _ALL, {}, False, (), "", "any NaN or Inf"),
        _spec("all_zero", _TENSOR_KINDS, {"zero_percentage_ge": 100.0}, False, (), "TensorAllZeroCondition",
              "the share of zeros (percent) at or above zero_percentage_ge"),
        _spec("dead", ("acts",), {"zero_percentage_ge": 99.0}, False, (), "",
              "an activation that is (almost) all zeros: a dead layer"),
        _spec("range", _TENSOR_KINDS,
              {"range_start_inclusive": None, "range_end_inclusive": None, "range_percentage_lt": None,
               "range_percentage_gt": None, "max_min_lt": None, "max_min_gt": None},
              True, (), "TensorRangeCondition",
              "the percentage of values in [start, end] outside its bounds, or max - min outside its bounds"),
        _spec("not_changed", ("weights",), {"rtol": 1e-5, "atol": 1e-8}, False, (), "TensorUnchangedCondition",
              "mean |after - before| within atol + rtol * mean |before|"),
        _spec("change_too_large", ("weights",), {"abs_mean_update_ratio_gt": 1e-1, "epsilon": 1e-9}, False, (),
              "TensorChangeAboveThresholdCondition", "mean |update| / (mean |before| + epsilon) above the ratio"),
        _spec("change_too_small", ("weights",), {"abs_mean_update_ratio_lt": 1e-4, "epsilon": 1e-9}, False, (),
              "TensorChangeBelowThresholdCondition", "mean |update| / (mean |before| + epsilon) below the ratio"),
        _spec("initialization", ("weights",), {"zero_percentage_ge": 100.0, "max_gt": None, "min_lt": None},
              False, (), "weight initialization", "the first watched step's weights all zero, or beyond max/min"),
        _spec("not_decreasing", ("loss",), {"steps": 20}, False, ("steps",), "",
              "the loss not below its best for `steps` steps"),
    ]
)  # fmt: skip

# The recommended set (issue 37 "Defaults"): what runs when no condition is given.
DEFAULTS = (
    "weights:not_changed",
    "weights:change_too_large",
    "grads:vanishing",
    "grads:exploding",
    "grads:overflow",
    "acts:all_zero",
    "loss:not_finite",
    "loss:not_decreasing",
)


def _number(value: float) -> str:
    """A threshold as the person could type it back: ``1e-07``, ``0.1``, ``20``."""
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


@dataclass(frozen=True)
class Condition:
    """One parsed condition; :attr:`token` writes it back with every threshold in effect."""

    kind: str  # weights | grads | acts | loss
    pattern: str
    name: str
    params: tuple[tuple[str, float], ...]  # every parameter in effect, defaults included
    #: one of the recommended set (no condition given): its ratio conditions skip 1-D tensors
    recommended: bool = field(default=False, compare=False)

    @property
    def spec(self) -> Spec:
        return CATALOG[self.name]

    @property
    def token(self) -> str:
        inside = ",".join(f"{key}={_number(value)}" for key, value in self.params)
        where = "" if self.kind == "loss" else f"{self.pattern}:"
        return f"{self.kind}:{where}{self.name}" + (f"({inside})" if inside else "")

    def get(self, key: str, default: float | None = None) -> float | None:
        return dict(self.params).get(key, default)

    def matches(self, watched: Watched) -> bool:
        if KINDS[self.kind] != watched.kind:
            return False
        if self.kind == "loss":
            return True
        name = watched.name
        return fnmatch.fnmatchcase(name, self.pattern) or fnmatchcase_slash(name, self.pattern)


def fnmatchcase_slash(name: str, pattern: str) -> bool:
    """``encoder/layer0/*`` matches ``encoder.layer0.relu``: ``/`` stands for ``.`` too."""
    return "/" in pattern and fnmatch.fnmatchcase(name, pattern.replace("/", "."))


_TOKEN = re.compile(r"^(?P<kind>[^:()]*):(?P<rest>.*)$", re.S)


def parse_condition(token: str) -> Condition:
    """``"grads:fc*:vanishing(abs_mean_lt=1e-7)"`` -> :class:`Condition`; one-line
    :class:`~msdebug.errors.MagicUsageError` (with "did you mean") for anything else."""
    if not isinstance(token, str):
        raise MagicUsageError(f"a condition is a string like 'grads:*:vanishing', got {echo(token)}.")
    text = token.strip()
    match = _TOKEN.match(text)
    if not match or not match["kind"].strip():
        raise MagicUsageError(
            f"condition {echo(token)}: write KIND:PATTERN:NAME(PARAM=VALUE,...), KIND one of "
            f"{', '.join(_ALL)}; e.g. 'grads:*:vanishing(abs_mean_lt=1e-7)'."
        )
    kind = match["kind"].strip()
    if kind not in KINDS:
        raise MagicUsageError(
            f"condition {echo(token)}: unknown kind {echo(kind)}; one of {', '.join(_ALL)}.{did_you_mean(kind, KINDS)}"
        )
    rest = match["rest"].strip()
    head, paren, inside = rest.partition("(")
    if paren and not inside.rstrip().endswith(")"):
        raise MagicUsageError(f"condition {echo(token)}: the parameters need a closing ')'.")
    inside = inside.rstrip()[:-1] if paren else ""
    pattern, colon, name = head.rpartition(":")
    pattern, name = pattern.strip(), name.strip()
    if kind == "loss" and colon:
        raise MagicUsageError(f"condition {echo(token)}: the loss has no pattern; write e.g. 'loss:{name}'.")
    pattern = pattern or "*"
    spec = CATALOG.get(name)
    if spec is None:
        allowed = [n for n, s in CATALOG.items() if kind in s.kinds]
        raise MagicUsageError(
            f"condition {echo(token)}: unknown condition {echo(name)} for {kind}; one of {', '.join(allowed)}."
            f"{did_you_mean(name, allowed)}"
        )
    if kind not in spec.kinds:
        raise MagicUsageError(f"condition {echo(token)}: {name} applies to {', '.join(spec.kinds)}, not to {kind}.")
    given = _parse_params(token, spec, inside)
    params = {key: value for key, value in spec.params.items() if value is not None}
    params.update(given)
    _check_params(token, spec, given, params)
    ordered = tuple((key, float(params[key])) for key in spec.params if key in params)
    return Condition(kind, pattern, name, ordered)


def _parse_params(token: str, spec: Spec, inside: str) -> dict[str, float]:
    given: dict[str, float] = {}
    for part in (p.strip() for p in inside.split(",")) if inside.strip() else ():
        key, equals, value = (s.strip() for s in part.partition("="))
        if not equals or not key:
            raise MagicUsageError(f"condition {echo(token)}: write each parameter as NAME=VALUE, got {echo(part)}.")
        if key not in spec.params:
            known = ", ".join(spec.params) or "none"
            raise MagicUsageError(
                f"condition {echo(token)}: {spec.name} has no parameter {echo(key)} (its parameters: {known})."
                f"{did_you_mean(key, spec.params)}"
            )
        if key in given:
            raise MagicUsageError(f"condition {echo(token)}: {key} is given twice.")
        try:
            number = float(value)
        except ValueError:
            raise MagicUsageError(f"condition {echo(token)}: {key} must be a number, got {echo(value)}.") from None
        if math.isnan(number):
            raise MagicUsageError(f"condition {echo(token)}: {key} must be a number, not NaN.")
        if key in spec.whole and not (number.is_integer() and number >= 1):
            raise MagicUsageError(
                f"condition {echo(token)}: {key} must be a whole number of at least 1, got {echo(value)}."
            )
        given[key] = number
    return given


def _check_params(token: str, spec: Spec, given: dict[str, float], params: dict[str, float]) -> None:
    if spec.needs_one and not given:
        raise MagicUsageError(
            f"condition {echo(token)}: {spec.name} needs at least one of {', '.join(spec.params)}, "
            f"e.g. '{spec.kinds[0]}:*:{spec.name}({next(iter(spec.params))}=1)'."
        )
    for key in ("zero_percentage_ge", "range_percentage_lt", "range_percentage_gt"):
        if key in params and not 0 <= params[key] <= 100:
            raise MagicUsageError(
                f"condition {echo(token)}: {key} is a percentage, 0 to 100; got {_number(params[key])}."
            )
    for key in ("rtol", "atol", "epsilon"):
        if key in params and params[key] < 0:
            raise MagicUsageError(f"condition {echo(token)}: {key} must be 0 or more; got {_number(params[key])}.")
    if spec.name == "range":
        share = {"range_percentage_lt", "range_percentage_gt"} & set(given)
        bounds = {"range_start_inclusive", "range_end_inclusive"} & set(given)
        if share and not bounds:
            raise MagicUsageError(
                f"condition {echo(token)}: range_percentage_lt/gt need range_start_inclusive or range_end_inclusive."
            )
        if bounds and not share:
            raise MagicUsageError(
                f"condition {echo(token)}: a range needs range_percentage_lt or range_percentage_gt with its bounds."
            )
        if given.get("range_start_inclusive", -math.inf) > given.get("range_end_inclusive", math.inf):
            raise MagicUsageError(f"condition {echo(token)}: range_start_inclusive is above range_end_inclusive.")


def parse_conditions(tokens: Any = None) -> list[Condition]:
    """The conditions of ``tokens`` (a string of space-separated tokens, or a list of them);
    none given: the recommended :data:`DEFAULTS`."""
    if tokens is None:
        tokens = []
    if isinstance(tokens, str):
        tokens = tokens.split()
    recommended = not list(tokens)
    tokens = list(tokens) or list(DEFAULTS)
    parsed: list[Condition] = []
    for token in tokens:
        condition = parse_condition(token)
        if recommended:
            condition = replace(condition, recommended=True)
        if condition not in parsed:
            parsed.append(condition)
    return parsed


@dataclass(frozen=True)
class Needs:
    """What the backend must compute beyond :data:`STATS`: the change of the weights (for the
    ``*_changed`` conditions), and the share of values in each ``[start, end]`` of a ``range``."""

    update: bool = False
    ranges: tuple[tuple[float, float], ...] = ()
    #: what the conditions on activations need a GRAPH step's hooks to compute: nothing (``""``),
    #: the share of zeros alone (``"zeros"``: ``all_zero``, the recommended one, and ``dead``), or
    #: every statistic
    acts: str = ""

    @classmethod
    def of(cls, conditions: list[Condition]) -> Needs:
        ranges = sorted({_bounds(c) for c in conditions if c.name == "range" and _has_bounds(c)})
        update = any(c.name in ("not_changed", "change_too_large", "change_too_small") for c in conditions)
        on_acts = {c.name for c in conditions if c.kind == "acts"}
        acts = "" if not on_acts else "zeros" if on_acts <= {"all_zero", "dead"} else "all"
        return cls(update, tuple(ranges), acts)

    @property
    def extras(self) -> tuple[str, ...]:
        """The names of the extra columns the backend returns after :data:`STATS`, in order."""
        names = [f"range_share@{lo!r},{hi!r}" for lo, hi in self.ranges]
        if self.update:
            names += ["update_abs_mean", "prev_abs_mean", "prev_zero_share"]
        return tuple(names)


def _has_bounds(condition: Condition) -> bool:
    return condition.get("range_start_inclusive") is not None or condition.get("range_end_inclusive") is not None


def _bounds(condition: Condition) -> tuple[float, float]:
    low, high = condition.get("range_start_inclusive"), condition.get("range_end_inclusive")
    return (-math.inf if low is None else low, math.inf if high is None else high)


@dataclass(frozen=True)
class Watched:
    """One watched tensor: a parameter (``weight``), its gradient (``grad``), a Cell's output
    (``act``) or the loss."""

    name: str
    kind: str  # "weight" | "grad" | "act" | "loss"
    shape: tuple[int, ...]
    dtype: str
    scope: str = ""  # the Cell scope, for activations
    defined_at: str = ""  # "cell [3], line 5" or "file.py:12", "" when unknown
    trained: bool = True  # a weight an optimizer updates (not a moving statistic or a frozen layer)


@dataclass(frozen=True)
class Trip:
    """One condition that tripped on one tensor at one step."""

    condition: str
    name: str
    kind: str
    step: int
    values: dict[str, float]
    thresholds: dict[str, float]
    message: str


_WORDS = {"gt": ">", "lt": "<", "ge": ">="}


def _fmt(value: float) -> str:
    if value != value or math.isinf(value):
        return str(value)
    if value == int(value) and abs(value) < 1e6:
        return str(int(value))
    return f"{value:.3g}" if 1e-3 <= abs(value) < 1e4 else f"{value:.1e}"


class Evaluator:
    """Decides which conditions trip at a step; keeps the state some need (the loss's best,
    whether this is the first watched step, which tensors each condition has tripped on).

    A step's statistics come as a matrix, a row per watched tensor and a column per
    :attr:`columns` (what the backend computes), and each condition is tested on whole columns
    at once: the cost of a step does not grow with Python work per tensor."""

    def __init__(self, conditions: list[Condition]) -> None:
        self.conditions = list(conditions)
        self.needs = Needs.of(self.conditions)
        self.columns = (*STATS, *self.needs.extras)
        self._column = {name: i for i, name in enumerate(self.columns)}
        self._best: dict[Condition, tuple[float, int]] = {}
        self._first = True
        self._tripped: set[tuple[Condition, str, str]] = set()
        #: weights judged at their first step with a copy: those that were all zeros then
        self._judged: set[str] = set()
        self._started_at_zero: set[str] = set()
        self._ratios = any(c.name in ("change_too_large", "change_too_small") for c in self.conditions)
        #: the tensors of the last step, and per condition the rows it applies to (and has not tripped on)
        self._plan: tuple[list[Watched], list[np.ndarray]] = ([], [])
        self._weights = 0  # how many of them are weights
        #: per update-ratio condition: its rows, how many weights started at zeros, which rows it judges
        self._own: dict[Condition, tuple[np.ndarray, int, np.ndarray]] = {}

    def unmatched(self, watched: list[Watched], kinds_known: set[str]) -> list[str]:
        """One line per condition whose pattern matches no tensor of its kind, among the kinds
        whose names are known (``weights`` once the optimizer is, ``acts`` after a forward)."""
        lines = []
        for condition in self.conditions:
            if condition.kind == "loss" or condition.kind not in kinds_known:
                continue
            if any(condition.matches(w) for w in watched):
                continue
            names = [w.name for w in watched if w.kind == KINDS[condition.kind]]
            shown = ", ".join(names[:8]) + (f" ... ({len(names)} in all)" if len(names) > 8 else "")
            hint = did_you_mean(condition.pattern, names)
            lines.append(
                f"condition {condition.token!r}: the pattern {condition.pattern!r} matches no {condition.kind} "
                f"({shown or 'none seen'}).{hint}"
            )
        return lines

    def matrix(self, watched: list[Watched], rows: Mapping[tuple[str, str], Mapping[str, float]]) -> np.ndarray:
        """``rows`` (``(kind, name)`` -> column -> value) as the matrix :meth:`evaluate` takes;
        NaN where a value is missing."""
        return _as_matrix([(item.kind, item.name) for item in watched], rows, self.columns)

    def evaluate(self, step: int, watched: list[Watched], values: np.ndarray | Mapping) -> list[Trip]:
        """The trips of this step: each condition trips once per tensor, at the first step it
        holds there. ``values``: a row per tensor of ``watched`` and a column per
        :attr:`columns`, or a mapping of rows as :meth:`matrix` takes."""
        matrix = self.matrix(watched, values) if isinstance(values, Mapping) else values
        plan = self._rows(watched)
        if self._ratios:
            self._judge_starts(watched, matrix)
        trips = []
        for condition, rows in zip(self.conditions, plan, strict=True):
            if len(rows):
                trips += self._check(condition, watched, matrix, rows, step)
        self._first = False
        return trips

    def _rows(self, watched: list[Watched]) -> list[np.ndarray]:
        """Per condition, the rows of ``watched`` it applies to; worked out again only when the
        tensors change (the backend hands the same :class:`Watched` objects every step)."""
        known, plan = self._plan
        if len(known) != len(watched) or any(a is not b for a, b in zip(known, watched, strict=True)):
            plan = [np.array([i for i, item in enumerate(watched) if condition.matches(item)
                              and (condition, item.kind, item.name) not in self._tripped], dtype=np.intp)
                    for condition in self.conditions]  # fmt: skip
            self._plan = (list(watched), plan)
            self._weights = sum(1 for w in watched if w.kind == "weight")
            self._own = {}
        return plan

    def _judge_starts(self, watched: list[Watched], matrix: np.ndarray) -> None:
        """Note the weights that were all zeros at their first step with a copy (skipped by the
        ratio conditions: see the module's note)."""
        zeros = self._column.get("prev_zero_share")
        if zeros is None or len(self._judged) >= self._weights:
            return
        for i, item in enumerate(watched):
            if item.kind == "weight" and item.name not in self._judged and matrix[i, zeros] == matrix[i, zeros]:
                self._judged.add(item.name)
                if matrix[i, zeros] >= 1.0:
                    self._started_at_zero.add(item.name)

    def _column_of(self, matrix: np.ndarray, name: str) -> np.ndarray:
        index = self._column.get(name)
        return matrix[:, index] if index is not None else np.full(len(matrix), np.nan)

    def _check(self, condition: Condition, watched: list[Watched], matrix: np.ndarray, rows: np.ndarray,
               step: int) -> list[Trip]:  # fmt: skip
        """The trips of ``condition`` on ``rows`` of ``matrix``. Each test is (statistic shown,
        parameter, the statistic's column, threshold); a row trips where any test holds, and the
        trip names the tests that did (as MindInsight's conditions)."""
        name = condition.name
        part = matrix[rows]

        def column(stat: str) -> np.ndarray:
            return self._column_of(part, stat)

        tests: list[tuple[str, str, np.ndarray, float]] = []
        if name in ("too_large", "too_small", "vanishing"):
            tests = [(key.rsplit("_", 1)[0], key, column(key.rsplit("_", 1)[0]), t) for key, t in condition.params]
        elif name in ("overflow", "not_finite"):
            tests = [("nonfinite", "nonfinite_gt", column("nonfinite"), 0.0)]
        elif name == "exploding":
            tests = [("l2", "l2_gt", column("l2"), condition.get("l2_gt")),
                     ("nonfinite", "nonfinite_gt", column("nonfinite"), 0.0)]  # fmt: skip
        elif name in ("all_zero", "dead"):
            tests = [("zero_percentage", "zero_percentage_ge", column("zero_share") * 100,
                      condition.get("zero_percentage_ge"))]  # fmt: skip
        elif name == "initialization":
            if not self._first:
                return []
            for key, threshold in condition.params:
                stat = "zero_percentage" if key == "zero_percentage_ge" else key.rsplit("_", 1)[0]
                values = column("zero_share") * 100 if stat == "zero_percentage" else column(stat)
                tests.append((stat, key, values, threshold))
        elif name == "range":
            spread = column("max") - column("min")
            tests = [("max_min", key, spread, condition.get(key))
                     for key in ("max_min_lt", "max_min_gt") if condition.get(key) is not None]  # fmt: skip
            if _has_bounds(condition):
                low, high = _bounds(condition)
                share = column(f"range_share@{low!r},{high!r}") * 100
                tests += [("range_percentage", key, share, condition.get(key))
                          for key in ("range_percentage_lt", "range_percentage_gt")
                          if condition.get(key) is not None]  # fmt: skip
        elif name in ("change_too_large", "change_too_small"):
            before, update = column("prev_abs_mean"), column("update_abs_mean")
            # all zeros before, or at the start, or no optimizer's: no relative change (see the
            # module's note); NaN compares false
            own = self._ratio_rows(condition, watched, rows)
            defined = ~(column("prev_zero_share") >= 1.0) & (before > 0) & own
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(defined, (update - condition.get("epsilon")) / before, np.nan)
            key = "abs_mean_update_ratio_gt" if name == "change_too_large" else "abs_mean_update_ratio_lt"
            tests = [("abs_mean_update_ratio", key, ratio, condition.get(key))]
        elif name == "not_changed":
            return self._not_changed(condition, watched, part, rows, step)
        elif name == "not_decreasing":
            return [trip for i in rows if (trip := self._not_decreasing(condition, watched[i], matrix[i], step))]
        held = [_holds(key, values, threshold) for _, key, values, threshold in tests]
        trips = []
        for j in np.flatnonzero(np.logical_or.reduce(held)) if held else ():
            values = {stat: float(v[j]) for (stat, _, v, _), h in zip(tests, held, strict=True) if h[j]}
            thresholds = {key: t for (_, key, _, t), h in zip(tests, held, strict=True) if h[j]}
            trips.append(self._trip(condition, watched[rows[j]], step, values, thresholds))
        return trips

    def _ratio_rows(self, condition: Condition, watched: list[Watched], rows: np.ndarray) -> np.ndarray:
        """Which of ``rows`` an update-ratio condition judges (see the module's note): worked out
        again only when the tensors, or the weights known to start at zeros, change."""
        known = self._own.get(condition)
        if known is not None and known[0] is rows and known[1] == len(self._started_at_zero):
            return known[2]
        own = np.array([watched[i].trained and watched[i].name not in self._started_at_zero
                        and (len(watched[i].shape) >= 2 or not condition.recommended) for i in rows], bool)  # fmt: skip
        self._own[condition] = (rows, len(self._started_at_zero), own)
        return own

    def _not_changed(self, condition: Condition, watched: list[Watched], part: np.ndarray, rows: np.ndarray,
                     step: int) -> list[Trip]:  # fmt: skip
        before, update = self._column_of(part, "prev_abs_mean"), self._column_of(part, "update_abs_mean")
        atol, rtol = condition.get("atol"), condition.get("rtol")
        held = update <= atol + rtol * before  # MindInsight's inequality; NaN (no copy) compares false
        return [self._trip(condition, watched[rows[j]], step,
                           {"update_abs_mean": float(update[j]), "prev_abs_mean": float(before[j])},
                           {"atol": atol, "rtol": rtol}) for j in np.flatnonzero(held)]  # fmt: skip

    def _not_decreasing(self, condition: Condition, item: Watched, row: np.ndarray, step: int) -> Trip | None:
        loss = float(row[self._column["mean"]])
        best = self._best.get(condition)
        if best is None or (loss == loss and loss < best[0]):
            self._best[condition] = (loss, step)
            return None
        waited = step - best[1]
        if waited < condition.get("steps"):
            return None
        values = {"steps_since_best": float(waited), "best": best[0]}
        return self._trip(condition, item, step, values, {"steps": condition.get("steps")})

    def _trip(self, condition: Condition, item: Watched, step: int, values: dict, thresholds: dict) -> Trip:
        """The trip, and the condition no longer tested on ``item`` (once per tensor)."""
        self._tripped.add((condition, item.kind, item.name))
        self._plan = ([], [])
        return Trip(condition.token, item.name, item.kind, step, values, thresholds,
                    _message(condition, item, step, values, thresholds))  # fmt: skip


def _as_matrix(keys: list[tuple[str, str]], rows: Mapping, columns: tuple[str, ...]) -> np.ndarray:
    """A row per ``(kind, name)`` of ``keys``, a column per name of ``columns``, from ``rows``
    (``(kind, name)`` -> column -> value); NaN where a value is missing."""
    out = np.full((len(keys), len(columns)), np.nan)
    for i, key in enumerate(keys):
        row = rows.get(key)
        if row is not None:
            out[i] = [row.get(column, math.nan) for column in columns]
    return out


def _holds(key: str, values: np.ndarray, threshold: float) -> np.ndarray:
    """Where ``values`` pass ``threshold`` the way ``key`` ends (``_gt``, ``_lt``, ``_ge``); NaN never."""
    op = key.rsplit("_", 1)[1]
    if op == "gt":
        return values > threshold
    if op == "lt":
        return values < threshold
    return values >= threshold


def _message(condition: Condition, item: Watched, step: int, values: dict, thresholds: dict) -> str:
    what = "loss" if item.kind == "loss" else f"{condition.kind} {item.name}"
    name = condition.name
    if name in ("overflow", "not_finite") or ("nonfinite" in values and len(values) == 1):
        detail = f"{_fmt(values['nonfinite'])} NaN/Inf values"
    elif name == "not_changed":
        detail = (f"unchanged (mean |after - before| {_fmt(values['update_abs_mean'])} <= atol "
                  f"{_fmt(thresholds['atol'])} + rtol {_fmt(thresholds['rtol'])} * mean |before| "
                  f"{_fmt(values['prev_abs_mean'])})")  # fmt: skip
        if not item.trained:
            return (f"{what}: {detail} at step {step}; no optimizer trains it: frozen (requires_grad=False), "
                    "or a statistic the forward pass updates only in training mode (net.set_train())")  # fmt: skip
    elif name == "not_decreasing":
        detail = (f"not below its best {_fmt(values['best'])} for {_fmt(values['steps_since_best'])} steps "
                  f"(steps={_fmt(thresholds['steps'])})")  # fmt: skip
    else:
        parts = []
        for key, threshold in thresholds.items():
            stat = key.rsplit("_", 1)[0]
            if stat in values:
                parts.append(f"{stat} {_fmt(values[stat])} {_WORDS[key.rsplit('_', 1)[1]]} {_number(threshold)}")
        detail = ", ".join(parts)
    return f"{what}: {detail} at step {step}"


@dataclass
class WatchHistory:
    """What a run recorded: the watched tensors, the statistics per recorded step, the trips."""

    watched: list[Watched] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)
    trips: list[Trip] = field(default_factory=list)
    stopped: bool = False
    every: int = 1
    budget: int = BUDGET
    notes: list[str] = field(default_factory=list)  # what was not watched, and why

    def __post_init__(self) -> None:
        self._index: dict[tuple[str, str], int] = {(w.kind, w.name): i for i, w in enumerate(self.watched)}
        self._data = np.full((8, max(len(self.watched), 1), len(STATS)), np.nan)
        self._steps = np.zeros(8, dtype=np.int64)
        self._count = 0
        self._stride = 1  # record one watched step in this many (doubles at each thinning)
        self._seen = 0
        self._cached_rows: tuple[list[tuple[str, str]], np.ndarray] | None = None

    # -- recording
    def add(self, item: Watched) -> None:
        """Watch one more tensor (its earlier rows stay NaN)."""
        if (item.kind, item.name) in self._index:
            return
        self._index[(item.kind, item.name)] = len(self.watched)
        self.watched.append(item)
        self._cached_rows = None
        if len(self.watched) > self._data.shape[1]:
            grown = np.full((self._data.shape[0], max(2 * self._data.shape[1], len(self.watched)), len(STATS)), np.nan)
            grown[:, : self._data.shape[1]] = self._data
            self._data = grown

    def record(self, step: int, values: np.ndarray | Mapping, watched: list[Watched] | None = None) -> None:
        """Keep the statistics of one watched step (thinned past the budget): ``values`` a
        matrix with a row per tensor of ``watched`` (its first columns :data:`STATS`), or a
        mapping ``(kind, name)`` -> statistic -> value. A second call for the same step (its
        loss) adds to that step's row."""
        if isinstance(values, Mapping):
            keys = list(values)
            matrix = _as_matrix(keys, values, STATS)
        else:
            keys, matrix = [(w.kind, w.name) for w in watched or ()], values[:, : len(STATS)]
        index = self._rows_of(keys)
        if self._count and self._steps[self._count - 1] == step:  # more of the last step (its loss)
            self._data[self._count - 1, index[index >= 0]] = matrix[index >= 0]
            return
        self._seen += 1
        if (self._seen - 1) % self._stride:
            return
        if self._count == self._data.shape[0]:
            grown = np.full((2 * self._count, self._data.shape[1], len(STATS)), np.nan)
            grown[: self._count] = self._data
            self._data = grown
            self._steps = np.concatenate([self._steps, np.zeros(self._count, dtype=np.int64)])
        self._steps[self._count] = step
        line = self._data[self._count]
        line[:] = np.nan
        line[index[index >= 0]] = matrix[index >= 0]
        self._count += 1
        if self.nbytes > self.budget:
            self._thin()

    def _rows_of(self, keys: list[tuple[str, str]]) -> np.ndarray:
        """The index of each ``(kind, name)`` in the history, -1 for a tensor not added; kept
        while the keys of the steps stay the same."""
        cached = self._cached_rows
        if cached is None or cached[0] != keys:
            cached = self._cached_rows = (keys, np.array([self._index.get(key, -1) for key in keys], dtype=np.intp))
        return cached[1]

    def _thin(self) -> None:
        keep = np.arange(0, self._count, 2)
        self._data[: len(keep)] = self._data[keep]
        self._steps[: len(keep)] = self._steps[keep]
        self._count = len(keep)
        self._stride *= 2
        if self._data.nbytes > 2 * self.budget:  # the buffer's doubling left room never to be used
            self._data = self._data[: max(self._count * 2, 8)].copy()
            self._steps = self._steps[: self._data.shape[0]].copy()

    @property
    def nbytes(self) -> int:
        """Bytes of statistics kept (the rows recorded, not the spare room)."""
        return self._count * len(self.watched) * len(STATS) * 8

    # -- reading
    @property
    def steps(self) -> np.ndarray:
        return self._steps[: self._count].copy()

    @property
    def first_trip(self) -> Trip | None:
        return self.trips[0] if self.trips else None

    def stats(self, name: str, kind: str | None = None) -> np.ndarray:
        """Shape ``(len(steps), len(STATS))``: one row per recorded step. A weight and its
        gradient share a name: ``kind`` (``"weight"``, ``"grad"``, ``"act"``, ``"loss"``) picks
        one; without it the weight comes first, then the gradient, the activation, the loss."""
        for each in (kind,) if kind else ("weight", "grad", "act", "loss"):
            index = self._index.get((each, name))
            if index is not None:
                return self._data[: self._count, index].copy()
        names = [n for _, n in self._index]
        raise InvalidValueError(
            f"{echo(name)} was not watched{f' as {kind}' if kind else ''}.{did_you_mean(name, names)}"
        )

    def rows(self) -> list[dict]:
        """One dict per (step, name): step, name, kind and every statistic."""
        out = []
        for row, step in enumerate(self._steps[: self._count]):
            for index, item in enumerate(self.watched):
                values = self._data[row, index]
                if np.isnan(values).all():
                    continue
                out.append({"step": int(step), "name": item.name, "kind": item.kind,
                            **{s: float(v) for s, v in zip(STATS, values, strict=True)}})  # fmt: skip
        return out

    def table(self):
        """The rows as a ``pandas.DataFrame`` when pandas imports, else the list of rows."""
        try:
            import pandas
        except ImportError:
            return self.rows()
        return pandas.DataFrame(self.rows(), columns=["step", "name", "kind", *STATS])

    # -- files
    def save(self, directory: str | os.PathLike) -> Path:
        """Write ``watch.json`` and ``stats.npy`` into ``directory`` (new, or empty)."""
        root = Path(directory).expanduser().absolute()
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            raise InvalidValueError(
                f"{root} exists and is not an empty directory; give a new one to save the watch to."
            )
        try:
            root.mkdir(parents=True, exist_ok=True)
            np.save(root / "stats.npy", self._data[: self._count, : len(self.watched)], allow_pickle=False)
            meta = {
                "format": 1,
                "stats": list(STATS),
                "steps": [int(s) for s in self._steps[: self._count]],
                "watched": [asdict(w) for w in self.watched],
                "conditions": list(self.conditions),
                "trips": [asdict(t) for t in self.trips],
                "stopped": self.stopped,
                "every": self.every,
                "notes": list(self.notes),
            }
            (root / "watch.json").write_text(json.dumps(meta, allow_nan=True), encoding="utf-8")
        except OSError as error:
            raise InvalidValueError(f"cannot save the watch to {root} ({error.strerror or error}).") from None
        return root

    @classmethod
    def load(cls, directory: str | os.PathLike) -> WatchHistory:
        """Read what :meth:`save` wrote (through msdebug's opener: a bounded regular file)."""
        root = Path(directory).expanduser()
        text = read_regular(root / "watch.json", 64 * MiB, DumpFormatError, what="watch file")
        try:
            meta = json.loads(text.decode("utf-8"))
            if meta.get("stats") != list(STATS):
                raise ValueError("other statistics")
            watched = [Watched(**{**w, "shape": tuple(w["shape"])}) for w in meta["watched"]]
            trips = [Trip(**t) for t in meta["trips"]]
            steps = np.asarray(meta["steps"], dtype=np.int64)
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as error:
            raise DumpFormatError(f"{root / 'watch.json'} is no watch msdebug saved ({error}).") from None
        raw = read_regular(root / "stats.npy", 1024 * MiB, DumpFormatError, what="statistics file")
        try:
            data = np.load(io.BytesIO(raw), allow_pickle=False)
        except ValueError as error:
            raise DumpFormatError(f"{root / 'stats.npy'} is no statistics file ({error}).") from None
        if data.shape != (len(steps), len(watched), len(STATS)):
            raise DumpFormatError(
                f"{root / 'stats.npy'} holds {data.shape}, not {len(steps)} steps x {len(watched)} tensors x {len(STATS)}."
            )
        history = cls(watched, list(meta.get("conditions", [])), trips, bool(meta.get("stopped")),
                      int(meta.get("every", 1)), notes=[str(n) for n in meta.get("notes", [])])  # fmt: skip
        history._data = np.array(data, dtype=np.float64) if watched else np.full((len(steps), 1, len(STATS)), np.nan)
        history._steps = steps.copy()
        history._count = len(steps)
        return history
