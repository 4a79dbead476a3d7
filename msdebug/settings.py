"""Validate, apply, snapshot and restore MindSpore context settings.

Every write (magics, Python API, later the panel) goes through :func:`apply`.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from . import backend as _backend
from . import interrupts
from .dumps.rendered import Rendered, rendered_by
from .errors import (
    DeviceLockedError,
    InvalidValueError,
    MindSporeRefusedError,
    MsDebugError,
    NotApplicableError,
)
from .keys import CATALOG, ENTRIES, GROUPS, SHORTHANDS, UNREAD, Choice, ContextKey, literal, lookup

__all__ = [
    "Change",
    "ChangeReport",
    "ContextState",
    "KeyInfo",
    "Row",
    "Scope",
    "Snapshot",
    "UNREAD",
    "apply",
    "context",
    "describe",
    "device_lock",
    "get",
    "hold",
    "holding",
    "listening",
    "notify",
    "on_change",
    "release",
    "reset",
    "restore",
    "set_baseline",
    "snapshot",
    "state",
]


_DEVICE_KEYS = frozenset({"device", "device_target", "device_id"})
_CATALOG_ORDER = {name: index for index, name in enumerate(CATALOG)}  # restore reports in this order


# --------------------------------------------------------------------------- models


class Change(NamedTuple):
    """One key that changed: canonical values before and after, and a note if any."""

    key: ContextKey
    old: Any
    new: Any
    note: str = ""


class ChangeReport(NamedTuple):
    """What one call changed; ``notes`` hold things the person should know."""

    changes: tuple[Change, ...]
    notes: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.changes)

    def __repr__(self) -> str:
        from .views import text_change_report

        return text_change_report(self)

    def _repr_html_(self) -> str:
        from .views import html_change_report

        return html_change_report(self)


@dataclass(frozen=True)
class Snapshot(Mapping[str, Any]):
    """Raw values of every restorable key at one moment; :func:`restore` puts them back."""

    raw: Mapping[str, Any]
    version: str
    device: str = ""
    launch_blocking: bool = False

    def __getitem__(self, name: str) -> Any:
        return self.raw[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.raw)

    def __len__(self) -> int:
        return len(self.raw)

    def restore(self) -> ChangeReport:
        """Same as :func:`restore` (``snapshot.restore()``)."""
        return restore(self)

    def __repr__(self) -> str:
        return f"<msdebug.Snapshot of {len(self)} MindSpore {self.version} context keys>"


@dataclass(frozen=True)
class Row:
    """One line of the context table."""

    key: ContextKey
    value: Any
    default: Any
    changed: bool | None
    applies: bool
    note: str = ""


@dataclass(frozen=True, repr=False)
class ContextState(Rendered):
    """The whole context at one moment, for the table."""

    _views = rendered_by(lambda v: (v.context.html_state, v.context.text_state))

    version: str
    device: _backend.DeviceState
    sync: bool
    launch_blocking: bool
    rows: tuple[Row, ...]
    changed_only: bool = False
    hidden_removed: int = 0
    all_keys: bool = False  # the table shows every key unfolded (%mscontext --all)
    removed: tuple[str, ...] = ()  # keys of other versions, removed or ignored in this one

    def groups(self) -> list[tuple[str, list[Row]]]:
        """Rows by catalog group, in :data:`GROUPS` order, empty groups left out."""
        result = []
        for group, title in GROUPS:
            rows = [row for row in self.rows if row.key.group == group]
            if rows:
                result.append((title, rows))
        return result

    def summary_parts(self, capture: bool | None = None) -> dict[str, str]:
        """The facts every one-line summary is made of (the table's header, the panel's, the
        status bar's), each as shown: ``{"version": "MindSpore 2.10.0", "mode": "GRAPH",
        "device": "CPU:0", "sync": "sync off", "runtime": "runtime not started",
        "changed": "2 changed"}``, plus ``"capture": "print capture on"`` when ``capture`` is known.
        """
        mode = {0: "GRAPH", 1: "PYNATIVE"}.get(self.value("mode"), "?")
        sync = "sync on (launch_blocking)" if self.launch_blocking else f"sync {'on' if self.sync else 'off'}"
        parts = {"version": f"MindSpore {self.version}", "mode": mode, "device": str(self.device), "sync": sync}
        if capture is not None:
            parts["capture"] = f"print capture {'on' if capture else 'off'}"
        parts["runtime"] = "runtime started" if self.device.started else "runtime not started"
        parts["changed"] = f"{sum(1 for row in self.rows if row.changed)} changed"
        return parts

    def summary(self) -> str:
        """``MindSpore 2.10.0 · PYNATIVE · CPU:0 · sync off · runtime not started``."""
        parts = self.summary_parts()
        return " · ".join(parts[name] for name in ("version", "mode", "device", "sync", "runtime"))

    def value(self, name: str) -> Any:
        """The value of one key, from this state's rows (read now if the state left it out)."""
        for row in self.rows:
            if row.key.name == name:
                return row.value
        return get(name)


@dataclass(frozen=True, repr=False)
class KeyInfo(Rendered):
    """Everything about one key, for ``%mscontext KEY``."""

    _views = rendered_by(lambda v: (v.context.html_key_info, v.context.text_key_info))

    key: ContextKey
    version: str | None
    value: Any = None
    default: Any = None
    device: str | None = None
    available: bool = True
    problem: str = ""
    extra: tuple[str, ...] = field(default=())


# --------------------------------------------------------------------------- keys msdebug implements
# MindSpore honours print_file_path only on Ascend; on CPU and GPU it ignores the key and msdebug's
# Print capture writes the file (capture.set_print_file). Every read and write of a key goes through
# these three functions, so the backend stays a plain MindSpore adapter.


def _emulated(backend: _backend.Backend, name: str) -> bool:
    return name == "print_file_path" and not backend.writes_print_files()


def _read(backend: _backend.Backend, name: str) -> Any:
    if _emulated(backend, name):
        from .recorders.print import active_print_file

        return active_print_file()
    return backend.read(name)


def _write(backend: _backend.Backend, name: str, value: Any) -> None:
    if _emulated(backend, name):
        from .recorders.print import set_print_file

        set_print_file(value)
    else:
        backend.write(name, value)


def _write_raw(backend: _backend.Backend, name: str, raw: Any) -> None:
    if _emulated(backend, name):
        from .recorders.print import set_print_file

        set_print_file(raw, resume=True)
    else:
        backend.write_raw(name, raw)


# --------------------------------------------------------------------------- reading


def _key(name: str) -> ContextKey:
    """Catalog entry for ``name``; live keys msdebug does not describe are allowed too."""
    if name in CATALOG or name in SHORTHANDS:
        return CATALOG.get(name) or SHORTHANDS[name]
    version = _backend.installed_version()
    return lookup(name, _backend.get_backend().live_keys() if version else ())


def _check_available(key: ContextKey, version: str) -> None:
    if not key.available_in(version):
        raise NotApplicableError(f"{key.name} was {key.status()} (installed: MindSpore {version}).")
    if key.ignored:
        raise NotApplicableError(
            f"{key.name} is accepted but ignored by MindSpore {version}, so setting it has no effect."
            + (f" Use {key.replacement} instead." if key.replacement else "")
        )


def _check_entries(key: ContextKey, raw: Any, version: str) -> None:
    """A dict given whole (``ascend_config={"exception_dump": ...}``) gets the same verdict for
    each entry the catalog knows as the entry set alone: removed, ignored, since when, instead."""
    if key.name not in ENTRIES:
        return
    value = literal(raw) if isinstance(raw, str) else raw
    if not isinstance(value, Mapping):
        return
    for entry in value:
        known = CATALOG.get(entry) if isinstance(entry, str) else None
        if known is not None and known.part_of == (key.name, entry):
            _check_available(known, version)


def _canonical(backend: _backend.Backend, key: ContextKey) -> Any:
    name = key.name
    if name == "pynative_synchronize":
        return bool(backend.read(name)) or backend.launch_blocking()
    if not backend.readable(name):
        return backend.written.get(name, UNREAD)
    if name == "device_id" and name in backend.written:
        return backend.written[name]  # set with set_context(device_id=...): what get_context reports
    return key.kind.from_raw(_read(backend, name))


def get(name: str) -> Any:
    """The current value of a context key, in the form ``set`` accepts.

    Never freezes a key: ``device_id`` comes from ``mindspore.get_current_device()``
    and memory limits that MindSpore fixes on first read are reported as ``UNREAD``
    unless msdebug set them. ``pynative_synchronize`` is True while either it or
    ``mindspore.runtime.launch_blocking()`` makes execution synchronous.
    """
    backend = _backend.get_backend()
    key = _key(name)
    if name == "device":
        return str(backend.device())
    _check_available(key, backend.version)
    return _canonical(backend, key)


def _default(backend: _backend.Backend, key: ContextKey) -> Any:
    """The value this MindSpore started with in this process, when msdebug saw its first
    import (start-up values differ between versions); else the catalog's default."""
    if backend.pristine is not None and key.name in backend.pristine and key.name != "device_id":
        return key.kind.from_raw(backend.pristine[key.name])
    if key.default is not None:
        return key.default
    machine = _backend.machine_default(key.name)
    if machine is not None:
        return machine
    supported = backend.device().supported
    if key.name == "device_target" and len(supported) == 1:
        return supported[0]
    return None


def state(changed_only: bool = False, all_keys: bool = False) -> ContextState:
    """The whole context: one :class:`Row` per key of the installed MindSpore.

    The table folds the keys that do nothing on this device behind "show all"; with
    ``all_keys`` it shows them, and names the removed and ignored keys too.
    """
    backend = _backend.get_backend()
    device = backend.device()
    live = backend.live_keys()
    rows = []
    for name in (*CATALOG, *(n for n in live if n not in CATALOG)):
        key = _key(name)
        if not key.available_in(backend.version) or key.ignored or name not in live:
            continue
        value = _canonical(backend, key)
        default = _default(backend, key)
        changed = None if value is UNREAD or default is None else value != default
        if changed_only and not changed:
            continue
        note = _row_note(backend, key)
        rows.append(Row(key, value, default, changed, key.applies_to(device.target), note))
    removed = tuple(name for name, k in CATALOG.items() if not k.available_in(backend.version) or k.ignored)
    return ContextState(
        version=backend.version,
        device=device,
        sync=bool(backend.read("pynative_synchronize")),
        launch_blocking=backend.launch_blocking(),
        rows=tuple(rows),
        changed_only=changed_only,
        hidden_removed=len(removed),
        all_keys=all_keys,
        removed=removed,
    )


def _row_note(backend: _backend.Backend, key: ContextKey) -> str:
    if key.name == "pynative_synchronize" and backend.launch_blocking():
        return "on through mindspore.runtime.launch_blocking(), which cannot be undone"
    if key.name == "device_id" and "device_id" in backend.written:
        device = backend.device()
        if backend.written["device_id"] != device.device_id:
            return f"set with set_context(device_id=...); the device in use is {device} (device=TARGET:ID chooses it)"
    if key.freezes_on_read and not backend.readable(key.name):
        return (
            "as set by msdebug; not read back, reading it would freeze it"
            if key.name in backend.written
            else "not read: MindSpore fixes it once read"
        )
    return ""


def describe(name: str) -> KeyInfo:
    """Help for one key, with its current value when MindSpore is installed."""
    key = _key(name)
    version = _backend.installed_version()
    if version is None:
        return KeyInfo(key, None, problem=f"MindSpore is not installed here; {_backend.INSTALL_HINT}")
    backend = _backend.get_backend()
    device = backend.device()
    if name == "device":
        return KeyInfo(key, version, value=str(device), device=device.target, extra=_device_facts(device))
    if not key.available_in(version) or key.ignored:
        problem = (
            f"MindSpore {version} accepts it but ignores it"
            if key.ignored
            else f"not available in the installed MindSpore {version}"
        )
        return KeyInfo(key, version, device=device.target, available=False, problem=problem)
    note = _row_note(backend, key)
    extra = (_device_facts(device) if name in _DEVICE_KEYS else ()) + ((note,) if note else ())
    return KeyInfo(
        key, version, value=_canonical(backend, key), default=_default(backend, key), device=device.target, extra=extra
    )


def device_lock(device: _backend.DeviceState) -> str:
    """Why the device can no longer change in this process, or ``""`` while it can."""
    if device.started:
        return f"the runtime started on {device}, so the device is fixed for this process"
    if device.configured:
        return f"mindspore.set_device() already chose {device}; MindSpore allows it once per process"
    return ""


def _device_facts(device: _backend.DeviceState) -> tuple[str, ...]:
    lock = device_lock(device) or "the device can still be chosen (no operator has run yet)"
    return (f"this MindSpore build supports: {', '.join(device.supported)}", lock)


# --------------------------------------------------------------------------- writing


class _Plan:
    """Validated assignments: the device to set, and the top-level keys to write."""

    __slots__ = ("keys", "shown", "values", "device_named", "device", "target")

    def __init__(self) -> None:
        self.keys: dict[str, ContextKey] = {}  # name as given -> its catalog entry
        self.shown: dict[str, Any] = {}  # name as given -> canonical value
        self.values: dict[str, tuple[ContextKey, Any]] = {}
        self.device_named = False
        self.device: tuple[str, int | None] | None = None
        self.target = ""  # the device the values are checked against


def _plan(assignments: Mapping[str, Any], backend: _backend.Backend, scoped: bool) -> _Plan:
    plan = _Plan()
    for name, raw in assignments.items():
        key = plan.keys[name] = _key(name)
        _check_entries(key, raw, backend.version)
        plan.shown[name] = key.coerce(raw)
    plan.device_named = not _DEVICE_KEYS.isdisjoint(plan.shown)
    if plan.device_named:
        plan.device = _plan_device(plan.shown, backend.device(), scoped)
    chosen = plan.device is not None and plan.device[0] not in ("device_id", "ignored")  # set_device picks a target
    target = plan.target = plan.device[0] if chosen else backend.read("device_target")
    entries: dict[str, dict[str, Any]] = {}
    for name, value in plan.shown.items():
        if name in _DEVICE_KEYS:
            continue
        key = plan.keys[name]
        _check_available(key, backend.version)
        parent = CATALOG[key.part_of[0]] if key.part_of else key
        if parent.device_filtered and not parent.applies_to(target):
            via = f" (an entry of {parent.name})" if key.part_of else ""
            raise NotApplicableError(
                f"{name} only takes effect on {', '.join(parent.platforms)}{via}; this process runs on "
                f"{target}, where MindSpore ignores it. Nothing was changed."
            )
        if key.freezes_on_read and scoped:
            raise NotApplicableError(f"{name} cannot be scoped to a cell: MindSpore fixes it once it is used.")
        if key.write_only and scoped:
            raise NotApplicableError(
                f"{name} cannot be scoped to a cell: MindSpore cannot read it back, so it could not be put back."
            )
        if name == "pynative_synchronize" and value is False and backend.launch_blocking():
            raise NotApplicableError(
                "pynative_synchronize stays on: mindspore.runtime.launch_blocking() was called in this "
                "process and cannot be undone; restart the kernel to run asynchronously again."
            )
        if key.part_of:
            entries.setdefault(key.part_of[0], {})[key.part_of[1]] = value
        else:
            plan.values[name] = (key, value)
    for parent_name, items in entries.items():
        parent = CATALOG[parent_name]
        base = plan.values[parent_name][1] if parent_name in plan.values else backend.read(parent_name)
        plan.values[parent_name] = (parent, parent.coerce({**base, **items}))
        for entry, value in items.items():
            entry_key = CATALOG.get(entry)
            # An entry left out of the dict (jit_level='auto') leaves MindSpore's own parameter
            # as it was: put that back to its start-up value too, or 'O0' would stay in force.
            if entry_key is not None and isinstance(entry_key.kind, Choice) and entry_key.kind.absent(value):
                if not backend.readable(entry):
                    continue
                plan.values[entry] = (entry_key, value)
    return plan


def _plan_device(shown: Mapping[str, Any], device: _backend.DeviceState, scoped: bool):
    """``(target, id)`` for ``mindspore.set_device``, ``None`` if nothing would change."""
    if "device" in shown and ("device_target" in shown or "device_id" in shown):
        raise InvalidValueError("give either device=TARGET:ID or device_target / device_id, not both.")
    target, number = shown.get("device") or (shown.get("device_target", device.target), shown.get("device_id"))
    if target == device.target and number in (None, device.device_id):
        return None  # already so: nothing to ask of MindSpore
    wanted = f"{target}:{0 if number is None else number}"  # set_device(target) means id 0
    cell = _backend.first_cell(target, number)
    if set(shown) == {"device_id"} and not scoped and not device.started:
        # The key the person typed keeps MindSpore's meaning: set_context(device_id=...) may be
        # called again (MindSpore's own test_set_device_id sets 1, then 2); device= and the panel
        # use set_device, which MindSpore allows once. After the first operator both are refused.
        # After set_device, MindSpore accepts set_context(device_id=...) and ignores it (the device
        # and get_context("device_id") stay): msdebug says so instead of reporting a change.
        return ("ignored" if device.configured else "device_id"), number
    if target not in device.supported:
        raise NotApplicableError(
            f"device: {target} is not available in this MindSpore build (it supports "
            f"{', '.join(device.supported)}); with a MindSpore build for {target}, make this the first cell "
            f"of a fresh kernel: {cell}"
        )
    if scoped:
        raise DeviceLockedError(
            f"device: cannot be scoped to one cell, MindSpore sets it once per process; to run on {wanted}, "
            f"make this the first cell of a fresh kernel: {cell}"
        )
    if device.started:
        raise DeviceLockedError(
            f"device: the runtime already started on {device}, so it cannot change to {wanted} in this "
            f"process; restart the kernel and make this the first cell: {cell}"
        )
    if device.configured:
        raise DeviceLockedError(
            f"device: mindspore.set_device() already chose {device} and can be called only once per "
            f"process; restart the kernel and make this the first cell: {cell}"
        )
    return target, number


@interrupts.protected
def apply(assignments: Mapping[str, Any], *, scoped: bool = False) -> ChangeReport:
    """Validate every assignment, then apply them all or none.

    Parameters
    ----------
    assignments : mapping
        Key names (or the shorthand ``device``) to values; strings are parsed the way
        ``%mscontext`` parses them (``mode="graph"``, ``pynative_synchronize="on"``).
    scoped : bool
        Refuse keys that cannot be restored afterwards (device, memory limits).

    Raises
    ------
    MsDebugError
        One line saying what was wrong and what is allowed; nothing was changed.
    """
    backend = _backend.get_backend()
    plan = _plan(assignments, backend, scoped)
    named = [(name, key) for name, key in plan.keys.items() if name not in _DEVICE_KEYS]
    before = [_canonical(backend, key) for _, key in named]
    old_device = str(backend.device()) if plan.device_named else None
    by_context = plan.device is not None and plan.device[0] == "device_id"  # set_context(device_id=...)
    ignored = plan.device is not None and plan.device[0] == "ignored"  # device_id after set_device
    old_id = _canonical(backend, CATALOG["device_id"]) if by_context or ignored else None
    undo: list[tuple[str, Any]] = []
    try:
        for name, (key, value) in plan.values.items():
            touched = [(n, _copy(_read(backend, n))) for n in (name, *ENTRIES.get(name, ())) if backend.readable(n)]
            if touched and touched[0][0] == name and key.kind.from_raw(touched[0][1]) == value:
                continue  # already so: nothing to ask of MindSpore
            undo += touched
            _write(backend, name, value)
        if by_context:
            _write(backend, "device_id", plan.device[1])
        elif plan.device is not None and not ignored:  # MindSpore would ignore it: nothing to ask
            backend.set_device(*plan.device)
    except BaseException:
        for name, raw in reversed(undo):
            with contextlib.suppress(Exception):
                _write_raw(backend, name, raw)
        raise
    target = plan.target
    if by_context:
        changes = [Change(CATALOG["device_id"], old_id, _canonical(backend, CATALOG["device_id"]))]
    elif ignored:
        in_use = backend.device()
        note = (
            f"{plan.device[1]} ignored: mindspore.set_device() already chose {in_use}, which stays in use "
            "(MindSpore ignores set_context(device_id=...) after it)"
        )
        changes = [Change(CATALOG["device_id"], old_id, old_id, note)]
    elif plan.device_named:
        changes = [Change(SHORTHANDS["device"], old_device, str(backend.device()))]
    else:
        changes = []
    for (_, key), old in zip(named, before, strict=True):
        note = "" if key.applies_to(target) else f"no effect on {target}"
        changes.append(Change(key, old, _canonical(backend, key), note))
    notify()
    return ChangeReport(tuple(changes), _late_parallel(backend, changes))


def _late_parallel(backend: _backend.Backend, changes: list[Change]) -> tuple[str, ...]:
    """The warning for auto-parallel keys changed while a network exists: MindSpore reads them
    "before the network is initialized" (seed 000), so a network built earlier keeps the old ones."""
    late = [change.key.name for change in changes if change.key.api != "set_context" and change.old != change.new]
    cells = backend.network_built() if late else 0
    if not cells:
        return ()
    return (
        f"warning: {', '.join(late)} changed after {cells} {'Cell was' if cells == 1 else 'Cells were'} built; MindSpore "
        "applies the auto-parallel context to networks built after it, so build the network again "
        "(run its cell after this one).",
    )


def _copy(raw: Any) -> Any:
    # Dict keys are held by MindSpore's context object; keep our own copy.
    return copy.deepcopy(raw) if isinstance(raw, dict) else raw


# --------------------------------------------------------------------------- snapshots


def snapshot() -> Snapshot:
    """Raw values of every key that can be put back (the device and frozen keys cannot)."""
    backend = _backend.get_backend()
    values = {name: raw for name, raw in backend.read_all().items() if name not in _DEVICE_KEYS}
    values.update(backend.write_only())  # what msdebug wrote: MindSpore cannot say
    if _emulated(backend, "print_file_path"):
        values["print_file_path"] = _read(backend, "print_file_path")
    return Snapshot(values, backend.version, str(backend.device()), backend.launch_blocking())


@interrupts.protected
def restore(snap: Snapshot | Mapping[str, Any]) -> ChangeReport:
    """Put back every key that differs from ``snap``; returns what changed.

    Raises
    ------
    MindSporeRefusedError
        After trying every key, if MindSpore refused some of them.
    """
    backend = _backend.get_backend()
    changes, failures = [], []
    names = [
        name
        for name in sorted(snap, key=lambda n: _CATALOG_ORDER.get(n, len(_CATALOG_ORDER)))
        if name not in _DEVICE_KEYS and backend.readable(name)
    ]
    # Read every key before writing any: some are one setting under two names (full_batch and
    # dataset_strategy), and the report says what each was before the restore, not in between.
    before = {name: _copy(_read(backend, name)) for name in names}
    for name in names:
        raw = snap[name]
        if (_read(backend, name) if changes or failures else before[name]) == raw:
            continue
        key = _key(name)
        try:
            _write_raw(backend, name, _copy(raw))
        except MsDebugError as error:
            failures.append(str(error))
            continue
        changes.append(Change(key, key.kind.from_raw(before[name]), key.kind.from_raw(raw)))
    written = backend.write_only()
    for name in [name for name in snap if name in written and snap[name] != written[name]]:
        try:
            backend.write(name, _copy(snap[name]))
        except MsDebugError as error:
            failures.append(str(error))
            continue
        changes.append(Change(CATALOG[name], written[name], snap[name]))
    if changes:
        notify()
    notes = []
    if isinstance(snap, Snapshot):
        if str(backend.device()) != snap.device:
            notes.append(f"the device changed from {snap.device} to {backend.device()} and cannot change back")
        if backend.launch_blocking() and not snap.launch_blocking:
            notes.append("mindspore.runtime.launch_blocking() was called; execution stays synchronous")
    if failures:
        raise MindSporeRefusedError("could not restore every key: " + "; ".join(failures))
    return ChangeReport(tuple(changes), tuple(notes))


@dataclass
class Scope:
    """What a :func:`context` block applied and, once it ended, how the restore went."""

    applied: ChangeReport
    restored: ChangeReport | None = None
    problem: str = ""


class _Scoped:
    """The context manager :func:`context` returns.

    Every step that changes the context runs in :mod:`~msdebug.interrupts`-protected code,
    and the SIGINT handler that defers interrupts stays installed from ``__enter__`` to the
    end of ``__exit__``: an interrupt on the first line of ``__exit__`` waits for the restore.
    """

    def __init__(self, assignments: Mapping[str, Any]) -> None:
        self.assignments = assignments
        self.snap: Snapshot | None = None
        self.scope: Scope | None = None

    def __enter__(self) -> Scope:
        interrupts.enter_held(self._open, self._close)
        return self.scope

    @interrupts.protected
    def _open(self) -> None:
        self.snap = snapshot()
        self.scope = Scope(apply(self.assignments, scoped=True))

    @interrupts.protected
    def _close(self) -> None:
        try:
            if self.snap is not None:
                restore(self.snap)
        finally:
            interrupts.let_go()

    @interrupts.protected
    def __exit__(self, exc_type, exc, tb) -> bool:
        scope = self.scope
        try:
            scope.restored = restore(self.snap)
        except MsDebugError as error:
            scope.problem = str(error)
        else:
            scope.problem = "; ".join(scope.restored.notes)
        finally:
            interrupts.let_go()
        if scope.problem:
            warnings.warn(f"msdebug: {scope.problem}", RuntimeWarning, stacklevel=3)
        return False


def context(assignments: Mapping[str, Any] | None = None, /, **values: Any) -> _Scoped:
    """Apply settings for a block; on exit every key is as it was before.

    Everything the block changed is put back too, also when it raises or is
    interrupted (any number of times, at any moment). Keys that cannot be undone are
    refused up front (the device, memory limits) or reported afterwards with a warning
    (``launch_blocking()``).

    Examples
    --------
    >>> with msdebug.context(mode="pynative", pynative_synchronize=True):
    ...     net(x)
    """
    return _Scoped({**(assignments or {}), **values})


_baseline: Snapshot | None = None


def set_baseline(snap: Snapshot | None) -> None:
    """Remember the context that :func:`reset` goes back to (``None``: MindSpore's start-up state)."""
    global _baseline
    _baseline = snap


def reset() -> ChangeReport:
    """Go back to the baseline: the context when msdebug was loaded.

    Raises
    ------
    MsDebugError
        When msdebug never saw that state (MindSpore was imported before msdebug was
        loaded and no baseline was recorded).
    """
    backend = _backend.get_backend()
    target = _baseline if _baseline is not None else backend.pristine
    if target is None:
        raise MsDebugError(
            "msdebug does not know the context at load time (MindSpore was imported first); "
            "use msdebug.snapshot() and msdebug.restore(snapshot) instead."
        )
    return restore(target)


# --------------------------------------------------------------------------- listeners
# Open panels follow the context: every apply/restore (so also reset and the scoped cell
# magic, before and after its body) tells them. While a cell runs the extension holds the
# notifications and sends one when the cell ends (post_run_cell), which also covers
# changes made behind msdebug's back (plain mindspore.set_context): a loop of scoped
# settings in a cell then costs no refreshes and sends nothing to the front end.

_listeners: list[weakref.ref] = []
_eager: list[weakref.ref] = []  # on_change(while_held=True)
_held = False


def on_change(callback, *, while_held: bool = False) -> Any:
    """Call ``callback()`` after msdebug changed the context, and after every cell.

    Only a weak reference is kept (a bound method lives as long as its object), so a
    listener never keeps a closed panel alive. Returns a function that unsubscribes.
    With ``while_held`` the listener also hears the changes a running cell makes (the
    status bar shows a scoped cell's settings while it runs; :func:`holding` tells it
    that a cell is running).
    """
    ref = weakref.WeakMethod(callback) if hasattr(callback, "__self__") else weakref.ref(callback)
    (_eager if while_held else _listeners).append(ref)

    def unsubscribe() -> None:
        for refs in (_listeners, _eager):
            with contextlib.suppress(ValueError):
                refs.remove(ref)

    return unsubscribe


def listening() -> bool:
    """Whether anything listens."""
    return bool(_listeners or _eager)


def holding() -> bool:
    """Whether notifications are held (a cell is running)."""
    return _held


def hold() -> None:
    """Hold notifications until :func:`release` (the extension: while a cell runs)."""
    global _held
    _held = True


def release() -> None:
    """Stop holding and notify once: the context may have changed in any way meanwhile."""
    global _held
    _held = False
    notify()


def notify() -> None:
    """Tell every listener that the context may have changed (later, while held).

    A listener that fails is dropped with a warning: it must not undo or fail the write
    that caused the notification.
    """
    if _eager:
        _call(_eager)
    if _held or not _listeners:
        return
    _call(_listeners)


def _call(refs: list[weakref.ref]) -> None:
    for ref in list(refs):
        callback = ref()
        if callback is None:
            with contextlib.suppress(ValueError):
                refs.remove(ref)
            continue
        try:
            callback()
        except Exception as error:  # noqa: BLE001 - a broken listener must not break apply()
            with contextlib.suppress(ValueError):
                refs.remove(ref)
            warnings.warn(
                f"msdebug: a context listener failed and was removed: {error!r}", RuntimeWarning, stacklevel=3
            )
