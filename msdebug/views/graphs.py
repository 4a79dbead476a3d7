"""``%msgraphs``'s status (save_graphs' level and directory, the IR files there): one
:class:`~msdebug.views.report.Report`, rendered as HTML and as text."""

from __future__ import annotations

from . import report as r

__all__ = ["build", "html_save_graphs", "text_save_graphs"]


# --------------------------------------------------------------------------- save_graphs


def _save_graphs_head(status) -> str:
    state = f"level {status.level} ({status.level_name})" if status.level else "off"
    return f"save_graphs: {state}, into {status.path} (set through the {status.via})"


def build(status) -> r.Report:
    """``%msgraphs``'s status's sections."""
    sections: list = [
        r.Line(_save_graphs_head(status), look="strong"),
        r.Line(f"{status.files} IR files there so far", look="boxed-note", indent=2),
    ]
    families = [(family, str(count)) for family, count in status.families]
    # The IR files by family: a table in HTML, aligned lines in text.
    sections.append(r.Items([f"{count:>5}  {family}" for family, count in families], indent=4, only="text"))
    opener = f"msdebug.open_dump({status.path!r})"
    if families:
        sections.append(r.Table([r.Col("family"), r.Col("files")], families, look="full", only="html"))
        sections.append(r.Line(r.Span(opener, "name"), look="note", only="html"))
    if status.files:
        sections.append(r.Line(f"read them with {opener}", indent=2, only="text"))
    sections += [r.Line(f"note: {note}", look="warning") for note in status.notes]
    return r.Report(sections, cls="msdebug-dump")


html_save_graphs, text_save_graphs = r.renderers(build)
