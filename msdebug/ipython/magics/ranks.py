"""``%msrun`` / ``%%msrun``: a cell on N MindSpore ranks started through MindSpore's msrun."""

from __future__ import annotations

import atexit
import sys
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from ...errors import MagicUsageError, RankError
from ._parse import Form, Option, Parsed, Spec, magic_spec

__all__ = ["MSRUN", "MsrunMagics"]

_RANKS = (1, 4096)
_COUNT = "a whole number of ranks from 1 to 4096"

# fmt: off
MSRUN = Spec(
    "msrun",
    line=Form(
        words=("start", "status", "stop", "restart", "interrupt", "attach"),
        valued=(("attach", "LOGDIR|PID"),),
        options=(
            Option("-n", "N", "how many ranks on this host (msrun's --local_worker_num)", whole=_RANKS, meaning=_COUNT),
            Option("--worker-num", "N", "ranks on all hosts (msrun's --worker_num; default: -n)", whole=_RANKS,
                   meaning=_COUNT),
            Option("--master-port", "P", "msrun's --master_port (default: a free port)", whole=(1, 65535),
                   meaning="a port number from 1 to 65535"),
            Option("--master-addr", "HOST", "msrun's --master_addr: the host of rank 0's scheduler"),
            Option("--node-rank", "R", "msrun's --node_rank: this host's index among the hosts", whole=(0, 4095)),
            Option("--log-dir", "DIR", "msrun's --log_dir (worker_<rank>.log, scheduler.log)"),
            Option("--cluster-time-out", "S", "msrun's --cluster_time_out", whole=(1, 1 << 31),
                   meaning="a whole number of seconds from 1"),
            Option("--devices", "4,5", "one device per rank: ASCEND_RT_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES"),
            Option("--msrun-args", '"..."', 'more of msrun\'s own flags, such as "--bind_core=True"'),
            Option("--start-timeout", "S", "seconds the ranks may take to start (default 180)", whole=(1, 86400)),
            Option("--ranks", "0,2", "interrupt: only these ranks"),
        ),
    ),
    cell=Form(
        options=(
            Option("--ranks", "0,2", "only these ranks"),
            Option("--hang-after", "S", "seconds before busy ranks are looked at, and between looks (default 30)"),
        )
    ),
)
# fmt: on

_pool = None  # the pool of this kernel
_started_with: dict = {}  # what it was started with, for restart


def _ranks(prefix: str, text: str | None, known: list[int]) -> list[int] | None:
    if text is None:
        return None
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() for part in parts):
        raise MagicUsageError(f"{prefix}: --ranks is a comma-separated list of ranks, such as 0,2; got {text!r}.")
    ranks = sorted({int(part) for part in parts})
    if any(rank not in known for rank in ranks):
        raise MagicUsageError(f"{prefix}: the ranks here are {known[0]} to {known[-1]}; got {text!r}.")
    return ranks


def _stop(timeout: float = 10.0, shell=None) -> None:
    global _pool
    if _pool is not None:
        pool, _pool = _pool, None
        pool.stop(timeout)
    if shell is not None:
        _show(shell)


def _show(shell, busy=()) -> None:
    """The ranks, and the busy ones, in JupyterLab's status bar."""
    from .. import comm

    comm.show_ranks(shell, _pool.ranks if _pool is not None else (), busy)


# A kernel that shuts down or restarts leaves no rank behind: each gets a second to end, then
# it is killed (jupyter_client kills a kernel that takes more than 5 s to go).
atexit.register(_stop, 1.0)


def _start(args: Parsed, shell) -> str:
    global _pool
    from ...ranks.pool import Pool

    if _pool is not None:
        raise MagicUsageError(f"%msrun: {_pool.workers} ranks run already; `%msrun stop` first, or `%msrun restart`.")
    pool = Pool(
        args.get("-n", 2), args.get("--master-port"), args.get("--log-dir"),
        total=args.get("--worker-num"), node_rank=args.get("--node-rank"), master_addr=args.get("--master-addr"),
        cluster_time_out=args.get("--cluster-time-out"), devices=args.get("--devices"),
        msrun_args=args.get("--msrun-args", ""),
    )  # fmt: skip
    pool.start(args.get("--start-timeout", 180))
    _pool = pool
    _started_with.update(args=args)
    pool.on_busy = lambda busy: _show(shell, busy)
    _show(shell)
    return _status(shell)


def _status(shell=None) -> str:
    from ..ranks import RankOutput

    if _pool is None:
        return "msrun: no ranks (`%msrun start -n 2` starts them)"
    late = RankOutput(shell, _pool.ranks, tabs=False)
    _pool.settle(late)  # a rank whose earlier cell ended since is idle, its last output shown
    late.close()
    hosts = f" of {_pool.total} on all hosts" if _pool.total > _pool.workers else ""
    lines = [f"msrun: {_pool.workers} ranks{hosts}, logs in {_pool.log_dir}"]
    if hosts:  # which host runs the job's scheduler
        lines.append(f"  scheduler: {_pool.scheduler}")
    devices = _pool.device_of()
    for rank in _pool.ranks:
        if not _pool.alive(rank):
            state = f"dead ({_pool.exit_of(f'rank{rank}') or 'ended'})"
        else:
            state = "busy" if rank in _pool.busy else "idle"
        lines.append(f"  rank {rank}: {state}" + (f", device {devices[rank]}" if rank in devices else ""))
    return "\n".join([*lines, *_pool.notes])


@magics_class
class MsrunMagics(Magics):
    """``%msrun`` and ``%%msrun``."""

    SPECS = (MSRUN,)

    @no_var_expand
    @line_cell_magic
    @magic_spec(MSRUN)
    def msrun(self, args: Parsed) -> Any:
        """Ranks started through MindSpore's msrun, each an IPython kernel with msdebug loaded.

        Usage::

            %msrun start -n N [--master-port P] [--log-dir DIR] [--devices 4,5] [--msrun-args "..."]
                              [--start-timeout S] [--worker-num W --node-rank R --master-addr HOST --master-port P]
            %msrun status | stop | restart | interrupt [--ranks 0,2]
            %msrun attach LOGDIR|PID    an msrun job started without msdebug: where its ranks are (py-spy)
            %%msrun [--ranks 0,2] [--hang-after S]   the cell on every rank (or these)
        """
        if args.cell is not None:
            return self._cell(args)
        if args.word == "attach":
            from ...ranks.attach import attach

            if args.options:
                raise MagicUsageError(f"%msrun attach takes only LOGDIR or PID, got {', '.join(args.options)}.")
            return attach(args.names[0])
        if args.word == "start":
            print(_start(args, self.shell))
            return None
        if args.word == "stop":
            _stop(shell=self.shell)
            print("msrun: stopped")
            return None
        if args.word == "restart":
            before = _started_with.get("args")
            _stop(shell=self.shell)
            if before is None:
                raise MagicUsageError("%msrun: nothing to restart; `%msrun start -n 2` starts ranks.")
            print(_start(before, self.shell))
            return None
        if args.word == "interrupt":
            if _pool is None:
                raise MagicUsageError("%msrun: no ranks to interrupt.")
            reached = _pool.interrupt(_ranks(args.prefix, args.get("--ranks"), _pool.ranks))
            if not reached:
                print("msrun: no rank alive")
                return None
            stuck = _pool.wait_idle(reached, timeout=5.0)
            stopped = [rank for rank in reached if rank not in stuck]
            if stopped:
                print(f"msrun: rank {', '.join(map(str, stopped))} stopped on Ctrl-C")
            if stuck:
                print(f"msrun: rank {', '.join(map(str, stuck))} still busy 5 s after Ctrl-C (inside MindSpore, "
                      "such as a collective); `%msrun restart` starts the ranks again")  # fmt: skip
            return None
        print(_status(self.shell))
        return None

    def _cell(self, args: Parsed) -> None:
        from IPython.display import display

        from ...ranks import watch as ranks_watch
        from ...views.ranks import note, summary, text_report
        from ..ranks import RankOutput

        if _pool is None:
            raise MagicUsageError("%%msrun: no ranks yet; start them with `%msrun start -n 2`.")
        hang = args.get("--hang-after", "30")
        try:
            hang_after = float(hang)
        except ValueError:
            hang_after = -1.0
        if not 0 < hang_after < 1e6:
            raise MagicUsageError(f"%%msrun: --hang-after is a number of seconds above 0, got {hang!r}.")
        ranks = _ranks(args.prefix, args.get("--ranks"), _pool.ranks)
        output = RankOutput(self.shell, ranks if ranks is not None else _pool.ranks)
        ranks_watch.clear(_pool.dir)  # each rank saves the watch it ran in this cell (%%mswatch)
        try:
            # IPython counts a cell before running it: this cell is the one before the count.
            run = _pool.execute(
                args.cell, ranks, output, hang_after, count=self.shell.execution_count - 1,
                note=lambda run, seconds: print(note(run, seconds), file=sys.stderr, flush=True),
            )  # fmt: skip
        finally:
            output.close()
        output.close({r.rank: r.state for r in run.results})
        watched = ranks_watch.collect(_pool.dir, [r.rank for r in run.results])
        if watched is not None:  # one report of every rank's watch
            display(watched)
        report = text_report(run)
        if report:
            print(report, file=sys.stderr)
            raise RankError(summary(run) + ".")
