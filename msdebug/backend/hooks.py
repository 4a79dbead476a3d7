"""PyNative hooks: see every primitive call, Tensor operator and Cell call of a block.

MindSpore 2.10 has no module-wide forward hook, and Cell hooks alone blame the wrong cell
(a NaN made by ``ops.sqrt`` inside a parent's ``construct`` is first seen at the next
child). So three things are wrapped, at class level, and put back exactly:

* ``__call__`` of every generated primitive class that defines its own
  (``mindspore.ops.auto_generate.gen_ops_prim``, which run ``pyboost_<op>``) and
  ``Primitive.__call__`` for the legacy ones;
* the operator methods of ``mindspore.common.tensor.Tensor`` (``x * y`` runs a C method of
  ``TensorPy`` that no primitive wrapper sees);
* ``Cell.__call__``, for the scope of each op.

Graphs (GRAPH mode, ``@jit``) run none of these: their ops need a data dump.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any, Protocol

from .. import interrupts

__all__ = [
    "HookObserver",
    "OpHooks",
    "OpNames",
    "Patches",
    "TENSOR_METHODS",
    "cell_parameters",
    "cell_path_name",
    "is_tensor",
    "optimizer_parameters",
    "tensors_in",
    "to_numpy",
    "user_frame",
]

# Tensor methods that compute a new value: operators first, then the common math methods.
TENSOR_METHODS = {
    "__add__": "Add", "__radd__": "Add", "__iadd__": "Add", "__sub__": "Sub", "__rsub__": "Sub",
    "__isub__": "Sub", "__mul__": "Mul", "__rmul__": "Mul", "__imul__": "Mul", "__truediv__": "Div",
    "__rtruediv__": "Div", "__itruediv__": "Div", "__floordiv__": "FloorDiv", "__rfloordiv__": "FloorDiv",
    "__mod__": "Mod", "__rmod__": "Mod", "__pow__": "Pow", "__rpow__": "Pow", "__matmul__": "MatMul",
    "__rmatmul__": "MatMul", "__neg__": "Neg", "__abs__": "Abs", "sum": "ReduceSum", "mean": "ReduceMean",
    "prod": "ReduceProd", "sqrt": "Sqrt", "rsqrt": "Rsqrt", "log": "Log", "log1p": "Log1p", "exp": "Exp",
    "pow": "Pow", "div": "Div", "add": "Add", "sub": "Sub", "mul": "Mul", "matmul": "MatMul",
    "reciprocal": "Reciprocal", "square": "Square", "abs": "Abs", "tanh": "Tanh", "sigmoid": "Sigmoid",
    "norm": "Norm", "softmax": "Softmax", "clip": "Clamp", "astype": "Cast",
}  # fmt: skip


class HookObserver(Protocol):
    """What :class:`OpHooks` reports to."""

    def enter_cell(self, cell: Any, args: tuple) -> None: ...

    def exit_cell(self, cell: Any) -> None: ...

    def op(self, op_type: str, args: tuple, output: Any) -> None: ...


def is_tensor(value: Any) -> bool:
    from mindspore.common.tensor import Tensor

    return isinstance(value, Tensor)


def tensors_in(value: Any, depth: int = 0) -> list:
    """The tensors of an op's arguments or result, in order: nested tuples and lists flattened
    (three levels deep), anything else left out."""
    if is_tensor(value):
        return [value]
    if isinstance(value, (tuple, list)) and depth < 3:
        return [tensor for item in value for tensor in tensors_in(item, depth + 1)]
    return []


def to_numpy(tensor: Any):
    """The tensor's values as a numpy array (waits for the op that makes it)."""
    return tensor.asnumpy()


def optimizer_parameters(cell: Any) -> list[str] | None:
    """The names of the parameters an optimizer Cell updates (its inputs are their gradients,
    in this order), or None when ``cell`` is no optimizer."""
    from mindspore import nn

    if not isinstance(cell, nn.Optimizer):
        return None
    return [getattr(p, "name", "") for p in getattr(cell, "_parameters", None) or cell.parameters]


def cell_parameters(cell: Any) -> list[tuple[str, Any]]:
    """``(name, Parameter)`` of every parameter of ``cell`` and its children, once each."""
    return list(cell.parameters_and_names())


def cell_path_name(parent: Any, child: Any) -> str:
    """``fc1-Dense``: the attribute under which ``parent`` holds ``child``, and its class, as
    MindSpore spells scopes. A child of a child that the parent calls itself (``self.blocks[2](x)``
    on a ``CellList``) is ``blocks-CellList/2-Block``, as in a graph; ``Dense`` when the parent
    holds it nowhere."""
    children = getattr(parent, "_cells", {})
    for name, cell in children.items():
        if cell is child:
            return f"{name}-{type(child).__name__}"
    for name, cell in children.items():
        for inner, grandchild in getattr(cell, "_cells", {}).items():
            if grandchild is child:
                return f"{name}-{type(cell).__name__}/{inner}-{type(child).__name__}"
    return type(child).__name__


class OpNames:
    """Names of the ops the hooks report, as MindSpore spells its kernels: the Cell path from
    the outermost Cell called (``Default``), then the type numbered per scope and type
    (``Default/fc1-Dense/MatMul-op0``, ``Default/fc2-Dense/MatMul-op0``). Observers feed it
    their ``enter_cell``/``exit_cell`` and ask :meth:`name` once per op."""

    def __init__(self) -> None:
        self.stack: list[tuple[Any, str]] = []
        self._counts: dict[tuple[int, str], int] = {}
        self._last: list = []  # the last op's outputs, held: an id is reused once its object is freed

    def enter(self, cell: Any) -> str:
        label = cell_path_name(self.stack[-1][0], cell) if self.stack else "Default"
        self.stack.append((cell, label))
        return label

    def exit(self, cell: Any) -> None:
        if self.stack and self.stack[-1][0] is cell:
            self.stack.pop()

    @property
    def scope(self) -> str:
        return "/".join(label for _, label in self.stack) or "Default"

    def repeated(self, outputs: list) -> bool:
        """Whether these outputs are the last op's, seen again by an outer wrapper
        (``Tensor.__sub__`` around ``SubExt``): that op is not a new one.

        Decided by the objects themselves, which are held until the next op: comparing ids
        alone took a new op for the last one whenever the last one's output had been thrown
        away (``ops.exp(x).asnumpy()``), since CPython gives a freed object's id to the next."""
        last, self._last = self._last, list(outputs)
        return bool(outputs) and len(outputs) == len(last) and all(a is b for a, b in zip(outputs, last, strict=True))

    def forget(self) -> None:
        """Let go of the last op's outputs (at the end of a watched cell)."""
        self._last = []

    def name(self, op_type: str) -> str:
        """The next name for an op of ``op_type`` in the current scope."""
        key = (id(self.stack[-1][0]) if self.stack else 0, op_type)
        number = self._counts.get(key, 0)
        self._counts[key] = number + 1
        return f"{self.scope}/{op_type}-op{number}"


class Patches:
    """Attributes of classes (or modules) replaced by wrappers, and put back exactly: an
    attribute the class only inherited is deleted again. Shared by the op hooks and the rank
    flight recorder (:mod:`msdebug.backend.ranks`)."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any, bool]] = []

    def __bool__(self) -> bool:
        return bool(self._saved)

    def apply(self, plan: list[tuple[Any, str, Callable]]) -> None:
        """Set each ``(class, name, wrapper)``; all or nothing: on an error, what was set is put back."""
        try:
            for cls, name, wrapper in plan:
                self._saved.append((cls, name, cls.__dict__.get(name), name in cls.__dict__))
                setattr(cls, name, wrapper)
        except BaseException:
            self.restore()
            raise

    def restore(self) -> None:
        """Put every replaced attribute back, the last one first."""
        while self._saved:
            cls, name, original, had = self._saved.pop()
            if had:
                setattr(cls, name, original)
            else:
                try:
                    delattr(cls, name)
                except AttributeError:
                    pass


_current: OpHooks | None = None
"""The hooks installed now. Every wrapper reports here, also one a person took while an earlier
cell was watched (``from mindspore.mint import div`` inside ``%%msnan``): it then reports to
the watch that runs now, and calls straight through when none does."""


class OpHooks:
    """Install with :meth:`install`, undo with :meth:`remove` (also after an error: use it in
    ``finally``). Reports go to one observer; the wrappers do nothing when it is busy (its own
    checks run Tensor methods) or when no hooks are installed.

    Both are all-or-nothing under any number of Ctrl-C: they run
    :func:`~msdebug.interrupts.protected`, and the installed hooks hold SIGINT
    (:func:`~msdebug.interrupts.hold`) until removed, so an interrupt on the first line of
    :meth:`remove` waits for it too.
    """

    def __init__(self, observer: HookObserver) -> None:
        self.observer = observer
        self.busy = False
        self.errors: list[str] = []  # checks that failed (the op itself went on)
        self._patches = Patches()

    @property
    def installed(self) -> bool:
        return bool(self._patches)

    @interrupts.protected
    def install(self) -> OpHooks:
        """Wrap the primitives, Tensor methods and ``Cell.__call__``."""
        global _current
        if self._patches or _current is not None:
            return self
        plan = self._plan()  # every wrapper made before the first class is touched
        interrupts.hold()
        try:
            self._patches.apply(plan)
        except BaseException:
            interrupts.let_go()
            raise
        _current = self
        return self

    def _plan(self) -> list[tuple[Any, str, Callable]]:
        from mindspore import nn
        from mindspore.common.tensor import Tensor
        from mindspore.ops.auto_generate import gen_ops_prim
        from mindspore.ops.primitive import Primitive

        plan: list[tuple[Any, str, Callable]] = []
        for value in list(vars(gen_ops_prim).values()):
            if isinstance(value, type) and issubclass(value, Primitive) and "__call__" in value.__dict__:
                plan.append((value, "__call__", _primitive(value.__dict__["__call__"])))
        plan.append((Primitive, "__call__", _primitive(Primitive.__call__)))
        plan.extend(_inner_primitives())
        for name, op_type in TENSOR_METHODS.items():
            original = getattr(Tensor, name, None)
            if original is not None:
                plan.append((Tensor, name, _method(original, op_type)))
        plan.extend(_overloads())
        plan.append((nn.Cell, "__call__", _cell(nn.Cell.__call__)))
        return plan

    @interrupts.protected
    def remove(self) -> None:
        """Put every wrapped attribute back as it was (deleting those that were inherited)."""
        global _current
        if _current is self:
            _current = None  # from here on every wrapper calls straight through
        if not self._patches:
            return
        try:
            self._patches.restore()
        finally:
            interrupts.let_go()

    def _report(self, op_type: str, args: tuple, output: Any) -> None:
        if not tensors_in(output):
            return  # typeof, sequence_len, shape: no value to check or compare (its inputs are, where used)
        self.busy = True
        try:
            self.observer.op(op_type, args, output)
        except Exception as error:  # noqa: BLE001 - a failing check must never fail the person's op
            self.errors.append(f"{op_type}: {type(error).__name__}: {error}")
        finally:
            self.busy = False


def _inner_primitives() -> list[tuple[Any, str, Callable]]:
    """``ops.softmax``, ``ops.log_softmax``, ``ops.cat`` and their kind: functions that call an
    instance of ``pyboost_inner_prim._Pyboost<Op>Prim``, a Python class over the C++ primitive,
    whose ``__call__`` no other wrapper sees. Reported as ``<Op>`` (``Softmax``)."""
    import importlib

    try:
        inner = importlib.import_module("mindspore.ops.auto_generate.pyboost_inner_prim")
    except ImportError:  # an older MindSpore: these functions go through primitives
        return []
    plan = []
    for name, value in list(vars(inner).items()):
        if (
            isinstance(value, type)
            and name.startswith("_Pyboost")
            and name.endswith("Prim")
            and "__call__" in vars(value)
        ):
            plan.append((value, "__call__", _primitive(vars(value)["__call__"], name[len("_Pyboost") : -len("Prim")])))
    return plan


def _overloads() -> list[tuple[Any, str, Callable]]:
    """``mint.div`` and its kind: Python functions of ``ops.functional_overload`` that call
    C++ directly, re-exported by ``mint``, ``ops`` and their functional modules."""
    import importlib

    try:
        overload = importlib.import_module("mindspore.ops.functional_overload")
    except ImportError:  # an older MindSpore: its functional ops go through primitives
        return []
    functions = {
        id(value): (name, value)
        for name, value in vars(overload).items()
        if not name.startswith("_") and getattr(value, "__module__", "") == overload.__name__ and callable(value)
    }
    wrappers: dict[int, Callable] = {}
    plan = []
    for module_name in (overload.__name__, "mindspore.mint", "mindspore.mint.nn.functional", "mindspore.ops",
                        "mindspore.ops.functional"):  # fmt: skip
        module = sys.modules.get(module_name)
        if module is None:
            continue
        for attr, value in list(vars(module).items()):
            if id(value) in functions and functions[id(value)][1] is value:
                name = functions[id(value)][0]
                if id(value) not in wrappers:
                    wrappers[id(value)] = _function(value, "".join(p.title() for p in name.split("_")))
                plan.append((module, attr, wrappers[id(value)]))
    return plan


def _function(original: Callable, op_type: str) -> Callable:
    @functools.wraps(original)
    def function(*args, **kwargs):
        output = original(*args, **kwargs)
        hooks = _current
        if hooks is not None and not hooks.busy:
            hooks._report(op_type, args, output)
        return output

    return function


def _primitive(original: Callable, op_type: str = "") -> Callable:
    """A primitive's ``__call__``, reported as ``op_type`` or, without one, as its class's name."""

    @functools.wraps(original)
    def __call__(prim, *args, **kwargs):
        output = original(prim, *args, **kwargs)
        hooks = _current
        if hooks is not None and not hooks.busy:
            hooks._report(op_type or type(prim).__name__, args, output)
        return output

    return __call__


def _method(original: Callable, op_type: str) -> Callable:
    @functools.wraps(original)
    def method(tensor, *args, **kwargs):
        output = original(tensor, *args, **kwargs)
        hooks = _current
        if hooks is not None and not hooks.busy:
            hooks._report(op_type, (tensor, *args), output)
        return output

    return method


def _cell(original: Callable) -> Callable:
    @functools.wraps(original)
    def __call__(cell, *args, **kwargs):
        hooks = _current
        if hooks is None or hooks.busy:
            return original(cell, *args, **kwargs)
        hooks.busy = True
        try:
            hooks.observer.enter_cell(cell, args)
        except Exception as error:  # noqa: BLE001 - a failing check must never fail the person's cell
            hooks.errors.append(f"{type(cell).__name__}: {type(error).__name__}: {error}")
        finally:
            hooks.busy = False
        try:
            return original(cell, *args, **kwargs)
        finally:
            hooks.observer.exit_cell(cell)

    return __call__


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    import mindspore

    own = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return (os.path.dirname(os.path.abspath(mindspore.__file__)) + os.sep, own + os.sep)


def user_frame():
    """The innermost frame outside MindSpore and msdebug: the person's own line."""
    skip = _library_dirs()
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(skip) and not name.startswith("<frozen"):
            return frame
        frame = frame.f_back
    return None
