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

__all__ = ["FloatScope", "ParameterSnapshot", "networks_in", "set_seed"]

_DTYPES = ("float16", "bfloat16", "float32")


def networks_in(namespace: Mapping[str, Any]) -> list[Any]:
    """The Cells a namespace holds (``Model`` objects give their networks and optimizer), outermost
    first, each once: a Cell that is a child of another one listed is not listed again."""
    get_backend()
    from mindspore import nn

    try:
        from mindspore.train import Model
    except ImportError:  # pragma: no cover - every MindSpore msdebug supports has it
        Model = ()  # noqa: N806

    found: list[Any] = []
    for name, value in list(namespace.items()):
        if name.startswith("_"):
            continue
        if isinstance(value, nn.Cell):
            found.append(value)
        elif Model and isinstance(value, Model):
            for attribute in ("_train_network", "_network", "_optimizer", "_eval_network"):
                cell = getattr(value, attribute, None)
                if isinstance(cell, nn.Cell):
                    found.append(cell)
    inner = {id(child) for cell in found for _, child in cell.cells_and_names() if child is not cell}
    unique: dict[int, Any] = {}
    for cell in found:
        if id(cell) not in inner:
            unique.setdefault(id(cell), cell)
    return list(unique.values())


def set_seed(seed: int) -> None:
    """MindSpore's global seed (``--seed``: the same random draws in both runs)."""
    get_backend()
    import mindspore

    mindspore.set_seed(seed)


class ParameterSnapshot:
    """The values of the Parameters of ``cells`` now; :meth:`restore` puts them back in place."""

    def __init__(self, cells: Iterable[Any]) -> None:
        seen: dict[int, tuple[Any, Any]] = {}
        for cell in cells:
            for _, parameter in cell.parameters_and_names():
                if id(parameter) not in seen:
                    seen[id(parameter)] = (parameter, parameter.asnumpy().copy())
        self.saved = list(seen.values())

    @property
    def count(self) -> int:
        return len(self.saved)

    @property
    def nbytes(self) -> int:
        return sum(values.nbytes for _, values in self.saved)

    def restore(self) -> None:
        # In place: set_data() would give the Parameter new storage, and an optimizer that
        # already ran keeps updating the old one.
        from mindspore import Tensor, ops

        for parameter, values in self.saved:
            ops.assign(parameter, Tensor(values.copy()))


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
