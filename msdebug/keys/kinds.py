"""The value kinds of context keys: what a person may type after ``key=``, and what MindSpore reports back.

A kind turns what a person typed (or passed from Python) into the value that
``mindspore.set_context`` accepts, and turns what MindSpore reports back into that same form
for display and comparison. :data:`UNSET` and :data:`UNREAD` stand for the values MindSpore
reports as not configured and the ones msdebug never reads.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidValueError, MsDebugError, did_you_mean, echo
from ..files import ascii_number

__all__ = [
    "ALL_DEVICES",
    "Choice",
    "DatasetStrategy",
    "DeviceSpec",
    "Flag",
    "Integer",
    "IntegerList",
    "Kind",
    "Opaque",
    "OptimizerConfig",
    "Option",
    "PipelineConfig",
    "Size",
    "Table",
    "Text",
    "UNREAD",
    "UNSET",
    "literal",
    "load_json",
]

ALL_DEVICES = ("CPU", "GPU", "Ascend")


class _Unset:
    """A value MindSpore reports as "not configured" ('' or -1 in C++)."""

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET = _Unset()


class _Unread:
    """A value msdebug does not read because reading it would freeze it."""

    def __repr__(self) -> str:
        return "UNREAD"


UNREAD = _Unread()


# --------------------------------------------------------------------------- kinds
# A kind turns what a person typed (or passed from Python) into the value that
# mindspore.set_context accepts, and turns what MindSpore reports back into that
# same form for display and comparison.


class Kind:
    """Base class of value kinds."""

    label = "value"

    def coerce(self, value: Any) -> Any:
        """Return the canonical value or raise :class:`InvalidValueError` (no key name)."""
        return value

    def from_raw(self, raw: Any) -> Any:
        """Canonical form of a value read back from MindSpore."""
        return raw

    def format(self, value: Any) -> str:
        """Short display form of a canonical value."""
        if value is UNSET:
            return "(not set)"
        if isinstance(value, str):
            return repr(value)
        return str(value)

    def describe(self) -> str:
        """The allowed values, as a phrase."""
        return "any value"

    def typed(self, value: Any) -> str:
        """How a person types ``value`` after ``key=`` in ``%mscontext``."""
        if isinstance(value, str):
            return _quote(value)
        return repr(value)

    def completions(self) -> tuple[str, ...]:
        """Values offered by tab completion after ``key=``."""
        return ()


def _quote(text: str) -> str:
    if text and re.fullmatch(r"[\w./:~+-]+", text):
        return text
    return json.dumps(text, ensure_ascii=False)


_TRUE = ("true", "on", "yes", "1")
_FALSE = ("false", "off", "no", "0")


@dataclass(frozen=True)
class Flag(Kind):
    """A boolean; people may type true/false, on/off, yes/no or 1/0."""

    label = "bool"

    def coerce(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str):
            text = value.strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
        hint = did_you_mean(value, _TRUE + _FALSE) if isinstance(value, str) else ""
        raise InvalidValueError(f"expected {self.describe()}, got {echo(value)}.{hint}")

    def from_raw(self, raw: Any) -> Any:
        # ascend_config entries are stored by C++ as "1"/"0", or "" while unset;
        # enable_compile_cache reads back as None while unset.
        if isinstance(raw, str):
            return {"1": True, "0": False}.get(raw, UNSET)
        return UNSET if raw is None else raw

    def describe(self) -> str:
        return "true or false (also on/off, yes/no, 1/0)"

    def typed(self, value: Any) -> str:
        return "true" if value else "false"

    def completions(self) -> tuple[str, ...]:
        return ("true", "false")


@dataclass(frozen=True)
class Integer(Kind):
    """An integer in ``[low, high]`` (``high=None``: unbounded), or one of ``extra``."""

    low: int = 0
    high: int | None = None
    extra: tuple[int, ...] = ()
    label = "int"

    def coerce(self, value: Any) -> int:
        number = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d[\d_]*\s*", value):
            number = int(value)
        if number is None:
            raise InvalidValueError(f"expected {self.describe()}, got {echo(value)}.")
        if number in self.extra:
            return number
        if number < self.low or (self.high is not None and number > self.high):
            raise InvalidValueError(f"{number} is out of range; allowed: {self.describe()}.")
        return number

    def from_raw(self, raw: Any) -> Any:
        if isinstance(raw, str):
            text = raw.strip()
            number = ascii_number(text.removeprefix("-"))
            return UNSET if number is None else (-number if text.startswith("-") else number)
        return raw

    def describe(self) -> str:
        text = f"an integer >= {self.low}" if self.high is None else f"an integer from {self.low} to {self.high}"
        return text + "".join(f", or {value}" for value in self.extra)


@dataclass(frozen=True)
class Option:
    """One allowed value of a :class:`Choice`.

    ``value`` is what ``set_context`` takes, ``raw`` what MindSpore reports back when it
    differs (``"O1"`` is stored as ``1``), ``label`` the display name and ``aliases``
    further spellings people type (case-insensitive) or pass from Python.
    """

    value: Any
    label: str | None = None
    aliases: tuple = ()
    raw: Any = None
    typed: str | None = None
    absent: bool = False  # a dict entry with this value is left out: MindSpore's own choice


@dataclass(frozen=True)
class Choice(Kind):
    """One of a fixed set of options."""

    options: tuple[Option, ...]
    label = "choice"

    def absent(self, value: Any) -> bool:
        """Whether ``value`` means "no entry" in a dict key (``jit_level='auto'``)."""
        return any(option.absent and option.value == value for option in self.options)

    @functools.cached_property
    def _spellings(self) -> dict[str, Option]:
        table: dict[str, Option] = {}
        for option in self.options:
            for word in (option.typed, option.label, option.value, *option.aliases):
                if isinstance(word, str) or (isinstance(word, int) and not isinstance(word, bool)):
                    table.setdefault(str(word).lower(), option)
        return table

    def coerce(self, value: Any) -> Any:
        if isinstance(value, str):
            option = self._spellings.get(value.strip().lower())
            if option is not None:
                return option.value
        else:
            for option in self.options:
                for candidate in (option.value, *option.aliases):
                    # bool is an int in Python; True must not pass for 1 by accident.
                    if type(candidate) is type(value) and candidate == value:
                        return option.value
        if isinstance(value, str) and not value.strip():
            raise InvalidValueError(f"empty value; use {self.describe()}.")
        hint = did_you_mean(value, self._spellings) if isinstance(value, str) else ""
        raise InvalidValueError(f"{echo(value)} is not allowed; use {self.describe()}.{hint}")

    def from_raw(self, raw: Any) -> Any:
        for option in self.options:
            if option.raw is not None and option.raw == raw and type(option.raw) is type(raw):
                return option.value
        if raw == "" and all(option.value != "" for option in self.options):
            return UNSET  # C++ keeps unset ascend_config entries as ''
        return raw

    def format(self, value: Any) -> str:
        for option in self.options:
            if option.value == value and type(option.value) is type(value):
                if option.label:
                    return option.label if isinstance(value, str) else f"{option.label} ({value})"
                return str(value) if value != "" else "''"
        return super().format(value)

    def typed(self, value: Any) -> str:
        for option in self.options:
            if option.value == value and type(option.value) is type(value):
                return option.typed or _quote(str(option.value))
        return super().typed(value)

    def describe(self) -> str:
        main = [option.typed or str(option.value) for option in self.options]
        seen = {word.lower() for word in main}
        extra = []
        for option in self.options:
            for word in (option.label, option.value, *option.aliases):
                if isinstance(word, (str, int)) and not isinstance(word, bool):
                    word = str(word)
                    if word and word.lower() not in seen:
                        seen.add(word.lower())
                        extra.append(word)
        text = " or ".join(main) if len(main) <= 2 else ", ".join(main[:-1]) + " or " + main[-1]
        return f"{text} (also {', '.join(extra)})" if extra else text

    def completions(self) -> tuple[str, ...]:
        return tuple(option.typed or str(option.value) for option in self.options)


@dataclass(frozen=True)
class Text(Kind):
    """A string; ``path=True`` expands ``~`` and forbids the empty string unless ``clearable``
    (then '' switches the setting off)."""

    path: bool = False
    empty_ok: bool = True
    example: str = ""
    clearable: bool = False
    label = "str"

    def coerce(self, value: Any) -> str:
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if not isinstance(value, str):
            raise InvalidValueError(f"expected {self.describe()}, got {echo(value)}.")
        if not value.strip() and not (self.empty_ok and (self.clearable or not self.path)):
            example = f", e.g. {self.example}" if self.example else ""
            raise InvalidValueError(f"empty value; give {self.describe()}{example}.")
        return os.path.expanduser(value) if self.path else value

    def format(self, value: Any) -> str:
        if value == "" and self.empty_ok:
            return "'' (not set)"
        return super().format(value)

    def describe(self) -> str:
        if self.path:
            return "a path ('' to clear)" if self.clearable else "a non-empty path"
        return "text" if self.empty_ok else "non-empty text"


_SIZE = re.compile(r"\s*((?:[1-9]\d*|0)(?:\.\d*)?|\.\d+)\s*([gG][bB]?)\s*")


@dataclass(frozen=True)
class Size(Kind):
    """A memory size written as ``"<number>GB"``, as MindSpore requires."""

    minimum: float = 0.0
    maximum: float | None = None
    label = "size"

    def coerce(self, value: Any) -> str:
        match = _SIZE.fullmatch(value) if isinstance(value, str) else None
        if match is None:
            raise InvalidValueError(f"expected a size such as 2GB or 3.5GB, got {echo(value)}.")
        number = float(match.group(1))
        if number <= 0 or number < self.minimum or (self.maximum is not None and number > self.maximum):
            raise InvalidValueError(f"{match.group(1)}GB is out of range; allowed: {self.describe()}.")
        return f"{match.group(1)}GB"

    def from_raw(self, raw: Any) -> Any:
        if isinstance(raw, float):
            return f"{raw:g}GB"
        if isinstance(raw, str) and ascii_number(raw.strip()) is not None:
            return f"{raw.strip()}GB"
        return raw

    def format(self, value: Any) -> str:
        return str(value) if isinstance(value, str) else super().format(value)

    def describe(self) -> str:
        low = f"at least {self.minimum:g}GB" if self.minimum else "more than 0GB"
        high = f" and at most {self.maximum:g}GB" if self.maximum is not None else ""
        return f"a size like 2GB or 3.5GB, {low}{high}"


@dataclass(frozen=True)
class Table(Kind):
    """A dict of named entries, each with its own kind (``entries=None``: any entries)."""

    entries: Mapping[str, Kind] | None = None
    example: str = "{}"
    required: tuple[str, ...] = ()  # entries MindSpore needs every time the dict is given
    label = "dict"

    def coerce(self, value: Any) -> dict:
        if isinstance(value, str):
            value = literal(value)
        if not isinstance(value, dict):
            raise InvalidValueError(f"expected a dict such as {self.example}, got {echo(value)}.")
        missing = [name for name in self.required if name not in value]
        if missing:
            raise InvalidValueError(f"needs the entries {' and '.join(self.required)}, e.g. {self.example}.")
        if self.entries is None:
            return dict(value)
        result = {}
        for name, item in value.items():
            kind = self.entries.get(name)
            if kind is None:
                raise InvalidValueError(
                    f"unknown entry {echo(name)}; allowed: {', '.join(self.entries)}."
                    + did_you_mean(str(name), self.entries)
                )
            try:
                result[name] = kind.coerce(item)
            except InvalidValueError as error:
                raise InvalidValueError(f"entry {echo(name)}: {error}") from None
            if isinstance(kind, Choice) and kind.absent(result[name]):
                del result[name]  # the default: no entry (some versions refuse the empty value)
        return result

    def from_raw(self, raw: Any) -> Any:
        return UNSET if raw == "" else raw  # C++ keeps unset ge_options / topo_order as ''

    def format(self, value: Any) -> str:
        if value == {}:
            return "{}"
        return super().format(value)

    def typed(self, value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def describe(self) -> str:
        if self.entries is None:
            return f"a dict such as {self.example}"
        return f"a dict with entries {', '.join(self.entries)}, e.g. {self.example}"


@dataclass(frozen=True)
class PipelineConfig(Table):
    """``pipeline_config``: both entries, and a scheduler other than 1f1b only interleaved."""

    def coerce(self, value: Any) -> dict:
        result = super().coerce(value)
        if not result["pipeline_interleave"] and result["pipeline_scheduler"] != "1f1b":
            raise InvalidValueError(
                f"pipeline_scheduler {echo(result['pipeline_scheduler'])} needs pipeline_interleave=True; "
                "without it only '1f1b' is allowed."
            )
        return result


@dataclass(frozen=True)
class OptimizerConfig(Table):
    """``parallel_optimizer_config``: gradient_accumulation_shard goes with optimizer_level level2 only."""

    def coerce(self, value: Any) -> dict:
        result = super().coerce(value)
        level = result.get("optimizer_level")
        if "gradient_accumulation_shard" in result and level not in (None, "level2"):
            raise InvalidValueError(
                f"gradient_accumulation_shard cannot go with optimizer_level {echo(level)}; "
                "optimizer_level 'level2' shards the gradients (it replaces gradient_accumulation_shard)."
            )
        return result


@dataclass(frozen=True)
class IntegerList(Kind):
    """A list of integers (``[]``: none), such as parameter indices."""

    example: str = "[20, 35]"
    label = "list"

    def coerce(self, value: Any) -> list:
        if isinstance(value, str):
            value = literal(value)
        if isinstance(value, tuple):
            value = list(value)
        if not isinstance(value, list) or not all(type(item) is int for item in value):
            raise InvalidValueError(f"expected a list of integers such as {self.example}, got {echo(value)}.")
        return value

    def typed(self, value: Any) -> str:
        return json.dumps(value)

    def describe(self) -> str:
        return f"a list of integers such as {self.example}"


_DATASET_MODES = ("data_parallel", "full_batch")


@dataclass(frozen=True)
class DatasetStrategy(Kind):
    """``dataset_strategy``: data_parallel, full_batch, or a shard strategy per input such as
    ``((2, 1), (2, 1))``."""

    label = "strategy"

    def coerce(self, value: Any) -> Any:
        if isinstance(value, str):
            text = value.strip()
            if text.lower() in _DATASET_MODES:
                return text.lower()
            value = literal(text)
            if isinstance(value, str):
                hint = did_you_mean(text, _DATASET_MODES)
                raise InvalidValueError(f"{echo(text)} is not allowed; use {self.describe()}.{hint}")
        if (
            isinstance(value, (list, tuple))
            and value
            and all(
                isinstance(row, (list, tuple)) and row and all(type(n) is int and n > 0 for n in row) for row in value
            )
        ):
            return tuple(tuple(row) for row in value)
        raise InvalidValueError(f"expected {self.describe()}, got {echo(value)}.")

    def from_raw(self, raw: Any) -> Any:
        return tuple(tuple(row) for row in raw) if isinstance(raw, list) else raw

    def typed(self, value: Any) -> str:
        return value if isinstance(value, str) else repr(value).replace(" ", "")

    def describe(self) -> str:
        return "data_parallel, full_batch, or one shard strategy per input such as ((2,1),(2,1))"

    def completions(self) -> tuple[str, ...]:
        return _DATASET_MODES


def literal(text: str) -> Any:
    """Parse a Python or JSON literal (``{'a': True}`` or ``{"a": true}``).

    Raises
    ------
    InvalidValueError
        Nested deeper than Python's parsers go, or numbers too long to convert.
    """
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        pass
    except (RecursionError, MemoryError):
        raise InvalidValueError(f"{echo(text)} is nested too deeply to read.") from None
    try:
        return json.loads(text)
    except (RecursionError, MemoryError):
        raise InvalidValueError(f"{echo(text)} is nested too deeply to read.") from None
    except ValueError:  # not JSON either: the kind's own check says what it expected
        return text


def load_json(text: str, error: type[MsDebugError] = InvalidValueError, where: str = "") -> Any:
    """``json.loads`` for text from outside: every failure is one line of ``error`` (prefixed
    with ``where``, a file name), never a ``RecursionError`` or a bare ``ValueError``."""
    prefix = f"{where}: " if where else ""
    try:
        return json.loads(text)
    except json.JSONDecodeError as failure:
        raise error(f"{prefix}line {failure.lineno} column {failure.colno}: {failure.msg}.") from None
    except (RecursionError, MemoryError):
        raise error(f"{prefix}nested too deeply to read (JSON deeper than Python's parser goes).") from None
    except ValueError as failure:  # an integer of thousands of digits
        raise error(f"{prefix}{echo(str(failure), quote=False)}.") from None


@dataclass(frozen=True)
class Opaque(Kind):
    """A key msdebug does not describe: values pass through to MindSpore unchecked."""

    label = "?"

    def coerce(self, value: Any) -> Any:
        return literal(value) if isinstance(value, str) else value


@dataclass(frozen=True)
class DeviceSpec(Kind):
    """``CPU``, ``GPU:1``, ``ascend:0``: a target with an optional id."""

    label = "device"

    def coerce(self, value: Any) -> tuple[str, int | None]:
        target, sep, number = str(value).strip().partition(":") if isinstance(value, str) else ("", "", "")
        canonical = {name.lower(): name for name in ALL_DEVICES}.get(target.lower())
        if canonical is None:
            raise InvalidValueError(
                f"{echo(value)} is not a device; use CPU, GPU or Ascend, optionally with an id as in GPU:1."
                + (did_you_mean(target, ALL_DEVICES) if target else "")
            )
        if not sep:
            return canonical, None
        return canonical, Integer(0, 4095).coerce(number)

    def typed(self, value: Any) -> str:
        target, number = value
        return target if number is None else f"{target}:{number}"

    def format(self, value: Any) -> str:
        return value if isinstance(value, str) else self.typed(value)

    def describe(self) -> str:
        return "CPU, GPU or Ascend, optionally with an id (GPU:1)"

    def completions(self) -> tuple[str, ...]:
        return ("CPU", "CPU:0", "GPU", "GPU:0", "Ascend", "Ascend:0")
