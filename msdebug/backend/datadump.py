"""MindSpore's data-dump switch: the ``MINDSPORE_DUMP_CONFIG`` variable and when it is read.

MindSpore 2.10 parses the file the variable names once, at the first graph compile of the
process (a bad file raises at every compile until it is fixed). After that compile the dump
can neither start nor stop: setting, changing or removing the variable does nothing, and
the private ``_dump_start`` / ``_dump_stop`` are ignored on CPU. Parsing writes
``rank_<r>/.dump_metadata/data_dump.json`` under the dump path, which is how msdebug tells
that a configuration is in effect.
"""

from __future__ import annotations

import os
from pathlib import Path

from .process import graph_compiled

__all__ = ["ENV_VAR", "config_file", "graph_compiled", "parsed_here", "process_started", "set_config_file"]

ENV_VAR = "MINDSPORE_DUMP_CONFIG"


def config_file() -> str | None:
    """The file the variable names now, or None."""
    return os.environ.get(ENV_VAR) or None


def set_config_file(path: str | os.PathLike | None) -> None:
    """Point the variable at ``path`` (None removes it) for this process and its children."""
    if path is None:
        os.environ.pop(ENV_VAR, None)
    else:
        os.environ[ENV_VAR] = os.fspath(path)


def process_started() -> float:
    """When this process started (seconds since the epoch; Linux ``/proc``, else 0)."""
    from ..errors import MsDebugError
    from ..files import MiB, read_regular

    try:
        mine = read_regular("/proc/self/stat", MiB).decode("ascii")
        # Field 22, after the parenthesised command name (which may hold spaces).
        ticks = int(mine.rsplit(")", 1)[1].split()[19])
        lines = read_regular("/proc/stat", 16 * MiB).decode("ascii").splitlines()
        boot = next(int(line.split()[1]) for line in lines if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (MsDebugError, ValueError, IndexError, StopIteration):
        return 0.0


def parsed_here(dump_path: str | os.PathLike) -> bool:
    """Whether MindSpore in this process took a config writing to ``dump_path``: something in
    ``rank_*/`` there (``.dump_metadata``, ``execution_order``, the net's folder) is newer than
    the process. ``.dump_metadata`` alone is not enough: after PyNative ops MindSpore dumps
    without writing it."""
    started = process_started() - 1
    for rank in Path(dump_path).glob("rank_*"):
        try:
            with os.scandir(rank) as entries:
                if any(entry.stat(follow_symlinks=False).st_mtime >= started for entry in entries):
                    return True
        except OSError:
            continue
    return False
