"""MindSpore's side of ``%msrun``: the scheduler process of the job msrun starts, and what each
rank's flight recorder sees.

msrun runs its task script once as the scheduler (``MS_ROLE=MS_SCHED``); :func:`serve_cluster` is
what that process does. The workers are IPython kernels (:func:`msdebug.ipython.ranks.serve_rank`)
whose cells call ``mindspore.communication.init()`` themselves. In each, a :class:`Watch` tells
the rank's recorder (:mod:`msdebug.ranks.flight`) every communication op it launches: at the
op's call in PyNative, and for each communication node of a graph when the graph runs (GRAPH
mode, ``@jit``). :func:`wait_launched` is the wait at the end of each cell.
"""

from __future__ import annotations

import functools
import inspect
import os
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .hooks import Patches, tensors_in
from .process import _api_module, synchronize

__all__ = ["Launch", "Watch", "device_target", "serve_cluster", "wait_launched"]


def serve_cluster() -> None:
    """Build the cluster as its scheduler, then serve it until the pool kills this process (it
    holds nothing to save)."""
    from mindspore.communication import init

    init()
    while True:
        signal.pause()


@functools.cache
def device_target() -> str:
    """The device this MindSpore runs on when none is chosen ("Ascend", "GPU" or "CPU": the
    backend whose plugin loads here), for ``%msrun start --devices``. Asked of a fresh
    interpreter unless MindSpore is imported here already: importing it in the notebook's
    kernel would be a side effect of starting ranks."""
    import subprocess

    from .version import is_imported

    if is_imported():
        import mindspore

        return str(mindspore.get_context("device_target"))
    asked = subprocess.run(
        [sys.executable, "-c", "import mindspore; print(mindspore.get_context('device_target'))"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    said = asked.stdout.strip().splitlines()
    if asked.returncode != 0 or not said:
        from ..errors import MsDebugError

        why = (asked.stderr.strip().splitlines() or [f"exit status {asked.returncode}"])[-1]
        raise MsDebugError(f"--devices: MindSpore could not say which device it runs on: {why}")
    return said[-1]


# ----------------------------------------------------------------- the flight recorder's wrappers


@dataclass
class Launch:
    """One communication op a rank launched, as the wrappers see it (the recorder names it)."""

    op: str  # the primitive's class (AllReduce, InnerCommAllReduce) or the graph node's op
    group: str
    tensors: list[tuple[str, tuple[int, ...]]]  # (dtype, shape) of each input tensor, then of a receive
    frames: list[tuple[str, int, str]]  # (file, line, function) outside MindSpore and msdebug, innermost first
    peer: int | None = None  # the other rank of a point-to-point op (its rank in ``group``)
    ranks: tuple[int, ...] = ()  # the world ranks of ``group``, when MindSpore says
    graph: str = ""  # the graph whose run launched it; then frames[0] is the node's own line


_MAX_FRAMES = 4
_PEERS = ("dst", "src", "dest_rank", "src_rank")
_GRAPH_CACHE = 64  # graphs whose communication nodes are remembered
_state = threading.local()


class Watch:
    """Every communication primitive's ``__call__`` and every graph run, wrapped at class level
    to tell ``note`` what is launched (then the op runs as before); :meth:`remove` puts each
    attribute back exactly, as :class:`~msdebug.backend.hooks.OpHooks` does with its own.

    Not :class:`OpHooks` itself: that wraps every op for one watched cell and holds SIGINT
    meanwhile, with one observer at a time; this one stays for the rank's life, wraps only
    communication, and nests with it (``%%msnan`` on a rank wraps these wrappers, and puts them
    back; a legacy primitive's wrapper looks ``Primitive.__call__`` up at each call, so it
    finds the hooks' wrapper there).

    ``note(launch)`` must not raise (what it raises is counted in :attr:`errors`, the op runs
    all the same); ``graph_nodes(phase, ir_text)`` turns a compiled graph's IR (the text
    MindSpore's ``dump_func_graph`` gives) into the launches of its communication nodes, each
    with its own frames, and is asked once per graph.
    """

    def __init__(
        self,
        note: Callable[[Launch], None],
        is_communication: Callable[[str], bool],
        graph_nodes: Callable[[str], list[Launch]],
    ) -> None:
        self.note = note
        self.is_communication = is_communication
        self.graph_nodes = graph_nodes
        self.errors = 0
        self._patches = Patches()
        self._graphs: dict[str, list[Launch]] = {}
        self._jit_phase = ""
        self._groups: dict[str, tuple[int, ...]] = {}

    @property
    def installed(self) -> bool:
        return bool(self._patches)

    def install(self) -> Watch:
        """Wrap (MindSpore must be imported); installing twice is harmless."""
        if not self._patches:
            self._patches.apply(self._plan())
        return self

    def remove(self) -> None:
        self._patches.restore()

    def _plan(self) -> list[tuple[Any, str, Callable]]:
        from mindspore.ops.auto_generate import gen_ops_prim
        from mindspore.ops.operations import comm_ops
        from mindspore.ops.primitive import Primitive

        plan: list[tuple[Any, str, Callable]] = []
        for module in (comm_ops, gen_ops_prim):
            for name, cls in list(vars(module).items()):
                if (
                    isinstance(cls, type) and issubclass(cls, Primitive) and not name.startswith("_")
                    and cls.__module__ == module.__name__ and self.is_communication(name)
                ):  # fmt: skip
                    plan.append((cls, "__call__", self._primitive(cls)))
        api = _api_module()
        if api is not None:
            graph = getattr(api, "_CellGraphExecutor", None)
            if graph is not None and "_exec_pip" in graph.__dict__:
                plan.append((graph, "_exec_pip", self._cell_graph(graph.__dict__["_exec_pip"])))
            pynative = getattr(api, "_PyNativeExecutor", None)
            if pynative is not None and {"set_jit_compile_phase", "grad_jit"} <= set(pynative.__dict__):
                plan.append(
                    (pynative, "set_jit_compile_phase", self._jit_phase_set(pynative.__dict__["set_jit_compile_phase"]))
                )
                plan.append((pynative, "grad_jit", self._jit_run(pynative.__dict__["grad_jit"])))
        return plan

    # -- primitives
    def _primitive(self, cls) -> Callable:
        own = cls.__dict__.get("__call__")
        names = _parameters(own) if own is not None else ()
        watch = self

        def __call__(prim, *args, **kwargs):
            if not getattr(_state, "inside", False):
                _state.inside = True  # a primitive that calls another is one launch
                try:
                    watch._launched(prim, names, args, kwargs)
                finally:
                    _state.inside = False
            if own is not None:
                return own(prim, *args, **kwargs)
            return super(cls, prim).__call__(*args, **kwargs)  # looked up now: hooks may wrap it

        __call__.__wrapped__ = own
        return __call__

    def _launched(self, prim, names: tuple[str, ...], args: tuple, kwargs: dict) -> None:
        try:
            named = dict(zip(names, args, strict=False)) | kwargs

            def value(name: str):
                return named[name] if named.get(name) is not None else _attribute(prim, name)

            group = value("group") or ""
            peer = next((value(name) for name in _PEERS if value(name) is not None), None)
            tensors = [_described(tensor) for tensor in tensors_in(args)[:3]]
            if not tensors:  # a receive: what it will receive
                shape, dtype = value("shape"), value("dtype")
                if shape is not None and dtype is not None:
                    tensors = [(_dtype_name(dtype), tuple(int(d) for d in shape))]
            self.note(
                Launch(type(prim).__name__, str(group), tensors, _user_frames(), _int(peer), self._ranks(str(group)))
            )
        except Exception:  # noqa: BLE001 - recording must never fail the person's op
            self.errors += 1

    def _ranks(self, group: str) -> tuple[int, ...]:
        if group not in self._groups:
            try:
                from mindspore.communication import get_process_group_ranks

                self._groups[group] = tuple(int(rank) for rank in get_process_group_ranks(group))
            except Exception:  # noqa: BLE001 - before init(), or a MindSpore without it
                return ()
        return self._groups[group]

    # -- graphs
    def _cell_graph(self, original: Callable) -> Callable:
        watch = self

        @functools.wraps(original)
        def _exec_pip(executor, obj, *args, phase=""):
            watch._graph_run(phase)
            return original(executor, obj, *args, phase=phase)

        return _exec_pip

    def _jit_phase_set(self, original: Callable) -> Callable:
        watch = self

        @functools.wraps(original)
        def set_jit_compile_phase(executor, phase, *args, **kwargs):
            if phase:
                watch._jit_phase = phase
            return original(executor, phase, *args, **kwargs)

        return set_jit_compile_phase

    def _jit_run(self, original: Callable) -> Callable:
        watch = self

        @functools.wraps(original)
        def grad_jit(executor, *args, **kwargs):
            if watch._jit_phase:
                watch._graph_run(watch._jit_phase)
            return original(executor, *args, **kwargs)

        return grad_jit

    def _graph_run(self, phase: str) -> None:
        try:
            nodes = self._graphs.get(phase)
            if nodes is None:
                nodes = self._graphs[phase] = self.graph_nodes(_graph_ir(phase))
                while len(self._graphs) > _GRAPH_CACHE:
                    del self._graphs[next(iter(self._graphs))]
            if not nodes:
                return
            frames = _user_frames()
            for node in nodes:
                self.note(
                    Launch(node.op, node.group, node.tensors, [*node.frames, *frames][:_MAX_FRAMES], node.peer,
                           self._ranks(node.group), node.graph)
                )  # fmt: skip
        except Exception:  # noqa: BLE001 - recording must never fail the person's graph
            self.errors += 1


def _graph_ir(phase: str) -> str:
    """The IR text of the compiled graph ``phase`` ('' when MindSpore cannot give it)."""
    from mindspore._c_expression import GraphExecutor_, dump_func_graph

    graph = GraphExecutor_.get_instance().get_func_graph(phase)
    return dump_func_graph(graph) if graph is not None else ""


def _parameters(function: Callable) -> tuple[str, ...]:
    """The names of ``function``'s parameters after ``self``."""
    try:
        return tuple(inspect.signature(function).parameters)[1:]
    except (TypeError, ValueError):
        return ()


def _attribute(prim, name: str):
    """A primitive's attribute ``name`` (MindSpore keeps most in ``attrs``), or None."""
    value = getattr(prim, "attrs", {}).get(name)
    if value is None:
        value = getattr(prim, name, None)
    return None if callable(value) else value


def _int(value) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _dtype_name(dtype) -> str:
    return str(dtype).lower()


def _described(tensor) -> tuple[str, tuple[int, ...]]:
    return _dtype_name(tensor.dtype), tuple(int(d) for d in tensor.shape)


@functools.cache
def _library_prefixes() -> tuple[str, ...]:
    """Frames under these are MindSpore's, msdebug's, Python's or an installed package's."""
    import sysconfig

    import mindspore

    paths = sysconfig.get_paths()
    found = {
        os.path.dirname(os.path.abspath(mindspore.__file__)),
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    }
    found.update(os.path.abspath(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths)
    return tuple(sorted(path + os.sep for path in found))


def _user_frames() -> list[tuple[str, int, str]]:
    """The caller's frames outside the libraries (a notebook cell's, a script's), innermost first."""
    skip = _library_prefixes()
    found = []
    frame = sys._getframe(2)
    while frame is not None and len(found) < _MAX_FRAMES:
        name = frame.f_code.co_filename
        if not name.startswith(skip) and not name.startswith("<frozen"):
            found.append((name, frame.f_lineno, frame.f_code.co_name))
        frame = frame.f_back
    return found


def wait_launched() -> str:
    """Wait for every op this rank has launched (PyNative queues them: a collective whose peers
    never come keeps this waiting); '' or the first line of what a failed op raised. The pool
    knows a rank waiting here by this function's name."""
    return synchronize()
