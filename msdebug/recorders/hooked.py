"""One run of a cell, watched: what ``%%msnan`` and each run of ``%%msdiff`` have in common.

:class:`HookedCell` is a context manager with one lifecycle:

1. SIGINT is held from the first line of ``__enter__`` to the last of ``__exit__``:
   MindSpore's graph runs cannot take it (its handler ends the process), and an interrupt on
   the first line of ``__exit__`` must wait for the hooks' removal;
2. the subclass's :meth:`HookedCell._setup` enters context scopes (:meth:`enter_scope`: a mode,
   a float type), chooses a data dump (:meth:`use_dump`) and installs the hooks
   (:meth:`watch`) with its observer;
3. the cell runs;
4. :meth:`close` removes the hooks, lets the observer's last outputs go and leaves the scopes
   in reverse order, whatever happened, also half way through ``_setup``;
5. :meth:`HookedCell._finished` reads what was recorded, told whether the cell failed.
"""

from __future__ import annotations

from typing import Any

from .. import interrupts

__all__ = ["HookedCell"]


class HookedCell:
    """Subclasses give :meth:`_setup` (what to watch) and :meth:`_finished` (what it found)."""

    def __init__(self) -> None:
        self.dump_path = ""  # the data dump the cell's graphs are read from, if any
        self.dump_new = False  # msdebug set that dump up for this cell (it says so)
        self._before: set[str] = set()  # the dump's iterations before the cell
        self._observer: Any = None
        self._hooks: Any = None
        self._scopes: list[Any] = []
        self._held = False

    # -- what a subclass sets up in _setup
    def enter_scope(self, scope: Any) -> None:
        """Enter ``scope`` (a context manager) now; :meth:`close` leaves it."""
        scope.__enter__()
        self._scopes.append(scope)

    def use_dump(self, path: str, new: bool) -> None:
        """Read the cell's graphs from the data dump at ``path`` (``new``: set up for it)."""
        from ..dumps.datadump import iteration_paths

        self.dump_path, self.dump_new = path, new
        self._before = iteration_paths(path)

    def watch(self, observer: Any) -> None:
        """Install the hooks, reporting to ``observer`` (which has ``names``, an ``OpNames``)."""
        from ..backend.hooks import OpHooks

        self._observer = observer
        self._hooks = OpHooks(observer)
        self._hooks.install()

    @property
    def hook_errors(self) -> list[str]:
        """Checks of the observer that failed (the ops themselves went on)."""
        return self._hooks.errors if self._hooks is not None else []

    def new_iterations(self) -> set[str]:
        """The dump's iteration folders the cell wrote."""
        from ..dumps.datadump import iteration_paths

        return iteration_paths(self.dump_path) - self._before if self.dump_path else set()

    # -- the lifecycle
    def _setup(self) -> None:
        raise NotImplementedError

    def _finished(self, failed: bool) -> None:
        raise NotImplementedError

    def __enter__(self):
        interrupts.hold()
        self._held = True
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    @interrupts.protected  # SIGINT is held: an interrupt on this line waits for the hooks' removal
    def __exit__(self, kind, error, tb) -> bool:
        try:
            self.close()
        finally:
            self._finished(kind is not None)
        return False

    @interrupts.protected
    def close(self) -> None:
        """Hooks off, the observer's last outputs let go, scopes left, SIGINT let go: each
        step also when one before it failed; once, however often it is called."""
        try:
            if self._hooks is not None:
                self._hooks.remove()  # a second time does nothing
                self._observer.names.forget()
        finally:
            try:
                while self._scopes:
                    self._scopes.pop().__exit__(None, None, None)
            finally:
                if self._held:
                    self._held = False
                    interrupts.let_go()
