"""Generated MindSpore programs with one known fault, and the answers ``%%msnan`` and ``%%msdiff`` owe them.

A program is data: notebook cells of source (a setup cell, cells that define functions and
Cells, and the cell run under the magic) and the constants and weights a fault may change. A
fault changes one of them at a known op: a constant that makes a NaN or an Inf there from
finite inputs (for ``%%msnan``), or a constant or a weight changed a little (for ``%%msdiff
--against``). The answer follows from the program's structure, never from running msdebug:
:func:`trace` walks the program as Python runs it (loops unrolled, branches decided, calls
entered) and names each op as MindSpore names its kernels: the Cell path from the outermost
Cell called, then the type numbered per scope and type (``Default/leaf3-Block3/MatMulExt-op1``),
with the notebook cell and line that ran it.

Every value stays small: each statement's result is within [-4, 4] (squashed by tanh, sin,
cos, sigmoid or clip where it would not be), so no op but the fault's makes a value that is not
finite, and a changed constant moves its op's output far beyond the tolerance of ``%%msdiff``.

Three kinds of program:

* ``pynative``: elementwise, reduction, matmul and shape ops, results kept or thrown away,
  tensors reused, Parameters updated in place, nested Cells (children, Denses, CellLists,
  SequentialCells), functions and Cells from earlier cells, loops and branches;
* ``graph``: one network in GRAPH mode whose ``construct`` chains its statements (a graph keeps
  only what reaches its output, merges ops that compute the same thing, and names some ops in
  ways a program cannot predict: see :class:`_ChainBuilder`);
* ``jit``: PyNative statements around an ``@ms.jit`` function written under the same rules.

The op types are MindSpore 2.10's (``x + 1.0`` runs ``AddExt`` in PyNative and ``Add`` in a
graph; ``x * 2.0`` runs ``Mul`` in the ``Expand/_Muls`` scope of a graph).

:class:`ShellRunner` (an in-process IPython shell) and :class:`KernelRunner` (a fresh kernel,
for GRAPH and ``@jit``) run a program's cells with ``store_history``, so its lines are named
``cell [N]``; the ``check_*`` functions return the wrong answers as sentences (none: all right),
and :func:`run_programs` checks many (``tests/test_generated_programs.py``,
``benchmarks/soak_answers.py``).
"""

from __future__ import annotations

import ast
import inspect
import itertools
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

__all__ = [
    "CLEAN",
    "Event",
    "Fault",
    "KernelRunner",
    "Program",
    "ShellRunner",
    "Tally",
    "check_diff",
    "check_in_kernel",
    "check_nan",
    "check_pynative",
    "describe",
    "expected_culprit",
    "faults",
    "programs",
    "render",
    "run_programs",
    "trace",
]

LIMIT = 4.0  # every statement's value is within [-LIMIT, LIMIT]
SITE_BOUND = 8.0  # a site's value, clean or changed for %%msdiff: exp(1 + 1) at most
INTERMEDIATE = 1e3  # no value inside a statement grows beyond this
WEIGHT = 1.0  # every weight is within [-WEIGHT, WEIGHT], also after a fault scales it
WIDTH = 4  # every tensor is 2 x WIDTH, every weight WIDTH x WIDTH

# --------------------------------------------------------------------------- the ops


@dataclass(frozen=True)
class Prim:
    """One form of op in the source. ``{0}``, ``{1}``: its tensor operands, evaluated first and
    in that order; ``{c}``: its constant; ``{w}``: a weight. ``pynative``: the op types the hooks
    see, in order, after the operands' own; ``graph``: the kernels of a graph (``Scope/Type``
    where MindSpore puts the kernel in an ``Expand/...`` scope of its own)."""

    template: str
    pynative: tuple[str, ...]
    graph: tuple[str, ...]
    const: int | None = None  # which of its ops takes an additive constant (a fault may change it)
    squash: bool = False  # its values are within [-1, 1], whatever its input
    weight: bool = False  # takes a weight ({w}) as its second operand

    @property
    def operator(self) -> bool:
        """Whether the form is an operator expression (parenthesised as another's operand)."""
        return bool(re.match(r"^(\{0\} [-+*/@] |-\{0\}$)", self.template))


PRIMS: dict[str, Prim] = {
    "sin": Prim("ops.sin({0})", ("Sin",), ("Sin",), squash=True),
    "cos": Prim("ops.cos({0})", ("Cos",), ("Cos",), squash=True),
    "tanh": Prim("ops.tanh({0})", ("Tanh",), ("Tanh",), squash=True),
    "sigmoid": Prim("ops.sigmoid({0})", ("Sigmoid",), ("Sigmoid",), squash=True),
    "clip": Prim("ops.clip({0}, -1.0, 1.0)", ("ClampScalar",),
                 ("Expand/_ClampScalar/Maximum", "Expand/_ClampScalar/Minimum"), squash=True),
    "relu": Prim("ops.relu({0})", ("ReLU",), ("ReLU",)),
    "abs": Prim("ops.abs({0})", ("Abs",), ("Abs",)),
    "neg": Prim("-{0}", ("Neg",), ("Neg",)),
    "square": Prim("ops.square({0})", ("Square",), ("Square",)),
    "exp": Prim("ops.exp({0})", ("Exp",), ("Exp",)),
    "addc": Prim("{0} + {c}", ("AddExt",), ("Add",), const=0),
    "subc": Prim("{0} - {c}", ("SubExt",), ("Sub",), const=0),
    "mulc": Prim("{0} * {c}", ("Mul",), ("Expand/_Muls/Mul",)),
    "divc": Prim("{0} / {c}", ("Div",), ("Expand/_Divs/Div",)),
    "add_fn": Prim("ops.add({0}, {c})", ("Add",), ("Add",), const=0),
    "addt": Prim("{0} + ms.Tensor({c}, ms.float32)", ("Add",), ("Add",), const=0),
    "add": Prim("{0} + {1}", ("Add",), ("Add",)),
    "sub": Prim("{0} - {1}", ("Sub",), ("Sub",)),
    "mul": Prim("{0} * {1}", ("Mul",), ("Mul",)),
    "maximum": Prim("ops.maximum({0}, {1})", ("Maximum",), ("Maximum",)),
    "minimum": Prim("ops.minimum({0}, {1})", ("Minimum",), ("Minimum",)),
    "center": Prim("{0} - ops.mean({1}, 1, keep_dims=True)", ("ReduceMean", "Sub"), ("ReduceMean", "Sub")),
    "rowsum": Prim("{0} + {1}.sum(axis=1, keepdims=True)", ("SumExt", "Add"), ("Expand/_SumExt/ReduceSum", "Add")),
    "rowmax": Prim("{0} - ops.amax({1}, 1, True)", ("ReduceMax", "Sub"), ("ReduceMax", "Sub")),
    "stack": Prim("ops.stack(({0}, {1})).sum(axis=0)", ("Stack", "SumExt"), ("Stack", "Expand/_SumExt/ReduceSum")),
    "matmul": Prim("ops.matmul({0}, {w})", ("MatMulExt",), ("Expand/_MatMulExt/MatMul",), weight=True),
    "matmul_op": Prim("{0} @ {w}", ("MatMulExt",), ("Expand/_MatMulExt/MatMul",), weight=True),
    "transpose": Prim("ops.reshape(ops.transpose({0}, (1, 0)), (2, 4))", ("Transpose", "Reshape"), ("Transpose", "Reshape")),
    "expand": Prim("ops.squeeze(ops.expand_dims({0}, 0), 0)", ("ExpandDims", "Squeeze"), ("ExpandDims", "Squeeze")),
    # Squeeze and Concat run through pyboost_inner_prim instances, which the hooks wrap too.
    "split": Prim("ops.concat(ops.split({0}, 2, 1), 1)", ("Split", "Concat"), ("Split", "Concat")),
}  # fmt: skip

SQUASHES = ("tanh", "sin", "cos", "sigmoid", "clip")
UNARY = ("sin", "cos", "tanh", "sigmoid", "clip", "relu", "abs", "neg", "square", "exp")
WITH_CONSTANT = ("addc", "subc", "mulc", "divc", "add_fn", "addt")
BINARY = ("add", "sub", "mul", "maximum", "minimum", "center", "rowsum", "rowmax", "stack")
SHAPES = ("transpose", "expand", "split")
WEIGHTED = ("matmul", "matmul_op")


def _bound(name: str, bounds: list[float], c: float = 0.0) -> float:
    """How large the op's values can be, given its operands' bounds (and its constant)."""
    b = bounds[0]
    if PRIMS[name].squash:
        return 1.0
    if name in ("relu", "abs", "neg", *SHAPES):
        return b
    if name == "square":
        return b * b
    if name == "exp":
        return 2.718281828459045**b
    if name in ("addc", "subc", "add_fn", "addt"):
        return b + abs(c) + 0.5  # a fault may move the constant by 0.5
    if name == "mulc":
        return b * abs(c)
    if name == "divc":
        return b / abs(c)
    if name in ("add", "sub", "center", "rowmax", "stack"):
        return b + bounds[1]
    if name == "mul":
        return b * bounds[1]
    if name in ("maximum", "minimum"):
        return max(bounds)
    if name == "rowsum":
        return b + WIDTH * bounds[1]
    if name in WEIGHTED:
        return WIDTH * b * WEIGHT
    raise KeyError(name)


@dataclass(frozen=True)
class SiteKind:
    """An op that a constant makes NaN or Inf from finite inputs, behind a squash that keeps its
    input within [-1, 1] whatever the program computed before; its constant's values: clean,
    the fault for %%msnan, and (added to the clean one) the change for %%msdiff."""

    template: str  # {s}: the squash, {c}: the constant
    op_type: str  # the op that makes the value: the culprit
    kind: str  # what it makes ("NaN", "Inf"; Div: either)
    clean: tuple[float, ...]
    nan: tuple[float, ...]
    diff: float


SITES: dict[str, SiteKind] = {
    "sqrt": SiteKind("ops.sqrt({s} + {c})", "Sqrt", "NaN", (1.5, 2.0, 3.0), (-1.5, -2.0, -3.0), 0.5),
    "log": SiteKind("ops.log({s} + {c})", "Log", "NaN", (1.5, 2.0, 3.0), (-1.5, -2.0, -3.0), 0.5),
    "exp": SiteKind("ops.exp({s} + {c})", "Exp", "Inf", (0.0, 0.5, 1.0), (100.0, 120.0), -0.5),
    "square": SiteKind("ops.square({s} + {c})", "Square", "Inf", (0.0, 0.5), (1e20, 1e25), 0.5),
    "div": SiteKind("ops.div({s}, ms.Tensor({c}, ms.float32))", "Div", "", (2.0, 4.0), (0.0,), 1.0),
}

# --------------------------------------------------------------------------- the program as data


@dataclass(eq=False)
class Const:
    """A constant in the source; a fault replaces its value."""

    id: int
    clean: float
    nan: float | None = None  # the value that makes its site's op non-finite
    diff: float | None = None  # a value that changes its op's output (None: no fault changes it)


@dataclass(eq=False)
class Weight:
    """A weight's values, ``np.linspace(lo, hi, 16).reshape(4, 4)``; a fault scales them by 1.5."""

    id: int
    lo: float
    hi: float

    def source(self, scaled: bool = False) -> str:
        k = 1.5 if scaled else 1.0
        return f"np.linspace({_num(self.lo * k)}, {_num(self.hi * k)}, 16, dtype=np.float32).reshape(4, 4)"


@dataclass(eq=False)
class Var:
    """A name: a tensor variable, an input, a weight (``self.w0``) or a loop's constant."""

    name: str
    weight: Weight | None = None
    parameter: bool = False  # a Parameter updated in place (``p0``, ``self.s0``)


@dataclass(eq=False)
class Op:
    prim: str
    args: tuple
    const: Const | Var | None = None  # a Var: the loop variable that holds the constants
    weight: Var | None = None


@dataclass(eq=False)
class Site:
    kind: str
    squash: str
    arg: Any
    const: Const | Var


@dataclass(eq=False)
class Call:
    """``f(a, b)`` (a Function), ``self.leaf(a)``, ``self.blocks[1](a)``, ``net(a)`` (a name)."""

    target: Any
    args: tuple


# Statements: one line of source each (a loop or a branch: its header line).
@dataclass(eq=False)
class Assign:
    target: str
    value: Any


@dataclass(eq=False)
class Drop:
    value: Any
    form: str  # "{}.asnumpy()", "{}", "_ = {}"


@dataclass(eq=False)
class Update:
    """An in-place update of a Parameter: ``ops.assign``, ``ops.assign_add``, ``self.s0 += ...``."""

    form: str  # "assign", "assign_add", "iadd"
    target: str
    value: Any

    OPS = {"assign": "Assign", "assign_add": "AssignAdd", "iadd": "AddExt"}


@dataclass(eq=False)
class For:
    var: str
    items: tuple  # Consts (``for c in (1.5, 2.0):``) or ints (``for i in range(n):``)
    body: list
    by_range: bool = False


@dataclass(eq=False)
class If:
    var: str
    test: str  # "== 1", "% 2 == 0", "> 0"
    body: list
    orelse: list = field(default_factory=list)

    def holds(self, value: int) -> bool:
        left, op, right = (f"{value} {self.test}".split() + [""])[:3]
        if op == "%":
            return int(left) % int(right) == 0
        return {"==": int(left) == int(right), ">": int(left) > int(right)}[op]


@dataclass(eq=False)
class Return:
    value: Any


@dataclass(eq=False)
class Function:
    name: str
    params: tuple[str, ...]
    body: list  # ends with a Return
    jit: bool = False


@dataclass(eq=False)
class Child:
    """What a Cell holds under an attribute: a Cell, a Dense, a CellList or a SequentialCell."""

    kind: str  # "cell", "dense", "list", "seq"
    classes: tuple = ()
    weight: Weight | None = None  # a Dense's


@dataclass(eq=False)
class CellClass:
    name: str
    weights: dict[str, Weight]
    states: dict[str, float]  # Parameters updated in place, with their first value
    children: dict[str, Child]
    body: list  # construct(self, a), ends with a Return


@dataclass(eq=False)
class Instance:
    var: str
    cls: CellClass


@dataclass(eq=False)
class Program:
    """Cells of source, as data. The setup cell holds ``inputs`` (2 x 4 tensors from
    ``np.linspace(lo, hi)``), ``weights`` (Tensors) and ``states`` (Parameters updated in place)."""

    mode: str  # "pynative", "graph", "jit"
    inputs: dict[str, tuple[float, float]]
    weights: dict[str, Weight]
    states: dict[str, float]
    defs: list[list]  # cells of Functions, CellClasses and Instances
    body: list  # the magic's cell: its statements (and its @jit functions, defined first)
    consts: list[Const]
    all_weights: list[Weight]
    blank_first: bool = False  # each definition cell starts with an empty line


@dataclass(frozen=True)
class Fault:
    """One constant (``const``) or weight (``weight``) changed, ``for_`` "nan" or "diff"; "clean": none."""

    for_: str
    const: int | None = None
    weight: int | None = None

    def value(self, const: Const) -> float:
        if self.const != const.id:
            return const.clean
        return const.nan if self.for_ == "nan" else const.diff

    def scales(self, weight: Weight) -> bool:
        return self.weight == weight.id


CLEAN = Fault("clean")


def _num(value: float) -> str:
    return repr(float(value))


# --------------------------------------------------------------------------- rendering


@dataclass
class Source:
    """The cells' source, and where each statement is: id(stmt) -> (cell index, line, code)."""

    cells: list[str]
    places: dict[int, tuple[int, int, str]]


class _Writer:
    def __init__(self, fault: Fault) -> None:
        self.fault = fault
        self.lines: list[str] = []
        self.places: dict[int, tuple[int, int, str]] = {}
        self.cell = 0
        self.offset = 0  # the magic's own line comes first in the last cell

    def start(self, cell: int, offset: int = 0, blank: bool = False) -> None:
        self.lines, self.cell, self.offset = ([""] if blank else []), cell, offset

    def line(self, indent: int, text: str, stmt: Any = None) -> None:
        self.lines.append("    " * indent + text)
        if stmt is not None:
            self.places[id(stmt)] = (self.cell, len(self.lines) + self.offset, text)

    # -- expressions
    def expr(self, e: Any, operand: bool = False) -> str:
        """``operand``: inside an operator or before a method call, where an operator needs parentheses."""
        if isinstance(e, Var):
            return e.name
        if isinstance(e, Op):
            prim = PRIMS[e.prim]
            text = prim.template.replace("{c}", self._const(e.const)).replace("{w}", e.weight.name if e.weight else "")
            for i, arg in enumerate(e.args):
                text = text.replace("{" + str(i) + "}", self.expr(arg, not _bare(prim.template, i)))
            return f"({text})" if prim.operator and operand else text
        if isinstance(e, Site):
            squash = self.expr(Op(e.squash, (e.arg,)))
            return SITES[e.kind].template.replace("{s}", squash).replace("{c}", self._const(e.const))
        if isinstance(e, Call):
            target = e.target.name if isinstance(e.target, Function) else e.target
            return f"{target}({', '.join(self.expr(a) for a in e.args)})"
        raise TypeError(e)

    def _const(self, c: Const | Var | None) -> str:
        if c is None:
            return ""
        return c.name if isinstance(c, Var) else _num(self.fault.value(c))

    # -- statements
    def stmts(self, body: list, indent: int) -> None:
        for s in body:
            if isinstance(s, Assign):
                self.line(indent, f"{s.target} = {self.expr(s.value)}", s)
            elif isinstance(s, Drop):
                self.line(indent, s.form.format(self.expr(s.value, s.form.startswith("{}."))), s)
            elif isinstance(s, Update):
                value = self.expr(s.value)
                text = f"{s.target} += {value}" if s.form == "iadd" else f"ops.{s.form}({s.target}, {value})"
                self.line(indent, text, s)
            elif isinstance(s, For):
                if s.by_range:
                    header = f"for {s.var} in range({len(s.items)}):"
                else:
                    values = ", ".join(self._const(c) for c in s.items) + ("," if len(s.items) == 1 else "")
                    header = f"for {s.var} in ({values}):"
                self.line(indent, header, s)
                self.stmts(s.body, indent + 1)
            elif isinstance(s, If):
                self.line(indent, f"if {s.var} {s.test}:", s)
                self.stmts(s.body, indent + 1)
                if s.orelse:
                    self.line(indent, "else:")
                    self.stmts(s.orelse, indent + 1)
            elif isinstance(s, Return):
                self.line(indent, f"return {self.expr(s.value)}", s)
            else:
                raise TypeError(s)

    # -- definitions
    def function(self, f: Function) -> None:
        if f.jit:
            self.line(0, "@ms.jit")
        self.line(0, f"def {f.name}({', '.join(f.params)}):")
        self.stmts(f.body, 1)

    def cell_class(self, c: CellClass) -> None:
        self.line(0, f"class {c.name}(nn.Cell):")
        self.line(1, "def __init__(self):")
        self.line(2, "super().__init__()")
        for name, w in c.weights.items():
            self.line(2, f'self.{name} = Parameter(ms.Tensor({w.source(self.fault.scales(w))}), name="{name}")')
        for name, first in c.states.items():
            self.line(2, f"self.{name} = {_state(name, first)}")
        for name, child in c.children.items():
            self.line(2, f"self.{name} = {self._child(child)}")
        self.line(1, "def construct(self, a):")
        self.stmts(c.body, 2)

    def _child(self, child: Child) -> str:
        if child.kind == "cell":
            return f"{child.classes[0].name}()"
        if child.kind == "dense":
            w = child.weight.source(self.fault.scales(child.weight))
            return f'nn.Dense(4, 4, weight_init=ms.Tensor({w}), bias_init="zeros")'
        parts = ", ".join(f"{c.name}()" for c in child.classes)
        return f"nn.CellList([{parts}])" if child.kind == "list" else f"nn.SequentialCell([{parts}])"


def _bare(template: str, index: int) -> bool:
    """Whether operand ``index`` is a whole argument of a call in ``template`` (no parentheses needed)."""
    at = template.index("{" + str(index) + "}")
    before, after = template[:at], template[at + 3 :]
    return before.endswith(("(", ", ")) and after.startswith((")", ","))


def _state(name: str, first: float) -> str:
    return f'Parameter(ms.Tensor(np.full((2, 4), {_num(first)}, np.float32)), name="{name}")'


SETUP_IMPORTS = "import numpy as np, mindspore as ms\nfrom mindspore import nn, ops, Parameter"


def render(program: Program, fault: Fault = CLEAN) -> Source:
    """The program's cells with ``fault`` applied. The last is the magic's body, without the
    magic's own line; its lines are counted from 2, as the notebook shows them."""
    w = _Writer(fault)
    setup = [SETUP_IMPORTS]
    for name, (lo, hi) in program.inputs.items():
        setup.append(f"{name} = ms.Tensor(np.linspace({_num(lo)}, {_num(hi)}, 8, dtype=np.float32).reshape(2, 4))")
    for name, weight in program.weights.items():
        setup.append(f"{name} = ms.Tensor({weight.source(fault.scales(weight))})")
    for name, first in program.states.items():
        setup.append(f"{name} = {_state(name, first)}")
    cells = ["\n".join(setup)]
    for index, items in enumerate(program.defs, start=1):
        w.start(index, blank=program.blank_first)
        for item in items:
            if isinstance(item, Function):
                w.function(item)
            elif isinstance(item, CellClass):
                w.cell_class(item)
            else:
                w.line(0, f"{item.var} = {item.cls.name}()")
        cells.append("\n".join(w.lines))
    w.start(len(program.defs) + 1, offset=1)
    for item in program.body:
        if isinstance(item, Function):
            w.function(item)
        else:
            w.stmts([item], 0)
    cells.append("\n".join(w.lines))
    return Source(cells, w.places)


def describe(program: Program, *faults: Fault) -> str:
    """The program as a person would type it, and the lines each fault changes."""
    clean = render(program)
    last = len(clean.cells) - 1
    parts = [f"# cell {i}{' (run under the magic)' if i == last else ''}\n{cell}" for i, cell in enumerate(clean.cells)]
    for fault in dict.fromkeys(f for f in faults if f.for_ != "clean"):
        changed = render(program, fault)
        lines = [f"  cell {i}, line {n + (i == last)}: {new.strip()}"
                 for i, (a, b) in enumerate(zip(clean.cells, changed.cells, strict=True))
                 for n, (old, new) in enumerate(zip(a.splitlines(), b.splitlines(), strict=True), 1) if old != new]  # fmt: skip
        parts.append(f"# the {fault.for_} fault changes\n" + ("\n".join(lines) or "  nothing"))
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- the trace


@dataclass(frozen=True)
class Event:
    """One op as the program runs it: MindSpore's name for it, where it runs, what it takes."""

    name: str
    op_type: str
    cell: int  # index into the rendered cells
    line: int
    code: str
    const: int | None = None  # the constant it takes (its id)
    makes: bool = False  # the op a nan fault of that constant makes non-finite
    weights: frozenset = frozenset()  # ids of the weights it takes as they are
    graph: str = ""  # the graph that runs it (a GRAPH-mode network, an @jit function); "": PyNative


@dataclass(eq=False)
class _Instance:
    cls: CellClass
    children: dict  # attr -> _Instance, ("dense", Weight), or a list of _Instance

    @classmethod
    def of(cls, c: CellClass) -> _Instance:
        children: dict[str, Any] = {}
        for name, child in c.children.items():
            if child.kind == "cell":
                children[name] = cls.of(child.classes[0])
            elif child.kind == "dense":
                children[name] = ("dense", child.weight)
            else:
                children[name] = [cls.of(inner) for inner in child.classes]
        return cls(c, children)


class _Tracer:
    """Runs the program in the mind: which ops run, in which order, named how, from which line.

    PyNative names are msdebug's hooks' (``OpNames``): the Cell path from the outermost Cell
    called (``Default``), the type numbered per Cell instance and type. A graph's are
    MindSpore's kernels': numbered per scope and type, from 0 in each graph."""

    def __init__(self, program: Program, source: Source) -> None:
        self.program, self.places = program, source.places
        self.events: list[Event] = []
        self.counts: Counter = Counter()
        self.stack: list[tuple[Any, str]] = []  # (instance, label)
        self.instances: dict[str, _Instance] = {}
        self.graph = ""
        self.graph_counts: Counter = Counter()

    def emit(self, op_type: str, place: tuple, **tags: Any) -> None:
        scope = "/".join(label for _, label in self.stack) or "Default"
        if self.graph:
            own, _, op_type = op_type.rpartition("/")
            scope = own or scope
            key: tuple = (scope, op_type)
            counts = self.graph_counts
        else:
            key = (id(self.stack[-1][0]) if self.stack else 0, op_type)
            counts = self.counts
        number = counts[key]
        counts[key] += 1
        cell, line, code = place
        self.events.append(Event(f"{scope}/{op_type}-op{number}", op_type, cell, line, code, graph=self.graph, **tags))

    def in_graph(self, name: str, run) -> None:
        self.graph, self.graph_counts = name, Counter()
        try:
            run()
        finally:
            self.graph = ""

    # -- expressions
    def expr(self, e: Any, env: dict, place: tuple) -> None:
        if isinstance(e, Var):
            return
        if isinstance(e, Op):
            for arg in e.args:
                self.expr(arg, env, place)
            prim = PRIMS[e.prim]
            const = env.get(e.const.name) if isinstance(e.const, Var) else e.const
            for i, op_type in enumerate(prim.graph if self.graph else prim.pynative):
                tags: dict[str, Any] = {}
                if prim.const == i and const is not None:
                    tags["const"] = const.id
                if prim.weight and i == 0 and e.weight.weight is not None:
                    tags["weights"] = frozenset({e.weight.weight.id})
                self.emit(op_type, place, **tags)
        elif isinstance(e, Site):
            self.expr(Op(e.squash, (e.arg,)), env, place)
            const = env[e.const.name] if isinstance(e.const, Var) else e.const
            if e.kind != "div":
                self.emit("Add" if self.graph else "AddExt", place, const=const.id)
            self.emit(SITES[e.kind].op_type, place, const=const.id, makes=True)
        elif isinstance(e, Call):
            for arg in e.args:
                self.expr(arg, env, place)
            self.call(e.target, env, place)
        else:
            raise TypeError(e)

    def call(self, target: Any, env: dict, place: tuple) -> None:
        if isinstance(target, Function):
            if target.jit and not self.graph:
                self.in_graph(target.name, lambda: self.stmts(target.body, {}))
            else:
                self.stmts(target.body, {})
            return
        if not target.startswith("self."):
            instance = self.instances[target]
            if self.program.mode == "graph" and not self.graph:
                self.in_graph(target, lambda: self.enter(instance, "Default"))
            else:  # a Cell no Cell holds: the outermost, or named by its class inside another
                self.enter(instance, instance.cls.name if self.stack else "Default")
            return
        attr, _, index = target[5:].partition("[")
        child = env["self"].children[attr]
        if isinstance(child, tuple):  # a Dense: its ops come from MindSpore's code, so from the calling line
            self.stack.append((child, f"{attr}-Dense"))
            self.emit("MatMul", place, weights=frozenset({child[1].id}))
            self.emit("BiasAdd", place)
            self.stack.pop()
        elif index:  # a CellList's item
            inner = child[int(index[:-1])]
            self.enter(inner, f"{attr}-CellList/{index[:-1]}-{inner.cls.name}")
        elif isinstance(child, list):  # a SequentialCell calls its items
            self.stack.append((child, f"{attr}-SequentialCell"))
            for i, inner in enumerate(child):
                self.enter(inner, f"{i}-{inner.cls.name}")
            self.stack.pop()
        else:
            self.enter(child, f"{attr}-{child.cls.name}")

    def enter(self, instance: _Instance, label: str) -> None:
        self.stack.append((instance, label))
        self.stmts(instance.cls.body, {"self": instance})
        self.stack.pop()

    # -- statements
    def stmts(self, body: list, env: dict) -> None:
        for s in body:
            place = self.places[id(s)]
            if isinstance(s, (Assign, Drop, Return)):
                self.expr(s.value, env, place)
            elif isinstance(s, Update):
                self.expr(s.value, env, place)
                self.emit(Update.OPS[s.form], place)
            elif isinstance(s, For):  # as Python does: the name stays bound, also to an enclosing loop's
                for item in s.items:
                    env[s.var] = item
                    self.stmts(s.body, env)
            elif isinstance(s, If):
                self.stmts(s.body if s.holds(env[s.var]) else s.orelse, env)
            else:
                raise TypeError(s)

    def run(self) -> list[Event]:
        for items in self.program.defs:
            for item in items:
                if isinstance(item, Instance):
                    self.instances[item.var] = _Instance.of(item.cls)
        self.stmts([s for s in self.program.body if not isinstance(s, Function)], {})
        return self.events


def trace(program: Program, fault: Fault = CLEAN) -> list[Event]:
    """The ops the magic's cell runs, in order, as msdebug must name them."""
    return _Tracer(program, render(program, fault)).run()


def expected_culprit(program: Program, fault: Fault) -> Event | None:
    """The op a fault makes the answer: for "nan", the first op that makes the non-finite
    value; for "diff", the first op that takes the changed constant or weight. None when no op
    that runs takes it (a function never called, a branch never taken): nothing changes."""
    for event in trace(program, fault):
        if fault.const is not None and event.const == fault.const and (fault.for_ == "diff" or event.makes):
            return event
        if fault.weight is not None and fault.weight in event.weights:
            return event
    return None


# --------------------------------------------------------------------------- generating


class _Builder:
    """Draws a PyNative program, one decision at a time, keeping every value bounded."""

    def __init__(self, draw, mode: str) -> None:
        self.draw, self.mode = draw, mode
        self.ids = itertools.count()
        self.serial = itertools.count(1)
        self.consts: list[Const] = []
        self.weights: list[Weight] = []

    # -- small draws
    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def chance(self, p: float) -> bool:
        return self.draw(st.integers(0, 99)) < int(p * 100)

    def number(self, lo: float, hi: float, step: float = 0.25) -> float:
        return round(lo + self.draw(st.integers(0, round((hi - lo) / step))) * step, 4)

    def name(self, prefix: str) -> str:
        return f"{prefix}{next(self.serial)}"

    def const(self, clean: float, nan: float | None = None, diff: float | None = None) -> Const:
        c = Const(next(self.ids), clean, nan, diff)
        self.consts.append(c)
        return c

    def weight(self) -> Weight:
        lo, hi = self.number(-0.5, 0.5, 0.125), self.number(-0.5, 0.5, 0.125)
        w = Weight(next(self.ids), lo, hi if hi != lo else (-lo if lo else 0.25))
        self.weights.append(w)
        return w

    def site_const(self, kind: str) -> Const:
        s = SITES[kind]
        clean = self.pick(s.clean)
        return self.const(clean, self.pick(s.nan), clean + s.diff)

    def site(self, kind: str, arg: Any, const: Const | Var | None = None) -> Site:
        return Site(kind, self.pick(SQUASHES), arg, const if const is not None else self.site_const(kind))

    def squash(self, e: Any) -> Op:
        return Op(self.pick(SQUASHES), (e,))

    def with_constant(self, arg: Any, b: float) -> tuple[Op, float]:
        prim = self.pick(WITH_CONSTANT)
        if prim in ("mulc", "divc"):  # scales: no fault changes them (an input of zeros would hide it)
            value = self.pick((0.5, 2.0, -0.5, 1.5))
            c = Const(next(self.ids), value)
        else:
            value = self.number(-2.0, 2.0)
            c = self.const(value, None, value + 0.5)
        return Op(prim, (arg,), c), _bound(prim, [b], value)

    # -- expressions over the variables of a pool [(Var, bound)]
    def expr(self, pool: list, ctx: dict, depth: int = 0) -> tuple[Any, float]:
        kinds = ["var"] * 2 + ["unary"] * 3 + ["const"] * 2 + ["binary"] * 2 + ["shape", "site", "site"]
        kinds += ["weighted"] * bool(ctx.get("weights")) + ["call"] * 2 * bool(ctx.get("callables"))
        kind = "var" if depth >= 2 else self.pick(kinds)
        if kind == "var":
            return self.pick(pool)
        if kind == "call":
            target, arity = self.pick(ctx["callables"])
            return Call(target, tuple(self.bounded(self.expr(pool, ctx, depth + 1))[0] for _ in range(arity))), LIMIT
        if kind == "binary":
            prim = self.pick(BINARY)
            left, right = self.expr(pool, ctx, depth + 1), self.expr(pool, ctx, depth + 1)
            if _bound(prim, [left[1], right[1]]) > INTERMEDIATE:
                left, right = (self.squash(left[0]), 1.0), (self.squash(right[0]), 1.0)
            if prim == "stack" and not all(isinstance(e, (Op, Site)) for e, _ in (left, right)):
                # MindSpore's Stack refuses a Parameter beside a Tensor (Ref[Tensor] against Tensor), and a
                # name or a call's result may be one (``h = p0``, ``f(p0)``, ``return a``): an op's never is.
                prim = "add"
            return Op(prim, (left[0], right[0])), _bound(prim, [left[1], right[1]])
        arg, b = self.expr(pool, ctx, depth + 1)
        if kind == "site":
            return self.site(self.pick(list(SITES)), arg), SITE_BOUND
        if kind == "shape":
            return Op(self.pick(SHAPES), (arg,)), b
        if kind == "weighted":
            arg, b = self.bounded((arg, b))
            return Op(self.pick(WEIGHTED), (arg,), weight=self.pick(ctx["weights"])), _bound("matmul", [b])
        if b > INTERMEDIATE / 4:
            arg, b = self.squash(arg), 1.0
        if kind == "const":
            return self.with_constant(arg, b)
        prim = self.pick([p for p in UNARY if (p != "exp" or b <= 5) and (p != "square" or b <= 30)])
        return Op(prim, (arg,)), _bound(prim, [b])

    def bounded(self, eb: tuple[Any, float]) -> tuple[Any, float]:
        e, b = eb
        return (self.squash(e), 1.0) if b > LIMIT else (e, b)

    def value(self, pool: list, ctx: dict) -> Any:
        return self.bounded(self.expr(pool, ctx))[0]

    # -- statements
    def targets(self, pool: list, ctx: dict) -> list[str]:
        names = [v.name for v, _ in pool if not v.weight and not v.parameter and v.name not in ctx["fixed"]]
        return [*names, self.name("h")]

    def assign(self, pool: list, target: str, value: Any) -> Assign:
        if all(v.name != target for v, _ in pool):
            pool.append((Var(target), LIMIT))
        return Assign(target, value)

    def block(self, pool: list, ctx: dict, size: int, loops: int, top: bool) -> list:
        """``size`` statements over ``pool``, which grows by the names they assign."""
        body: list = []
        for _ in range(size):
            kind = self.pick(["assign"] * 4 + ["drop"] + ["update"] * bool(ctx.get("states")) + ["loop"] * bool(loops))
            if kind == "assign":
                target = self.pick(self.targets(pool, ctx))
                body.append(self.assign(pool, target, self.value(pool, ctx)))
            elif kind == "drop":
                body.append(Drop(self.value(pool, ctx), self.pick(("{}.asnumpy()", "_ = {}", "{}"))))
            elif kind == "update":
                target = self.pick(ctx["states"])
                form = self.pick(
                    ("assign", "assign_add", "iadd") if target.startswith("self.") else ("assign", "assign_add")
                )
                squashed = Op("tanh", (self.expr(pool, ctx, 1)[0],))
                small = Op("mulc", (squashed,), Const(next(self.ids), 0.01))  # a state grows slowly, as a running mean
                body.append(Update(form, target, squashed if form == "assign" else small))
            else:
                body.append(self.loop(pool, ctx, loops - 1, top))
        return body

    def loop(self, pool: list, ctx: dict, loops: int, top: bool) -> For:
        n = self.draw(st.integers(1, 3))
        if self.chance(0.5):  # over constants: one site takes each pass's own (a fault may change one pass's)
            kind = self.pick(list(SITES))
            items = tuple(self.site_const(kind) for _ in range(n))
            var = self.pick(("c", "k", "shift"))
            before = list(pool)  # what a statement ahead of the assignment may read on the first pass
            target = self.pick(self.targets(pool, ctx))
            body = [self.assign(pool, target, self.site(kind, self.expr(pool, ctx, 1)[0], Var(var)))]
            if self.chance(0.3):
                body.insert(self.draw(st.integers(0, 1)), Drop(self.value(before, ctx), "{}.asnumpy()"))
            return For(var, items, body)
        var = self.pick(("i", "step", "j"))
        inner = self.block(pool, ctx, self.draw(st.integers(1, 2)), loops, top)
        if self.chance(0.5):  # names first assigned in a branch stay in it: the branch may not run
            test = self.pick(("== 0", "== 1", "% 2 == 0", "> 0", "== 2"))
            branch = self.block(list(pool), ctx, self.draw(st.integers(1, 2)), loops, top)
            orelse = self.block(list(pool), ctx, 1, 0, top) if self.chance(0.5) else []
            inner.append(If(var, test, branch, orelse))
        return For(var, tuple(range(n)), inner, by_range=True)

    # -- definitions
    def function(self, ctx: dict) -> Function:
        params = ("a", "b")[: self.draw(st.integers(1, 2))]
        pool = [(Var(p), LIMIT) for p in params]
        inner = {**ctx, "fixed": set(), "states": []}
        body = self.block(pool, inner, self.draw(st.integers(0, 2)), 1, False)
        body.append(Return(self.value(pool, inner)))
        return Function(self.name("f"), params, body)

    def cell_class(self, ctx: dict, depth: int) -> CellClass:
        name = self.name("Block" if depth else "Net")
        weights = {f"w{i}": self.weight() for i in range(self.draw(st.integers(0, 2)))}
        states = {f"s{i}": self.number(-0.5, 0.5) for i in range(self.draw(st.integers(0, 1)))}
        children: dict[str, Child] = {}
        for _ in range(self.draw(st.integers(0, 2)) if depth < 2 else 0):
            kind = self.pick(("cell", "cell", "dense", "list", "seq"))
            attr = self.name({"cell": "leaf", "dense": "fc", "list": "blocks", "seq": "seq"}[kind])
            if kind == "dense":
                children[attr] = Child("dense", weight=self.weight())
            elif kind == "cell":
                children[attr] = Child("cell", (self.cell_class(ctx, depth + 1),))
            else:
                first = self.cell_class(ctx, depth + 1)
                second = first if kind == "list" and self.chance(0.5) else self.cell_class(ctx, depth + 1)
                children[attr] = Child(kind, (first, second))
        callables = list(ctx["callables"])
        for attr, child in children.items():
            if child.kind == "list":
                callables += [(f"self.{attr}[0]", 1), (f"self.{attr}[1]", 1)]
            else:
                callables.append((f"self.{attr}", 1))
        pool = [(Var("a"), LIMIT), *((Var(f"self.{s}", parameter=True), LIMIT) for s in states)]
        inner = {"callables": callables, "weights": [Var(f"self.{n}", w) for n, w in weights.items()],
                 "states": [f"self.{s}" for s in states], "fixed": set()}  # fmt: skip
        body = self.block(pool, inner, self.draw(st.integers(0, 3)), 1, False)
        body.append(Return(self.value(pool, inner)))
        return CellClass(name, weights, states, children, body)

    def program(self) -> Program:
        inputs = {
            n: (self.number(-2.0, 2.0), self.number(-2.0, 2.0)) for n in ("x", "y")[: self.draw(st.integers(1, 2))]
        }
        weights = {f"w{i}": self.weight() for i in range(self.draw(st.integers(0, 1)))}
        states = {f"p{i}": self.number(-0.5, 0.5) for i in range(self.draw(st.integers(0, 1)))}
        ctx: dict = {"callables": [], "weights": [Var(n, w) for n, w in weights.items()], "states": list(states),
                     "fixed": set(inputs)}  # fmt: skip
        defs: list[list] = []
        for _ in range(self.draw(st.integers(0, 2))):
            items: list = []
            for _ in range(self.draw(st.integers(1, 2))):
                if self.chance(0.5):  # a function may call the functions and networks of cells above it
                    f = self.function({"callables": list(ctx["callables"]), "weights": ctx["weights"]})
                    items.append(f)
                    ctx["callables"].append((f, len(f.params)))
                else:  # a network's construct may call the functions above it
                    functions = [c for c in ctx["callables"] if isinstance(c[0], Function)]
                    cls = self.cell_class({"callables": functions}, 0)
                    instance = Instance(self.name("net"), cls)
                    items += [c for c in _classes_in_order(cls) if not any(c is d for d in items)] + [instance]
                    ctx["callables"].append((instance.var, 1))
            defs.append(items)
        pool = [(Var(n), 2.0) for n in inputs] + [(Var(n, parameter=True), LIMIT) for n in states]
        body = self.block(pool, ctx, self.draw(st.integers(1, 5)), 2, True)
        return Program("pynative", inputs, weights, states, defs, body, self.consts, self.weights)


def _classes_in_order(cls: CellClass) -> list[CellClass]:
    """``cls`` and the classes of its children, children first, each once."""
    out: list[CellClass] = []

    def visit(c: CellClass) -> None:
        for child in c.children.values():
            for inner in child.classes:
                visit(inner)
        if not any(c is d for d in out):
            out.append(c)

    visit(cls)
    return out


class _ChainBuilder(_Builder):
    """GRAPH and @jit: each statement takes the last one's value (``h = ...(h)``), and the input
    ``a`` only as an operator's second operand. A graph drops what does not reach its output and
    merges ops that compute the same thing from the same inputs, so a program that did either
    has no names to be read from its source. Nor has one where MindSpore's own names and lines
    stop following the source:

    * once a child Cell's graph is inlined, MindSpore names some later ops of its parent or
      siblings (``x + 1.0``, ``ops.square``) in the child's scope, with the child's source line:
      a Cell here has at most one child, called last;
    * its IR gives every call of one ``ops`` function in a graph the same source line: each
      function that can make a NaN or an Inf is called from one statement of a graph (which may
      run it several times, in a loop).
    """

    def __init__(self, draw, mode: str, pynative_first: bool = False) -> None:
        super().__init__(draw, mode)
        self.pynative_first = pynative_first
        self.callers: dict[str, int] = {}  # function that can make a NaN or Inf -> the statement calling it
        self.statement = 0

    def free(self, function: str, graph: bool) -> bool:
        return not graph or self.callers.get(function, self.statement) == self.statement

    def take(self, function: str, graph: bool) -> None:
        if graph and function in SITES:
            self.callers[function] = self.statement

    def chain(self, h: Var, a: Var, ctx: dict, first: bool, graph: bool = True) -> Any:
        """One statement's value from ``h`` (``graph``: the statement runs in a graph)."""
        self.statement += 1
        e, b = h, LIMIT
        for _ in range(self.draw(st.integers(1, 3))):
            sites = [k for k in SITES if self.free(k, graph)]
            kinds = ["unary"] * 3 + ["const"] * 2 + ["site"] * 2 * bool(sites) + ["shape"]
            kinds += ["weighted"] * bool(ctx.get("weights")) + ["call"] * 2 * bool(ctx.get("callables"))
            kind = self.pick(kinds)
            if kind == "unary":
                prim = self.pick([p for p in UNARY if (p != "exp" or b <= 5) and (p != "square" or b <= 30)
                                  and (p not in SITES or self.free(p, graph))])  # fmt: skip
                self.take(prim, graph)
                e, b = Op(prim, (e,)), _bound(prim, [b])
            elif kind == "const":
                e, b = self.with_constant(e, b)
            elif kind == "site":
                site = self.pick(sites)
                self.take(site, graph)
                e, b = self.site(site, e), SITE_BOUND
            elif kind == "shape":
                e = Op(self.pick(SHAPES), (e,))
            else:
                e, b = self.bounded((e, b))
                if kind == "weighted":
                    e, b = Op("matmul", (e,), weight=self.pick(ctx["weights"])), _bound("matmul", [b])
                else:  # a helper function, once: called twice it would run the same ops twice
                    target, _ = self.pick(ctx["callables"])
                    ctx["callables"] = [c for c in ctx["callables"] if c[0] is not target]
                    e, b = Call(target, (e,)), LIMIT
            e, b = self.bounded((e, b))
        if not first and self.chance(0.4):
            prim = self.pick(("add", "sub", "mul", "maximum", "minimum", "stack"))
            e, b = Op(prim, (e, a)), _bound(prim, [b, 2.0])
        return self.bounded((e, b))[0]

    def chain_block(self, ctx: dict, size: int, loops: int, first: bool) -> list:
        """``size`` statements ``h = ...`` (the first from ``a`` when ``first``)."""
        body: list = []
        for _ in range(size):
            if not (loops and self.chance(0.3)):
                body.append(Assign("h", self.chain(Var("a" if first else "h"), Var("a"), ctx, first)))
                first = False
                continue
            if first:  # a loop's first pass would take `a`, its later ones `h`: `h` first
                body.append(Assign("h", self.chain(Var("a"), Var("a"), ctx, True)))
                first = False
            n = self.draw(st.integers(1, 3))
            self.statement += 1
            sites = [k for k in SITES if self.free(k, True)]
            if sites and self.chance(0.5):  # over constants: one site takes each pass's own
                kind = self.pick(sites)
                self.take(kind, True)
                items = tuple(self.site_const(kind) for _ in range(n))
                body.append(For("c", items, [Assign("h", self.site(kind, Var("h"), Var("c")))]))
                continue
            once = {**ctx, "callables": []}  # a function called on every pass would run its ops on each
            inner = self.chain_block(once, 1, 0, False)
            if self.chance(0.5):
                test = self.pick(("== 0", "== 1", "% 2 == 0", "> 0"))
                orelse = self.chain_block(once, 1, 0, False) if self.chance(0.5) else []
                inner = [If("i", test, inner, orelse)]
            body.append(For("i", tuple(range(n)), inner, by_range=True))
        if first:
            body.append(Assign("h", self.chain(Var("a"), Var("a"), ctx, True)))
        return body

    def helper(self, jit: bool = False) -> Function:
        body = self.chain_block({}, self.draw(st.integers(1, 3)), 1, True)
        return Function(self.name("step" if jit else "g"), ("a",), [*body, Return(Var("h"))], jit=jit)

    def chain_class(self, ctx: dict, depth: int) -> CellClass:
        """A Cell with at most one child, called last (see the class's docstring)."""
        name = self.name("Block" if depth else "Net")
        weights = {f"w{i}": self.weight() for i in range(self.draw(st.integers(0, 1)))}
        children: dict[str, Child] = {}
        if depth < 2 and self.chance(0.6):
            if self.chance(0.3):
                children[self.name("fc")] = Child("dense", weight=self.weight())
            else:
                children[self.name("leaf")] = Child("cell", (self.chain_class(ctx, depth + 1),))
        inner = {"callables": list(ctx["callables"]), "weights": [Var(f"self.{n}", w) for n, w in weights.items()]}
        body = self.chain_block(inner, self.draw(st.integers(1, 3)), 1, True)
        ctx["callables"] = inner["callables"]  # the helpers it called are spent
        body += [Assign("h", Call(f"self.{attr}", (Var("h"),))) for attr in children]
        return CellClass(name, weights, {}, children, [*body, Return(Var("h"))])

    def pynative(self, start: Var) -> Any:
        return self.chain(start, Var("x"), {}, True, graph=False)

    def program(self) -> Program:
        inputs = {"x": (self.number(-2.0, 2.0), self.number(-2.0, 2.0))}
        helpers = [self.helper() for _ in range(self.draw(st.integers(0, 2)))]
        defs: list[list] = [helpers] if helpers else []
        if self.mode == "graph":
            cls = self.chain_class({"callables": [(f, 1) for f in helpers]}, 0)
            defs.append([*_classes_in_order(cls), Instance("net", cls)])
            before = []
            if self.pynative_first:  # ops of the cell itself, ahead of the network: they run in PyNative
                before = [Assign("x0", self.site(self.pick(list(SITES)), self.pynative(Var("x"))))]
            call = Call("net", (Var("x0" if before and self.chance(0.5) else "x"),))
            form = self.pick(("out = {}", "{}.asnumpy()", "{}"))
            last = Assign("out", call) if form.startswith("out") else Drop(call, form)
            return Program("graph", inputs, {}, {}, defs, [*before, last], self.consts, self.weights)
        self.callers.clear()  # the helpers are not called here: the @jit function is the one graph
        step = self.helper(jit=True)
        before = [Assign("h", self.pynative(Var("x")))] if self.chance(0.6) else []
        after = [Assign("z", self.pynative(Var("y")))] if self.chance(0.6) else []
        body = [step, *before, Assign("y", Call(step, (Var("h" if before else "x"),))), *after]
        return Program("jit", inputs, {}, {}, defs, body, self.consts, self.weights)


@st.composite
def programs(draw, mode: str = "pynative", *, pynative_first: bool | None = None, jit_earlier: bool | None = None,
             blank_first: bool | None = None) -> Program:  # fmt: skip
    """A program of ``mode`` ("pynative", "graph" or "jit"), with shapes that each once got a
    wrong answer (``tests/test_generated_programs.py`` forces each): ``pynative_first``, a
    GRAPH-mode cell whose own ops run ahead of the network; ``jit_earlier``, the @jit function
    defined in an earlier cell; ``blank_first``, definition cells that start with an empty line.
    Drawn where not given."""
    if pynative_first is None:
        pynative_first = mode == "graph" and draw(st.booleans())
    if jit_earlier is None:
        jit_earlier = mode == "jit" and draw(st.booleans())
    if blank_first is None:
        blank_first = draw(st.booleans())
    builder = _Builder(draw, mode) if mode == "pynative" else _ChainBuilder(draw, mode, pynative_first)
    program = builder.program()
    if jit_earlier:
        program.defs.append([f for f in program.body if isinstance(f, Function)])
        program.body = [s for s in program.body if not isinstance(s, Function)]
    program.blank_first = blank_first
    return program


def faults(program: Program) -> st.SearchStrategy[tuple[Fault, Fault]]:
    """A nan fault and a diff fault of ``program``, each on one of its constants or weights:
    nine times in ten on one that an op which runs takes, else on any (then nothing changes)."""
    events = trace(program)
    ran = {e.const for e in events} | {w for e in events for w in e.weights}
    nan = [Fault("nan", const=c.id) for c in program.consts if c.nan is not None]
    diff = [Fault("diff", const=c.id) for c in program.consts if c.diff is not None]
    diff += [Fault("diff", weight=w.id) for w in program.all_weights]

    def choose(options: list[Fault]) -> st.SearchStrategy[Fault]:
        taken = [f for f in options if (f.const if f.const is not None else f.weight) in ran]
        if not options:
            return st.just(CLEAN)
        if not taken or len(taken) == len(options):
            return st.sampled_from(options)
        return st.one_of(*[st.sampled_from(taken)] * 9, st.sampled_from(options))

    return st.tuples(choose(nan), choose(diff))


# --------------------------------------------------------------------------- running


def nan_answer(report):
    """What a ``%%msnan`` report says, as plain values (also run inside a kernel: no annotations)."""
    if report is None:
        return None
    c = report.culprit
    culprit = None
    if c is not None:
        culprit = {"name": c.name, "op_type": c.op_type, "made_here": c.made_here, "place": c.place,
                   "code": c.first_code, "kind": c.kind, "slot": c.slot}  # fmt: skip
    return {"mode": report.mode, "checked_ops": report.checked_ops, "notes": list(report.notes), "culprit": culprit}


class ShellRunner:
    """Runs cells in an in-process IPython shell with msdebug loaded, each with ``store_history``
    (so its In [N] names it), and keeps the reports the magics show (shown as one word)."""

    def __init__(self, ip: Any) -> None:
        from msdebug.dumps.diff import DiffReport
        from msdebug.dumps.nan import NanReport
        from msdebug.recorders.diff import SavedRun

        self.ip = ip
        self.reports: list = []
        self.numbers: list[int] = []  # the cells run here, whose outputs forget() lets go
        formatters = ip.display_formatter.formatters
        self._saved = []
        for kind in ("text/plain", "text/html"):
            for t in (NanReport, DiffReport, SavedRun):
                formatter = formatters[kind]
                self._saved.append((formatter, t, formatter.type_printers.get(t)))
                formatter.for_type(t, self._keep if kind == "text/plain" else (lambda obj: None))

    def _keep(self, obj: Any, p: Any, cycle: bool) -> None:
        self.reports.append(obj)
        p.text(f"<{type(obj).__name__}>")

    def close(self) -> None:
        for formatter, t, old in self._saved:
            formatter.type_printers.pop(t, None)
            if old is not None:
                formatter.type_printers[t] = old

    def run(self, cells: list[str], magic: str) -> tuple[list[int], Any, str]:
        """Run the cells, the last under ``%%magic``; their In [N] numbers, the last one's value,
        and the error of the first cell that failed ('' when none did)."""
        numbers, value = [], None
        self.reports.clear()
        for i, source in enumerate(cells):
            numbers.append(self.ip.execution_count)
            self.numbers.append(self.ip.execution_count)
            result = self.ip.run_cell(f"%%{magic}\n{source}" if i == len(cells) - 1 else source, store_history=True)
            error = result.error_before_exec or result.error_in_exec
            if error is not None:
                return numbers, None, f"cell {i} failed: {type(error).__name__}: {error}"
            value = result.result
        return numbers, value, ""

    def nan(self, cells: list[str]) -> tuple[list[int], dict | None, str]:
        from msdebug.dumps.nan import NanReport

        numbers, _, error = self.run(cells, "msnan")
        reports = [r for r in self.reports if isinstance(r, NanReport)]
        return numbers, nan_answer(reports[-1]) if reports else None, error

    def forget(self) -> None:
        """Let go of the outputs the shell keeps of the cells run here (``Out[N]``, ``_N``, ``_``):
        a report holds its runs. (``%reset out`` would also collect garbage: a second of a process
        that imported MindSpore.)"""
        out = self.ip.user_ns.get("Out")
        for number in self.numbers:
            if isinstance(out, dict):
                out.pop(number, None)
            for namespace in (self.ip.user_ns, self.ip.user_ns_hidden):  # the displayhook pushes to both
                namespace.pop(f"_{number}", None)
        self.numbers.clear()
        hook = self.ip.displayhook
        hook._, hook.__, hook.___ = "", "", ""
        for namespace in (self.ip.user_ns, self.ip.user_ns_hidden):
            namespace.update({"_": "", "__": "", "___": ""})
        self.reports.clear()


_NAN_ANSWER = inspect.getsource(nan_answer)  # read now: a file edited while a soak runs is not this one
_KERNEL_SHIM = """\
%load_ext msdebug
from msdebug.dumps.nan import NanReport as _NanReport
_msdebug_reports = []
def _msdebug_keep(report, p, cycle):
    _msdebug_reports.append(report)
    p.text(repr(report))
get_ipython().display_formatter.formatters["text/plain"].for_type(_NanReport, _msdebug_keep)
"""


class KernelRunner:
    """Runs cells in a fresh real kernel: GRAPH and @jit run as graphs there (MindSpore reads its
    data dump's config at a process's first graph compile, and compiles cells from their files)."""

    def __init__(self, graph: bool = False) -> None:
        from helpers import Kernel

        self.kernel = Kernel()
        self.dumps: set[str] = set()
        setup = _KERNEL_SHIM + _NAN_ANSWER + ("%mscontext mode=graph\n" if graph else "")
        status, outputs = self.kernel.run(setup)
        if status != "ok":
            self.close()
            raise RuntimeError(f"the kernel's first cell failed: {outputs}")

    def nan(self, cells: list[str]) -> tuple[list[int], dict | None, str]:
        numbers = []
        self.kernel.run("_msdebug_reports.clear()")
        for i, source in enumerate(cells):
            status, outputs = self.kernel.run(f"%%msnan\n{source}" if i == len(cells) - 1 else source)
            numbers.append(self.kernel.last_reply.get("execution_count", -1))
            if status != "ok":
                error = next((f"{o['ename']}: {o['evalue']}" for o in outputs if o["type"] == "error"), status)
                return numbers, None, f"cell {i} failed: {error}"
        answer = ast.literal_eval(
            self.kernel.evaluate("", "nan_answer(_msdebug_reports[-1] if _msdebug_reports else None)")
        )
        for note in (answer or {}).get("notes", []):
            self.dumps.update(re.findall(r"set up a data dump in (\S+?) for", note))
        return numbers, answer, ""

    def close(self) -> None:
        """End the kernel, then remove the data dumps msdebug set up for it (MindSpore writes them read-only)."""
        self.kernel.close()
        for found in self.dumps:
            path = Path(found)
            if path.name.startswith("msdebug_nan_"):
                for inner in [path, *path.rglob("*")]:
                    if inner.is_dir() and not inner.is_symlink():
                        inner.chmod(0o700)
                shutil.rmtree(path, ignore_errors=True)


# --------------------------------------------------------------------------- checking


def _place(event: Event, numbers: list[int]) -> str:
    return f"cell [{numbers[event.cell]}], line {event.line}"


def _expected(event: Event, numbers: list[int]) -> str:
    return f"{event.name} ({event.op_type}) at {_place(event, numbers)}: `{event.code.strip()}`"


def _culprit(c: dict) -> str:
    how = "made it" if c["made_here"] else "received it"
    return f"{c['name']} ({c['op_type']}, {c['slot']}, {how}) at {c['place']}: `{c['code']}`"


def check_nan(runner: Any, program: Program, fault: Fault) -> list[str]:
    """The program under ``%%msnan`` with ``fault`` (a "nan" one, or CLEAN); the wrong answers."""
    numbers, answer, error = runner.nan(render(program, fault).cells)
    if error:
        return [f"%%msnan: {error}"]
    if answer is None:
        return ["%%msnan showed no report"]
    events = trace(program, fault)
    expected = expected_culprit(program, fault) if fault.for_ == "nan" else None
    culprit = answer["culprit"]
    wrong = []
    if expected is None:
        if culprit is not None:
            wrong.append(f"%%msnan: expected all finite, got {_culprit(culprit)}")
    elif culprit is None:
        wrong.append(f"%%msnan: expected {_expected(expected, numbers)} to make it, got all finite; {answer['notes']}")
    else:
        want = (expected.name, expected.op_type, True, _place(expected, numbers), expected.code.strip())
        got = (culprit["name"], culprit["op_type"], culprit["made_here"], culprit["place"], culprit["code"])
        if want != got:
            wrong.append(f"%%msnan: expected {_expected(expected, numbers)} to make it, got {_culprit(culprit)}")
        kind = next(s.kind for s in SITES.values() if s.op_type == expected.op_type)
        if kind not in culprit["kind"]:
            wrong.append(f"%%msnan: expected {kind} from {expected.name}, got {culprit['kind']}")
    hooked = [e for e in events if not e.graph]
    if program.mode == "pynative" and answer["checked_ops"] != len(hooked):
        wrong.append(f"%%msnan: checked {answer['checked_ops']} ops; the cell runs {len(hooked)}")
    return wrong


def check_diff(runner: ShellRunner, program: Program, fault: Fault, name: str) -> list[str]:
    """The clean program's run saved as ``name``; the program with ``fault`` (a "diff" one)
    against it, and the clean program against it again; the wrong answers."""
    from msdebug.dumps.diff import DiffReport
    from msdebug.recorders.diff import SavedRun

    events = trace(program)
    wrong = []
    _, saved, error = runner.run(render(program).cells, f"msdiff --save {name}")
    if error or not isinstance(saved, SavedRun):
        return [f"%%msdiff --save: {error or f'returned {saved!r}'}"]
    if len(saved.run.ops) != len(events):
        wrong.append(f"%%msdiff --save: saved {len(saved.run.ops)} ops; the cell runs {len(events)}")
    if fault.for_ == "diff":
        numbers, report, error = runner.run(render(program, fault).cells, f"msdiff --against {name}")
        if error or not isinstance(report, DiffReport):
            return [*wrong, f"%%msdiff --against (changed): {error or f'returned {report!r}'}"]
        expected = expected_culprit(program, fault)
        found = report.culprit
        if expected is None and found is not None:
            wrong.append(
                f"%%msdiff: expected agree (no op that runs takes the change), got {found[0].name} at {found[0].cell}"
            )
        elif expected is not None and found is None:
            wrong.append(f"%%msdiff: expected {_expected(expected, numbers)}, got agree ({report.compared_ops} ops)")
        elif expected is not None:
            op, how = found
            if (op.name, op.cell, op.code) != (expected.name, _place(expected, numbers), expected.code.strip()) or how:
                wrong.append(f"%%msdiff: expected {_expected(expected, numbers)}, got {op.name} ({op.op_type}) "
                             f"at {op.cell}: `{op.code}`{'; ' + how if how else ''}")  # fmt: skip
    _, report, error = runner.run(render(program).cells, f"msdiff --against {name}")
    if error or not isinstance(report, DiffReport):
        return [*wrong, f"%%msdiff --against (unchanged): {error or f'returned {report!r}'}"]
    if report.differs:
        wrong.append(f"%%msdiff: the unchanged program differs at {report.first.a.name} ({report.first.a.cell})")
    elif events and (report.nothing_compared or report.compared_ops != len(events)):
        wrong.append(f"%%msdiff: the unchanged program: {report.compared_ops} ops of {len(events)} aligned; "
                     f"{report.nothing_compared}")  # fmt: skip
    elif not events and not report.nothing_compared:
        wrong.append("%%msdiff: a program without ops agrees about nothing")
    return wrong


def check_pynative(runner: ShellRunner, program: Program, nan: Fault, diff: Fault, name: str,
                   clean_nan: bool = True) -> dict[str, list[str]]:  # fmt: skip
    """Every check of a PyNative program: %%msnan with its nan fault (and, with ``clean_nan``,
    without), %%msdiff with its diff fault against the clean run saved as ``name``, and without."""
    found = check_nan(runner, program, nan)
    if clean_nan and nan.for_ != "clean":
        found += check_nan(runner, program, CLEAN)
    checks = {"msnan": found, "msdiff": check_diff(runner, program, diff, name)}
    runner.forget()
    return checks


def check_in_kernel(program: Program, nan: Fault) -> list[str]:
    """A program in a fresh kernel (GRAPH mode for a "graph" one): %%msnan with its nan fault,
    the first graph the kernel compiles, then the clean program."""
    runner = KernelRunner(graph=program.mode == "graph")
    try:
        return check_nan(runner, program, nan) + check_nan(runner, program, CLEAN)
    finally:
        runner.close()


# --------------------------------------------------------------------------- many programs


@dataclass
class Tally:
    """What a run of many programs found: per check, how many programs it ran and got wrong."""

    programs: int = 0
    checked: Counter = field(default_factory=Counter)  # "msnan", "GRAPH", "msdiff" -> programs
    wrong: Counter = field(default_factory=Counter)
    wrong_programs: int = 0
    examples: list[str] = field(default_factory=list)  # the first wrong programs, with what was wrong
    seconds: float = 0.0

    def add(self, program: Program, checks: dict[str, list[str]], shown: tuple[Fault, ...], keep: int = 5) -> None:
        self.programs += 1
        for name, problems in checks.items():
            self.checked[name] += 1
            self.wrong[name] += bool(problems)
        problems = [p for ps in checks.values() for p in ps]
        if problems:
            self.wrong_programs += 1
            if len(self.examples) < keep:
                self.examples.append(describe(program, *shown) + "\n\n" + "\n".join(f"WRONG {p}" for p in problems))

    def summary(self) -> str:
        return (f"wrong {self.wrong_programs} of {self.programs} programs (msnan {self.wrong['msnan']}/GRAPH "
                f"{self.wrong['GRAPH']}, msdiff {self.wrong['msdiff']})")  # fmt: skip

    def as_dict(self) -> dict:
        return {"programs": self.programs, "checked": dict(self.checked), "wrong": dict(self.wrong),
                "wrong_programs": self.wrong_programs, "examples": self.examples, "seconds": round(self.seconds, 1)}  # fmt: skip


def run_programs(count: int, *, seed: int | None = None, derandomize: bool = False, kernels_every: int = 0,
                 progress=None) -> Tally:  # fmt: skip
    """Generate ``count`` programs and check every answer, in an in-process IPython shell started
    here with msdebug loaded; with ``kernels_every`` N, one program in N (drawn) is a GRAPH or
    @jit one instead, checked in a fresh kernel. The cells' own output is dropped."""
    import contextlib
    import io
    import os
    import tempfile
    import time

    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    tally = Tally()
    started = time.perf_counter()
    ip = start_ipython() or get_ipython()  # the second call of start_ipython in a process returns None
    ip.run_line_magic("load_ext", "msdebug")
    runner = ShellRunner(ip)
    home = os.getcwd()
    work = tempfile.mkdtemp(prefix="msdebug-programs-")
    os.chdir(work)  # %%msdiff saves its runs under msdiff_runs/ here
    counter = itertools.count()

    @settings(max_examples=count, database=None, deadline=None, derandomize=derandomize,
              phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(st.data())
    def one(data: st.DataObject) -> None:
        index = next(counter)
        # Drawn, like everything that shapes a program: hypothesis replays draws, not counters.
        in_kernel = kernels_every and data.draw(st.integers(1, kernels_every), label="kernel") == 1
        mode = data.draw(st.sampled_from(("graph", "jit")), label="mode") if in_kernel else "pynative"
        # The clean program under %%msnan for one in three: each run of a magic costs its hooks'
        # installation (about 30 ms of CPU), and the clean program runs twice under %%msdiff.
        clean_nan = data.draw(st.integers(0, 2), label="clean") == 0
        program = data.draw(programs(mode), label="program")
        nan, diff = data.draw(faults(program), label="faults")
        quiet = io.StringIO()
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            if in_kernel:
                checks = {"GRAPH": check_in_kernel(program, nan)}
            else:
                checks = check_pynative(runner, program, nan, diff, f"run{index}", clean_nan)
                shutil.rmtree(Path(work) / "msdiff_runs" / f"run{index}", ignore_errors=True)
        tally.add(program, checks, (nan,) if in_kernel else (nan, diff))
        if progress is not None:
            progress(tally)

    try:
        (hypothesis_seed(seed)(one) if seed is not None else one)()
    finally:
        runner.close()
        os.chdir(home)
        shutil.rmtree(work, ignore_errors=True)
        tally.seconds = time.perf_counter() - started
    return tally


def main_json(count: int, derandomize: bool, seed: int | None = None) -> None:
    """In a fresh interpreter: check ``count`` PyNative programs and print the tally as one JSON
    line. MindSpore launches each op before returning (``runtime.launch_blocking``, one-way, so
    set before the first op): msdebug reads every op's values, and each read of an asynchronous
    launch waits on MindSpore's queue, milliseconds on a loaded machine."""
    import json

    import mindspore as ms

    ms.runtime.launch_blocking()
    print(json.dumps(run_programs(count, seed=seed, derandomize=derandomize).as_dict()))
