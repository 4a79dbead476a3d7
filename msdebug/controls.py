"""The settings panel as data: which control each key gets, what it shows, and why it is locked.

Pure functions of the key catalog and a :class:`settings.ContextState`; the facts themselves
(the summary, why the device is locked, whether RDR exists, env_config.json) come from the
modules that own them. The widgets (:mod:`msdebug.ipython.panel`) and the text view
(:mod:`msdebug.views.panel`) both read this model, so both can be tested without a front end.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import MsDebugError
from .keys import ALL_DEVICES, CATALOG, GROUPS, UNREAD, UNSET, Choice, ContextKey, Flag, Integer, Table
from .recorders.envconfig import EnvConfig, rdr_unavailable
from .settings import device_lock

__all__ = [
    "Control",
    "ControlState",
    "PanelModel",
    "SECTIONS",
    "control_for",
    "from_widget",
    "model",
    "read_rdr",
    "summary_line",
    "to_widget",
    "write_rdr",
]

# The keys of the three top sections, in display order; every other live key goes to
# "All settings", grouped as in the catalog.
SECTIONS = (
    ("Execution", ("mode", "pynative_synchronize", "jit_level", "jit_syntax_level")),
    ("Device", ("device_target", "device_id")),
    ("Debugging", ("print_file_path", "save_graphs", "save_graphs_path", "env_config_path")),
)
_TOP = frozenset(name for _, names in SECTIONS for name in names)

# How a value is edited (Control.widget): toggle buttons and dropdowns hold what %mscontext
# would take after "key=" (so 0 and False never get confused), checkboxes and switches a bool,
# int boxes an int, text and JSON boxes a str, "targets" one toggle per device.
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
    """``GRAPH · CPU:0 · sync off · print capture off`` (capture left out while unknown), from
    the one summary of :meth:`settings.ContextState.summary_parts`."""
    parts = state.summary_parts(capture)
    shown = [parts["mode"], parts["device"], parts["sync"]]
    if capture is not None:
        shown.append(parts["capture"])
    if state.device.started:
        shown.append(parts["runtime"])
    if not parts["changed"].startswith("0 "):
        shown.append(parts["changed"])
    return " · ".join(shown)


def unsupported_targets(device) -> dict[str, str]:
    """Targets this MindSpore build cannot run, with the reason."""
    have = ", ".join(device.supported)
    return {
        target: f"this MindSpore build cannot run on {target} (it supports {have})"
        for target in ALL_DEVICES
        if target not in device.supported
    }


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
    if row.key.name == "pynative_synchronize" and state.value("mode") == 0 and not state.launch_blocking:
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
    from .backend import first_cell

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


def read_rdr(path: str) -> tuple[EnvConfig | None, str]:
    """The env_config file at ``path`` (None if there is none), and a one-line problem if it
    cannot be read or MindSpore would reject it."""
    if not path:
        return None, ""
    try:
        return EnvConfig.read(path), ""
    except MsDebugError as error:
        return None, str(error)


def write_rdr(enable: Any, mode: Any, path: str, based_on: str = "") -> Path:
    """Write the panel's RDR fields (checked by :class:`EnvConfig`, MindSpore's own rules) with
    ``sys.mem_reuse`` of the file in use, and return the file's path.

    The file is the one ``based_on`` names when msdebug wrote it in this process (rewritten
    in place), else a new ``mindspore_config.json`` in the working directory; any other file
    is never overwritten.

    Raises
    ------
    InvalidValueError
        For a non-boolean ``enable``, a ``mode`` other than 1 or 2, or a path that is not
        absolute, too long, or uses characters other than ``A-Z a-z 0-9 - _ . /``.
    """
    base, _ = read_rdr(based_on)
    config = EnvConfig(
        rdr_enable=enable, rdr_mode=mode, rdr_path=path or None, mem_reuse=base.mem_reuse if base else None
    )
    ours = bool(based_on) and EnvConfig.wrote(based_on)
    return config.write(based_on if ours else os.path.abspath("mindspore_config.json"), overwrite=ours)
