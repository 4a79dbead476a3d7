"""``msdebug.panel()`` and ``%mscontext --panel``: an ipywidgets panel for MindSpore's context.

The edge: every control writes through :func:`settings.apply` (the validation and backend
of ``%mscontext``), and every open panel re-reads the context after each write and after
each cell (:func:`settings.on_change`). Which control a key gets, what it shows and why it
is locked come from :mod:`msdebug.controls`; ipywidgets is imported only here, and only
when a panel is built.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from .. import controls
from ..errors import MsDebugError, WidgetsMissingError
from ..views._html import CHANGED_MARK, NOTE, STRONG, esc, tag

__all__ = ["Panel", "panel"]

INSTALL_HINT = 'pip install ipywidgets  (or pip install "msdebug[all]")'

_ERROR = "color:#b00020"
_LABEL_WIDTH = "220px"
_HEADER = f"{STRONG};font-size:13px;margin-top:6px;border-bottom:1px solid #ccc"


def _ipywidgets():
    try:
        import ipywidgets
    except ImportError as error:
        raise WidgetsMissingError(
            f"the settings panel needs ipywidgets, which is not installed in this environment "
            f"({sys.executable}); install it with: {INSTALL_HINT}"
        ) from error
    return ipywidgets


def panel() -> Panel:
    """A new settings panel; display it (last expression of a cell) to use it."""
    return Panel()


def _print_capture() -> bool | None:
    """Whether msdebug captures every cell's Print output (``%msprint on``); ``None`` where
    msdebug is not loaded in a shell (there is no cell to capture)."""
    from .prefs import active

    prefs = active()
    return None if prefs is None else bool(prefs.print_capture)


class Panel:
    """An ipywidgets panel for the context, kept in sync with it both ways.

    Attributes
    ----------
    controls : dict
        One widget per key, by key name (``device_target`` is an HBox of :attr:`targets`).
    targets : dict
        A toggle button per device target; unsupported ones are disabled with the reason.
    error : str
        The last refused write, as one line (``""`` after a successful one).
    """

    def __init__(self) -> None:
        self._w = _ipywidgets()
        from .. import settings

        self._settings = settings
        self.error = ""
        self.controls: dict[str, Any] = {}
        self.targets: dict[str, Any] = {}
        self._labels: dict[str, Any] = {}
        self._notes: dict[str, Any] = {}
        self._shown: dict[str, tuple] = {}
        self._syncing = False
        self._env_config_seen: str | None = None
        self._widgets: list[Any] = []
        self.model = controls.model(settings.state(), _print_capture())
        self.widget = self._build()
        self._update()
        self._unsubscribe = settings.on_change(self.refresh)

    # ------------------------------------------------------------------ building

    def _make(self, cls, **kwargs):
        widget = cls(**kwargs)
        self._widgets.append(widget)
        return widget

    def _build(self):
        w = self._w
        self._summary = self._make(w.HTML)
        self._error = self._make(w.HTML)
        reset = self._make(w.Button, description="Reset", tooltip="back to the context when msdebug was loaded")
        reset.on_click(self._guarded(self._reset))
        self.reset_button = reset
        top = self._make(w.HBox, children=[self._summary, reset], layout=w.Layout(justify_content="space-between"))
        parts = [top, self._error]
        for title, states in self.model.sections:
            rows = [self._make(w.HTML, value=tag("div", esc(title), style=_HEADER))]
            rows += [self._row(state) for state in states]
            if title == "Device":
                rows += self._device_extras()
            if title == "Debugging":
                rows += self._capture_row() + self._rdr_row()
            parts.append(self._make(w.VBox, children=rows))
        groups = [
            self._make(w.VBox, children=[self._row(state) for state in states]) for _, states in self.model.groups
        ]
        self.accordion = self._make(w.Accordion, children=groups, selected_index=None)
        for index, (title, states) in enumerate(self.model.groups):
            self.accordion.set_title(index, f"{title} ({len(states)})")
        count = sum(len(states) for _, states in self.model.groups)
        parts += [
            self._make(w.HTML, value=tag("div", esc(f"All settings ({count} more keys)"), style=_HEADER)),
            self.accordion,
        ]
        legend = "marked and bold: differs from its default · greyed out: locked, the note says why"
        parts.append(self._make(w.HTML, value=tag("div", esc(legend), style=f"{NOTE};font-size:11px")))
        return self._make(w.VBox, children=parts, layout=w.Layout(max_width="980px"))

    def _row(self, state: controls.ControlState):
        w = self._w
        control = state.control
        name = control.name
        self._labels[name] = label = self._make(w.HTML, layout=w.Layout(width=_LABEL_WIDTH, min_width=_LABEL_WIDTH))
        self._notes[name] = note = self._make(w.HTML, layout=w.Layout(flex="1 1 0%", min_width="120px"))
        widget = self._control(control, state)
        self.controls[name] = widget
        return self._make(w.HBox, children=[label, widget, note], layout=w.Layout(align_items="center"))

    def _control(self, control: controls.Control, state: controls.ControlState):
        w = self._w
        kind, shown = control.widget, state.shown
        if kind == "targets":
            for target, _ in control.options:
                button = self._make(
                    w.ToggleButton, description=target, value=target == shown, layout=w.Layout(width="80px")
                )
                button.observe(self._guarded(lambda change, target=target: self._pick_target(target, change)), "value")
                self.targets[target] = button
            return self._make(w.HBox, children=list(self.targets.values()))
        if kind == "toggle_buttons":
            widget = self._make(w.ToggleButtons, options=control.options, value=shown, style={"button_width": "90px"})
        elif kind == "dropdown":
            widget = self._make(w.Dropdown, options=control.options, value=shown, layout=w.Layout(width="200px"))
        elif kind == "switch":
            widget = self._make(
                w.ToggleButton, value=shown, description="on" if shown else "off", layout=w.Layout(width="80px")
            )
        elif kind == "checkbox":
            widget = self._make(w.Checkbox, value=shown, indent=False, layout=w.Layout(width="auto"))
        elif kind in ("bounded_int", "int"):
            # Not BoundedIntText: it clamps 99999 to the maximum and applies that without a word
            # (set_device then cannot be undone). The key's own check refuses it in one line.
            bounds = f"{control.low} to {control.high}" if control.high is not None else f"{control.low} or more"
            widget = self._make(w.IntText, value=shown, tooltip=bounds, layout=w.Layout(width="120px"))
        elif kind == "json":
            widget = self._make(
                w.Textarea,
                value=shown,
                continuous_update=False,
                rows=2,
                placeholder="{}",
                layout=w.Layout(width="360px"),
            )
        else:
            widget = self._make(w.Text, value=shown, continuous_update=False, layout=w.Layout(width="360px"))
        widget.observe(self._guarded(lambda change: self._write(control, change["new"])), "value")
        return widget

    def _device_extras(self) -> list:
        w = self._w
        self._device_note = self._make(w.HTML)
        self.first_cell_button = self._make(
            w.Button, description="Copy first cell for a fresh kernel", icon="copy", layout=w.Layout(width="auto")
        )
        self.first_cell_button.on_click(self._guarded(self._show_first_cell))
        self.first_cell = self._make(w.HTML)
        return [self._device_note, self.first_cell_button, self.first_cell]

    def _capture_row(self) -> list:
        """The ``%msprint on`` switch: it sets the ``MsDebug.print_capture`` preference."""
        w = self._w
        capture = _print_capture()
        self.capture = self._make(
            w.Checkbox,
            value=bool(capture),
            description="every cell",
            indent=False,
            disabled=capture is None,
            layout=w.Layout(width="120px"),
        )
        self.capture.observe(self._guarded(self._set_capture), names="value")
        label = self._make(
            w.HTML,
            value=tag("span", esc("print capture"), style="padding-left:7px"),
            layout=w.Layout(width=_LABEL_WIDTH, min_width=_LABEL_WIDTH),
        )
        note = self._make(
            w.HTML,
            value=tag(
                "span",
                esc("Print output inline, in order, when each cell ends (%msprint on)"),
                style=f"{NOTE};font-size:11px",
            ),
        )
        return [self._make(w.HBox, children=[label, self.capture, note], layout=w.Layout(align_items="center"))]

    def _set_capture(self, change) -> None:
        if self._syncing:
            return
        from .prefs import active

        prefs = active()
        if prefs is None:
            raise RuntimeError("print capture needs msdebug loaded in this shell: %load_ext msdebug")
        prefs.print_capture = bool(change["new"])
        self.refresh()

    def _rdr_row(self) -> list:
        w = self._w
        self.rdr = {
            "enable": self._make(
                w.Checkbox, value=False, description="enable", indent=False, layout=w.Layout(width="90px")
            ),
            "mode": self._make(
                w.Dropdown,
                options=[("1 on failure", 1), ("2 also at exit", 2)],
                value=1,
                layout=w.Layout(width="140px"),
            ),
            "path": self._make(
                w.Text, value="", placeholder="/absolute/path (default: working dir)", layout=w.Layout(width="260px")
            ),
        }
        self.rdr_button = self._make(
            w.Button,
            description="Write and use",
            tooltip="write a new env_config.json with these fields and set env_config_path to it",
            layout=w.Layout(width="auto"),
        )
        self.rdr_button.on_click(self._guarded(self._write_rdr))
        self._rdr_note = self._make(w.HTML)
        label = self._make(
            w.HTML,
            value=tag("span", esc("RDR (env_config.json)"), style="padding-left:7px"),
            layout=w.Layout(width=_LABEL_WIDTH, min_width=_LABEL_WIDTH),
        )
        fields = self._make(
            w.HBox, children=[label, *self.rdr.values(), self.rdr_button], layout=w.Layout(align_items="center")
        )
        return [fields, self._rdr_note]

    # ------------------------------------------------------------------ writing

    def _guarded(self, handler):
        """Wrap a widget callback: no exception may reach the notebook from one."""

        def call(*args):
            if self._syncing:
                return
            try:
                handler(*args)
            except Exception as error:  # noqa: BLE001 - shown in the panel instead
                self._fail(error)

        return call

    def _fail(self, error: Exception) -> None:
        self.error = str(error) if isinstance(error, MsDebugError) else f"{type(error).__name__}: {error}"
        self.refresh()

    def _write(self, control: controls.Control, value: Any) -> None:
        self.error = ""
        self._shown.pop(control.name, None)  # the widget now shows what was typed: re-show the real value
        value = controls.from_widget(control, value)
        if control.name == "device_id":
            # The panel chooses the device to run on, as device=TARGET:ID does (set_device);
            # %mscontext device_id=N alone keeps set_context's meaning.
            number = control.key.coerce(value)  # the key's own check and wording first, as the magic's
            self._settings.apply({"device": f"{self.model.device.target}:{number}"})
        else:
            # On success apply() notifies every open panel, this one included.
            self._settings.apply({control.name: value})

    def _pick_target(self, target: str, change) -> None:
        if not change["new"]:
            self._shown.pop("device_target", None)
            self.refresh()  # a radio button: the current target stays pressed
            return
        self.error = ""
        self._shown.pop("device_target", None)
        self._settings.apply({"device_target": target})

    def _reset(self, _button=None) -> None:
        self.error = ""
        self._settings.reset()
        self.refresh()

    def _show_first_cell(self, _button=None) -> None:
        code = self.model.first_cell
        self.first_cell.value = tag(
            "div", esc("Make this the first cell of a fresh kernel (restart the kernel, then run it):"), style=NOTE
        ) + tag("pre", esc(code), style="margin:2px 0;padding:4px;background:#f4f4f4;user-select:all")

    def _write_rdr(self, _button=None) -> None:
        self.error = ""
        current = self.model["env_config_path"].value if self._has("env_config_path") else ""
        path = controls.write_rdr(
            self.rdr["enable"].value, self.rdr["mode"].value, self.rdr["path"].value.strip(), based_on=current or ""
        )
        self._settings.apply({"env_config_path": str(path)})
        self._rdr_note.value = tag("div", esc(f"wrote {path} and set env_config_path to it"), style=NOTE)

    def _has(self, name: str) -> bool:
        return name in self.controls

    # ------------------------------------------------------------------ reading

    def refresh(self) -> None:
        """Show the context as it is now (cheap: only what changed is sent to the front end)."""
        try:
            self.model = controls.model(self._settings.state(), _print_capture())
            self._update()
        except Exception as error:  # noqa: BLE001 - a listener must never fail the cell
            self.error = f"could not read the context: {type(error).__name__}: {error}"
            with contextlib.suppress(Exception):
                self._error.value = tag("div", esc(self.error), style=_ERROR)

    @contextlib.contextmanager
    def _sync(self) -> Iterator[None]:
        """Values set while showing the context are not writes."""
        self._syncing = True
        try:
            yield
        finally:
            self._syncing = False

    def _update(self) -> None:
        model = self.model
        with self._sync():
            self._summary.value = tag("div", esc(model.summary), style=f"{STRONG};font-size:13px")
            self._error.value = tag("div", esc(f"✖ {self.error}"), style=_ERROR) if self.error else ""
            for state in model.controls():
                self._update_control(state)
            self._update_device(model)
            self._update_rdr(model)
            capture = _print_capture()
            self.capture.value = bool(capture)
            self.capture.disabled = capture is None

    def _update_control(self, state: controls.ControlState) -> None:
        name = state.control.name
        shown = state.shown
        seen = (shown, state.changed, state.disabled, state.note)
        if self._shown.get(name) == seen:
            return
        self._shown[name] = seen
        if state.control.widget == "targets":
            for target, button in self.targets.items():
                button.value = target == shown
                reason = self.model.unsupported.get(target) or state.disabled
                button.disabled = bool(reason)
                button.tooltip = reason or f"run on {target}"
        else:
            widget = self.controls[name]
            widget.value = shown
            widget.disabled = bool(state.disabled)
            widget.tooltip = state.disabled or state.control.key.help
            if state.control.widget == "switch":
                widget.description = "on" if shown else "off"
                widget.button_style = "success" if shown else ""
            if state.control.widget == "toggle_buttons":
                # The pressed button is only a shade darker: a tick says which mode is on.
                values = [option[1] if isinstance(option, tuple) else option for option in widget.options]
                widget.icons = ["check" if value == shown else "" for value in values]
        style = f"{CHANGED_MARK};padding-left:4px;{STRONG}" if state.changed else "padding-left:7px"
        body = tag("code", esc(name), style="background:none")
        self._labels[name].value = f'<span title="{esc(state.control.key.help)}" style="{style}">{body}</span>'
        lock = self.model.device_lock
        # The device lock is said once, under the device controls; here it is only a tooltip.
        note = "" if lock and state.disabled == lock else state.disabled or state.note
        style = f"{NOTE};font-size:11px;line-height:14px;padding-left:8px"
        self._notes[name].value = tag("div", esc(note), style=style) if note else ""

    def _update_device(self, model: controls.PanelModel) -> None:
        reasons = [f"{target}: {reason}" for target, reason in model.unsupported.items()]
        if model.device_lock:
            reasons.insert(0, f"locked: {model.device_lock}")
        self._device_note.value = (
            tag(
                "div",
                "<br>".join(esc(r) for r in reasons),
                style=f"{NOTE};font-size:11px;line-height:15px;padding-left:7px",
            )
            if reasons
            else ""
        )
        self.first_cell_button.layout.display = "" if model.device_lock else "none"
        if not model.device_lock:
            self.first_cell.value = ""

    def _update_rdr(self, model: controls.PanelModel) -> None:
        reason = model.rdr_unavailable
        for widget in (*self.rdr.values(), self.rdr_button):
            widget.disabled = bool(reason)
            if reason:
                widget.tooltip = reason
        if reason:
            self._rdr_note.value = tag("div", esc(f"RDR: {reason}"), style=f"{NOTE};font-size:11px;padding-left:7px")
        path = model["env_config_path"].value if self._has("env_config_path") else ""
        if path != self._env_config_seen:
            self._env_config_seen = path
            config, problem = controls.read_rdr(path if isinstance(path, str) else "")
            self.rdr["enable"].value = bool(config and config.rdr_enable)
            self.rdr["mode"].value = (config and config.rdr_mode) or 1
            self.rdr["path"].value = (config and config.rdr_path) or ""
            if problem and not reason:
                self._rdr_note.value = tag("div", esc(problem), style=_ERROR)

    # ------------------------------------------------------------------ display and lifetime

    def text(self) -> str:
        """The panel as plain text: summary, top sections, changed keys."""
        from ..views.panel import text_panel

        return text_panel(self.model, self.error)

    def __repr__(self) -> str:
        return self.text()

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = dict(self.widget._repr_mimebundle_(include=include, exclude=exclude))
        data["text/plain"] = self.text()
        return data

    def close(self) -> None:
        """Stop following the context and remove the widgets from the front end."""
        self._unsubscribe()
        for widget in reversed(self._widgets):
            widget.close()
        self._widgets.clear()
