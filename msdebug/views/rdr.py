"""``%msrdr``'s status (what the Running Data Recorder will do, what it exported): one
:class:`~msdebug.views.report.Report`, rendered as HTML and as text."""

from __future__ import annotations

from . import report as r

__all__ = ["build", "html_rdr_status", "text_rdr_status"]


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


def build(status) -> r.Report:
    """The RDR status's sections."""
    lines = _rdr_lines(status)
    sections: list = [r.Line(lines[0], look="strong")]
    # The settings: a table in HTML, aligned lines in text.
    rows = [(s.key, str(s.value), s.source) for s in status.settings]
    sections.append(r.Table([r.Col("setting"), r.Col("value"), r.Col("from")], rows, look="full", only="html"))
    sections.append(r.Items(lines[1 : 1 + len(status.settings)], only="text"))
    if status.config_file:
        sections.append(r.Line(f"env_config_path: {status.config_file}", look="boxed-note", indent=2))
    sections.append(r.Line(lines[-1], look="boxed-note"))
    if status.exported:
        shown = status.exported[:10]
        sections.append(r.Items(shown, indent=4))
        if len(shown) < len(status.exported):
            sections.append(
                r.Line(f"showing {len(shown)} of {len(status.exported)} files", look="boxed-note", indent=4)
            )
    sections += [r.Line(f"note: {note}", look="warning") for note in status.notes]
    return r.Report(sections, cls="msdebug-dump")


html_rdr_status, text_rdr_status = r.renderers(build)
