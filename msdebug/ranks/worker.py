"""What msrun starts for ``%msrun``: the task script of every process of the job.

msrun runs the task script once as the scheduler (``MS_ROLE=MS_SCHED``) and once per worker
(``MS_ROLE=MS_WORKER``, ``RANK_ID``). Each of them is two processes here:

* a small supervisor, the process msrun started. It forks the real one, waits for it and
  writes how it ended to ``<pool>/<role>.exit`` (msrun returned at once with ``--join=False``,
  so nobody else could learn a crashed rank's exit status). It also ends the job when the
  notebook's kernel is gone (its pid and start time are in ``MSDEBUG_PARENT``): msrun's
  processes are not the kernel's children, so nothing else would end them after a kernel is
  killed. It holds the write end of ``<pool>/<role>.ended``, a FIFO the pool reads: the pool
  learns of its end (so of the rank's) without a pidfd. No pidfd is needed here either, since
  ``pidfd_open`` needs Linux 5.3 and Ascend hosts run 4.19 or 3.10 (and a container's seccomp
  profile may refuse it): a thread waits for the real process with ``waitpid``, and the
  kernel's end is seen through a pidfd where there is one, else by reading its start time
  every ``_PARENT_POLL_S`` seconds (a reused pid has another);
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
import threading

__all__ = ["main", "parent_alive", "role_name"]

_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PARENT_POLL_S = 0.5  # how often the kernel's start time is read where no pidfd tells of its end


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
    """A pidfd of the notebook kernel ``"<pid>:<start time>"`` (alive when asked), or None where
    the system has none (Linux before 5.3, a seccomp profile): then its start time tells."""
    try:
        fd = os.pidfd_open(int(parent.partition(":")[0]))
    except OSError:
        return None
    if not parent_alive(parent):  # the pid was reused before the open: the pidfd is another's
        os.close(fd)
        return None
    return fd


def _waiter(child: int) -> tuple[int, list[int]]:
    """A pipe that becomes readable once ``child`` has ended, and the list its ``waitpid``
    status goes into first: a thread waits for it (a pidfd would need Linux 5.3)."""
    read, write = os.pipe()
    status: list[int] = []

    def wait() -> None:
        status.append(os.waitpid(child, 0)[1])
        os.write(write, b"x")

    threading.Thread(target=wait, name="msdebug-waitpid", daemon=True).start()
    return read, status


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
    ended, status = _waiter(child)
    poller = select.poll()
    poller.register(ended, select.POLLIN)
    orphaned = bool(parent) and not parent_alive(parent)
    parent_fd = _parent_fd(parent) if parent and not orphaned else None
    if parent_fd is not None:
        poller.register(parent_fd, select.POLLIN)
    watched = bool(parent) and parent_fd is None  # no pidfd of the kernel: read its start time
    while not orphaned:
        ready = {fd for fd, _ in poller.poll(_PARENT_POLL_S * 1000 if watched else None)}
        if ended in ready:
            break
        orphaned = parent_fd in ready or (watched and not parent_alive(parent))
    if orphaned:
        # The kernel is gone: end the real process and whatever it started (this process
        # group: msrun gave each process a session of its own), then this one.
        _write_exit(pool, stem, {"text": "ended: the notebook's kernel is gone"})
        os.killpg(0, signal.SIGKILL)
    described = _describe(status[0])
    _write_exit(pool, stem, described)
    return described.get("exit", 128 + described.get("signal", 0))


def _write_exit(pool: str, stem: str, what: dict) -> None:
    _write(pool, f"{stem}.exit", json.dumps(what))


def _write(pool: str, name: str, text: str) -> None:
    path = os.path.join(pool, name)
    temporary = f"{path}.{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
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
    try:  # held until this process ends (the fork above does not have it), opened before it is named
        os.open(os.path.join(pool, f"{stem}.ended"), os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        pass  # no FIFO (the scheduler has none), or no pool reading it any more
    with open(os.path.join(pool, f"{stem}.supervisor"), "w", encoding="ascii") as handle:
        handle.write(str(os.getpid()))
    if scheduler:  # the pool waits until this process listens on the port
        _write(pool, "scheduler.pid", str(child))
    return _supervise(pool, stem, child, os.environ.get("MSDEBUG_PARENT", ""))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
