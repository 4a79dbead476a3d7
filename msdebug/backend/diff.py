"""What ``%%msdiff`` changes in MindSpore between two runs of a cell, and puts back exactly.

* :class:`ParameterSnapshot`: the values of every Parameter of the Cells a namespace holds
  (networks, optimizers, ``Model`` objects), so that the second run starts where the first
  did: a training step updates them.
* :class:`FloatScope`: ``Cell.to_float`` on those networks for a block, undone exactly
  afterwards: MindSpore's flags, its mixed-precision type (Python and C++), and the init args
  that key its graph cache (so the float32 graph compiled before is the one run after).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .process import get_backend

__all__ = ["FloatScope", "ParameterSnapshot", "named_networks", "networks_in", "restorable", "set_seed"]

_DTYPES = ("float16", "bfloat16", "float32")


def networks_in(namespace: Mapping[str, Any]) -> list[Any]:
    """The Cells a namespace holds (``Model`` objects give their networks and optimizer), outermost
    first, each once: a Cell that is a child of another one listed is not listed again."""
    return [cell for _, cell in named_networks(namespace)]


def named_networks(namespace: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(name, Cell)`` of :func:`networks_in`: the top-level name each Cell was found under."""
    get_backend()
    from mindspore import nn

    try:
        from mindspore.train import Model
    except ImportError:  # pragma: no cover - every MindSpore msdebug supports has it
        Model = ()  # noqa: N806

    found: list[tuple[str, Any]] = []
    for name, value in list(namespace.items()):
        if name.startswith("_"):
            continue
        if isinstance(value, nn.Cell):
            found.append((name, value))
        elif Model and isinstance(value, Model):
            for attribute in ("_train_network", "_network", "_optimizer", "_eval_network"):
                cell = getattr(value, attribute, None)
                if isinstance(cell, nn.Cell):
                    found.append((name, cell))
    inner = {id(child) for _, cell in found for _, child in cell.cells_and_names() if child is not cell}
    unique: dict[int, tuple[str, Any]] = {}
    for name, cell in found:
        if id(cell) not in inner:
            unique.setdefault(id(cell), (name, cell))
    return list(unique.values())


def restorable(namespace: Mapping[str, Any], names: str) -> list[tuple[str, Any]]:
    """``--restore NAME[,NAME]``: what each name holds (a Cell, a ``Model``, a Parameter, or a
    list or tuple of Parameters), as ``(name, holder)``; dotted names reach attributes
    (``trainer.net``).

    Raises
    ------
    InvalidValueError
        For a name the namespace does not hold, or one that holds no Parameters.
    """
    from ..errors import InvalidValueError, did_you_mean

    get_backend()
    found = []
    for name in [part.strip() for part in names.split(",")]:
        head, *rest = name.split(".")
        if not name or not all(part.isidentifier() for part in (head, *rest)):
            raise InvalidValueError(f"--restore {names!r}: {name!r} is not a name; give names separated by commas.")
        if head not in namespace:
            holders = [n for n, _ in named_networks(namespace)]
            raise InvalidValueError(
                f"--restore: no {head!r} in the notebook; its networks: {', '.join(holders[:20]) or 'none'}."
                f"{did_you_mean(head, [n for n in namespace if not n.startswith('_')])}"
            )
        value = namespace[head]
        for attribute in rest:
            if not hasattr(value, attribute):
                raise InvalidValueError(f"--restore: {name}: {type(value).__name__} has no attribute {attribute!r}.")
            value = getattr(value, attribute)
        if not _parameters_of(value):
            raise InvalidValueError(
                f"--restore: {name} is a {type(value).__name__}, which holds no Parameter; give Cells, Models "
                "or Parameters."
            )
        found.append((name, value))
    return found


def _parameters_of(holder: Any) -> list[Any]:
    """The Parameters of a Cell, a ``Model``, a Parameter, or a list or tuple of those."""
    from mindspore import Parameter, nn

    if isinstance(holder, Parameter):
        return [holder]
    if isinstance(holder, nn.Cell):
        return [parameter for _, parameter in holder.parameters_and_names()]
    if isinstance(holder, (list, tuple)):
        return [parameter for item in holder for parameter in _parameters_of(item)]
    cells = [getattr(holder, a, None) for a in ("_train_network", "_network", "_optimizer", "_eval_network")]
    return [parameter for cell in cells if isinstance(cell, nn.Cell) for parameter in _parameters_of(cell)]


def set_seed(seed: int) -> None:
    """MindSpore's global seed (``--seed``: the same random draws in both runs)."""
    get_backend()
    import mindspore

    mindspore.set_seed(seed)


class ParameterSnapshot:
    """The values of the Parameters of ``holders`` now (``(name, Cell, Model or Parameters)``);
    :meth:`restore` puts them back in place. :attr:`summary` says what that covers."""

    def __init__(self, holders: Iterable[tuple[str, Any]]) -> None:
        import mindspore as ms

        seen: dict[int, tuple[Any, Any]] = {}
        self.names: list[str] = []
        for name, holder in holders:
            self.names.append(name)
            for parameter in _parameters_of(holder):
                if id(parameter) in seen:
                    continue
                if parameter.dtype == ms.bfloat16:  # kept as float32, which holds every bfloat16 exactly
                    values = parameter.astype(ms.float32).asnumpy().copy()
                else:
                    values = parameter.asnumpy().copy()
                seen[id(parameter)] = (parameter, values)
        self.saved = list(seen.values())

    @property
    def count(self) -> int:
        return len(self.saved)

    @property
    def nbytes(self) -> int:
        return sum(parameter.nbytes for parameter, _ in self.saved)

    @property
    def summary(self) -> str:
        """``restored 4 Parameters (0.1 MB) of net, opt``, or why nothing was."""
        if not self.saved:
            why = (
                f"{', '.join(self.names)} {'holds' if len(self.names) == 1 else 'hold'} none"
                if self.names
                else "no Cell or Model is bound to a top-level name of the notebook"
            )
            return (
                f"restored no Parameter: {why}, so the second run starts from what the first left; name what "
                "to put back with --restore NAME[,NAME]"
            )
        plural = "s" if self.count != 1 else ""
        return f"restored {self.count} Parameter{plural} ({self.nbytes / 1e6:.3g} MB) of {', '.join(self.names)}"

    def restore(self) -> None:
        # In place: set_data() would give the Parameter new storage, and an optimizer that
        # already ran keeps updating the old one.
        import mindspore as ms
        from mindspore import Tensor, ops

        with _no_grad():
            for parameter, values in self.saved:
                if parameter.dtype == ms.bfloat16:
                    # CPU has no bfloat16 Assign kernel; an in-place copy casts the float32 values back.
                    parameter.copy_(Tensor(values))
                else:
                    ops.assign(parameter, Tensor(values.copy()))


def _no_grad():
    """MindSpore's own context that turns PyNative's gradient recording off, and back to what it
    was. A training step interrupted half way (Ctrl-C) leaves the recording on, and an in-place
    copy into a Parameter that requires grad is then refused ("A leaf tensor that requires grad
    is being used in an inplace operator")."""
    try:
        from mindspore.graph.api import _no_grad as no_grad  # 2.10
    except ImportError:
        from mindspore.common.api import _no_grad as no_grad  # 2.7
    return no_grad()


class FloatScope:
    """``with FloatScope(cells, "float16"):`` the cells compute in that dtype (``Cell.to_float``);
    afterwards each cell's precision state is what it was.

    ``to_float`` sets, on every cell below, the graph flags ``fp16``/``fp32``/``bf16`` (also as
    attributes), the mixed-precision type (a Python attribute and MindSpore's C++ cell), and
    appends to the init args that key the compiled-graph cache: each is saved and put back.
    """

    _FLAGS = ("fp16", "fp32", "bf16")
    _MISSING = object()

    def __init__(self, cells: Iterable[Any], dtype: str) -> None:
        if dtype not in _DTYPES:
            from ..errors import InvalidValueError

            raise InvalidValueError(f"the dtype must be one of {', '.join(_DTYPES)}, got {dtype!r}.")
        self.roots = list(cells)
        self.dtype = dtype
        self._saved: list[tuple[Any, dict]] = []

    def __enter__(self) -> FloatScope:
        import mindspore as ms

        for root in self.roots:
            for _, cell in root.cells_and_names():
                state = vars(cell)
                graph_flags = state.get("_func_graph_flags", self._MISSING)
                self._saved.append((cell, {
                    "_func_graph_flags": dict(graph_flags) if isinstance(graph_flags, dict) else graph_flags,
                    **{name: state.get(name, self._MISSING) for name in (*self._FLAGS, "mixed_precision_type",
                                                                          "_cell_init_args")},
                }))  # fmt: skip
        try:
            for root in self.roots:
                root.to_float(getattr(ms, self.dtype))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        from mindspore._c_expression import Cell_, MixedPrecisionType

        while self._saved:
            cell, saved = self._saved.pop()
            state = vars(cell)
            for name, value in saved.items():
                if value is self._MISSING:
                    state.pop(name, None)
                else:
                    state[name] = value
            precision = saved["mixed_precision_type"]
            Cell_.set_mixed_precision_type(
                cell, MixedPrecisionType.NOTSET if precision in (None, self._MISSING) else precision
            )
