"""What msrun starts for ``%msrun``: the task script of every process of the job.

msrun runs the task script once as the scheduler (``MS_ROLE=MS_SCHED``) and once per worker
(``MS_ROLE=MS_WORKER``, ``RANK_ID``). Here:

* a worker becomes an IPython kernel, with msdebug loaded, whose connection file it writes as
  ``<pool>/rank<R>.json`` (its pid beside it, in ``rank<R>.pid``): the notebook's kernel
  connects to it as JupyterLab connects to a kernel. The person's cells call
  ``mindspore.communication.init()`` themselves, so context settings can come first;
* the scheduler waits in ``init()`` for the workers, then until the pool stops.

Both end when the notebook's kernel is gone (its pid and start time are in
``MSDEBUG_PARENT``): msrun's processes are not the kernel's children, so nothing else would
end them after a kernel is killed.
"""

from __future__ import annotations

import os
import signal
import sys
import time

__all__ = ["main", "parent_alive"]

POLL_S = 0.5


def _start_time(pid: int) -> str:
    """The start time of ``pid`` in clock ticks since boot ('' when it is gone or a zombie): a
    pid that was reused by another process has another start time."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return ""
    if len(fields) < 20 or fields[0] in ("Z", "X"):  # a killed kernel stays a zombie until its manager reaps it
        return ""
    return fields[19]


def parent_alive(parent: str) -> bool:
    """Whether the notebook kernel ``"<pid>:<start time>"`` still runs."""
    pid, _, started = parent.partition(":")
    return pid.isdigit() and _start_time(int(pid)) == started


def _watch_parent(parent: str) -> None:
    """End this process when the notebook's kernel is gone.

    The watcher is a forked process, not a thread: a rank stuck in MindSpore's C++ (a
    collective that waits for a rank that never comes, ``init()`` waiting for the cluster)
    holds the GIL, and a thread would never run. It ends with this process too.
    """
    me = os.getpid()
    if os.fork() != 0:
        return
    try:
        while parent_alive(parent):
            if os.getppid() != me:  # this process ended: nothing left to watch
                os._exit(0)
            time.sleep(POLL_S)
        os.kill(me, signal.SIGKILL)
    finally:
        os._exit(0)


def _scheduler(pool: str) -> int:
    from mindspore.communication import init

    init()
    stop = os.path.join(pool, "stop")
    while not os.path.exists(stop):
        time.sleep(POLL_S)
    return 0


def _worker(pool: str, rank: str) -> int:
    import faulthandler

    from ipykernel.kernelapp import IPKernelApp

    # Where this rank's Python stacks go on SIGUSR1, for a hang: a signal handler in C, so it
    # runs also while MindSpore's C++ waits in a collective with the GIL held.
    stacks = open(os.path.join(pool, f"rank{rank}.stacks"), "x", encoding="utf-8")  # noqa: SIM115 - for the process's life
    faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=True)

    with open(os.path.join(pool, f"rank{rank}.pid"), "x", encoding="ascii") as handle:
        handle.write(str(os.getpid()))
    app = IPKernelApp.instance()
    app.initialize(["-f", os.path.join(pool, f"rank{rank}.json"), "--IPKernelApp.exec_lines=['%load_ext msdebug']"])
    app.start()
    return 0


def main(argv: list[str]) -> int:
    pool = argv[1]
    parent = os.environ.get("MSDEBUG_PARENT", "")
    if parent:
        _watch_parent(parent)
    if os.environ.get("MS_ROLE") == "MS_SCHED":
        return _scheduler(pool)
    return _worker(pool, os.environ.get("RANK_ID", "0"))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
