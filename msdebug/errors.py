"""Errors raised by msdebug's library code.

The magic layer turns every :class:`MsDebugError` into IPython's own ``UsageError``.
"""

from __future__ import annotations

import difflib
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
    "ProfileReadError",
    "ProfilerOptionsError",
    "ProfilerError",
]

ECHO_LIMIT = 120  # characters of someone's input an error line repeats


class MsDebugError(Exception):
    """Base class: a one-line message that says what was wrong and what is allowed."""


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
