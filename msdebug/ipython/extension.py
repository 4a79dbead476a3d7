"""``%load_ext msdebug``: register the magics, completion and hooks; unload undoes it all.

Loading never imports MindSpore.
"""

from __future__ import annotations

import sys
import warnings

from traitlets import Bool, Enum, observe
from traitlets.config import Configurable

from .. import backend
from . import completion
from .hooks import LEVELS, CellFiles, LogLevel
from .magics.context import MsDebugMagics
from .magics.dumps import MAGIC_NAMES as DUMP_MAGICS
from .magics.dumps import DumpMagics
from .magics.prints import CellCapture, PrintMagics
from .magics.profile import ProfileMagics

__all__ = ["MsDebug", "active", "hold_during_cell", "load", "preferences", "refresh_after_cell", "unload"]


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

    @observe("log_level")
    def _log_level_changed(self, change) -> None:
        self._apply_log_level(change["new"])

    def _apply_log_level(self, level: str) -> None:
        problem = self.log.apply(level)
        if problem:
            warnings.warn(f"msdebug: {problem}", stacklevel=2)

    @observe("print_capture")
    def _print_capture_changed(self, change) -> None:
        self.prints.every_cell = change["new"]

    @observe("cell_files")
    def _cell_files_changed(self, change) -> None:
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


def hold_during_cell(info=None) -> None:
    """pre_run_cell hook: open panels wait for the end of the cell instead of following
    every change the cell makes."""
    settings = sys.modules.get("msdebug.settings")
    if settings is not None:
        settings.hold()


def refresh_after_cell(result=None) -> None:
    """post_run_cell hook: open panels re-read the context, so a plain
    ``mindspore.set_context(...)`` in a cell shows up in them by the end of that cell.

    Costs a dictionary lookup while no panel is open, and never imports anything.
    """
    settings = sys.modules.get("msdebug.settings")
    if settings is not None:
        settings.release()


_loaded: dict[int, MsDebug] = {}


def load(shell) -> None:
    """Register everything on ``shell``; a second load is harmless."""
    if id(shell) in _loaded:
        return
    prefs = MsDebug(shell)
    shell.configurables.append(prefs)
    shell.register_magics(MsDebugMagics)
    shell.register_magics(PrintMagics(shell, prefs.prints))
    shell.register_magics(DumpMagics)
    shell.register_magics(ProfileMagics)
    completion.register(shell)
    shell.events.register("pre_run_cell", hold_during_cell)
    shell.events.register("post_run_cell", refresh_after_cell)
    # --reset goes back to this moment: MindSpore's start-up context if it is not
    # imported yet (recorded right after its first import), else the context now.
    if backend.is_imported():
        from .. import settings
        from ..errors import MsDebugError

        try:
            settings.set_baseline(settings.snapshot())
        except MsDebugError:  # a broken MindSpore must not stop the extension from loading
            settings.set_baseline(None)
    else:
        backend.watch_first_import(backend.capture_pristine)
    _loaded[id(shell)] = prefs


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


def unload(shell) -> None:
    """Undo :func:`load`. MindSpore's context itself stays as the person left it."""
    prefs = _loaded.pop(id(shell), None)
    if prefs is None:
        return
    backend.unwatch()
    backend.untrack_compiles()
    completion.unregister(shell)
    for event, hook in (("pre_run_cell", hold_during_cell), ("post_run_cell", refresh_after_cell)):
        if hook in shell.events.callbacks[event]:
            shell.events.unregister(event, hook)
    refresh_after_cell()  # never leave notifications held
    for kind in ("line", "cell"):
        for name in ("mscontext", "msprint"):
            shell.magics_manager.magics[kind].pop(name, None)
    for name in DUMP_MAGICS:
        shell.magics_manager.magics["line"].pop(name, None)
    shell.magics_manager.magics["cell"].pop("msprofile", None)
    if prefs in shell.configurables:
        shell.configurables.remove(prefs)
    prefs.close()
