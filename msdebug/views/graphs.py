"""``%msgraphs``'s status (save_graphs' level and directory, the IR files there) -> HTML and text."""

from __future__ import annotations

from ._html import NOTE, STRONG, esc, tag
from .explorer import _note, _table

__all__ = ["html_save_graphs", "text_save_graphs"]


# --------------------------------------------------------------------------- save_graphs


def _save_graphs_head(status) -> str:
    state = f"level {status.level} ({status.level_name})" if status.level else "off"
    return f"save_graphs: {state}, into {status.path} (set through the {status.via})"


def text_save_graphs(status) -> str:
    lines = [_save_graphs_head(status), f"  {status.files} IR files there so far"]
    lines += [f"    {count:>5}  {family}" for family, count in status.families]
    if status.files:
        lines.append(f"  read them with msdebug.open_dump({status.path!r})")
    lines += [f"note: {note}" for note in status.notes]
    return "\n".join(lines)


def html_save_graphs(status) -> str:
    rows = [[esc(family), esc(count)] for family, count in status.families]
    parts = [tag("div", esc(_save_graphs_head(status)), style=STRONG), _note(f"{status.files} IR files there so far")]
    if rows:
        parts.append(_table(["family", "files"], rows))
        parts.append(tag("div", tag("code", esc(f"msdebug.open_dump({status.path!r})")), style=NOTE))
    for note in status.notes:
        parts.append(tag("div", esc(f"note: {note}"), style="color:#9a6700"))
    return tag("div", "".join(parts), cls="msdebug-dump")
