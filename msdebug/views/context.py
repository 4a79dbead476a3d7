"""Context models (table, key help, change report) -> escaped HTML and plain text."""

from __future__ import annotations

from typing import Any

from ..keys import ALL_DEVICES, UNREAD, UNSET, ContextKey, Flag, Integer
from . import report as r

__all__ = [  # the names views/__init__ lists (it imports this module lazily); build_* stay off it
    "html_change_report",
    "html_key_info",
    "html_state",
    "text_change_report",
    "text_key_info",
    "text_state",
]

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


def _text_lines(state) -> list[str]:
    """The table in a terminal: a block per group, its columns lined up with spaces."""
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
    if state.all_keys and state.removed:
        lines.append(f"removed or ignored in MindSpore {state.version}: {', '.join(state.removed)}")
    elif state.hidden_removed:
        lines.append(f"{state.hidden_removed} removed or ignored keys are not listed; %mscontext KEY explains one")
    return lines


_COLUMNS = ("key", "value", "default", "platforms", "status")
_WIDTHS = (22, 17, 14, 9, 38)


def _grouped_table(groups: list[tuple[str, list]]) -> r.Table:
    """One table for every group (the columns line up), a heading row per group."""
    rows: list = []
    for title, group in groups:
        rows.append(r.Row([f"{title} ({len(group)})"], cls="ms-group", heading=True))
        rows += [_row(row) for row in group]
    columns = [r.Col(head, width=width) for head, width in zip(_COLUMNS, _WIDTHS, strict=True)]
    return r.Table(columns, rows, look="grid", only="html")


def _row(row) -> r.Row:
    classes = " ".join(c for c in ("ms-changed" if row.changed else "", "" if row.applies else "ms-inert") if c)
    note = (r.Block([r.Line(row.note, look="note", cls="ms-note")]),) if row.note else ()
    value, default = value_text(row.key, row.value), value_text(row.key, row.default)
    cells = (
        r.Cell(r.Span(row.key.name, "name"), look="cell-marked" if row.changed else "cell"),
        r.Cell(r.Span(value, "name"), look="value-strong" if row.changed else "value", title=value, cls="ms-value"),
        r.Cell(r.Span(default, "name"), look="value-plain", title=default),
        platforms_text(row.key),
        (status_text(row.key), *note),
    )
    return r.Row(cells, cls=classes, look="" if row.applies else "faded")


def build_state(state) -> r.Report:
    """The context table: the keys that matter here first, by group; keys that do nothing on
    this device (and keys of other versions) one click away."""
    sections: list = [
        r.Line(state.summary(), look="strong", cls="ms-summary", only="html"),
        *(r.Line(line, only="text") for line in _text_lines(state)),
    ]
    groups = state.groups()
    if not groups:
        note = "Every key has its default value." if state.changed_only else "No keys."
        sections.append(r.Line(note, look="note", cls="ms-note", only="html"))
        return r.Report(sections, cls="msdebug")
    shown = [(title, [x for x in rows if x.applies or x.changed]) for title, rows in groups]
    folded = [(title, [x for x in rows if not (x.applies or x.changed)]) for title, rows in groups]
    shown, folded = [g for g in shown if g[1]], [g for g in folded if g[1]]
    if shown:
        sections.append(_grouped_table(shown))
    inert = sum(len(rows) for _, rows in folded)
    removed = state.removed and not state.changed_only
    if inert or removed:
        words = [f"{inert} keys that do nothing on {state.device.target}"] if inert else []
        inside: list = [_grouped_table(folded)] if folded else []
        if removed:
            words.append(f"{len(state.removed)} removed or ignored keys")
            inside.append(
                r.Line(
                    f"removed or ignored in MindSpore {state.version}: {', '.join(state.removed)} "
                    "(%mscontext KEY explains one)",
                    look="note",
                    cls="ms-note",
                )
            )
        sections.append(r.Fold("show all: " + " · ".join(words), inside, open=state.all_keys, look="note", only="html"))
    sections.append(
        r.Line(
            "marked and bold: differs from its default · faded: does nothing on this device",
            look="note",
            cls="ms-note",
            only="html",
        )
    )
    return r.Report(sections, cls="msdebug")


html_state, text_state = r.renderers(build_state)


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


def build_key_info(info) -> r.Report:
    """Everything about one key: what it takes, its value and default, where it works, how to set it."""
    key = info.key
    fields = _info_fields(info)
    return r.Report(
        [
            r.Line((r.Span(key.name, "name"), f" ({key.kind.label})"), look="strong", cls="ms-summary", only="html"),
            r.Line(key.help, only="html"),
            r.KeyValues(fields, look="table", only="html"),
            r.Line(f"{key.name} ({key.kind.label})", only="text"),
            r.Line(f"  {key.help}", only="text"),
            *(r.Line(f"  {name:<11} {text}", only="text") for name, text in fields),
        ],
        cls="msdebug",
    )


html_key_info, text_key_info = r.renderers(build_key_info)


# --------------------------------------------------------------------------- changes


def _change_lines(report) -> list[str]:
    lines = []
    for change in report.changes:
        old, new = value_text(change.key, change.old), value_text(change.key, change.new)
        text = f"{change.key.name}: {new} (unchanged)" if old == new else f"{change.key.name}: {old} → {new}"
        lines.append(f"{text}  [{change.note}]" if change.note else text)
    return lines + [f"note: {note}" for note in report.notes]


# One block, a line per change: an inline <code> with <br> indents its first line only.
_CHANGES = (
    "font-family:monospace;background:rgba(127,127,127,.08);padding:2px 6px;white-space:pre-wrap;overflow-wrap:anywhere"
)


def build_change_report(report) -> r.Report:
    """What one call changed, a line per key, then its notes."""
    lines = _change_lines(report) or ["nothing changed"]
    return r.Report([r.Line(line) for line in lines], cls="msdebug ms-changes", style=_CHANGES)


html_change_report, text_change_report = r.renderers(build_change_report)
