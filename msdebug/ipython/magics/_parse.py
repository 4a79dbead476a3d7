"""The one magic grammar: each magic declares a :class:`Spec`; parsing, "did you mean", the usage
line, ``--help`` and tab completion all read it, and :func:`magic_spec` is the one place where
msdebug's errors become IPython's ``UsageError``.

A line is split into tokens outside quotes and brackets (``key = value`` is one token, so
``jit_config={"jit_level": "O1"}`` survives); then each token is an option (``--name``, with its
value in the next token or after ``=``), a ``key=value`` setting, or a bare word.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from IPython.core.error import UsageError

from ...errors import MagicUsageError, MsDebugError, did_you_mean, echo
from ...files import ascii_number

__all__ = ["Form", "Option", "Parsed", "Spec", "magic_spec", "tokens", "unquote"]

_AROUND_EQUALS = re.compile(r"\s*=\s*")
_NEEDS_SCANNING = re.compile(r"[\"'{}\[\]()]")
HELP = "--help"


def tokens(line: str) -> list[str]:
    """Split on spaces outside quotes and brackets; ``key = value`` becomes ``key=value``.

    Raises
    ------
    MagicUsageError
        For an unclosed quote or bracket.
    """
    if not _NEEDS_SCANNING.search(line):
        return _AROUND_EQUALS.sub("=", line).split()
    found: list[str] = []
    buf: list[str] = []
    quote, depth = "", 0
    text = line.strip()
    for i, char in enumerate(text):
        if quote:
            buf.append(char)
            if char == quote and text[i - 1] != "\\":
                quote = ""
        elif char in "\"'":
            quote = char
            buf.append(char)
        elif char in "{[(":
            depth += 1
            buf.append(char)
        elif char in "}])":
            depth -= 1
            buf.append(char)
        elif char.isspace() and depth == 0:
            rest = text[i:].lstrip()
            if (buf and buf[-1] == "=") or rest.startswith("="):
                continue  # spaces around '=' belong to one assignment
            if buf:
                found.append("".join(buf))
                buf = []
        else:
            buf.append(char)
    if quote or depth:
        raise MagicUsageError(f"unclosed {'quote' if quote else 'bracket'} in: {echo(line.strip(), quote=False)}")
    if buf:
        found.append("".join(buf))
    return found


def unquote(text: str) -> str:
    """``'"a b"'`` -> ``'a b'``; anything else as it is."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text[1:-1]
    return text


def _either(words: tuple[str, ...]) -> str:
    """``("1", "2", "3")`` -> ``"1, 2 or 3"``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


@dataclass(frozen=True)
class Option:
    """``--name VALUE`` (or a flag, when ``metavar`` is empty).

    ``choices`` are the allowed values (checked, and offered by completion); ``whole`` is
    ``(low, high)`` for a whole number in that range, which the parse returns as an ``int``;
    ``meaning`` says either in words for the error line (default: the choices, "1, 2 or 3", or
    "a whole number from 1 to 9").
    """

    name: str
    metavar: str = ""
    help: str = ""
    choices: tuple[str, ...] = ()
    meaning: str = ""
    whole: tuple[int, int] | None = None

    @property
    def flag(self) -> bool:
        return not self.metavar

    def usage(self) -> str:
        return f"{self.name} {self.metavar}" if self.metavar else self.name

    def check(self, prefix: str, value: str) -> str | int:
        if not self.flag and not value.strip():
            # '' would quietly mean the current directory to every path option
            raise MagicUsageError(f"{prefix}: {self.name} needs a {self.metavar}, got an empty value.")
        if self.whole is not None:
            low, high = self.whole
            number = ascii_number(value, high)
            if number is None or number < low:
                allowed = self.meaning or f"a whole number from {low} to {high}"
                raise MagicUsageError(f"{prefix}: {self.name} is {allowed}, got {echo(value)}.")
            return number
        if self.choices and value not in self.choices:
            allowed = self.meaning or _either(self.choices)
            raise MagicUsageError(
                f"{prefix}: {self.name} is {allowed}, got {echo(value)}." + did_you_mean(value, self.choices)
            )
        return value


@dataclass(frozen=True)
class Form:
    """What one form of a magic (the ``%`` line or the ``%%`` cell) accepts.

    ``words``: the bare words allowed (at most one per line); ``settings``: ``key=value``
    settings and bare key names are allowed (``%mscontext``); ``free``: any number of bare
    tokens, each kept whole (an ``=`` inside one included) in ``Parsed.names``, in order, and
    checked by the magic (``%%mswatch``'s conditions); its value names them in the usage line.
    """

    words: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    settings: bool = False
    free: str = ""
    #: Words followed by one value of their own (``attach LOGDIR|PID``), which goes to ``Parsed.names``.
    valued: tuple[tuple[str, str], ...] = ()

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)

    def usage(self) -> str:
        values = dict(self.valued)
        words = [f"{word} {values[word]}" if word in values else word for word in self.words]
        parts = [" | ".join(words)] if words else []
        if self.free:
            parts.append(f"[{self.free} ...]")
        parts += [f"[{o.usage()}]" for o in self.options]
        if self.settings:
            parts.append("[key=value ...]")
        return " ".join(parts)


@dataclass(frozen=True)
class Parsed:
    """One parsed line: the bare word, the options (flags as ``True``), settings and names."""

    magic: str
    line: str
    cell: str | None = None
    word: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    names: tuple[str, ...] = ()

    @property
    def prefix(self) -> str:
        return f"%%{self.magic}" if self.cell is not None else f"%{self.magic}"

    def get(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)


@dataclass(frozen=True)
class Spec:
    """A magic's grammar: its name, its line form and, for cell magics, its cell form."""

    magic: str
    line: Form | None = None
    cell: Form | None = None

    def form(self, cell: bool) -> Form:
        form = self.cell if cell else self.line
        if form is None:  # pragma: no cover - IPython only calls the forms a magic registered
            raise MagicUsageError(f"%{'%' if cell else ''}{self.magic} does not exist.")
        return form

    def usage(self) -> str:
        """One line per form, e.g. ``%msgraphs on | off [--level 1|2|3] [--path DIR]``."""
        lines = [f"%{self.magic} {self.line.usage()}".rstrip()] if self.line else []
        if self.cell:
            lines.append(f"%%{self.magic} {self.cell.usage()}".rstrip())
        return "\n".join(lines)

    def parse(self, line: str, cell: str | None = None) -> Parsed:
        """Check ``line`` against the form; returns what it says.

        Raises
        ------
        MagicUsageError
            One line: what was wrong, what is allowed, and "did you mean".
        """
        form = self.form(cell is not None)
        prefix = f"%%{self.magic}" if cell is not None else f"%{self.magic}"
        found: dict[str, Any] = {}
        settings: dict[str, str] = {}
        names: list[str] = []
        word = ""
        items = tokens(line)
        i = 0
        while i < len(items):
            token = items[i]
            name, eq, inline = token.partition("=")
            if token == HELP:
                found[HELP] = True
            elif token.startswith("-"):
                option = form.option(name)
                if option is None:
                    if not form.options:
                        raise MagicUsageError(self._takes_no_options(prefix, form, items))
                    allowed = ", ".join(o.usage() for o in form.options)
                    raise MagicUsageError(
                        f"{prefix}: unknown option {name}; use {allowed}."
                        + did_you_mean(name, [o.name for o in form.options])
                    )
                if name in found:
                    raise MagicUsageError(f"{prefix}: {name} is given twice.")
                if option.flag:
                    if eq:
                        raise MagicUsageError(f"{prefix}: {name} takes no value.")
                    found[name] = True
                elif eq:
                    found[name] = option.check(prefix, unquote(inline))
                elif i + 1 < len(items) and not items[i + 1].startswith("--"):
                    found[name] = option.check(prefix, unquote(items[i + 1]))
                    i += 1
                else:
                    raise MagicUsageError(f"{prefix}: {name} needs a value: {option.usage()}.")
            elif form.free:
                names.append(token)
            elif form.settings:
                if eq:
                    if name in settings:
                        raise MagicUsageError(f"{prefix}: {name} is given twice.")
                    settings[name] = unquote(inline)
                else:
                    names.append(token)
            elif not form.words:
                raise MagicUsageError(f"{prefix} takes {self._what(form)}, got {echo(token)}.")
            elif word:
                raise MagicUsageError(
                    f"{prefix}: one of {', '.join(form.words)} at a time, got {echo(word)} and {echo(token)}."
                )
            elif token not in form.words:
                raise MagicUsageError(
                    f"{prefix}: unknown word {echo(token)}; use {_either(form.words)}."
                    + did_you_mean(token, form.words)
                )
            else:
                word = token
                value = dict(form.valued).get(token)
                if value is not None:
                    if i + 1 >= len(items) or items[i + 1].startswith("--"):
                        raise MagicUsageError(f"{prefix} {token} needs a {value}.")
                    names.append(unquote(items[i + 1]))
                    i += 1
            i += 1
        return Parsed(self.magic, line, cell, word, found, settings, tuple(names))

    @staticmethod
    def _what(form: Form) -> str:
        if form.options:
            return "nothing or " + ", ".join(o.usage() for o in form.options)
        return "only key=value settings" if form.settings else "nothing"

    def _takes_no_options(self, prefix: str, form: Form, items: list[str]) -> str:
        given = " ".join(t for t in items if t.startswith("-"))
        return f"{prefix} takes {self._what(form)}, got {given}"


def magic_spec(spec: Spec) -> Callable:
    """Decorate a magic method ``method(self, args: Parsed)``: parse the line against ``spec``,
    answer ``--help`` with the method's docstring, and turn every :class:`MsDebugError` into a
    one-line ``UsageError``. Goes below IPython's ``@line_magic`` / ``@cell_magic`` decorators."""

    def decorate(method: Callable) -> Callable:
        @functools.wraps(method)
        def magic(self, line: str, cell: str | None = None) -> Any:
            try:
                args = spec.parse(line, cell)
                if HELP in args.options:
                    print(inspect.cleandoc(method.__doc__ or spec.usage()))
                    return None
                return method(self, args)
            except MsDebugError as error:
                message = str(error)
            # Raised outside the except: the UsageError carries no chain at all (``from None``
            # only hides it), so no traceback shows what msdebug caught, a RecursionError's
            # thousand frames included, and IPython's sys.last_value does not keep them alive.
            raise UsageError(message)

        magic.spec = spec
        return magic

    return decorate
