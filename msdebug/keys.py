"""MindSpore's context keys, declared once as data.

Parsing, validation, help, completion and the context table are all derived from
:data:`CATALOG`; look a key up with :func:`lookup`.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidValueError, MsDebugError, UnknownKeyError, did_you_mean, echo
from .files import ascii_number

__all__ = [
    "ALL_DEVICES",
    "CATALOG",
    "ENTRIES",
    "literal",
    "load_json",
    "GROUPS",
    "SHORTHANDS",
    "Choice",
    "ContextKey",
    "DeviceSpec",
    "Flag",
    "Integer",
    "Kind",
    "Opaque",
    "Option",
    "Size",
    "Table",
    "Text",
    "UNREAD",
    "UNSET",
    "lookup",
    "version_tuple",
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


@functools.lru_cache(maxsize=64)
def version_tuple(text: str) -> tuple[int, ...]:
    """``"2.10.0rc1"`` -> ``(2, 10, 0)``; a leading ``<`` or ``≤`` is ignored."""
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


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


# --------------------------------------------------------------------------- keys


@dataclass(frozen=True)
class ContextKey:
    """One context key and everything msdebug knows about it.

    Attributes
    ----------
    name : str
        The ``set_context`` keyword.
    kind : Kind
        Its value kind.
    default : object
        The start-up value, in canonical form. ``None`` when it depends on the build or
        the machine, or MindSpore leaves it undefined; :attr:`default_note` then says which.
    group : str
        One of :data:`GROUPS`.
    help : str
        What it does, in a sentence or two.
    platforms : tuple of str
        Devices on which it has an effect.
    device_filtered : bool
        MindSpore's ``set_context`` drops the key, with a warning, on other devices.
    deprecated_in, removed_in : str or None
        MindSpore versions; ``"≤2.7"`` means "already so in 2.7.0, the oldest version
        msdebug checked", ``"<1.2"`` means "absent from the r1.2 API".
    replacement : str or None
        The modern way to get the same effect.
    ignored : bool
        Still accepted by ``set_context`` but ignored (only a warning).
    part_of : tuple of (str, str) or None
        ``(parent, entry)`` for keys that live inside a dict key (``jit_level`` is
        ``jit_config['jit_level']``); msdebug sets them through the parent.
    freezes_on_read : bool
        Reading it fixes it for the rest of the process, so msdebug never reads it.
    write_only : bool
        MindSpore can set it but not read it back (``get_auto_parallel_context`` refuses it).
    api : str
        The function that sets it: ``set_context``, or ``set_auto_parallel_context`` for the
        distributed settings ("called before the network is initialized").
    notes : str
        Anything else a person should know before changing it.
    """

    name: str
    kind: Kind
    default: Any
    group: str
    help: str
    platforms: tuple[str, ...] = ALL_DEVICES
    device_filtered: bool = False
    deprecated_in: str | None = None
    removed_in: str | None = None
    replacement: str | None = None
    ignored: bool = False
    part_of: tuple[str, str] | None = None
    freezes_on_read: bool = False
    write_only: bool = False
    api: str = "set_context"
    default_note: str = ""
    notes: str = ""
    documented_in: tuple[str, ...] = field(default=(), compare=False)

    def available_in(self, version: str | None) -> bool:
        """Whether ``set_context`` of MindSpore ``version`` accepts this key."""
        if self.removed_in is None or version is None:
            return True
        return version_tuple(version) < version_tuple(self.removed_in)

    def applies_to(self, device: str | None) -> bool:
        """Whether the key has an effect on ``device`` (unknown device: yes)."""
        return device is None or device in self.platforms

    def coerce(self, value: Any) -> Any:
        """Validate ``value``; errors name the key and say what is allowed."""
        try:
            return self.kind.coerce(value)
        except InvalidValueError as error:
            raise InvalidValueError(f"{self.name}: {error}") from None

    def status(self) -> str:
        """One phrase: current, deprecated (-> replacement), ignored or removed."""
        if self.removed_in:
            text = f"removed in MindSpore {self.removed_in.lstrip('<')}"
            if self.removed_in.startswith("<"):
                text = f"removed before MindSpore {self.removed_in[1:]}"
        elif self.ignored:
            text = "accepted but ignored"
        elif self.deprecated_in:
            when = self.deprecated_in
            text = (
                f"deprecated (already in MindSpore {when[1:]})"
                if when.startswith("≤")
                else f"deprecated since MindSpore {when}"
            )
        else:
            return "current"
        return f"{text}; use {self.replacement}" if self.replacement else text


GROUPS = (
    ("execution", "Execution"),
    ("device", "Device"),
    ("debug", "Debugging and dumps"),
    ("memory", "Memory"),
    ("threads", "Threads and timeouts"),
    ("cache", "Compile cache"),
    ("platform", "Platform configuration"),
    ("jit_config", "jit_config entries"),
    ("ascend_config", "ascend_config entries"),
    ("gpu_config", "gpu_config entries"),
    ("speedup", "Ascend parallel speed-up (from parallel_speed_up_json_path)"),
    ("parallel", "Auto-parallel (set_auto_parallel_context)"),
    ("removed", "Removed or ignored"),
    ("other", "Not described by msdebug"),
)

ASCEND = ("Ascend",)
GPU = ("GPU",)
GPU_ASCEND = ("GPU", "Ascend")

_MODE = Choice(
    (
        Option(0, "GRAPH_MODE", aliases=("graph", "graph_mode"), typed="graph"),
        Option(1, "PYNATIVE_MODE", aliases=("pynative", "pynative_mode"), typed="pynative"),
    )
)
_ON_OFF = Choice(
    (
        Option("ON", aliases=("on", "true", "yes", "1", True), typed="ON"),
        Option("OFF", aliases=("off", "false", "no", "0", False), typed="OFF"),
    )
)
_TARGET = Choice(
    (
        Option("CPU", typed="CPU"),
        Option("GPU", typed="GPU"),
        Option("Ascend", aliases=("davinci",), typed="Ascend"),
    )
)
_JIT_LEVEL = Choice(
    (
        # 2.10 refuses jit_level '' and 'auto': MindSpore chooses when the entry is absent.
        Option("", "auto", typed="auto", absent=True),
        Option("O0", typed="O0"),
        Option("O1", typed="O1"),
        Option("O2", typed="O2"),
    )
)
_INFER_BOOST = Choice((Option("on", typed="on"), Option("off", typed="off")))
_GPU_CONV = ("normal", "performance")


def _conv_algos(*algos: str) -> Choice:
    return Choice(tuple(Option(name, typed=name) for name in _GPU_CONV + algos))


_GPU_CONV_KINDS = {
    "conv_fprop_algo": _conv_algos(
        "implicit_gemm", "precomp_gemm", "gemm", "direct", "fft", "fft_tiling", "winograd", "winograd_nonfused"
    ),
    "conv_dgrad_algo": _conv_algos("algo_0", "algo_1", "fft", "fft_tiling", "winograd", "winograd_nonfused"),
    "conv_wgrad_algo": _conv_algos("algo_0", "algo_1", "fft", "algo_3", "fft_tiling", "winograd_nonfused"),
    "conv_allow_tf32": Flag(),
    "matmul_allow_tf32": Flag(),
}
_PRECISION_MODES = (
    "force_fp16", "allow_fp32_to_fp16", "allow_mix_precision", "must_keep_origin_dtype",
    "force_fp32", "allow_fp32_to_bf16", "allow_mix_precision_fp16", "allow_mix_precision_bf16",
)  # fmt: skip
_ASCEND_KINDS = {
    "precision_mode": Choice(tuple(Option(name, typed=name) for name in _PRECISION_MODES)),
    "jit_compile": Flag(),
    "atomic_clean_policy": Choice((Option(0, typed="0"), Option(1, typed="1"))),
    "matmul_allow_hf32": Flag(),
    "conv_allow_hf32": Flag(),
    "op_precision_mode": Text(path=True),
    "ge_options": Table(example="{'global': {'ge.opSelectImplmode': 'high_precision'}}"),
    "parallel_speed_up_json_path": Text(path=True),
    "host_scheduling_max_threshold": Integer(0),
    "cur_step_num": Integer(0),
    "save_checkpoint_steps": Integer(0),
    "need_ckpt": Flag(),
    "last_triggered_step": Integer(0),
    "hccl_watchdog": Flag(),
    "topo_order": Table(example="{'graph_name': 'dfs'}"),
    "op_debug_option": Text(),
}
_JIT_KINDS = {"jit_level": _JIT_LEVEL, "infer_boost": _INFER_BOOST}

_R12 = ("r1.2",)  # keys the r1.2 documents describe
_R0 = ("r0",)  # keys of the pre-1.0 API reference


_PARALLEL_MODE = Choice(
    (
        Option("stand_alone"),
        Option("data_parallel"),
        Option("hybrid_parallel"),
        Option("semi_auto_parallel"),
        Option("auto_parallel"),
    )
)
_SEARCH_MODE = Choice((Option("recursive_programming"), Option("sharding_propagation"), Option("dynamic_programming")))
_FUSION = Table(
    {"mode": Choice((Option("auto"), Option("size"), Option("index"))), "config": Opaque()},
    "{'mode': 'size', 'config': 32}",
)
_AP = "set_auto_parallel_context"
_AP_NOTE = (
    "Set it before the network is built: MindSpore reads the auto-parallel context when a Cell is "
    "created and when it compiles. set_auto_parallel_context is to be replaced by "
    "mindspore.parallel.auto_parallel.AutoParallel(net, ...)."
)


def _parallel_entries() -> list[ContextKey]:
    """The keys of ``set_auto_parallel_context`` that its docstring documents (MindSpore 2.10)."""

    def K(name, kind, default, help, **more):  # noqa: N802 - reads like the ContextKey it makes
        return ContextKey(name, kind, default, "parallel", help, api=_AP, notes=more.pop("notes", _AP_NOTE), **more)

    return [
        K(
            "parallel_mode",
            _PARALLEL_MODE,
            "stand_alone",
            "How the network is spread over the ranks: stand_alone (one device), data_parallel (each rank a "
            "slice of the batch), hybrid_parallel (sharded by hand), semi_auto_parallel (by the shard "
            "strategies set on operators) or auto_parallel (searched). PyNative runs only stand_alone and "
            "data_parallel; CPU only data parallel.",
        ),
        K(
            "device_num",
            Integer(1),
            1,
            "How many devices (ranks) the job uses.",
            notes="MindSpore's documents say 1 to 4096; it checks only that the number is positive. " + _AP_NOTE,
        ),
        K("global_rank", Integer(0, 4095), 0, "This process's rank in the job."),
        K(
            "gradients_mean",
            Flag(),
            False,
            "Divide the gradients by the number of ranks after their AllReduce (not in stand_alone).",
        ),
        K(
            "gradient_fp32_sync",
            Flag(),
            True,
            "Run the AllReduce of gradients in float32 (auto_parallel and semi_auto_parallel only).",
        ),
        K(
            "loss_repeated_mean",
            Flag(),
            True,
            "Run the mean operator backwards when the calculation is repeated across ranks.",
        ),
        K(
            "search_mode",
            _SEARCH_MODE,
            "recursive_programming",
            "How auto_parallel searches shard strategies: "
            "recursive_programming, sharding_propagation (from the operators given one) or dynamic_programming "
            "(not recommended).",
        ),
        K(
            "auto_parallel_search_mode",
            _SEARCH_MODE,
            "recursive_programming",
            "The old name of search_mode, kept for compatibility.",
            deprecated_in="≤2.7",
            replacement="search_mode",
        ),
        K(
            "parameter_broadcast",
            Flag(),
            False,
            "Broadcast rank 0's parameters to every rank before training, so all start from the same values.",
        ),
        K(
            "strategy_ckpt_load_file",
            Text(path=True, clearable=True),
            "",
            "Where to load a parallel strategy checkpoint from.",
            deprecated_in="≤2.7",
            replacement="strategy_ckpt_config={'load_file': ...}",
        ),
        K(
            "strategy_ckpt_save_file",
            Text(path=True, clearable=True),
            "",
            "Where to save the parallel strategy checkpoint.",
            deprecated_in="≤2.7",
            replacement="strategy_ckpt_config={'save_file': ...}",
        ),
        K(
            "full_batch",
            Flag(),
            False,
            "Every rank loads the whole batch (auto_parallel).",
            deprecated_in="≤2.7",
            replacement="dataset_strategy='full_batch'",
        ),
        K(
            "dataset_strategy",
            DatasetStrategy(),
            "data_parallel",
            "How the dataset is sharded over the ranks: "
            "data_parallel, full_batch, or a shard strategy per input such as ((2,1),(2,1)).",
        ),
        K(
            "enable_parallel_optimizer",
            Flag(),
            False,
            "Shard the weight update over the data-parallel ranks, to save time and memory.",
        ),
        K(
            "force_fp32_communication",
            Flag(),
            False,
            "Force reduce collectives (AllReduce, ReduceScatter) to communicate in float32.",
        ),
        K(
            "enable_alltoall",
            Flag(),
            False,
            "Let AllToAll be generated; off, AllGather, Split and Concat are used instead.",
        ),
        K(
            "all_reduce_fusion_config",
            IntegerList(),
            [],
            "Fuse the AllReduce of gradients at these parameter indices ([]: fusion off).",
        ),
        K("pipeline_stages", Integer(1), 1, "How many pipeline stages the ranks are divided into."),
        K(
            "pipeline_result_broadcast",
            Flag(),
            False,
            "Broadcast the last stage's result to every stage in pipeline-parallel inference.",
        ),
        K(
            "pipeline_config",
            PipelineConfig(
                {
                    "pipeline_interleave": Flag(),
                    "pipeline_scheduler": Choice(
                        tuple(
                            Option(name)
                            for name in ("1f1b", "gpipe", "seqpipe", "seqvpp", "seqsmartvpp", "zero_bubble_v")
                        )
                    ),
                },
                "{'pipeline_interleave': True, 'pipeline_scheduler': 'gpipe'}",
                required=("pipeline_interleave", "pipeline_scheduler"),
            ),
            {"pipeline_interleave": False, "pipeline_scheduler": "1f1b"},
            "Pipeline parallelism: interleaved execution and the scheduler (1f1b, gpipe, seqpipe, seqvpp, "
            "seqsmartvpp, zero_bubble_v).",
            write_only=True,
        ),
        K(
            "parallel_optimizer_config",
            OptimizerConfig(
                {
                    "gradient_accumulation_shard": Flag(),
                    "parallel_optimizer_threshold": Integer(0),
                    "optimizer_weight_shard_size": Integer(1, extra=(-1,)),
                    "optimizer_level": Choice((Option("level1"), Option("level2"), Option("level3"))),
                },
                "{'optimizer_level': 'level2'}",
            ),
            {},
            "How the parallel optimizer shards (with enable_parallel_optimizer): optimizer_level, "
            "parallel_optimizer_threshold (KB), optimizer_weight_shard_size.",
            write_only=True,
        ),
        K(
            "comm_fusion",
            Table(
                {"openstate": Flag(), "allreduce": _FUSION, "allgather": _FUSION, "reducescatter": _FUSION},
                "{'allreduce': {'mode': 'size', 'config': 32}}",
            ),
            {
                "openstate": True,
                "allreduce": {"mode": "auto", "config": None},
                "allgather": {"mode": "auto", "config": None},
                "reducescatter": {"mode": "auto", "config": None},
            },
            "Fusion of collectives: openstate, and a mode (auto, size in MB, index) per AllReduce, AllGather "
            "and ReduceScatter.",
        ),
        K(
            "strategy_ckpt_config",
            Table(
                {
                    "load_file": Text(path=True, clearable=True),
                    "save_file": Text(path=True, clearable=True),
                    "only_trainable_params": Flag(),
                },
                "{'save_file': './strategy.ckpt'}",
            ),
            {"load_file": "", "save_file": "", "only_trainable_params": True},
            "Where to load and save the parallel strategy checkpoint (.json for JSON, else protobuf).",
        ),
        K(
            "group_ckpt_save_file",
            Text(path=True, clearable=True),
            "",
            "Where to save the parallel group checkpoint.",
            write_only=True,
        ),
        K(
            "auto_pipeline",
            Flag(),
            False,
            "Choose the number of pipeline stages automatically, up to "
            "pipeline_stages (auto_parallel with recursive_programming).",
        ),
        K("dump_local_norm", Flag(), False, "Dump each rank's local_norm (semi_auto_parallel, auto_parallel)."),
        K("dump_local_norm_path", Text(path=True, clearable=True), "", "Where local_norm dumps go."),
        K("dump_device_local_norm", Flag(), False, "Dump the device's local_norm (semi_auto_parallel, auto_parallel)."),
    ]


def _entries() -> list[ContextKey]:
    K = ContextKey
    keys = [
        # ---------------------------------------------------------------- execution
        K(
            "mode",
            _MODE,
            1,
            "execution",
            "PYNATIVE_MODE runs operators one by one, as Python executes them; GRAPH_MODE compiles "
            "the whole network into a graph first and then runs it. Both modes can be switched at any time.",
            default_note="since MindSpore 2.0; GRAPH_MODE in 1.3 to 1.10",
            documented_in=_R12 + _R0,
        ),
        K(
            "pynative_synchronize",
            Flag(),
            False,
            "execution",
            "Run PyNative operators synchronously, so an error is raised at the line that caused it "
            "instead of at a later sync point such as .asnumpy(). Slower.",
            deprecated_in="2.5",
            replacement="mindspore.runtime.launch_blocking()",
            notes="launch_blocking() is one-way for the rest of the process; msdebug keeps using the "
            "reversible set_context(pynative_synchronize=...), and shows sync as on while either is set.",
            documented_in=_R12,
        ),
        K(
            "jit_config",
            Table(_JIT_KINDS, example="{'jit_level': 'O1'}"),
            {},
            "execution",
            "Global compile options for graphs: jit_level (O0 no fusion, O1 operator fusion, O2 "
            "whole-graph sink) and infer_boost.",
            deprecated_in="≤2.7",
            replacement="mindspore.jit(jit_level=...)",
        ),
        K(
            "jit_syntax_level",
            Choice(
                (
                    Option(0, "STRICT", aliases=("strict",), typed="strict"),
                    Option(1, "COMPATIBLE", aliases=("compatible",), typed="compatible"),
                    Option(2, "LAX", aliases=("lax",), typed="lax"),
                )
            ),
            2,
            "execution",
            "How much Python syntax graph compilation accepts: STRICT only the static-graph subset, "
            "LAX also runs unsupported Python through the interpreter (JIT Fallback).",
            deprecated_in="≤2.7",
            replacement="mindspore.jit(fullgraph=True) for STRICT",
        ),
        K(
            "exec_order",
            Choice((Option("bfs", typed="bfs"), Option("dfs", typed="dfs"))),
            "bfs",
            "execution",
            "The order in which a compiled graph's operators are scheduled: breadth-first or depth-first.",
            platforms=ASCEND,
            deprecated_in="≤2.7",
            replacement="the matching option of mindspore.jit",
        ),
        K(
            "debug_level",
            Choice(
                (
                    Option(0, "RELEASE", aliases=("release",), typed="release"),
                    Option(1, "DEBUG", aliases=("debug",), typed="debug"),
                )
            ),
            0,
            "execution",
            "DEBUG keeps more information during graph compilation for error reports.",
            deprecated_in="≤2.7",
        ),
        K(
            "max_call_depth",
            Integer(1),
            1000,
            "execution",
            "The deepest nesting of function calls a graph may have; raise it (and the system stack) for "
            "deeply recursive networks.",
            deprecated_in="2.5",
            replacement="mindspore.set_recursion_limit()",
            documented_in=_R12,
        ),
        K(
            "check_bprop",
            Flag(),
            False,
            "execution",
            "Check that custom back-propagation functions return gradients of the same shape and dtype "
            "as their inputs.",
            deprecated_in="≤2.7",
            documented_in=_R12,
        ),
        K(
            "support_binary",
            Flag(),
            False,
            "execution",
            "Allow graph mode to compile networks shipped as .pyc or .so without source.",
            deprecated_in="≤2.7",
            replacement="the environment variable MS_SUPPORT_BINARY",
        ),
        K(
            "enable_graph_kernel",
            Flag(),
            False,
            "execution",
            "Fuse operators into bigger kernels (graph kernel fusion) to speed up networks.",
            platforms=GPU_ASCEND,
            deprecated_in="≤2.7",
            replacement="jit_config={'jit_level': 'O1'}",
            documented_in=_R12 + _R0,
        ),
        K(
            "graph_kernel_flags",
            Text(),
            "",
            "execution",
            "Expert options for graph kernel fusion, such as '--opt_level=2 --dump_as_text'.",
            platforms=GPU_ASCEND,
            deprecated_in="≤2.7",
            replacement="the environment variable MS_DEV_GRAPH_KERNEL_FLAGS",
            documented_in=_R12,
        ),
        K(
            "disable_format_transform",
            Flag(),
            False,
            "execution",
            "Turn off the automatic NCHW to NHWC layout conversion.",
            platforms=GPU,
            device_filtered=True,
            deprecated_in="≤2.7",
            replacement="the matching option of mindspore.jit",
        ),
        K(
            "enable_reduce_precision",
            Flag(),
            True,
            "execution",
            "Let operators fall back to a lower precision when the requested one is not supported.",
            platforms=ASCEND,
            device_filtered=True,
            deprecated_in="≤2.7",
            documented_in=_R12 + _R0,
        ),
        # ---------------------------------------------------------------- device
        K(
            "device_target",
            _TARGET,
            None,
            "device",
            "The device that runs operators. It can change only before the first operator runs, and "
            "only to a device this MindSpore build supports.",
            deprecated_in="2.5",
            replacement="mindspore.set_device(target)",
            default_note="the device of the installed build (CPU for the CPU wheel)",
            notes="msdebug sets it with mindspore.set_device(), which MindSpore allows only once per process.",
            documented_in=_R12 + _R0,
        ),
        K(
            "device_id",
            Integer(0, 4095),
            0,
            "device",
            "Which physical device of that type to use. Has no effect on CPU.",
            deprecated_in="2.5",
            replacement="mindspore.set_device(target, device_id)",
            freezes_on_read=True,
            default_note="0, or the DEVICE_ID environment variable",
            notes="Reading it with get_context('device_id') stops it from ever changing again, so msdebug "
            "shows the value from mindspore.get_current_device() instead.",
            documented_in=_R12 + _R0,
        ),
        K(
            "deterministic",
            _ON_OFF,
            "OFF",
            "device",
            "Make operators give bit-identical results from run to run (sets HCCL_DETERMINISTIC and "
            "TE_PARALLEL_COMPILER). Slower.",
            platforms=ASCEND,
            deprecated_in="2.5",
            replacement="mindspore.set_deterministic(True)",
        ),
        # ---------------------------------------------------------------- debugging
        K(
            "save_graphs",
            Choice(
                (
                    Option(0, aliases=("false", "off", False), typed="0"),
                    Option(1, typed="1"),
                    Option(2, aliases=("true", "on", True), typed="2"),
                    Option(3, typed="3"),
                )
            ),
            0,
            "debug",
            "Save the intermediate representation of every compile stage: 1 basic .ir files, 2 adds "
            "backend passes, 3 adds .dot graphs. True means 2.",
            deprecated_in="2.5",
            replacement="the environment variable MS_DEV_SAVE_GRAPHS",
            documented_in=_R12 + _R0,
        ),
        K(
            "save_graphs_path",
            Text(path=True, empty_ok=False, example="./graphs"),
            ".",
            "debug",
            "Where save_graphs writes; created with mode 0700 if missing.",
            deprecated_in="2.5",
            replacement="the environment variable MS_DEV_SAVE_GRAPHS_PATH",
            documented_in=_R12 + _R0,
        ),
        K(
            "print_file_path",
            Text(path=True, clearable=True, example="print.txt"),
            "",
            "debug",
            "Send the Print operator's output to this file instead of the screen; an existing file "
            "gets a .<unix time> suffix. On Ascend MindSpore writes its binary format; on CPU and GPU, "
            "where MindSpore ignores the key, msdebug writes the printed text. '' prints to the screen.",
            deprecated_in="≤2.7",
            notes="Read either kind back with msdebug.read_print_file(path).",
            documented_in=_R12,
        ),
        K(
            "env_config_path",
            Text(path=True),
            "",
            "debug",
            "A JSON file with debugging options: rdr.enable / rdr.mode / rdr.path for the Running Data "
            "Recorder and sys.mem_reuse.",
            deprecated_in="≤2.7",
            notes="RDR exists only up to MindSpore 2.7.0; later versions read only sys.mem_reuse.",
            documented_in=_R12,
        ),
        K(
            "reserve_class_name_in_scope",
            Flag(),
            True,
            "debug",
            "Keep network class names in operator scopes (Default/net-Net1/net-Net2 rather than Default/net/net).",
            deprecated_in="≤2.7",
            documented_in=_R12 + _R0,
        ),
        K(
            "enable_profiling",
            Flag(),
            False,
            "debug",
            "Collect Ascend profiling data (old API).",
            platforms=ASCEND,
            deprecated_in="≤2.7",
            replacement="mindspore.profiler.profile",
            documented_in=_R12 + _R0,
        ),
        K(
            "profiling_options",
            Text(),
            "training_trace",
            "debug",
            "What the old Ascend profiler collects, e.g. training_trace or task_trace.",
            platforms=ASCEND,
            deprecated_in="≤2.7",
            replacement="mindspore.profiler.profile",
            documented_in=_R12 + _R0,
        ),
        # ---------------------------------------------------------------- memory
        K(
            "max_device_memory",
            Size(),
            "1024GB",
            "memory",
            "The most device memory MindSpore may use.",
            platforms=GPU_ASCEND,
            device_filtered=True,
            deprecated_in="2.5",
            replacement="mindspore.runtime.set_memory(max_size=...)",
            freezes_on_read=True,
        ),
        K(
            "mempool_block_size",
            Size(minimum=1),
            "1GB",
            "memory",
            "The block size of the device memory pool.",
            platforms=GPU_ASCEND,
            device_filtered=True,
            deprecated_in="2.5",
            replacement="mindspore.runtime.set_memory(increase_size=...)",
            freezes_on_read=True,
        ),
        K(
            "variable_memory_max_size",
            Size(maximum=31),
            "0GB",
            "memory",
            "The most device memory for variables (old Ascend option).",
            platforms=ASCEND,
            device_filtered=True,
            deprecated_in="2.5",
            replacement="mindspore.runtime.set_memory()",
            freezes_on_read=True,
            documented_in=_R12 + _R0,
        ),
        K(
            "memory_optimize_level",
            Choice(
                (
                    Option("O0", raw=0, typed="O0"),
                    Option("O1", raw=1, typed="O1"),
                )
            ),
            "O0",
            "memory",
            "O1 reuses memory more aggressively to fit bigger networks.",
            deprecated_in="2.5",
            replacement="mindspore.runtime.set_memory(optimize_level=...)",
        ),
        K(
            "memory_offload",
            Choice(
                (
                    Option("ON", raw=True, aliases=("on", "true", True), typed="ON"),
                    Option("OFF", raw=False, aliases=("off", "false", False), typed="OFF"),
                )
            ),
            "OFF",
            "memory",
            "Offload memory to the host when the device runs out.",
            platforms=GPU_ASCEND,
            deprecated_in="≤2.7",
            removed_in="2.8",
            replacement="the device argument of mindspore.Parameter",
        ),
        # ---------------------------------------------------------------- threads
        K(
            "runtime_num_threads",
            Integer(0),
            None,
            "threads",
            "Threads of the runtime's CPU thread pool.",
            deprecated_in="≤2.7",
            replacement="mindspore.device_context.cpu.op_tuning.threads_num()",
            default_note="the number of CPU cores, at most 30",
        ),
        K(
            "inter_op_parallel_num",
            Integer(0),
            0,
            "threads",
            "How many operators may run in parallel; 0 lets MindSpore decide.",
            deprecated_in="≤2.7",
            replacement="mindspore.runtime.dispatch_threads_num()",
        ),
        K(
            "op_timeout",
            Integer(0),
            900,
            "threads",
            "The longest an operator may run, in seconds (0: no limit).",
            platforms=ASCEND,
            deprecated_in="2.5",
            replacement="mindspore.device_context.ascend.op_debug.execute_timeout()",
        ),
        # ---------------------------------------------------------------- compile cache
        K(
            "enable_compile_cache",
            Flag(),
            UNSET,
            "cache",
            "Save the compiled front-end graph and reuse it when the script has not changed.",
            deprecated_in="≤2.7",
            replacement="the environment variable MS_COMPILER_CACHE_ENABLE",
            default_note="not set (the environment variable decides)",
            documented_in=_R12,
        ),
        K(
            "compile_cache_path",
            Text(),
            "",
            "cache",
            "Where the compile cache is stored (in rank_<id>/ below it).",
            deprecated_in="≤2.7",
            replacement="the environment variable MS_COMPILER_CACHE_PATH",
            documented_in=_R12,
        ),
        # ---------------------------------------------------------------- platform configs
        K(
            "ascend_config",
            Table(_ASCEND_KINDS, example="{'precision_mode': 'force_fp16'}"),
            {},
            "platform",
            "Ascend options: precision_mode, jit_compile, atomic_clean_policy, hf32 switches, "
            "op_precision_mode, ge_options and more.",
            platforms=ASCEND,
            device_filtered=True,
            deprecated_in="≤2.7",
            replacement="the functions of mindspore.device_context.ascend",
        ),
        K(
            "gpu_config",
            Table(_GPU_CONV_KINDS, example="{'conv_allow_tf32': True}"),
            {},
            "platform",
            "GPU options: convolution algorithms and TF32 switches.",
            platforms=GPU,
            device_filtered=True,
            deprecated_in="≤2.7",
            replacement="the functions of mindspore.device_context.gpu",
        ),
        K(
            "aoe_tune_mode",
            Choice(
                (
                    Option("", "off", typed="off"),
                    Option("online", typed="online"),
                    Option("offline", typed="offline"),
                )
            ),
            "",
            "platform",
            "Tune Ascend operators with AOE while compiling.",
            platforms=ASCEND,
            deprecated_in="≤2.7",
            replacement="mindspore.device_context.ascend.op_tuning.aoe_tune_mode()",
        ),
        K(
            "aoe_config",
            Table({"job_type": Choice((Option("1", typed="1"), Option("2", typed="2")))}, example="{'job_type': '2'}"),
            {},
            "platform",
            "AOE options: job_type 1 tunes subgraphs, 2 tunes operators.",
            platforms=ASCEND,
            deprecated_in="≤2.7",
            replacement="mindspore.device_context.ascend.op_tuning.aoe_job_type()",
        ),
        K(
            "aoe_job_type",
            Choice((Option("1", typed="1"), Option("2", typed="2"))),
            "2",
            "platform",
            "The AOE job type (aoe_config['job_type']).",
            platforms=ASCEND,
            part_of=("aoe_config", "job_type"),
            deprecated_in="≤2.7",
        ),
        # ---------------------------------------------------------------- jit_config entries
        K(
            "jit_level",
            _JIT_LEVEL,
            "",
            "jit_config",
            "Compile optimisation level of graphs: O0 no fusion, O1 operator fusion, O2 whole-graph "
            "sink (Ascend). Empty: MindSpore chooses.",
            part_of=("jit_config", "jit_level"),
            replacement="mindspore.jit(jit_level=...)",
        ),
        K(
            "infer_boost",
            _INFER_BOOST,
            "off",
            "jit_config",
            "Faster inference kernels; only with jit_level O0.",
            part_of=("jit_config", "infer_boost"),
            deprecated_in="2.10",
        ),
    ]
    # ---------------------------------------------------------------- ascend_config entries
    ascend_help = {
        "precision_mode": "Operator precision policy, e.g. force_fp16 or must_keep_origin_dtype.",
        "jit_compile": "Compile operators online (True) or use precompiled binaries.",
        "atomic_clean_policy": "How memory of atomic-add operators is cleaned: 0 together, 1 separately.",
        "matmul_allow_hf32": "Let MatMul compute FP32 in HF32.",
        "conv_allow_hf32": "Let convolutions compute FP32 in HF32.",
        "op_precision_mode": "Path of an operator precision configuration file.",
        "ge_options": "Raw CANN options, as {'global': {...}, 'session': {...}}.",
        "host_scheduling_max_threshold": "Graph size below which the host schedules operators.",
        "op_debug_option": "Operator debugging, currently only 'oom' (memory out of bounds).",
        "topo_order": "Per-graph topological sort order.",
        "hccl_watchdog": "A thread that watches collective communication for failures.",
        "cur_step_num": "Checkpoint-on-failure bookkeeping: the current step.",
        "need_ckpt": "Checkpoint-on-failure bookkeeping: whether a checkpoint is needed.",
        "save_checkpoint_steps": "Checkpoint-on-failure bookkeeping: steps between checkpoints.",
        "last_triggered_step": "Checkpoint-on-failure bookkeeping: the last step that saved.",
    }
    ascend_defaults = {
        "hccl_watchdog": True,
        "cur_step_num": 0,
        "need_ckpt": False,
        "save_checkpoint_steps": 0,
        "last_triggered_step": 0,
    }
    for name, text in ascend_help.items():
        keys.append(
            ContextKey(
                name,
                _ASCEND_KINDS[name],
                ascend_defaults.get(name, "" if isinstance(_ASCEND_KINDS[name], Text) else UNSET),
                "ascend_config",
                text,
                platforms=ASCEND,
                device_filtered=True,
                part_of=("ascend_config", name),
                replacement="the functions of mindspore.device_context.ascend",
            )
        )
    # ---------------------------------------------------------------- gpu_config entries
    gpu_help = {
        "conv_fprop_algo": "cuDNN algorithm for convolution forward passes.",
        "conv_dgrad_algo": "cuDNN algorithm for convolution data gradients.",
        "conv_wgrad_algo": "cuDNN algorithm for convolution weight gradients.",
        "conv_allow_tf32": "Let convolutions use TF32 tensor cores.",
        "matmul_allow_tf32": "Let MatMul use TF32 tensor cores.",
    }
    gpu_defaults = {"conv_allow_tf32": True, "matmul_allow_tf32": False}
    for name, text in gpu_help.items():
        keys.append(
            ContextKey(
                name,
                _GPU_CONV_KINDS[name],
                gpu_defaults.get(name, "normal"),
                "gpu_config",
                text,
                platforms=GPU,
                device_filtered=True,
                part_of=("gpu_config", name),
                replacement="the functions of mindspore.device_context.gpu.op_precision",
            )
        )
    # ---------------------------------------------------------------- parallel speed-up
    # Read from the JSON file named by ascend_config['parallel_speed_up_json_path']; set_context
    # also passes them straight to C++. They only matter for distributed Ascend training.
    speedup = {
        "recompute_comm_overlap": (Text(), "", "Overlap recomputation with communication."),
        "matmul_grad_comm_overlap": (Text(), "", "Overlap MatMul gradients with communication."),
        "pp_1f1b_overlap": (Text(), "", "Overlap in the 1F1B pipeline schedule."),
        "recompute_allgather_overlap_fagrad": (Flag(), False, "Overlap AllGather with FlashAttention gradients."),
        "enable_task_opt": (Flag(), False, "Fuse communication operators."),
        "enable_grad_comm_opt": (Flag(), False, "Overlap gradient computation with AllReduce."),
        "enable_opt_shard_comm_opt": (Flag(), False, "Overlap computation with optimizer-shard AllGather."),
        "compute_communicate_fusion_level": (Integer(0), 0, "Fuse computation and communication."),
        "dataset_broadcast_opt_level": (Integer(0), 0, "Optimise dataset broadcast."),
        "interleaved_matmul_comm": (Flag(), False, "Interleave MatMul with communication."),
        "interleaved_layernorm_comm": (Flag(), False, "Interleave LayerNorm with communication."),
        "bias_add_comm_swap": (Flag(), False, "Swap AllReduce and BiasAdd."),
        "enable_begin_end_inline_opt": (Flag(), False, "Inline the first and last pipeline stages."),
        "enable_concat_eliminate_opt": (Flag(), False, "Eliminate Concat operators."),
        "enable_fused_cast_add_opt": (Flag(), False, "Fuse Cast and Add."),
        "enable_flash_attention_load_balance": (Flag(), False, "Balance FlashAttention across devices."),
        "enable_allreduce_slice_to_reducescatter": (Flag(), False, "Turn sliced AllReduce into ReduceScatter."),
        "enable_interleave_split_concat_branch": (Flag(), False, "Interleave split/concat branches."),
        "enable_interleave_parallel_branch": (Flag(), False, "Interleave parallel branches."),
        "enable_offloading_packed_experts": (Flag(), None, "Offload packed MoE experts."),
        "enable_parallel_split": (Flag(), False, "Split operators for parallel execution."),
    }
    for name, (kind, default, text) in speedup.items():
        # MindSpore's C++ context never initialises this flag: it reads True or False depending on
        # what the process did before importing MindSpore (import pytest first, and it is False).
        note = "none: MindSpore leaves it uninitialised" if default is None else ""
        keys.append(ContextKey(name, kind, default, "speedup", text, platforms=ASCEND, default_note=note))
    # ---------------------------------------------------------------- removed or ignored
    keys += [
        ContextKey(
            "grad_for_scalar",
            Flag(),
            False,
            "removed",
            "Let grad compute derivatives with respect to Python scalar inputs.",
            deprecated_in="≤2.7",
            removed_in="2.10",
            replacement="Tensor inputs (tensor derivative)",
            documented_in=_R12,
        ),
        ContextKey(
            "precompile_only",
            Flag(),
            False,
            "removed",
            "Only compile the network, do not run it.",
            deprecated_in="2.5",
            removed_in="2.10",
            replacement="the environment variable MS_DEV_PRECOMPILE_ONLY",
            documented_in=_R12,
        ),
        ContextKey(
            "exception_dump",
            Choice((Option("0"), Option("1"), Option("2"))),
            "2",
            "removed",
            "Dump operator inputs and outputs on Ascend exceptions (an ascend_config entry).",
            platforms=ASCEND,
            removed_in="2.6",
            part_of=("ascend_config", "exception_dump"),
            replacement="mindspore.device_context.ascend.op_debug.aclinit_config()",
        ),
        ContextKey(
            "enable_dump",
            Flag(),
            False,
            "removed",
            "Dump operator data on Ascend.",
            platforms=ASCEND,
            removed_in="2.5",
            replacement="a dump configuration file named by the MINDSPORE_DUMP_CONFIG environment variable",
            documented_in=_R12 + _R0,
        ),
        ContextKey(
            "save_dump_path",
            Text(path=True),
            ".",
            "removed",
            "Where enable_dump wrote its data.",
            platforms=ASCEND,
            removed_in="2.5",
            replacement="the path field of the MINDSPORE_DUMP_CONFIG file",
            documented_in=_R12 + _R0,
        ),
        ContextKey(
            "save_ms_model",
            Flag(),
            False,
            "removed",
            "Save a MindSpore Lite model converted from the graph.",
            removed_in="<1.2",
            replacement="mindspore.export(..., file_format='MINDIR')",
            documented_in=_R0,
        ),
        ContextKey(
            "save_ms_model_path",
            Text(path=True),
            ".",
            "removed",
            "Where save_ms_model wrote the model.",
            removed_in="<1.2",
            replacement="the file_name argument of mindspore.export",
            documented_in=_R0,
        ),
        ContextKey(
            "enable_sparse",
            Flag(),
            False,
            "removed",
            "Enable sparse tensors (they no longer need a switch).",
            deprecated_in="≤2.7",
            ignored=True,
            documented_in=_R12,
        ),
        ContextKey(
            "auto_tune_mode",
            Choice((Option("NO_TUNE"), Option("RL"), Option("GA"), Option("RL,GA"))),
            "NO_TUNE",
            "removed",
            "Tune Ascend operator tiling while building (RL, GA or both).",
            platforms=ASCEND,
            deprecated_in="≤2.7",
            ignored=True,
            replacement="aoe_tune_mode, now mindspore.device_context.ascend.op_tuning.aoe_tune_mode()",
            documented_in=_R12,
        ),
        ContextKey(
            "enable_auto_mixed_precision",
            Flag(),
            True,
            "removed",
            "Switch on automatic mixed precision globally.",
            platforms=ASCEND,
            deprecated_in="≤2.7",
            ignored=True,
            replacement="mindspore.amp.auto_mixed_precision()",
            documented_in=_R12 + _R0,
        ),
    ]
    return keys + _parallel_entries()


CATALOG: dict[str, ContextKey] = {key.name: key for key in _entries()}

# Dict keys and the catalog keys that are their entries (jit_config -> jit_level, infer_boost).
ENTRIES: dict[str, tuple[str, ...]] = {}
for _entry in CATALOG.values():
    if _entry.part_of:
        ENTRIES[_entry.part_of[0]] = (*ENTRIES.get(_entry.part_of[0], ()), _entry.name)
del _entry

SHORTHANDS: dict[str, ContextKey] = {
    "device": ContextKey(
        "device",
        DeviceSpec(),
        None,
        "device",
        "Shorthand for device_target and device_id together: device=CPU, device=GPU:1. msdebug applies "
        "it with mindspore.set_device(), which can be called once per process, before the first operator.",
        replacement="mindspore.set_device(target, device_id)",
    ),
}


def lookup(name: str, extra: Iterable[str] = ()) -> ContextKey:
    """Return the catalog entry for ``name``.

    Parameters
    ----------
    name : str
        A context key or a shorthand such as ``device``.
    extra : iterable of str
        Live keys of the installed MindSpore that the catalog does not describe; they are
        returned as :class:`Opaque` entries.

    Raises
    ------
    UnknownKeyError
        With a "did you mean" suggestion from every known name.
    """
    entry = CATALOG.get(name) or SHORTHANDS.get(name)
    if entry is not None:
        return entry
    extra = tuple(extra)
    if name in extra:
        return ContextKey(name, Opaque(), UNSET, "other", "Not described by msdebug; passed to MindSpore as is.")
    if not name:
        raise UnknownKeyError("empty key name; write key=value, e.g. mode=graph.")
    hint = did_you_mean(name, [*CATALOG, *SHORTHANDS, *extra])
    raise UnknownKeyError(f"unknown context key {echo(name)}.{hint} %mscontext lists every key.")
