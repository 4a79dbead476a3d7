"""Reading files msdebug did not write: regular files only, and never more than a bound.

Dumps, print files and env_config files come from other machines and other people. A FIFO
would block ``open()`` forever, ``/dev/zero`` never ends, a symlink loop fails in ``stat``:
every reader opens through :func:`open_regular` (non-blocking, then ``fstat``) and reads
through :func:`read_regular`, which stops at a size bound. Both raise the caller's own error
class with one line that names the file.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from typing import BinaryIO

from .errors import MsDebugError, echo

__all__ = ["open_regular", "read_regular", "refuse_special", "ascii_number", "MiB", "INT64_MAX"]

MiB = 1 << 20
INT64_MAX = (1 << 63) - 1
_DIGITS = re.compile(r"[0-9]+")

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)

ErrorType = Callable[[str], MsDebugError]


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


UNREADABLE = "{name}: cannot read it ({reason})."


def open_regular(path: str | os.PathLike, error: ErrorType = MsDebugError, unreadable: str = UNREADABLE) -> BinaryIO:
    """Open ``path`` for reading in binary, if it is a regular file (a symlink to one is fine).

    Raises
    ------
    error
        ``error(message)``: the file is missing, unreadable, a directory, a FIFO, a device,
        a socket or a symlink loop. ``unreadable`` phrases the first two, with ``{name}`` and
        ``{reason}`` (each reader keeps the wording its users know).
    """
    name = os.fspath(path)
    shown = echo(name, quote=False)
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as failure:
        raise error(unreadable.format(name=shown, reason=_reason(failure))) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{shown} is {_kind(mode)}; msdebug reads only regular files.")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(
    path: str | os.PathLike,
    limit: int,
    error: ErrorType = MsDebugError,
    what: str = "file",
    offset: int = 0,
    unreadable: str = UNREADABLE,
) -> bytes:
    """All bytes of a regular file from ``offset``, refusing one larger than ``limit`` bytes."""
    name = os.fspath(path)
    with open_regular(name, error, unreadable) as handle:
        try:
            if offset:
                handle.seek(offset)
            data = handle.read(limit + 1)
        except OSError as failure:
            raise error(f"{echo(name, quote=False)}: cannot read it ({_reason(failure)}).") from None
    if len(data) > limit:
        raise error(
            f"{echo(name, quote=False)} is larger than {limit // MiB} MiB, more than any {what} msdebug reads; "
            "is it the right file?"
        )
    return data


def ascii_number(text: str, high: int = INT64_MAX) -> int | None:
    """The whole number ``text`` spells in ASCII digits, from 0 to ``high``; None for anything else.

    The one reading of a number out of a name or a value someone else wrote (a dump's folders
    and files, an environment variable): ``str.isdigit()`` also accepts ``"²"``, which ``int()``
    refuses, and ``int()`` reads ``"١٢"`` and refuses 4,300 digits. ``high`` is the bound of the
    type the number is used as (int64 for numpy and MindSpore).
    """
    if not isinstance(text, str) or len(text.lstrip("0")) > len(str(high)) or not _DIGITS.fullmatch(text):
        return None
    number = int(text)
    return number if number <= high else None


def refuse_special(path: str | os.PathLike, error: ErrorType = MsDebugError) -> None:
    """Before writing: refuse a name that exists and is not a regular file (writing to a FIFO
    blocks; to a device, it goes nowhere)."""
    name = os.fspath(path)
    try:
        mode = os.stat(name).st_mode
    except FileNotFoundError:
        return
    except OSError as failure:
        raise error(f"{echo(name, quote=False)}: cannot use it ({_reason(failure)}).") from None
    if not stat.S_ISREG(mode):
        raise error(f"{echo(name, quote=False)} is {_kind(mode)}; msdebug writes only regular files.")
