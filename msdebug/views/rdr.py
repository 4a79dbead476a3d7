"""``%msrdr``'s status (what the Running Data Recorder will do, what it exported) -> HTML and text."""

from __future__ import annotations

from ._html import STRONG, esc, tag
from .explorer import _note, _table

__all__ = ["html_rdr_status", "text_rdr_status"]


# --------------------------------------------------------------------------- RDR status


def _rdr_lines(status) -> list[str]:
    if status.version is None:
        head = "RDR: MindSpore is not installed"
    elif not status.supported:
        head = f"RDR: ignored by MindSpore {status.version} (it exists up to 2.7.0)"
    else:
        enabled = status.value("rdr.enable")
        mode = status.value("rdr.mode")
        head = f"RDR: {'on' if enabled else 'off'}, mode {mode} (MindSpore {status.version})"
        if status.compiled:
            head += "; a graph was compiled already, so these settings are fixed for this process"
    lines = [head]
    for setting in status.settings:
        lines.append(f"  {setting.key:<14} {setting.value!s:<40} from {setting.source}")
    if status.config_file:
        lines.append(f"  env_config_path: {status.config_file}")
    lines.append(f"  exported so far under {status.output}: {len(status.exported)} files")
    return lines


def text_rdr_status(status) -> str:
    lines = _rdr_lines(status)
    for path in status.exported[:10]:
        lines.append(f"    {path}")
    if len(status.exported) > 10:
        lines.append(f"    showing 10 of {len(status.exported)} files")
    lines += [f"note: {note}" for note in status.notes]
    return "\n".join(lines)


def html_rdr_status(status) -> str:
    lines = _rdr_lines(status)
    rows = [[esc(s.key), esc(s.value), esc(s.source)] for s in status.settings]
    parts = [tag("div", esc(lines[0]), style=STRONG), _table(["setting", "value", "from"], rows)]
    if status.config_file:
        parts.append(_note(f"env_config_path: {status.config_file}"))
    parts.append(_note(lines[-1]))
    if status.exported:
        shown = status.exported[:10]
        items = "".join(tag("li", esc(p)) for p in shown)
        parts.append(
            tag("ul", items)
            + (
                _note(f"showing {len(shown)} of {len(status.exported)} files")
                if len(shown) < len(status.exported)
                else ""
            )
        )
    for note in status.notes:
        parts.append(tag("div", esc(f"note: {note}"), style="color:#9a6700"))
    return tag("div", "".join(parts), cls="msdebug-dump")
