"""msdebug's own preferences (``%config MsDebug``), one set per shell msdebug is loaded in.

They stay apart from MindSpore's context, which ``%mscontext`` sets.
"""

from __future__ import annotations

import sys
import warnings

from traitlets import Bool, Enum, observe
from traitlets.config import Configurable

from .hooks import LEVELS, CellCapture, CellFiles, LogLevel

__all__ = ["MsDebug", "active", "preferences"]


class MsDebug(Configurable):
    """msdebug's own preferences (MindSpore's context is set with %mscontext).

    Change them with ``%config MsDebug.log_level = "ERROR"`` or in
    ``ipython_config.py`` as ``c.MsDebug.log_level = "ERROR"``.
    """

    log_level = Enum(
        [*LEVELS, "keep"],
        default_value="WARNING",
        help="MindSpore's log level (GLOG_v) when msdebug is loaded before MindSpore is imported. "
        "WARNING shows warnings and errors; 'keep' leaves MindSpore's own setting alone.",
    ).tag(config=True)

    cell_files = Bool(
        True,
        help="Write each cell's source to the file ipykernel names it after, so GRAPH-mode compiles "
        "find it instead of logging 'GetRealPath ... may not exists'.",
    ).tag(config=True)

    print_capture = Bool(
        False,
        help="Capture every cell's Print operator output (GRAPH, PYNATIVE, @jit) and print() and show "
        "it inline, in order, when the cell ends (%msprint on / off).",
    ).tag(config=True)

    def __init__(self, shell, **kwargs) -> None:
        # Values from a config file (``c.MsDebug.log_level``) arrive inside Configurable's
        # __init__ and fire the observers before anything below exists: they wait, and the
        # values in effect at the end are applied once, here.
        self._ready = False
        super().__init__(parent=shell, **kwargs)
        self.shell = shell
        self.prints = CellCapture(shell)
        self.prints.every_cell = self.print_capture
        self.prints.register()
        self.log = LogLevel()
        self._apply_log_level(self.log_level)
        self.files = CellFiles(shell)
        if self.cell_files:
            shell.events.register("pre_run_cell", self.files)
        self._ready = True

    @observe("log_level")
    def _log_level_changed(self, change) -> None:
        if self._ready:
            self._apply_log_level(change["new"])

    def _apply_log_level(self, level: str) -> None:
        problem = self.log.apply(level)
        if problem:
            warnings.warn(f"msdebug: {problem}", stacklevel=2)

    @observe("print_capture")
    def _print_capture_changed(self, change) -> None:
        if self._ready:
            self.prints.every_cell = change["new"]

    @observe("cell_files")
    def _cell_files_changed(self, change) -> None:
        if not self._ready:
            return
        if change["new"]:
            self.shell.events.register("pre_run_cell", self.files)
        else:
            self._stop_cell_files()

    def _stop_cell_files(self) -> None:
        if self.files in self.shell.events.callbacks["pre_run_cell"]:
            self.shell.events.unregister("pre_run_cell", self.files)

    def close(self) -> None:
        """Undo everything :meth:`__init__` did."""
        self.prints.unregister()
        self._stop_cell_files()
        self.files.remove_all()
        self.log.undo()


_loaded: dict[int, MsDebug] = {}


def active() -> MsDebug | None:
    """The preferences of the running IPython shell, or ``None`` outside a shell with msdebug
    loaded (plain Python, or before ``%load_ext msdebug``)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return _loaded.get(id(shell)) if shell is not None else None


def preferences(shell) -> MsDebug:
    """The :class:`MsDebug` preferences of a shell msdebug is loaded in."""
    try:
        return _loaded[id(shell)]
    except KeyError:
        raise RuntimeError("msdebug is not loaded in this shell: run %load_ext msdebug") from None
