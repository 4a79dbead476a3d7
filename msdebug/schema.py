"""One small declarative validator for the configs msdebug writes or reads.

A config is a mapping of names to :class:`Field` (env_config.json, the data dump JSON,
``MS_PROFILER_OPTIONS``, ``profiler_config.json``); :func:`validate` checks a parsed config
against it and raises one line: what was wrong, what is allowed, and "did you mean".
Pure: where the fields come from (MindSpore's own tables, read by ``backend``, or a cited
declarative table) is the caller's business.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidValueError, MsDebugError, did_you_mean, echo

__all__ = ["Field", "check", "validate"]


@dataclass(frozen=True)
class Field:
    """What one config key takes.

    ``kind``: ``bool``, ``int`` (``choices`` or ``low``/``high``), ``str``, ``enum`` (one of
    ``choices``), ``list`` (items from ``choices``, or of ``items`` kind ``str``/``uint``),
    ``object`` (the nested ``fields``), ``any``, or ``retired`` (a key this MindSpore no longer
    reads; ``says`` tells what replaces it). ``says`` replaces the generated "what is allowed";
    ``rule(value, name)`` adds a check of its own and raises its own one-line error.
    ``floats``: an ``int`` field also takes a JSON number with no fraction (``2.0``), for the parsers
    that compare numbers by value and never check the type: nlohmann's ``content != 2`` is false for
    ``2.0``. Only env_config's ``rdr.mode`` is read so (its comment cites the line); a field MindSpore
    reads with ``is_number_unsigned()`` or ``isinstance(value, int)`` refuses or drops ``2.0`` and
    must not set it.
    ``ascend`` and ``note`` are for the callers' notes.
    """

    kind: str
    choices: tuple = ()
    low: int | None = None
    high: int | None = None
    items: str = ""
    nonempty: bool = False
    fields: Mapping[str, Field] | None = None
    required: bool = False
    says: str = ""
    rule: Callable[[Any, str], Any] | None = None
    floats: bool = False
    ascend: bool = False
    note: str = ""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _among(value: Any, choices: tuple) -> bool:
    # 1 == True and 0 == False in Python; a JSON true is not the level 1.
    return any(value == c and type(value) is type(c) for c in choices)


def _choice(item: Any) -> str:
    return "null" if item is None else repr(item)


def _item_ok(kind: str, item: Any) -> bool:
    return (kind == "str" and isinstance(item, str) and item != "") or (kind == "uint" and _is_int(item) and item >= 0)


def allowed(field: Field) -> str:
    """What ``field`` takes, as an error line says it."""
    if field.says:
        return field.says
    if field.kind == "bool":
        return "true or false"
    if field.kind == "int" and field.choices:
        return "one of " + ", ".join(map(str, field.choices))
    if field.kind == "int":
        low = "" if field.low is None else f" from {field.low}"
        return "a whole number" + low + ("" if field.high is None else f" to {field.high}")
    if field.kind == "enum":
        return "one of " + ", ".join(map(_choice, field.choices))
    if field.kind == "list":
        what = {"str": "non-empty strings", "uint": "whole numbers >= 0"}.get(field.items, "")
        what = what or ", ".join(map(_choice, field.choices))
        return ("a non-empty list of " if field.nonempty else "a list of ") + what
    return {"str": "a string", "object": "an object"}.get(field.kind, field.kind)


def _fits(field: Field, value: Any) -> bool:
    kind = field.kind
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        if field.floats and isinstance(value, float) and value.is_integer():
            value = int(value)
        if not _is_int(value):
            return False
        if field.choices:
            return value in field.choices
        return (field.low is None or value >= field.low) and (field.high is None or value <= field.high)
    if kind == "str":
        return isinstance(value, str)
    if kind == "enum":
        return _among(value, field.choices)
    if kind == "list":
        if not isinstance(value, list) or (field.nonempty and not value):
            return False
        if field.items:
            return all(_item_ok(field.items, item) for item in value)
        return all(_among(item, field.choices) for item in value)
    if kind == "object":
        return isinstance(value, dict)
    return True


def check(
    field: Field,
    value: Any,
    name: str,
    where: str = "",
    error: type[MsDebugError] = InvalidValueError,
    show: Callable[[Any], str] = echo,
) -> None:
    """Raise ``error`` (one line, ``where: `` first) unless ``value`` is what ``field`` takes."""
    head = f"{where}: " if where else ""
    if field.kind == "retired":
        raise error(f"{head}{name}: {field.says}")
    if value is None and not (field.kind == "enum" and None in field.choices):
        raise error(f"{head}{name} is null; leave the key out to keep MindSpore's default.")
    if not _fits(field, value):
        hint = did_you_mean(value, [c for c in field.choices if isinstance(c, str)]) if isinstance(value, str) else ""
        raise error(f"{head}{name} must be {allowed(field)}, got {show(value)}.{hint}")
    if field.kind == "object":
        validate(field.fields or {}, value, where, error, show=show, _prefix=f"{name}.")
    if field.rule is not None:
        try:
            field.rule(value, name)
        except MsDebugError as refused:
            if not where:
                raise
            raise type(refused)(f"{head}{refused}") from None


def validate(
    spec: Mapping[str, Field],
    data: Any,
    where: str = "",
    error: type[MsDebugError] = InvalidValueError,
    *,
    extra: str = "refuse",
    show: Callable[[Any], str] = echo,
    _prefix: str = "",
) -> dict:
    """Check ``data`` against ``spec``; returns ``data``.

    Unknown keys are refused with "did you mean" (MindSpore would silently ignore them), or
    kept at the top level with ``extra="keep"``; a required key that is missing is refused;
    then every value is checked in the order of ``data``.
    """
    head = f"{where}: " if where else ""
    if not isinstance(data, dict):
        raise error(f"{head}the top level must be a JSON object {{...}}, got {type(data).__name__}.")
    names = [name for name, field in spec.items() if field.kind != "retired"]
    for key in data:
        if key not in spec and (_prefix or extra == "refuse"):
            text = str(key)
            shown = text if text.isprintable() and len(text) <= 40 else echo(text, limit=40)
            takes = f"{_prefix[:-1]} takes" if _prefix else "the keys it reads are"
            raise error(
                f"{head}unknown key {_prefix}{shown} (MindSpore would ignore it); {takes} {', '.join(names)}."
                + did_you_mean(text, names)
            )
    for name, field in spec.items():
        if field.required and name not in data:
            raise error(f"{head}{_prefix}{name} is required ({allowed(field)}).")
    for key, value in data.items():
        if key in spec:
            check(spec[key], value, f"{_prefix}{key}", where, error, show)
    return data
