"""``%msrun`` / ``%%msrun``: a cell on N MindSpore ranks started through msrun (prototype)."""

from __future__ import annotations

import atexit
import sys
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from ...errors import MagicUsageError
from ._parse import Form, Option, Parsed, Spec, magic_spec

__all__ = ["MSRUN", "MsrunMagics"]

MSRUN = Spec(
    "msrun",
    line=Form(
        words=("start", "status", "stop", "restart"),
        options=(
            Option("-n", "N", "how many ranks (msrun's --worker_num and --local_worker_num)"),
            Option("--master-port", "P", "msrun's --master_port (default: a free port)"),
            Option("--log-dir", "DIR", "msrun's --log_dir (worker_<rank>.log, scheduler.log)"),
        ),
    ),
    cell=Form(
        options=(
            Option("--ranks", "0,2", "only these ranks"),
            Option("--hang-after", "S", "seconds a rank may stay busy after the others are done (default 30)"),
        )
    ),
)

_pool = None  # the pool of this kernel


def _ranks(text: str | None, size: int) -> list[int] | None:
    if text is None:
        return None
    try:
        ranks = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise MagicUsageError(
            f"%%msrun: --ranks is a comma-separated list of ranks, such as 0,2; got {text!r}."
        ) from None
    wrong = [rank for rank in ranks if not 0 <= rank < size]
    if wrong or not ranks:
        raise MagicUsageError(f"%%msrun: the pool has ranks 0 to {size - 1}; got {text!r}.")
    return ranks


def _stop() -> None:
    global _pool
    if _pool is not None:
        pool, _pool = _pool, None
        pool.stop()


atexit.register(_stop)  # a kernel that shuts down or restarts leaves no rank behind


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

            %msrun start -n N [--master-port P] [--log-dir DIR]
            %msrun status | stop | restart
            %%msrun [--ranks 0,2]      the cell on every rank (or these), output prefixed by rank
        """
        global _pool
        from ...ranks.pool import Pool

        if args.cell is not None:
            if _pool is None:
                raise MagicUsageError("%%msrun: no ranks yet; start them with %msrun start -n 2.")
            hang = args.get("--hang-after", "30")
            try:
                hang_after = float(hang)
            except ValueError:
                raise MagicUsageError(f"%%msrun: --hang-after is a number of seconds, got {hang!r}.") from None
            results = _pool.execute(args.cell, _ranks(args.get("--ranks"), _pool.workers), _show, hang_after)
            for result in results:
                if result.status == "error":
                    print(f"[rank {result.rank}] error: {result.ename}: {result.evalue}", file=sys.stderr)
                elif result.status == "hung":
                    where = _innermost(result.stacks)
                    print(f"[rank {result.rank}] still busy {hang_after:g} s after the others finished, at {where}; "
                          "%msrun restart ends it", file=sys.stderr)  # fmt: skip
                elif result.status == "dead":
                    print(f"[rank {result.rank}] died; its log ends: {_pool.worker_log(result.rank)[-300:]}",
                          file=sys.stderr)  # fmt: skip
            return None
        if args.word == "start":
            if _pool is not None:
                raise MagicUsageError(f"%msrun: {_pool.workers} ranks run already; %msrun stop first, or restart.")
            text = args.get("-n", "2")
            if not text.isdigit():
                raise MagicUsageError(f"%msrun: -n is a whole number of ranks, got {text!r}.")
            port = args.get("--master-port")
            pool = Pool(int(text), int(port) if port else None, args.get("--log-dir"))
            pool.start()
            _pool = pool
            return f"msrun: {pool.workers} ranks, pids {pool.pids}"
        if args.word == "stop":
            _stop()
            return "msrun: stopped"
        if args.word == "restart":
            size = _pool.workers if _pool is not None else 2
            _stop()
            pool = Pool(size)
            pool.start()
            _pool = pool
            return f"msrun: {pool.workers} ranks, pids {pool.pids}"
        if _pool is None:
            return "msrun: no ranks"
        alive = {rank: _pool.alive(rank) for rank in _pool.pids}
        return f"msrun: {_pool.workers} ranks; alive {alive}"


def _show(rank: int, name: str, text: str) -> None:
    stream = sys.stderr if name == "stderr" else sys.stdout
    for line in text.splitlines(keepends=True):
        stream.write(f"[rank {rank}] {line}")
    stream.flush()


_COLLECTIVES = ("AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Barrier", "AllToAll", "Send", "Receive",
                "all_reduce", "all_gather", "broadcast", "barrier", "reduce_scatter")  # fmt: skip


def _innermost(stacks: str, offset: int = 1) -> str:
    """Where a busy rank is, from its faulthandler dump: the innermost line of the cell it runs
    (with its code; numbered as in the notebook, below the ``%%msrun`` line), and whether that
    line calls a collective."""
    import linecache
    import re

    block = stacks.split("Current thread", 1)[-1]
    frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', block)
    for path, line, _ in frames:  # innermost first
        if "ipykernel_" in path or path.startswith("<ipython-input"):
            code = linecache.getline(path, int(line)).strip()
            found = next((name for name in _COLLECTIVES if name in code), "")
            number = int(line) + offset
            where = f"cell line {number}: `{code}`" if code else f"cell line {number}"
            return f"a collective ({found}) at {where}" if found else where
    if frames:
        path, line, function = frames[0]
        return f"{function} ({path}:{line})"
    return "an unknown place"
