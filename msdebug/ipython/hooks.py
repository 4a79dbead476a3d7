"""Keep MindSpore's log noise out of notebook cells.

Two things: MindSpore's log level (``GLOG_v``, read once at ``import mindspore``), and
the ``GetRealPath ... may not exists`` lines every GRAPH-mode compile prints in a kernel,
because ipykernel names each cell after a file it never writes.
"""

from __future__ import annotations

import os

from .. import backend

__all__ = ["LEVELS", "CellFiles", "LogLevel"]

# MindSpore's levels, as GLOG_v numbers (mindspore/log.py).
LEVELS = {"DEBUG": "0", "INFO": "1", "WARNING": "2", "ERROR": "3", "CRITICAL": "4"}


class LogLevel:
    """Sets ``GLOG_v`` before MindSpore is imported; :meth:`undo` puts the old value back."""

    def __init__(self) -> None:
        self._saved: tuple[bool, str | None] | None = None

    def apply(self, level: str) -> str | None:
        """Apply ``level`` ("keep" leaves MindSpore alone).

        Returns why it cannot take effect in this process, or None when it does.
        """
        if level == "keep":
            self.undo()
            return None
        if backend.is_imported():
            if os.environ.get("GLOG_v", LEVELS["WARNING"]) == LEVELS[level]:
                return None  # already so
            return (
                f"MindSpore was imported before msdebug, so its log level can no longer change in this "
                f"process; for {level}, put %env GLOG_v={LEVELS[level]} in the first cell."
            )
        if self._saved is None:
            self._saved = ("GLOG_v" in os.environ, os.environ.get("GLOG_v"))
        os.environ["GLOG_v"] = LEVELS[level]
        return None

    def undo(self) -> None:
        """Restore ``GLOG_v`` as it was, if MindSpore has not read it yet."""
        if self._saved is None or backend.is_imported():
            self._saved = None
            return
        existed, value = self._saved
        if existed:
            os.environ["GLOG_v"] = value
        else:
            os.environ.pop("GLOG_v", None)
        self._saved = None


class CellFiles:
    """A ``pre_run_cell`` hook that writes each cell's source to the file ipykernel names it after.

    MindSpore's graph compiler looks the file up (``GetRealPath``) and logs two warnings
    per compile when it is missing; with the file present it also finds the source lines.
    Only files this hook created are removed by :meth:`remove_all`.
    """

    def __init__(self, shell) -> None:
        self.shell = shell
        self.created: list[str] = []

    def __call__(self, info) -> None:
        raw = getattr(info, "raw_cell", None)
        if not raw:
            return
        try:
            name = self.shell.compile.get_code_name(raw, raw, self.shell.execution_count)
        except Exception:  # noqa: BLE001 - a compiler without file names: nothing to do
            return
        if not os.path.isabs(name) or os.path.exists(name):
            return  # terminal IPython names cells <ipython-input-...>; nothing on disk to fix
        try:
            os.makedirs(os.path.dirname(name), exist_ok=True)
            with open(name, "x", encoding="utf-8") as handle:
                handle.write(raw)
        except OSError:
            return
        self.created.append(name)

    def remove_all(self) -> None:
        for name in self.created:
            try:
                os.remove(name)
            except OSError:
                pass
        self.created.clear()
