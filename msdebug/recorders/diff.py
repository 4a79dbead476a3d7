"""Record a run for ``%%msdiff``: every op of a PyNative block with its tensors, into a directory.

:class:`RunRecorder` observes :class:`msdebug.backend.hooks.OpHooks` as ``%%msnan``'s watch
does, names each op as MindSpore names its kernels (:class:`~msdebug.backend.hooks.OpNames`),
and keeps each tensor once: an op's input that an earlier op made refers to that op's values.
A run that is compared at once keeps them in memory (up to 512 MiB); a run that is saved
writes one ``.npy`` per tensor and ``run.json`` last, in one rename, so a directory with one is
complete; :func:`msdebug.dumps.runs.read_run` reads it back, in this kernel, another one or a
terminal. :class:`DiffSession` runs the cell once or twice with such a recorder (PyNative) or
a data dump (GRAPH) and compares.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import linecache
import os
import re
import time
import weakref
from pathlib import Path
from typing import Any

from .. import interrupts
from ..backend.hooks import is_tensor, tensors_in
from ..dumps.diff import read_any_run
from ..dumps.nan import source_text
from ..dumps.rendered import Rendered, rendered_by
from ..dumps.runs import RUN_FILE, RUN_FORMAT, RUN_VERSION, Run, read_run
from ..errors import DumpError, InvalidValueError, did_you_mean
from .datadump import graph_only_reason
from .hooked import HookedCell

__all__ = ["DiffSession", "RunRecorder", "SavedRun", "check_run_name", "read_against", "save_run"]


class RunRecorder:
    """Observer of :class:`OpHooks` that writes each op and its tensors under ``root`` (a new
    directory: an existing one is never written into)."""

    MAX_OPS = 200_000
    MAX_BYTES = 4 << 30  # a cell that loops for ever must not fill the disk: recording stops there
    MEMORY_BYTES = 512 << 20  # kept in memory (``keep_in_memory``) up to this; files beyond

    def __init__(
        self,
        root: str | os.PathLike,
        label: str,
        meta: dict | None = None,
        keep_in_memory: bool = False,
        namespace: dict | None = None,
    ) -> None:
        from ..backend.hooks import OpNames

        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise DumpError(f"{self.root} exists already; msdebug records a run only into a new directory.") from None
        self.label = label
        self.meta = dict(meta or {})
        self.names = OpNames()
        self.entries: list[dict] = []
        self.unreadable = 0
        self.bytes = 0
        self.started = time.perf_counter()
        self.stopped = ""  # why recording stopped early, if it did
        self.keep_in_memory = keep_in_memory  # a run compared at once and never saved: no file per tensor
        self.arrays: dict[str, Any] = {}
        self._in_memory = 0
        self._files: dict[int, tuple[weakref.ref, dict]] = {}
        # Where a value no op of the cell made comes from: the notebook name that holds it, or the
        # Parameter whose gradient an optimizer was given. Said when such a value differs.
        self._origins: dict[int, tuple[weakref.ref, str]] = {}
        self._namespace = namespace or {}
        for name, value in self._tensor_names():
            self._origin(value, name)

    def _tensor_names(self) -> list[tuple[str, Any]]:
        return [(n, v) for n, v in list(self._namespace.items())[:10_000] if not n.startswith("_") and is_tensor(v)]

    def _origin(self, tensor: Any, label: str) -> None:
        try:
            self._origins.setdefault(id(tensor), (weakref.ref(tensor), label))
        except TypeError:  # a Tensor without weak references: its origin stays unnamed
            pass

    # -- HookObserver
    def enter_cell(self, cell: Any, args: tuple = ()) -> None:
        from ..backend.hooks import optimizer_parameters

        names = optimizer_parameters(cell)
        self.names.enter(cell)
        if names is not None:
            # An optimizer's inputs are gradients, which the backward pass made: no hook sees it, and
            # optimizers often run as graphs (@jit). They are recorded as one op of the optimizer's
            # type, so a difference made in the backward pass is found there, and named as a gradient.
            for position, gradient in enumerate(tensors_in(args)):
                self._origin(gradient, f"gradient of {names[position] if position < len(names) else position}")
            self.op(type(cell).__name__, args, None)

    def exit_cell(self, cell: Any) -> None:
        self.names.exit(cell)

    def op(self, op_type: str, args: tuple, output: Any) -> None:
        from ..backend.hooks import user_frame

        outputs = tensors_in(output)
        if self.stopped or self.names.repeated(outputs):
            return
        index = len(self.entries)
        if index >= self.MAX_OPS or self.bytes >= self.MAX_BYTES:
            self.stopped = (
                f"recording stopped after {index} ops ({self.bytes >> 20} MiB), at msdebug's cap of "
                f"{self.MAX_OPS:,} ops or {self.MAX_BYTES >> 30} GiB a run: the rest was not recorded"
            )
            return
        entry: dict[str, Any] = {"name": self.names.name(op_type), "type": op_type, "scope": self.names.scope}
        entry["inputs"] = [self._ref(t, index, "input", slot) for slot, t in enumerate(tensors_in(args))]
        entry["outputs"] = [self._save(t, index, "output", slot) for slot, t in enumerate(outputs)]
        frame = user_frame()
        if frame is not None:
            path, line = frame.f_code.co_filename, frame.f_lineno
            entry["source"], entry["code"], entry["cell"] = source_text(path, line, linecache.getline(path, line))
        self.entries.append(entry)

    # -- tensors
    def _ref(self, tensor: Any, index: int, io: str, slot: int) -> dict:
        known = self._files.get(id(tensor))
        if known is not None and known[0]() is tensor:
            return dict(known[1])  # made by an earlier op (or an input seen before): its file
        ref = self._save(tensor, index, io, slot)
        ref["origin"] = self._origin_of(tensor)  # the dict _files keeps too: later uses say it as well
        return ref

    def _origin_of(self, tensor: Any) -> str:
        """Where an input no op of the cell made comes from, in words: ``x``, ``gradient of
        fc.weight``, ``parameter fc.weight``, or ``a value`` when nothing names it."""
        known = self._origins.get(id(tensor))
        if known is not None and known[0]() is tensor:
            return known[1]
        if type(tensor).__name__ == "Parameter":
            return f"parameter {str(getattr(tensor, 'name', ''))[:200]}"
        return "a value"

    def _save(self, tensor: Any, index: int, io: str, slot: int) -> dict:
        import numpy as np

        from ..backend.hooks import to_numpy

        try:
            values = to_numpy(tensor)
        except Exception:  # noqa: BLE001 - a dtype asnumpy() cannot give (bfloat16 comes back as a void dtype, below)
            self.unreadable += 1
            return {
                "file": None,
                "shape": list(getattr(tensor, "shape", ())),
                "dtype": str(getattr(tensor, "dtype", "")),
            }
        dtype = str(getattr(tensor, "dtype", values.dtype))  # MindSpore's name: Float16, BFloat16, Int64
        if values.dtype.kind == "V":  # bfloat16: numpy cannot store it; float32 holds each value exactly
            values = values.astype(np.float32)
        file = f"{index:06d}.{io}.{slot}.npy"
        if self.keep_in_memory and self._in_memory + values.nbytes <= self.MEMORY_BYTES:
            # asnumpy() may hand back the tensor's own memory (a Parameter's, on CPU): an op that
            # updates it in place later (AssignAdd, an optimizer) would change what was recorded.
            self.arrays[file] = values if values.flags.owndata else values.copy()
            self._in_memory += values.nbytes
        else:
            np.save(self.root / file, values, allow_pickle=False)
        self.bytes += values.nbytes
        ref = {"file": file, "shape": list(values.shape), "dtype": dtype}
        try:
            self._files[id(tensor)] = (weakref.ref(tensor), ref)
        except TypeError:  # a Tensor without weak references: saved again if seen again
            pass
        return ref

    # -- the end
    def finish(self) -> Run:
        """Write ``run.json`` (in one rename) and read the run back."""
        self._name_new_values()
        index = {
            "format": RUN_FORMAT,
            "version": RUN_VERSION,
            "label": self.label,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "seconds": round(time.perf_counter() - self.started, 3),
            "unreadable": self.unreadable,
            **self.meta,
            "stopped": self.stopped,
            "notes": [],
            "ops": self.entries,
        }
        run = _write_index(self.root, index)
        if self.arrays:
            for op in run.ops:
                op.inputs = [self._with_values(ref) for ref in op.inputs]
                op.outputs = [self._with_values(ref) for ref in op.outputs]
        return run

    def _name_new_values(self) -> None:
        """Values the cell made outside the ops (``xb = next(batches)``) are named by the notebook
        name that holds them after it."""
        holders = {id(value): (name, value) for name, value in self._tensor_names()}
        for ref, item in self._files.values():
            tensor = ref()
            found = holders.get(id(tensor)) if tensor is not None and item.get("origin") == "a value" else None
            if found is not None and found[1] is tensor:
                item["origin"] = found[0]

    def _with_values(self, ref):
        from dataclasses import replace

        kept = self.arrays.get(ref.path.name) if ref.path is not None else None
        return ref if kept is None else replace(ref, values=kept)


# --------------------------------------------------------------------------- one run of a cell


class Side(HookedCell):
    """One run of the cell, recorded: under the hooks in PyNative mode, from a data dump in
    GRAPH mode. ``mode`` forces one for the run (the context is put back after it); ``dtype``
    runs the networks of ``namespace`` in that float type (``Cell.to_float``, undone after).
    The lifecycle (SIGINT held, scopes, hooks, close) is :class:`~msdebug.recorders.hooked.HookedCell`'s."""

    def __init__(self, session: DiffSession, label: str, mode: str | None = None, dtype: str | None = None) -> None:
        super().__init__()
        self.session, self.label, self.mode, self.dtype = session, label, mode, dtype
        self.run: Run | None = None
        self._recorder: RunRecorder | None = None

    @property
    def graph(self) -> bool:
        from ..backend import get_backend

        return self.mode == "graph" if self.mode else get_backend().read("mode") == 0

    def _setup(self) -> None:
        from .. import settings
        from . import datadump

        self.session.before_side(self)
        if self.mode is not None:
            self.enter_scope(settings.context(mode=self.mode))
        if self.dtype is not None:
            from ..backend.diff import FloatScope, networks_in

            cells = networks_in(self.session.namespace)
            if not cells:
                from ..errors import MagicUsageError

                raise MagicUsageError(
                    f"--dtype {self.dtype}: no network (a Cell or a Model) in the namespace to run in {self.dtype}."
                )
            self.enter_scope(FloatScope(cells, self.dtype))
        if self.graph:
            self.use_dump(*datadump.dump_for_cell(self.session.code, magic="%%msdiff", rerun=_NO_RERUN))
        else:
            self._recorder = RunRecorder(
                self.session.side_dir(self),
                self.session.run_label(self),
                self.session.meta(self),
                keep_in_memory=not self.session.saves(self),
                namespace=self.session.namespace,
            )
            self.watch(self._recorder)

    def _finished(self, failed: bool) -> None:
        from ..dumps.runs import run_from_new_iterations

        if failed:
            self.session.discard()  # here, where a second Ctrl-C waits for it
            return
        if self._recorder is not None:
            self.run = self._recorder.finish()
            reason = graph_only_reason(self.session.code, self.session.namespace)
            if reason:
                self.run.notes.append(f"{self.label}: the hooks record PyNative ops only; {reason}")
        elif self.dump_path:
            self.run = run_from_new_iterations(self.dump_path, self._before, self.label, self.session.job_rank)


_UNCLAIMED: set[Path] = set()  # scratch folders no report holds yet: removed at exit at the latest


def _remove_scratch(path: Path) -> None:
    import shutil

    _UNCLAIMED.discard(path)
    shutil.rmtree(path, ignore_errors=True)


@atexit.register
def _remove_unclaimed() -> None:
    for path in list(_UNCLAIMED):
        _remove_scratch(path)


def _to_disk(run: Run) -> Run:
    """The values a recorder kept in memory, written beside its ``run.json`` and let go: a report
    keeps the run for its walker, which reads them back as memory maps, and the notebook's
    ``Out[]`` must not pin up to 512 MiB of tensors a side."""
    from dataclasses import replace

    import numpy as np

    written: set[Path] = set()
    for op in run.ops:
        for refs in (op.inputs, op.outputs):
            for position, ref in enumerate(refs):
                if ref.values is None or ref.path is None:
                    continue
                if ref.path not in written:
                    try:
                        with open(ref.path, "xb") as handle:  # a new file in msdebug's own scratch folder
                            np.save(handle, ref.values, allow_pickle=False)
                    except OSError:  # a full disk: the values stay in memory, the report stays whole
                        continue
                    written.add(ref.path)
                refs[position] = replace(ref, values=None)
    return run


_NO_RERUN = "or compare in PyNative mode, where the hooks record every op: %%msdiff --repeat, --dtype or --against"


# --------------------------------------------------------------------------- the session


class DiffSession:
    """What ``%%msdiff`` runs: the cell once or twice (:attr:`sides`), then :meth:`report`.

    ``how``: ``repeat`` (the same cell twice), ``modes`` (PyNative, then GRAPH), ``dtype``
    (as it is, then the networks in ``dtype``), or ``against`` (once, against ``against``: a
    saved run's name or a directory; ``rank``, ``iteration`` and ``graph`` choose in it, see
    :func:`msdebug.dumps.diff.read_any_run`). ``save`` keeps the (first) run as
    ``runs_dir/<save>``. In a process of an msrun job (a ``%%msrun`` cell) each rank saves to
    and compares with its own folder, ``runs_dir/<save>/rank_<R>``.
    The Parameters of the networks in ``namespace`` (or of what ``restore`` names: ``net,opt``)
    are put back before the second run, so both start from the same values, and the report
    says what that covered; ``seed`` (MindSpore's global seed) is set before each.

    The recordings live in a scratch folder that goes with the report (or at once, when
    there is none).
    """

    def __init__(
        self,
        code: str,
        namespace: dict,
        how: str = "repeat",
        *,
        dtype: str | None = None,
        against: str | None = None,
        save: str | None = None,
        seed: int | None = None,
        rtol: float | None = None,
        atol: float | None = None,
        rule: str = "allclose",
        runs_dir: str | os.PathLike = "msdiff_runs",
        restore: str | None = None,
        rank: int | None = None,
        iteration: int | None = None,
        graph: int | None = None,
    ) -> None:
        import tempfile

        from ..backend.process import msrun_rank

        self.code, self.namespace, self.how = code, namespace, how
        self.dtype, self.against, self.save, self.seed = dtype, against, save, seed
        self.rtol, self.atol, self.rule = rtol, atol, rule
        self.runs_dir = Path(runs_dir)
        self.job_rank = msrun_rank()  # a %%msrun cell: each rank saves and compares its own rank_<R>
        self.reference: Run | None = None
        if against is not None:  # a bad name or choice fails before the cell runs
            self.reference = read_against(against, self.runs_dir, rank, iteration, graph, self.job_rank)
        self.save_dir = check_run_name(save, self.runs_dir, self.job_rank) if save is not None else None
        self._holders: list[tuple[str, Any]] | None = None
        if restore is not None:
            if how not in ("repeat", "modes", "dtype"):
                raise InvalidValueError(
                    f"--restore {restore}: Parameters are put back between two runs of the cell; "
                    "use it with --repeat, --modes or --dtype."
                )
            from ..backend.diff import restorable

            self._holders = restorable(namespace, restore)  # a bad name fails before the cell runs
        self.scratch = Path(tempfile.mkdtemp(prefix="msdebug-diff-"))
        # Not a finalizer on the session: sessions are garbage in cycles (their sides), and a
        # collection may run one anywhere, inside a profile hook too (a crash of CPython 3.11's).
        _UNCLAIMED.add(self.scratch)
        self._snapshot = None
        if how == "repeat":
            self.sides = [Side(self, "first run"), Side(self, "second run")]
        elif how == "modes":
            self.sides = [Side(self, "PyNative", mode="pynative"), Side(self, "GRAPH", mode="graph")]
        elif how == "dtype":
            self.sides = [Side(self, "as it is"), Side(self, dtype or "float16", dtype=dtype or "float16")]
        elif how in ("against", "save"):
            self.sides = [Side(self, "this run")]
        else:
            raise ValueError(f"unknown comparison {how!r}")

    @interrupts.protected  # a second Ctrl-C waits: cut short, rmtree leaves half a folder (or EBADF)
    def discard(self) -> None:
        """After a run that failed or was interrupted: its recordings go, and so does a run
        being saved that never got its ``run.json`` (the name is free again)."""
        import shutil

        shutil.rmtree(self.scratch, ignore_errors=True)
        _UNCLAIMED.discard(self.scratch)
        saved = self.save_dir
        if saved is not None and saved.is_dir() and not (saved / RUN_FILE).exists():
            shutil.rmtree(saved, ignore_errors=True)
            if self.job_rank is not None:
                with contextlib.suppress(OSError):  # the name's folder goes with its last rank
                    saved.parent.rmdir()

    def side_dir(self, side: Side) -> Path:
        if self.save_dir is not None and side is self.sides[0]:
            return self.save_dir
        return self.scratch / f"side{self.sides.index(side)}"

    def saves(self, side: Side) -> bool:
        """Whether this side is the run ``--save`` keeps (then every tensor goes to a file)."""
        return self.save is not None and side is self.sides[0]

    def run_label(self, side: Side) -> str:
        """A saved run is known by its name (``NAME/rank_<R>`` in an msrun job); the others by their side."""
        if self.save is None or side is not self.sides[0]:
            return side.label
        return self.save if self.job_rank is None else f"{self.save}/rank_{self.job_rank}"

    def meta(self, side: Side) -> dict:
        from ..backend import get_backend

        backend = get_backend()
        return {
            "mode": "GRAPH" if side.graph else "PyNative",
            "dtype": side.dtype or "as it is",
            "mindspore": backend.version,
            "cell": self.code[:20_000],
        }

    def before_side(self, side: Side) -> None:
        """Before each run: the first takes the Parameters' values, the later ones start from them."""
        from ..backend.diff import ParameterSnapshot, named_networks

        if side is self.sides[0]:
            if len(self.sides) > 1:
                holders = self._holders if self._holders is not None else named_networks(self.namespace)
                self._snapshot = ParameterSnapshot(holders)
        elif self._snapshot is not None:
            self._snapshot.restore()
        if self.seed is not None:
            from ..backend.diff import set_seed

            set_seed(self.seed)

    def report(self):
        """The comparison of the runs (the later side against the earlier, or this run against
        the saved one); for ``--save`` alone, what was saved."""
        from ..dumps.diff import diff_runs

        runs = [side.run for side in self.sides]
        if any(run is None for run in runs):
            _remove_scratch(self.scratch)
            return None
        if self.save is not None and runs[0].kind == "data dump":
            runs[0] = save_run(runs[0], self.save_dir, self.run_label(self.sides[0]))
        if self.how == "save":
            _remove_scratch(self.scratch)
            return SavedRun(runs[0], self.save or "")
        if self.how == "against":
            a, b = runs[0], self.reference
        else:
            b, a = runs
        report = diff_runs(a, b, self.rtol, self.atol, self.rule)
        for run in runs:
            _to_disk(run)
        notes = [
            f"msdebug set up a data dump in {side.dump_path} for this kernel's graphs ({side.label}): MindSpore "
            "dumps every op of every graph it runs, for the rest of this process"
            for side in self.sides
            if side.dump_new
        ]
        if self._snapshot is not None:
            report.restored, report.restored_nothing = self._snapshot.summary, not self._snapshot.count
        report.notes[:0] = notes
        _UNCLAIMED.discard(self.scratch)
        weakref.finalize(report, _remove_scratch, self.scratch)  # the walker reads it while the report lives
        return report


# --------------------------------------------------------------------------- saved runs

_RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$", re.ASCII)


def check_run_name(name: str, runs_dir: str | os.PathLike, rank: int | None = None) -> Path:
    """Where ``--save NAME`` writes: a new directory under ``runs_dir``, never an existing one;
    for rank ``rank`` of an msrun job, ``NAME/rank_<rank>``, beside the other ranks' folders."""
    if not isinstance(name, str) or not _RUN_NAME.match(name) or ".." in name:
        raise InvalidValueError(
            f"--save {name!r}: a run's name is letters, digits, '_', '-' and '.', up to 100, starting with a "
            "letter or digit (it names a directory)."
        )
    path = Path(runs_dir) / name
    if rank is not None and not (path / RUN_FILE).exists():  # a run saved outside msrun is never a rank's folder
        path = path / f"rank_{rank}"
    if path.exists():
        taken = {p.name for p in Path(runs_dir).iterdir()} if Path(runs_dir).is_dir() else set()
        free = next(f"{name}-{n}" for n in range(2, 10_000) if f"{name}-{n}" not in taken)
        raise InvalidValueError(f"--save {name}: {path} exists and msdebug never writes over a run; use --save {free}.")
    return path


def read_against(what: str, runs_dir: str | os.PathLike, rank: int | None = None, iteration: int | None = None,
                 graph: int | None = None, job_rank: int | None = None) -> Run:  # fmt: skip
    """``--against``: a saved run's name (under ``runs_dir``) or a directory (a saved run, a
    MindSpore data dump or an msprobe dump); ``rank``, ``iteration`` and ``graph`` choose in it,
    and ``job_rank`` (this process's rank in an msrun job) is the rank taken unless ``rank`` says
    (:func:`msdebug.dumps.diff.read_any_run`)."""
    choices = {"rank": rank, "iteration": iteration, "graph": graph, "job_rank": job_rank}
    named = Path(runs_dir) / what
    if _RUN_NAME.match(what) and named.is_dir():
        return read_any_run(named, **choices)
    if Path(what).expanduser().is_dir():
        return read_any_run(Path(what).expanduser(), **choices)
    saved = sorted(p.name for p in Path(runs_dir).iterdir() if p.is_dir()) if Path(runs_dir).is_dir() else []
    raise InvalidValueError(
        f"--against {what!r}: no saved run of that name in {runs_dir}/ and no such directory; saved runs: "
        f"{', '.join(saved[:20]) or 'none yet (save one with --save NAME)'}.{did_you_mean(what, saved)}"
    )


def save_run(run: Run, root: Path, label: str = "") -> Run:
    """A run read from a data dump, written as a saved run: ``run.json`` and the tensors beside it
    (hard links where the file system allows, copies through the opener otherwise)."""
    from ..files import open_regular

    root.mkdir(parents=True, exist_ok=False)
    entries = []
    for op in run.ops:
        entry = {"name": op.name, "type": op.op_type, "scope": op.scope, "source": op.source, "code": op.code,
                 "cell": op.cell, "inputs": [], "outputs": []}  # fmt: skip
        for ref in op.tensors:
            item: dict[str, Any] = {"file": None, "shape": list(ref.shape), "dtype": ref.dtype}
            if ref.path is not None:
                file = f"{op.index:06d}.{ref.slot.replace(' ', '.')}.npy"
                try:
                    with open_regular(ref.path, DumpError, follow=False) as source, open(root / file, "xb") as target:
                        while chunk := source.read(1 << 20):
                            target.write(chunk)
                    item["file"] = file
                except (DumpError, OSError):
                    pass
            entry[ref.io + "s"].append(item)
        entries.append(entry)
    index = {"format": RUN_FORMAT, "version": RUN_VERSION, "label": label or run.label, "kind": run.kind, **run.meta,
             "notes": run.notes, "ops": entries}  # fmt: skip
    return _write_index(root, index)


def _write_index(root: Path, index: dict) -> Run:
    """``run.json``, written last and in one rename (a directory with one holds a whole run);
    then the run as any reader reads it."""
    partial = root / (RUN_FILE + ".partial")
    with open(partial, "x", encoding="utf-8") as handle:
        json.dump(index, handle)
    os.replace(partial, root / RUN_FILE)
    return read_run(root)


class SavedRun(Rendered):
    """What ``%%msdiff --save NAME`` kept, and how to compare against it."""

    _views = rendered_by(lambda v: (v.diff.html_saved, v.diff.text_saved))

    def __init__(self, run: Run, name: str) -> None:
        self.run, self.name = run, name
