"""The settings panel (a ``controls.PanelModel``) as plain text, for shells without widgets."""

from __future__ import annotations

from .context import value_text

__all__ = ["text_panel"]

_NAME_WIDTH = 22
_VALUE_WIDTH = 24


def _line(state) -> str:
    mark = "*" if state.changed else " "
    value = value_text(state.control.key, state.value)
    if len(value) > _VALUE_WIDTH:
        value = value[: _VALUE_WIDTH - 1] + "…"
    extra = [f"locked: {state.disabled}" if state.disabled else "", state.note]
    tail = "; ".join(part for part in extra if part)
    return f"{mark} {state.control.name:<{_NAME_WIDTH}} {value:<{_VALUE_WIDTH}} {tail}".rstrip()


def text_panel(model, error: str = "") -> str:
    """``msdebug panel · GRAPH · CPU:0 · sync off`` and one line per control of the top sections."""
    lines = [f"msdebug panel · {model.summary}"]
    if error:
        lines.append(f"error: {error}")
    for title, states in model.sections:
        lines += ["", title]
        lines += [_line(state) for state in states]
        if title == "Device":
            for target, reason in model.unsupported.items():
                lines.append(f"  {target} disabled: {reason}")
            if model.device_lock:
                lines.append(f"  first cell for a fresh kernel: {model.first_cell}")
        if title == "Debugging" and model.rdr_unavailable:
            lines.append(f"  RDR fields disabled: {model.rdr_unavailable}")
    count = sum(len(states) for _, states in model.groups)
    changed = [state for _, states in model.groups for state in states if state.changed]
    lines += ["", f"All settings: {count} more keys in {len(model.groups)} groups"]
    lines += [_line(state) for state in changed]
    lines += ["", "* differs from its default"]
    return "\n".join(lines)
