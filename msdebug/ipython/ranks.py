"""Where the ranks' output goes in the notebook: a tab per rank in JupyterLab, rank-prefixed
text in a terminal and under nbval.

A cell run from JupyterLab (its request names the cell) or in a kernel that msdebug's status bar
follows renders widgets: each rank's streams and displays go to that rank's ``Output`` widget as
they arrive. Elsewhere
every line is written to this cell's stdout or stderr with ``[rank N]`` in front, whole lines
only, so two ranks' halves of a line never mix.
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["RankOutput", "on_a_rank", "record_communication", "save_watches", "serve_rank"]

_rank_of: list[tuple[str, str]] = []  # (pool, rank) in a rank's kernel, set by serve_rank


def serve_rank(pool: str, rank: str) -> int:
    """What one worker of the job is: an IPython kernel with msdebug loaded, whose connection file
    is ``<pool>/rank<R>.json`` and pid ``<pool>/rank<R>.pid`` (the pool waits for them); it
    returns when the pool shuts it down."""
    import faulthandler

    from ipykernel.kernelapp import IPKernelApp

    # Where this rank's Python stacks go on SIGUSR1, for a hang: a signal handler in C, so it
    # runs also while MindSpore's C++ waits in a collective with the GIL held. Appended: the
    # pool empties the file before each dump it asks for, so it holds one at most.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
    fd = os.open(os.path.join(pool, f"rank{rank}.stacks"), flags, 0o600)
    stacks = os.fdopen(fd, "a", encoding="utf-8")
    faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)
    # ipykernel sends fd 2 to the notebook: a crash would be written there and lost with the
    # process. A copy of fd 2 as it is now (msrun's worker log) keeps it.
    log = os.fdopen(os.dup(2), "w", encoding="utf-8", errors="replace")
    faulthandler.enable(file=log, all_threads=True)

    with open(os.path.join(pool, f"rank{rank}.pid"), "x", encoding="ascii") as handle:
        handle.write(str(os.getpid()))
    app = IPKernelApp.instance(kernel_class=_rank_kernel())
    app.initialize(
        [
            # C-level output is forwarded by msdebug instead (see _rank_kernel).
            "--IPKernelApp.capture_fd_output=False",
            "-f",
            os.path.join(pool, f"rank{rank}.json"),
            # msdebug's log level before MindSpore's first import: cluster building logs ~30
            # warnings per rank otherwise.
            "--MsDebug.log_level=ERROR",
            # Its parent is the supervisor: the kernel ends if the supervisor does (and ipykernel
            # does not tell the log that Ctrl-C will not work, as it does for `ipython kernel`).
            f"--IPKernelApp.parent_handle={os.getppid()}",
            "--IPKernelApp.exec_lines=['%load_ext msdebug']",
            # Cells take the notebook's numbers, and N ranks would share one history database.
            "--HistoryManager.enabled=False",
        ]
    )
    record_communication(app.shell, os.path.join(pool, f"rank{rank}.flight"), int(rank))
    save_watches(app.shell, pool, rank)
    app.start()
    return 0


def record_communication(shell, path: str, rank: int):
    """The rank's flight recorder (:mod:`msdebug.ranks.flight`) at ``path``: each cell's number
    and file as it is compiled, and every communication op the rank launches from MindSpore's
    first import on (the watch is installed right after it, or now if it is imported). Returns
    the recorder, or None when its file cannot be made (the pool then places ranks by their
    stacks alone)."""
    from .. import backend
    from ..backend.ranks import Watch
    from ..ranks.collectives import is_communication
    from ..ranks.flight import Recorder

    try:
        recorder = Recorder(path, rank)
    except OSError:
        return None

    # Each cell's number and file as IPython caches it (the one place both are certain: IPython 9
    # counts a cell before pre_run_cell, 8 after it; a nested cell magic's body is cached too).
    cache = shell.compile.cache

    def cell(transformed_code: str, number: int = 0, raw_code: str | None = None) -> str:
        name = cache(transformed_code, number, raw_code)
        recorder.cell(number, name, transformed_code if raw_code is None else raw_code)
        return name

    shell.compile.cache = cell
    watch = Watch(recorder.launched, is_communication, recorder.graph_nodes)
    if backend.is_imported():
        watch.install()
    else:
        # In the place of the watcher msdebug's extension set (it records MindSpore's start-up
        # context): both run.
        backend.watch_first_import(lambda: (backend.capture_pristine(), watch.install()))
    return recorder


def on_a_rank() -> bool:
    """Whether this kernel is a rank of ``%msrun`` (its watch reports in the notebook, merged)."""
    return bool(_rank_of)


def save_watches(shell, pool: str, rank: str) -> None:
    """After each cell of the rank, the watch that ended in it (``%%mswatch`` or
    ``msdebug.watch``) is saved into the pool's directory, for the notebook to merge
    (:mod:`msdebug.ranks.watch`): before the cell's reply, so it is there when the cell ends."""
    from ..ranks import watch as ranks_watch
    from ..recorders import watch as recorder

    _rank_of[:] = [(pool, rank)]
    saved: list[object] = [recorder.last_ended()]

    def after(result) -> None:
        session = recorder.last_ended()
        if session is None or session is saved[0]:
            return  # none ended in this cell (one still running spans cells: saved when it ends)
        saved[0] = session
        try:
            ranks_watch.save(pool, rank, session.history)
        except Exception as error:  # noqa: BLE001 - the cell's own outcome stands; the notebook says none came
            print(f"msdebug: rank {rank} could not save its watch: {error}", file=sys.stderr)

    shell.events.register("post_run_cell", after)


def _rank_kernel():
    """ipykernel's kernel, whose requests end with their C-level output in them (see
    :mod:`msdebug.ranks.coutput`, which replaces ipykernel's fd capture here)."""
    from ipykernel.ipkernel import IPythonKernel

    from ..ranks.coutput import COutput

    class RankKernel(IPythonKernel):
        def __init__(self, **kwargs) -> None:
            super().__init__(**kwargs)
            self._c_output = COutput()

        async def do_execute(self, *args, **kwargs):
            try:
                return await super().do_execute(*args, **kwargs)  # a coroutine in ipykernel >= 6
            finally:
                _wait_launched()
                self._c_output.drain()

    return RankKernel


def _wait_launched() -> None:
    """The end of each cell on a rank: wait for the ops it launched (PyNative runs them
    asynchronously), so that a collective is waited for in the cell that launched it, not in
    whichever cell next reads a tensor. What a failed op raised goes to the cell's stderr."""
    from ..backend.ranks import wait_launched

    failed = wait_launched()
    if failed:
        print(failed, file=sys.stderr)


def _from_a_notebook_front_end(shell) -> bool:
    """Whether the running cell came from JupyterLab (or Notebook 7), which renders widgets: its
    execute request carries the cell's id (``metadata.cellId``); nbval and nbclient send none."""
    kernel = getattr(shell, "kernel", None)
    try:
        parent = kernel.get_parent("shell") if kernel is not None else {}
    except Exception:  # noqa: BLE001 - an ipykernel without get_parent: show text
        return False
    return "cellId" in ((parent or {}).get("metadata") or {})


class RankOutput:
    """``output(rank, kind, content)`` for :meth:`msdebug.ranks.pool.Pool.execute`: one tab per
    rank under a notebook front end (unless ``tabs`` is False), else ``[rank N]`` lines."""

    def __init__(self, shell, ranks: list[int], tabs: bool = True) -> None:
        from . import comm

        self.ranks = ranks
        self.tabs = None
        self._outputs: dict[int, object] = {}
        self._partial: dict[tuple[int, str], str] = {}
        if tabs and (comm.front_end_connected(shell) or _from_a_notebook_front_end(shell)):
            self._make_tabs()

    def _make_tabs(self) -> None:
        import ipywidgets
        from IPython.display import display

        self._outputs = {rank: ipywidgets.Output() for rank in self.ranks}
        self.tabs = ipywidgets.Tab(children=list(self._outputs.values()))
        for index, rank in enumerate(self.ranks):
            self.tabs.set_title(index, f"rank {rank}")
        display(self.tabs)

    def __call__(self, rank: int, kind: str, content) -> None:
        if self.tabs is not None:
            self._to_tab(rank, kind, content)
        elif kind == "error":
            return  # the report after the cell shows the first; the others have a line each
        elif kind == "display":
            self._lines(rank, "stdout", str(content.get("text/plain", "")) + "\n")
        else:
            self._lines(rank, kind, content)

    def _to_tab(self, rank: int, kind: str, content) -> None:
        out = self._outputs[rank]
        if kind == "display":
            out.outputs = (*out.outputs, {"output_type": "display_data", "data": content, "metadata": {}})
        elif kind in ("stderr", "error"):
            out.append_stderr(content if kind == "stderr" else content + "\n")
        else:
            out.append_stdout(content)

    def _lines(self, rank: int, name: str, text: str) -> None:
        key = (rank, name)
        text = self._partial.pop(key, "") + text
        whole, newline, rest = text.rpartition("\n")
        if rest:
            self._partial[key] = rest
        if newline:
            stream = sys.stderr if name == "stderr" else sys.stdout
            stream.write("".join(f"[rank {rank}] {line}\n" for line in whole.split("\n")))
            stream.flush()

    def close(self, states: dict[int, str] | None = None) -> None:
        """Write what is left of unfinished lines; in tabs, put each rank's state in its title."""
        left, self._partial = sorted(self._partial.items()), {}
        for (rank, name), rest in left:
            self._lines(rank, name, rest + "\n")
        if self.tabs is not None and states:
            for index, rank in enumerate(self.ranks):
                state = states.get(rank, "")
                self.tabs.set_title(index, f"rank {rank}" + (f" · {state}" if state and state != "finished" else ""))
