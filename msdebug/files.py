"""Reading files msdebug did not write: regular files only, and never more than a bound.

Dumps, print files and env_config files come from other machines and other people. A FIFO
would block ``open()`` forever, ``/dev/zero`` never ends, a symlink loop fails in ``stat``:
every reader opens through :func:`open_regular` (non-blocking, then ``fstat`` on the open
descriptor; never a check of the name before the open) and reads through :func:`read_regular`,
which stops at a size bound. Both raise the caller's own error class with one line that names
the file, or, in collect mode (``problems=``), add that line to a list and return None, for the
readers that walk many files. Inside a tree msdebug walks, ``follow=False`` refuses symbolic links.

``tests/test_architecture.py`` checks that no other module of msdebug opens a file by name
(``open(``, ``read_text(``, ``read_bytes(``) beyond an explicit list of the files msdebug writes.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable
from typing import BinaryIO, overload

from .errors import MsDebugError, echo

__all__ = ["open_regular", "read_regular", "LINKED", "refuse_special", "ascii_number", "MiB", "INT64_MAX"]

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
LINKED = "{name} is a symbolic link; msdebug does not follow links inside what it reads."


@overload
def open_regular(
    path: str | os.PathLike,
    error: ErrorType = ...,
    unreadable: str = ...,
    *,
    follow: bool = ...,
    problems: None = ...,
    what: str = ...,
) -> BinaryIO: ...
@overload
def open_regular(
    path: str | os.PathLike,
    error: ErrorType = ...,
    unreadable: str = ...,
    *,
    follow: bool = ...,
    problems: list[str],
    what: str = ...,
) -> BinaryIO | None: ...
def open_regular(
    path: str | os.PathLike,
    error: ErrorType = MsDebugError,
    unreadable: str = UNREADABLE,
    *,
    follow: bool = True,
    problems: list[str] | None = None,
    what: str = "file",
) -> BinaryIO | None:
    """Open ``path`` for reading in binary, if it is a regular file: the one opener of every file
    msdebug did not write.

    The file is opened first (non-blocking, so a FIFO cannot hang it) and judged after, on the
    open descriptor (``fstat``): nothing can be swapped in between a check and the open.

    Parameters
    ----------
    error
        The caller's error class: ``error(message)`` is raised with one line naming the file.
    unreadable
        Phrases a missing or unreadable file, with ``{name}`` and ``{reason}`` (each reader
        keeps the wording its users know).
    follow
        False for a file found inside a tree msdebug walks (a dump, a profile, an RDR folder):
        a symbolic link there is refused (``O_NOFOLLOW``), so a link cannot lead out of the
        tree. True (a path the user named) follows links, to a regular file only.
    problems
        Collect mode, for readers that walk many files: the line goes to ``problems`` as
        ``"{what}: {line} Not read."`` (a missing file as ``"{what}: {name} is missing."``) and
        None is returned instead of raising.

    Raises
    ------
    error
        The file is missing, unreadable, a directory, a FIFO, a device, a socket, a symlink loop
        or (``follow=False``) a symbolic link. Never in collect mode.
    """
    try:
        return _open(os.fspath(path), error, unreadable, follow)
    except _Missing as missing:
        if problems is None:
            raise error(str(missing)) from None
        problems.append(f"{what}: {missing.name} is missing.")
    except MsDebugError as failure:
        if problems is None:
            raise
        problems.append(f"{what}: {failure} Not read.")
    return None


class _Missing(MsDebugError):
    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name


def _open(name: str, error: ErrorType, unreadable: str, follow: bool) -> BinaryIO:
    shown = echo(name, quote=False)
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(name, flags)
    except OSError as failure:
        if not follow and failure.errno == errno.ELOOP and os.path.islink(name):
            # Only the wording: the link was refused by the open itself, not by this check.
            raise error(LINKED.format(name=shown)) from None
        message = unreadable.format(name=shown, reason=_reason(failure))
        if failure.errno == errno.ENOENT:
            raise _Missing(message, shown) from None
        raise error(message) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{shown} is {_kind(mode)}; msdebug reads only regular files.")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@overload
def read_regular(
    path: str | os.PathLike,
    limit: int,
    error: ErrorType = ...,
    what: str = ...,
    offset: int = ...,
    unreadable: str = ...,
    *,
    follow: bool = ...,
    problems: None = ...,
) -> bytes: ...
@overload
def read_regular(
    path: str | os.PathLike,
    limit: int,
    error: ErrorType = ...,
    what: str = ...,
    offset: int = ...,
    unreadable: str = ...,
    *,
    follow: bool = ...,
    problems: list[str],
) -> bytes | None: ...
def read_regular(
    path: str | os.PathLike,
    limit: int,
    error: ErrorType = MsDebugError,
    what: str = "file",
    offset: int = 0,
    unreadable: str = UNREADABLE,
    *,
    follow: bool = True,
    problems: list[str] | None = None,
) -> bytes | None:
    """All bytes of a regular file from ``offset``, refusing one larger than ``limit`` bytes
    (never reading more than ``limit + 1``). ``follow`` and ``problems`` (collect mode: None
    and a line instead of an error) as for :func:`open_regular`."""
    name = os.fspath(path)
    try:
        with open_regular(name, error, unreadable, follow=follow) as handle:
            try:
                if offset:
                    handle.seek(offset)
                data = handle.read(limit + 1)
            except OSError as failure:
                raise error(f"{echo(name, quote=False)}: cannot read it ({_reason(failure)}).") from None
        if len(data) > limit:
            raise error(
                f"{echo(name, quote=False)} is larger than {_size(limit)}, more than any {what} msdebug reads; "
                "is it the right file?"
            )
    except _Missing as missing:
        if problems is None:
            raise error(str(missing)) from None
        problems.append(f"{what}: {missing.name} is missing.")
        return None
    except MsDebugError as failure:
        if problems is None:
            raise
        problems.append(f"{what}: {failure} Not read.")
        return None
    return data


def _size(limit: int) -> str:
    return f"{limit // MiB} MiB" if limit >= MiB else f"{limit} bytes"


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
