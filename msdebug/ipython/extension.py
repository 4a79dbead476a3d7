"""``%load_ext msdebug``: preferences, magics, completion and hooks; unload undoes exactly that.

Loading twice is harmless, and loading never imports MindSpore. Loading imports only what
it runs: the preferences and the cell hooks (with :mod:`msdebug.backend`'s import watcher).
The magics are declared by name (IPython imports a class the first time one of its magics,
or its help, is used), completion imports its specs at the first completion, and explorers
are shown as widgets through a formatter registered by the class's name.
"""

from __future__ import annotations

from IPython.core import magic as _magic
from IPython.core.completer import context_matcher

from .. import backend
from . import comm, diff, explorer
from .hooks import guard_shell, hold_during_cell, refresh_after_cell, unguard_shell
from .magics import DECLARED
from .prefs import MsDebug, _loaded

__all__ = ["load", "unload"]

_HOOKS = (("pre_run_cell", hold_during_cell), ("post_run_cell", refresh_after_cell))
_SPECS = frozenset(spec for _, spec in DECLARED.values())
# IPython 9.18 resolves "module:Class" placeholders; older ones get the classes at load.
_LAZY = hasattr(_magic, "LazyMagic")
_NO_MATCH = {"completions": [], "suppress": False}


@context_matcher(identifier="msdebug.magics")
def complete(context):
    """Tab completion on msdebug's magic lines; :mod:`.completion` is imported at the first one."""
    line = context.text_until_cursor.rpartition("\n")[2].lstrip()
    if not line.startswith("%"):
        return _NO_MATCH  # not a magic's line: no need to import the specs
    from .completion import magic_matcher

    return magic_matcher(context)


def load(shell) -> None:
    """Register everything on ``shell``; a second load is harmless."""
    if id(shell) in _loaded:
        return
    prefs = MsDebug(shell)
    shell.configurables.append(prefs)
    _register_magics(shell)
    if complete not in shell.Completer.custom_matchers:
        shell.Completer.custom_matchers.append(complete)
    for event, hook in _HOOKS:
        shell.events.register(event, hook)
    explorer.register(shell)
    diff.register(shell)
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
    while complete in shell.Completer.custom_matchers:
        shell.Completer.custom_matchers.remove(complete)
    explorer.unregister(shell)
    diff.unregister(shell)
    unguard_shell(shell)
    for event, hook in _HOOKS:
        if hook in shell.events.callbacks[event]:
            shell.events.unregister(event, hook)
    refresh_after_cell()  # never leave notifications held
    _unregister_magics(shell)
    if prefs in shell.configurables:
        shell.configurables.remove(prefs)
    prefs.close()


def _register_magics(shell) -> None:
    manager = shell.magics_manager
    if not _LAZY:
        from .magics import MAGICS

        for magics in MAGICS:
            shell.register_magics(magics(shell))
        return
    for name, (kinds, spec) in DECLARED.items():
        for kind in kinds:
            manager.register_lazy(name, spec, kind)


def _ours(function) -> bool:
    """Whether an entry of IPython's magics table is msdebug's, without resolving a placeholder."""
    if _LAZY and isinstance(function, _magic.LazyMagic):
        return function.spec in _SPECS
    owner = getattr(function, "__self__", None)
    return f"{type(owner).__module__}:{type(owner).__name__}" in _SPECS


def _unregister_magics(shell) -> None:
    manager = shell.magics_manager
    for name, (kinds, spec) in DECLARED.items():
        for kind in kinds:
            if _ours(manager.magics[kind].get(name)):
                del manager.magics[kind][name]
        if getattr(manager, "lazy_magics", {}).get(name) == spec:
            del manager.lazy_magics[name]
    for spec in _SPECS:
        # IPython keeps the specs it has imported, so that it never registers one twice; a
        # load after this unload must import them again.
        getattr(manager, "_loaded_lazy", set()).discard(spec)
        name = spec.partition(":")[2]
        owner = dict.get(manager.registry, name)
        if owner is not None and f"{type(owner).__module__}:{name}" == spec:
            dict.pop(manager.registry, name)
