"""``%load_ext msdebug``: preferences, magics, completion and hooks; unload undoes exactly that.

Loading twice is harmless, and loading never imports MindSpore.
"""

from __future__ import annotations

from .. import backend
from . import comm, completion, explorer
from .hooks import guard_shell, hold_during_cell, refresh_after_cell, unguard_shell
from .magics import MAGICS
from .prefs import MsDebug, _loaded

__all__ = ["load", "unload"]

_HOOKS = (("pre_run_cell", hold_during_cell), ("post_run_cell", refresh_after_cell))
_registered: dict[int, list] = {}  # the Magics instances registered on each shell


def load(shell) -> None:
    """Register everything on ``shell``; a second load is harmless."""
    if id(shell) in _loaded:
        return
    prefs = MsDebug(shell)
    shell.configurables.append(prefs)
    instances = [magics(shell) for magics in MAGICS]
    for instance in instances:
        shell.register_magics(instance)
    _registered[id(shell)] = instances
    completion.register(shell)
    for event, hook in _HOOKS:
        shell.events.register(event, hook)
    explorer.register(shell)
    guard_shell(shell)  # a Ctrl-C at the end of a message must not stop ipykernel's loop
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
    comm.register(shell, prefs)  # JupyterLab's status bar; nothing in a terminal IPython


def unload(shell) -> None:
    """Undo :func:`load`. MindSpore's context itself stays as the person left it."""
    prefs = _loaded.pop(id(shell), None)
    if prefs is None:
        return
    comm.unregister(shell)
    backend.unwatch()
    backend.untrack_compiles()
    completion.unregister(shell)
    explorer.unregister(shell)
    unguard_shell(shell)
    for event, hook in _HOOKS:
        if hook in shell.events.callbacks[event]:
            shell.events.unregister(event, hook)
    refresh_after_cell()  # never leave notifications held
    for instance in _registered.pop(id(shell), ()):
        for kind, names in instance.magics.items():
            for name in names:
                shell.magics_manager.magics[kind].pop(name, None)
    if prefs in shell.configurables:
        shell.configurables.remove(prefs)
    prefs.close()
