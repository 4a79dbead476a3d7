"""The settings panel as data: which control each key gets, what it shows, and why it is locked.

Pure functions of the key catalog and a :class:`settings.ContextState`; the widgets
(:mod:`msdebug.widgets`) and the text view (:mod:`msdebug.views.panel`) both read them, so
both can be tested without a front end.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidValueError
from ..keys import ALL_DEVICES, CATALOG, GROUPS, UNREAD, UNSET, Choice, ContextKey, Flag, Integer, Table, version_tuple

__all__ = [
    "Control",
    "ControlState",
    "PanelModel",
    "SECTIONS",
    "WIDGETS",
    "check_rdr",
    "control_for",
    "from_widget",
    "model",
    "rdr_unavailable",
    "read_rdr",
    "summary_line",
    "to_widget",
    "write_env_config",
]

# The keys of the three top sections, in display order; every other live key goes to
# "All settings", grouped as in the catalog.
SECTIONS = (
    ("Execution", ("mode", "pynative_synchronize", "jit_level", "jit_syntax_level")),
    ("Device", ("device_target", "device_id")),
    ("Debugging", ("print_file_path", "save_graphs", "save_graphs_path", "env_config_path")),
)
_TOP = frozenset(name for _, names in SECTIONS for name in names)

# How a value is edited: toggle buttons and dropdowns hold what %mscontext would take after
# "key=" (so 0 and False never get confused), checkboxes and switches a bool, int boxes an
# int, text and JSON boxes a str, "targets" one toggle per device.
WIDGETS = ("toggle_buttons", "dropdown", "switch", "checkbox", "bounded_int", "int", "text", "json", "targets")

_INT_MAX = 2**31 - 1
_NOT_SET = ("(not set)", "")


@dataclass(frozen=True)
class Control:
    """The control of one key, derived from its kind."""

    key: ContextKey
    widget: str
    options: tuple[tuple[str, str], ...] = ()
    low: int = 0
    high: int | None = None

    @property
    def name(self) -> str:
        return self.key.name


def control_for(key: ContextKey) -> Control:
    """The control for ``key``: bool → checkbox, choice → dropdown, int → int box, dict → JSON."""
    kind = key.kind
    if key.name == "device_target":
        return Control(key, "targets", tuple((target, target) for target in ALL_DEVICES))
    if isinstance(kind, Flag):
        return Control(key, "switch" if key.name == "pynative_synchronize" else "checkbox")
    if isinstance(kind, Choice):
        options = tuple((_option_label(key, option), option.typed or str(option.value)) for option in kind.options)
        if key.default is UNSET and all(typed != "" for _, typed in options):
            options = (_NOT_SET, *options)
        return Control(key, "toggle_buttons" if key.name == "mode" else "dropdown", options)
    if isinstance(kind, Integer):
        return Control(key, "int" if kind.high is None else "bounded_int", low=kind.low, high=kind.high)
    if isinstance(kind, Table):
        return Control(key, "json")
    return Control(key, "text")  # Text, Size, and keys msdebug does not describe


def _option_label(key: ContextKey, option) -> str:
    if key.name == "mode":
        return option.label.removesuffix("_MODE")  # GRAPH / PYNATIVE
    if option.label:
        return option.label
    return str(option.value)


def to_widget(control: Control, value: Any) -> Any:
    """The widget's value for a canonical context value (``None``: nothing to select)."""
    unknown = value is UNSET or value is UNREAD or value is None
    widget = control.widget
    if widget in ("checkbox", "switch"):
        return bool(value) and not unknown
    if widget in ("toggle_buttons", "dropdown"):
        if unknown:
            return "" if _NOT_SET in control.options else None
        kind = control.key.kind
        typed = kind.typed(value) if isinstance(kind, Choice) else str(value)
        return typed if any(typed == t for _, t in control.options) else None
    if widget in ("bounded_int", "int"):
        return value if isinstance(value, int) and not isinstance(value, bool) else control.low
    if widget == "json":
        return "" if unknown else json.dumps(value, ensure_ascii=False, default=repr)
    if widget == "targets":
        return value
    return "" if unknown else str(value)


def from_widget(control: Control, value: Any) -> Any:
    """What to hand to ``settings.apply`` for a widget's value (it validates it)."""
    if control.widget == "json" and not value.strip():
        return "{}"
    return value


# --------------------------------------------------------------------------- per refresh


@dataclass(frozen=True)
class ControlState:
    """One control at one moment: value, default, whether it is changed, why it is locked."""

    control: Control
    value: Any
    default: Any
    changed: bool | None
    disabled: str = ""
    note: str = ""

    @property
    def shown(self) -> Any:
        return to_widget(self.control, self.value)


@dataclass(frozen=True)
class PanelModel:
    """Everything the panel shows; built from a ``ContextState`` by :func:`model`."""

    summary: str
    sections: tuple[tuple[str, tuple[ControlState, ...]], ...]
    groups: tuple[tuple[str, tuple[ControlState, ...]], ...]
    version: str
    device: Any
    device_lock: str
    unsupported: dict[str, str]
    first_cell: str
    rdr_unavailable: str

    def controls(self):
        """Every control state, top sections first."""
        for _, states in (*self.sections, *self.groups):
            yield from states

    def __getitem__(self, name: str) -> ControlState:
        for state in self.controls():
            if state.control.name == name:
                return state
        raise KeyError(name)


def summary_line(state, capture: bool | None = None) -> str:
    """``GRAPH · CPU:0 · sync off · print capture off`` (capture left out while unknown)."""
    mode = {0: "GRAPH", 1: "PYNATIVE"}.get(_value(state, "mode"), "?")
    sync = "sync on (launch_blocking)" if state.launch_blocking else f"sync {'on' if state.sync else 'off'}"
    parts = [mode, str(state.device), sync]
    if capture is not None:
        parts.append(f"print capture {'on' if capture else 'off'}")
    if state.device.started:
        parts.append("runtime started")
    changed = sum(1 for row in state.rows if row.changed)
    if changed:
        parts.append(f"{changed} changed")
    return " · ".join(parts)


def _value(state, name: str) -> Any:
    for row in state.rows:
        if row.key.name == name:
            return row.value
    return None


def device_lock(device) -> str:
    """Why the device controls are locked, or ``""``."""
    if device.started:
        return f"the runtime started on {device}, so the device is fixed for this process"
    if device.configured:
        return f"mindspore.set_device() already chose {device}; MindSpore allows it once per process"
    return ""


def unsupported_targets(device) -> dict[str, str]:
    """Targets this MindSpore build cannot run, with the reason."""
    have = ", ".join(device.supported)
    return {
        target: f"this MindSpore build cannot run on {target} (it supports {have})"
        for target in ALL_DEVICES
        if target not in device.supported
    }


def rdr_unavailable(version: str) -> str:
    """Why the RDR fields are greyed out on ``version``, or ``""`` where RDR exists."""
    if version_tuple(version) > (2, 7, 0):
        return (
            f"MindSpore {version} has no Running Data Recorder (removed after 2.7.0); "
            "it ignores the rdr section of env_config.json"
        )
    return ""


def _disabled(key: ContextKey, state, lock: str) -> str:
    target = state.device.target
    if key.name in ("device_target", "device_id"):
        return lock
    if key.name == "pynative_synchronize" and state.launch_blocking:
        return "on for good: mindspore.runtime.launch_blocking() was called in this process"
    parent = CATALOG[key.part_of[0]] if key.part_of else key
    if parent.device_filtered and not parent.applies_to(target):
        return f"only takes effect on {', '.join(parent.platforms)}; MindSpore ignores it on {target}"
    return ""


def _note(row, state) -> str:
    target = state.device.target
    parts = [row.note] if row.note else []
    if row.key.name == "pynative_synchronize" and _value(state, "mode") == 0 and not state.launch_blocking:
        parts.append("acts on PYNATIVE execution; GRAPH mode runs whole graphs anyway")
    if not row.applies and not row.key.device_filtered:
        parts.append(f"no effect on {target}")
    return "; ".join(parts)


_controls: dict[str, Control] = {}  # control_for() by key name: a refresh reuses them


def model(state, capture: bool | None = None) -> PanelModel:
    """The panel for one ``settings.ContextState``."""
    lock = device_lock(state.device)
    rows = {row.key.name: row for row in state.rows}

    def control_state(row) -> ControlState:
        control = _controls.get(row.key.name)
        if control is None or control.key is not row.key:
            control = _controls[row.key.name] = control_for(row.key)
        return ControlState(
            control,
            row.value,
            row.default,
            row.changed,
            _disabled(row.key, state, lock),
            _note(row, state),
        )

    sections = tuple(
        (title, tuple(control_state(rows[name]) for name in names if name in rows)) for title, names in SECTIONS
    )
    by_group: dict[str, list[ControlState]] = {}
    for row in state.rows:
        if row.key.name not in _TOP:
            by_group.setdefault(row.key.group, []).append(control_state(row))
    groups = tuple((title, tuple(by_group[group])) for group, title in GROUPS if group in by_group)
    from ..backend import first_cell

    return PanelModel(
        summary=summary_line(state, capture),
        sections=sections,
        groups=groups,
        version=state.version,
        device=state.device,
        device_lock=lock,
        unsupported=unsupported_targets(state.device),
        first_cell=first_cell(state.device.target, state.device.device_id),
        rdr_unavailable=rdr_unavailable(state.version),
    )


# --------------------------------------------------------------------------- env_config.json
# Issue 5 brings msdebug.envconfig; until then the panel checks the rdr section itself.
# check_rdr is the one place to point at it later.



def check_rdr(enable: Any, mode: Any, path: str) -> dict[str, Any]:
    """The ``rdr`` section of env_config.json, checked by :class:`msdebug.recorders.envconfig.EnvConfig`
    with MindSpore's own rules (1.6-2.7.0).

    MindSpore only logs a warning for a wrong value and silently uses its default; here a
    wrong value is an error instead. An empty ``path`` is left out (MindSpore then writes
    below the working directory).

    Raises
    ------
    InvalidValueError
        For a non-boolean ``enable``, a ``mode`` other than 1 or 2, or a path that is not
        absolute, too long, or uses characters other than ``A-Z a-z 0-9 - _ . /``.
    """
    from ..recorders.envconfig import EnvConfig

    return EnvConfig(rdr_enable=enable, rdr_mode=mode, rdr_path=path or None).to_dict()["rdr"]


def read_rdr(path: str) -> tuple[dict[str, Any], str]:
    """The ``rdr`` section of the env_config file at ``path``, and a problem if it has none."""
    if not path:
        return {}, ""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as error:
        return {}, f"cannot read {path}: {error}"
    rdr = data.get("rdr") if isinstance(data, dict) else None
    return (rdr, "") if isinstance(rdr, dict) else ({}, "")


def write_env_config(rdr: dict[str, Any], based_on: str = "") -> str:
    """Write a new env_config.json with ``rdr`` and the other sections of ``based_on``.

    Returns its path. The file named by ``based_on`` is never changed: each call writes a
    fresh file in the temporary directory.
    """
    data: dict[str, Any] = {}
    if based_on:
        try:
            with open(based_on, encoding="utf-8") as handle:
                loaded = json.load(handle)
        except (OSError, ValueError) as error:
            raise InvalidValueError(f"env_config_path: cannot read {based_on}: {error}") from None
        if isinstance(loaded, dict):
            data.update(loaded)
    data["rdr"] = rdr
    handle, path = tempfile.mkstemp(prefix="msdebug-env-config-", suffix=".json")
    with os.fdopen(handle, "w", encoding="utf-8") as file:
        json.dump(data, file, indent=2)
    return path
