"""Errors raised by msdebug's library code.

The magic layer turns every :class:`MsDebugError` into IPython's own ``UsageError``. Raised
from a method call (``explorer.graph('no_such_stage')``), an :class:`MsDebugError` still shows
as its message in IPython, not as a traceback through msdebug: IPython asks an exception for
``_render_traceback_()`` before it formats one, so this works without the extension loaded
and without taking IPython's single custom-exception slot (``set_custom_exc``) from anyone.
"""

from __future__ import annotations

import difflib
import linecache
import os
import textwrap
from collections.abc import Iterable

__all__ = [
    "MsDebugError",
    "UnknownKeyError",
    "InvalidValueError",
    "NotApplicableError",
    "DeviceLockedError",
    "MindSporeMissingError",
    "MindSporeRefusedError",
    "WidgetsMissingError",
    "MagicUsageError",
    "DumpError",
    "DumpFormatError",
    "DumpConfigError",
    "DumpTooLateError",
    "did_you_mean",
    "echo",
    "wrap_message",
    "ProfileReadError",
    "ProfilerOptionsError",
    "ProfilerError",
    "RankError",
]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_WIDTH = 100
_MAX_FRAMES = 4
ECHO_LIMIT = 120  # characters of someone's input an error line repeats


class MsDebugError(Exception):
    """Base class: a one-line message that says what was wrong and what is allowed."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of a traceback: the message, wrapped at word boundaries
        (a notebook's error box breaks long lines anywhere, mid-word), and, when the call came
        through the person's own functions, one line per function that led to it."""
        lines = wrap_message(f"{type(self).__name__}: {self}").splitlines()
        callers = _callers(self.__traceback__)
        if len(callers) > 1:  # the first is the cell itself, which the person is looking at
            lines += [f"  (from {where})" for where in callers[1:][-_MAX_FRAMES:]]
        return lines


def wrap_message(text: str, width: int = _WIDTH) -> str:
    """``text`` broken at word boundaries into lines of at most ``width`` characters, the
    following lines indented; words longer than a line (paths) stay whole."""
    return "\n".join(
        textwrap.fill(part, width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False)
        for part in text.splitlines() or [""]
    )


def _callers(tb) -> list[str]:
    """``f(), line 3: code`` for each frame of the traceback outside msdebug's own package."""
    out = []
    while tb is not None and tb.tb_frame.f_code.co_name != "<module>":
        tb = tb.tb_next  # IPython's own frames, up to the cell (a script has none)
    while tb is not None:
        code = tb.tb_frame.f_code
        path = os.path.abspath(code.co_filename) if not code.co_filename.startswith("<") else code.co_filename
        if not path.startswith(_PACKAGE):
            source = linecache.getline(code.co_filename, tb.tb_lineno).strip()
            name = "the cell" if code.co_name == "<module>" else f"{code.co_name}()"
            out.append(f"{name}, line {tb.tb_lineno}" + (f": {source}" if source else ""))
        tb = tb.tb_next
    return out


class UnknownKeyError(MsDebugError, LookupError):
    """The name is not a context key of any MindSpore version msdebug knows."""


class InvalidValueError(MsDebugError, ValueError):
    """A value of the wrong type, out of range, or not one of the allowed choices."""


class NotApplicableError(MsDebugError):
    """The key exists but does nothing here: removed, ignored, or for another device."""


class DeviceLockedError(MsDebugError):
    """The device can no longer change in this process; the message gives a first cell."""


class MindSporeMissingError(MsDebugError, ImportError):
    """MindSpore is not installed in the running environment."""


class MindSporeRefusedError(MsDebugError):
    """MindSpore raised although msdebug's own validation accepted the value."""


class WidgetsMissingError(MsDebugError, ImportError):
    """ipywidgets, which the settings panel needs, is not installed."""


class MagicUsageError(MsDebugError, ValueError):
    """A magic's line that does not follow the magic's declared grammar."""


class DumpError(MsDebugError, OSError):
    """A dump path that does not exist, cannot be read, or holds no dump msdebug knows."""


class DumpFormatError(MsDebugError, ValueError):
    """A dump file that is not what its name says: binary garbage, or cut short."""


class DumpConfigError(InvalidValueError):
    """A data-dump setting MindSpore would refuse or ignore (its rules, checked before it sees them)."""


class DumpTooLateError(MsDebugError):
    """A data dump asked for after the first graph compile; the message gives the first cell."""


def echo(value: object, quote: bool = True, limit: int = ECHO_LIMIT) -> str:
    """``value`` as an error line repeats it: ``repr`` (or the text itself with ``quote=False``),
    its middle cut out beyond ``limit`` characters, with how much was cut.

    Every message that quotes what someone typed or a file held goes through here, so one
    200,000-character value cannot make a 200 KB error line.
    """
    text = repr(value) if quote else str(value)
    if len(text) <= limit:
        return text
    keep = (limit - 1) // 2
    return f"{text[:keep]}…{text[-keep:]} ({len(text):,} characters)"


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """Return ``" Did you mean 'x'?"`` for the closest candidate, or ``""``."""
    if len(word) > ECHO_LIMIT:
        return ""  # nothing that long is a typo of a name
    pool = {c.lower(): c for c in candidates}
    close = difflib.get_close_matches(word.lower(), list(pool), n=1, cutoff=0.6)
    return f" Did you mean {pool[close[0]]!r}?" if close else ""


class ProfileReadError(DumpError):
    """A path that holds no profiler output msdebug can read."""


class ProfilerOptionsError(InvalidValueError):
    """A profiler option, ``MS_PROFILER_OPTIONS`` field or ``profiler_config.json`` field is wrong."""


class ProfilerError(MsDebugError):
    """MindSpore's profiler refused to start or stop; the message says what it said."""


class RankError(Exception):
    """A ``%%msrun`` cell failed on its ranks: one raised, died or still runs after the others
    (the report above says which, with the first traceback). Not a usage error, so the magic
    layer lets it through as itself; IPython shows its one line."""

    def _render_traceback_(self) -> list[str]:
        return wrap_message(f"{type(self).__name__}: {self}").splitlines()
