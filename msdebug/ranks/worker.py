"""What msrun starts for ``%msrun``: the task script of every process of the job.

msrun runs the task script once as the scheduler (``MS_ROLE=MS_SCHED``) and once per worker
(``MS_ROLE=MS_WORKER``, ``RANK_ID``). Each of them is two processes here:

* a small supervisor, the process msrun started. It forks the real one, waits for it and
  writes how it ended to ``<pool>/<role>.exit`` (msrun returned at once with ``--join=False``,
  so nobody else could learn a crashed rank's exit status). It also ends the job when the
  notebook's kernel is gone (its pid and start time are in ``MSDEBUG_PARENT``): msrun's
  processes are not the kernel's children, so nothing else would end them after a kernel is
  killed. It waits on both processes at once (pidfds), with no timer;
* the real one. A worker becomes an IPython kernel with msdebug loaded, whose connection file
  it writes as ``<pool>/rank<R>.json`` (its pid in ``rank<R>.pid``): the notebook's kernel
  connects to it as JupyterLab connects to a kernel. The person's cells call
  ``mindspore.communication.init()`` themselves, so context settings can come first. The
  scheduler serves the cluster from ``init()`` until the pool kills it.

Nothing here imports MindSpore before the fork: the supervisor stays small.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys

__all__ = ["main", "parent_alive", "role_name"]

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _start_time(pid: int) -> str:
    """The start time of ``pid`` in clock ticks since boot ('' when it is gone or a zombie): a
    pid that was reused by another process has another start time."""
    from msdebug.errors import MsDebugError  # absolute: msrun runs this file as a script
    from msdebug.files import read_regular

    try:
        fields = read_regular(f"/proc/{pid}/stat", 4096).decode("ascii", "replace").rsplit(")", 1)[1].split()
    except (OSError, MsDebugError, IndexError):
        return ""
    if len(fields) < 20 or fields[0] in ("Z", "X"):  # a killed kernel stays a zombie until its manager reaps it
        return ""
    return fields[19]


def parent_alive(parent: str) -> bool:
    """Whether the notebook kernel ``"<pid>:<start time>"`` still runs."""
    pid, _, started = parent.partition(":")
    return pid.isdigit() and _start_time(int(pid)) == started


def role_name(rank: str | int | None) -> str:
    """The file stem of one process of the job: ``rank<R>``, or ``scheduler`` for None."""
    return "scheduler" if rank is None else f"rank{rank}"


def _parent_fd(parent: str) -> int | None:
    """A pidfd of the notebook kernel, or None when it is already gone (or never was named)."""
    pid, _, _ = parent.partition(":")
    if not parent_alive(parent):
        return None
    try:
        fd = os.pidfd_open(int(pid))
    except OSError:
        return None
    if not parent_alive(parent):  # the pid was reused between the check and the open
        os.close(fd)
        return None
    return fd


def _describe(status: int) -> dict:
    """``os.waitpid``'s status as the pool reports it."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return {"signal": number, "text": f"killed by {name}"}
    code = os.waitstatus_to_exitcode(status)
    return {"exit": code, "text": f"exit status {code}"}


def _supervise(pool: str, stem: str, child: int, parent: str) -> int:
    """Wait for ``child`` or for the notebook kernel to go; write ``<stem>.exit``; return the
    status msrun sees."""
    for number in _FORWARDED:  # a signal to this process is meant for the real one
        signal.signal(number, lambda signum, frame: os.kill(child, signum))
    child_fd = os.pidfd_open(child)
    parent_fd = _parent_fd(parent) if parent else None
    poller = select.poll()
    poller.register(child_fd, select.POLLIN)
    if parent_fd is not None:
        poller.register(parent_fd, select.POLLIN)
    orphaned = bool(parent) and parent_fd is None
    while not orphaned:
        ready = {fd for fd, _ in poller.poll()}
        if child_fd in ready:
            break
        orphaned = parent_fd in ready
    if orphaned:
        # The kernel is gone: end the real process and whatever it started (this process
        # group: msrun gave each process a session of its own), then this one.
        _write_exit(pool, stem, {"text": "ended: the notebook's kernel is gone"})
        os.killpg(0, signal.SIGKILL)
    _, status = os.waitpid(child, 0)
    described = _describe(status)
    _write_exit(pool, stem, described)
    return described.get("exit", 128 + described.get("signal", 0))


def _write_exit(pool: str, stem: str, what: dict) -> None:
    path = os.path.join(pool, f"{stem}.exit")
    temporary = f"{path}.{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(what, handle)
    os.replace(temporary, path)  # the pool reads it whole or not at all


def main(argv: list[str]) -> int:
    pool = argv[1]
    scheduler = os.environ.get("MS_ROLE") == "MS_SCHED"
    rank = None if scheduler else os.environ.get("RANK_ID", "0")
    stem = role_name(rank)
    child = os.fork()
    if child == 0:
        if scheduler:
            from msdebug.backend.ranks import serve_cluster

            serve_cluster()
        from msdebug.ipython.ranks import serve_rank

        code = serve_rank(pool, rank)
        # The job is being taken down: MindSpore's exit handlers would wait for the cluster
        # (the scheduler for its workers, a worker for the scheduler), for up to a minute.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    with open(os.path.join(pool, f"{stem}.supervisor"), "w", encoding="ascii") as handle:
        handle.write(str(os.getpid()))
    return _supervise(pool, stem, child, os.environ.get("MSDEBUG_PARENT", ""))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
