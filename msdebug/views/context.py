"""Context models (table, key help, change report) -> escaped HTML and plain text."""

from __future__ import annotations

from typing import Any

from ..keys import ALL_DEVICES, UNREAD, UNSET, ContextKey, Flag, Integer
from ._html import CHANGED_MARK, FADED, LEFT, NOTE, STRONG, esc, tag

__all__ = [
    "html_change_report",
    "html_key_info",
    "html_state",
    "text_change_report",
    "text_key_info",
    "text_state",
]

_OPEN_GROUPS = ("Execution", "Device", "Debugging and dumps")
_TEXT_VALUE_WIDTH = 44


def value_text(key: ContextKey, value: Any) -> str:
    """Display form of a canonical value, including msdebug's own markers."""
    if value is UNREAD:
        return "(not read)"
    if value is UNSET or value is None:
        return "(not set)" if value is UNSET else "?"
    return key.kind.format(value)


def platforms_text(key: ContextKey) -> str:
    return "all" if tuple(key.platforms) == ALL_DEVICES else ", ".join(key.platforms)


def status_text(key: ContextKey) -> str:
    """Short status for the table: ``deprecated → mindspore.set_device(target)``."""
    if key.removed_in or key.ignored:
        return key.status()
    if key.deprecated_in:
        return f"deprecated → {key.replacement}" if key.replacement else "deprecated"
    return ""


def _clip(text: str, width: int = _TEXT_VALUE_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


# --------------------------------------------------------------------------- table


def text_state(state) -> str:
    lines = [state.summary()]
    groups = state.groups()
    if not groups:
        lines.append("every key has its default value" if state.changed_only else "no keys")
    for title, rows in groups:
        lines += ["", title]
        cells = [
            (
                "*" if row.changed else " ",
                row.key.name,
                _clip(value_text(row.key, row.value)),
                _clip(value_text(row.key, row.default), 24),
                platforms_text(row.key) + ("" if row.applies else " (inert here)"),
                "; ".join(part for part in (status_text(row.key), row.note) if part),
            )
            for row in rows
        ]
        widths = [max(len(cell[i]) for cell in cells) for i in range(5)]
        for cell in cells:
            head = "  ".join(cell[i].ljust(widths[i]) for i in range(1, 5))
            lines.append(f"{cell[0]} {head}  {cell[5]}".rstrip())
    lines += ["", "* differs from its default; inert: does nothing on this device"]
    if state.hidden_removed:
        lines.append(f"{state.hidden_removed} removed or ignored keys are not listed; %mscontext KEY explains one")
    return "\n".join(lines)


def html_state(state) -> str:
    parts = [tag("div", esc(state.summary()), "ms-summary", STRONG)]
    groups = state.groups()
    if not groups:
        note = "Every key has its default value." if state.changed_only else "No keys."
        parts.append(tag("div", esc(note), "ms-note", NOTE))
    for title, rows in groups:
        head = "".join(tag("th", esc(h), style=LEFT) for h in ("key", "value", "default", "platforms", "status"))
        body = "".join(_html_row(row) for row in rows)
        table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        opened = " open" if state.changed_only or title in _OPEN_GROUPS else ""
        summary = tag("summary", esc(f"{title} ({len(rows)})"), style=STRONG)
        parts.append(f"<details{opened}>{summary}{table}</details>")
    legend = "marked and bold: differs from its default · faded: does nothing on this device"
    if state.hidden_removed:
        legend += f" · {state.hidden_removed} removed or ignored keys not listed (%mscontext KEY explains one)"
    parts.append(tag("div", esc(legend), "ms-note", NOTE))
    return tag("div", "".join(parts), "msdebug")


def _html_row(row) -> str:
    classes = " ".join(c for c in ("ms-changed" if row.changed else "", "" if row.applies else "ms-inert") if c)
    status = esc(status_text(row.key)) + (tag("div", esc(row.note), "ms-note", NOTE) if row.note else "")
    cells = (
        tag("td", tag("code", esc(row.key.name)), style=f"{LEFT};{CHANGED_MARK}" if row.changed else LEFT),
        tag(
            "td",
            tag("code", esc(value_text(row.key, row.value))),
            "ms-value",
            f"{LEFT};{STRONG}" if row.changed else LEFT,
        ),
        tag("td", tag("code", esc(value_text(row.key, row.default))), style=LEFT),
        tag("td", esc(platforms_text(row.key)), style=LEFT),
        tag("td", status, style=LEFT),
    )
    return tag("tr", "".join(cells), classes, "" if row.applies else FADED)


# --------------------------------------------------------------------------- one key


def _info_fields(info) -> list[tuple[str, str]]:
    key = info.key
    fields = [("allowed", key.kind.describe())]
    if info.version is not None and info.available:
        fields.append(("current", value_text(key, info.value)))
    if key.name != "device":
        shown = info.default if info.available else key.default
        default = value_text(key, shown) if shown is not None else "?"
        if key.default_note:
            default = f"{default} ({key.default_note})" if shown is not None else key.default_note
        fields.append(("default", default))
    on_device = "" if info.device is None or key.applies_to(info.device) else f" (does nothing on {info.device})"
    fields.append(("platforms", platforms_text(key) + on_device))
    fields.append(("status", key.status()))
    if key.part_of:
        fields.append(("set through", f"{key.part_of[0]}[{key.part_of[1]!r}]; msdebug merges it for you"))
    example = _example(key, info.value)
    if example and info.available and not key.removed_in:
        fields.append(("set with", example))
    for text in (key.notes, *info.extra, info.problem):
        if text:
            fields.append(("note", text))
    return fields


def _example(key: ContextKey, value: Any) -> str:
    choices = key.kind.completions()
    if choices:
        typed = choices[0]
        python = repr(key.kind.coerce(typed)) if isinstance(key.kind, (Flag, Integer)) else repr(typed)
    elif value is not None and value is not UNSET and value is not UNREAD:
        typed, python = key.kind.typed(value), repr(value)
    else:
        return ""
    return f"%mscontext {key.name}={typed}  ·  msdebug.set({key.name}={python})"


def text_key_info(info) -> str:
    key = info.key
    lines = [f"{key.name} ({key.kind.label})", f"  {key.help}"]
    lines += [f"  {name:<11} {text}" for name, text in _info_fields(info)]
    return "\n".join(lines)


def html_key_info(info) -> str:
    key = info.key
    rows = "".join(
        tag("tr", tag("th", esc(name), style=LEFT) + tag("td", esc(text), style=LEFT))
        for name, text in _info_fields(info)
    )
    title = tag("div", tag("code", esc(key.name)) + esc(f" ({key.kind.label})"), "ms-summary", STRONG)
    return tag("div", title + tag("div", esc(key.help)) + f"<table>{rows}</table>", "msdebug")


# --------------------------------------------------------------------------- changes


def _change_lines(report) -> list[str]:
    lines = []
    for change in report.changes:
        old, new = value_text(change.key, change.old), value_text(change.key, change.new)
        text = f"{change.key.name}: {new} (unchanged)" if old == new else f"{change.key.name}: {old} → {new}"
        lines.append(f"{text}  [{change.note}]" if change.note else text)
    return lines + [f"note: {note}" for note in report.notes]


def text_change_report(report) -> str:
    return "\n".join(_change_lines(report)) or "nothing changed"


def html_change_report(report) -> str:
    lines = _change_lines(report) or ["nothing changed"]
    return tag("div", tag("code", "<br>".join(esc(line) for line in lines)), "msdebug")
