"""An msrun job that runs without msdebug, attached from outside: its ranks found, their Python
stacks read with py-spy, and the hang analysis of ``%%msrun`` applied to where they are.

A job is found from its log directory (the processes whose output msrun sends to
``worker_<rank>.log`` or ``scheduler.log`` there) or from a pid (msrun itself, or any process it started: a rank or the scheduler). msrun gives every process
of one job ``MS_SCHED_HOST`` and ``MS_SCHED_PORT`` (where its scheduler listens) in its
environment, and each rank its ``RANK_ID``: those, read from ``/proc``, say which processes
belong together. A rank with a log file but no process has exited.

Each live rank's main thread is read with ``py-spy dump --json --locals``, which needs ptrace and
``process_vm_readv`` on the rank (the rank does nothing for it): its frames go through
:func:`msdebug.ranks.stacks.place_of` (the entry script's line, what the rank waits in) and the
ranks through :func:`msdebug.ranks.hangs.judge` (no flight records here: a rank that waits in a
collective while another has exited is a deadlock). It is one look: a rank seen in a collective
may leave it a moment later, a rank elsewhere may still come.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..dumps.rendered import Rendered, rendered_by
from ..errors import MsDebugError, echo
from ..files import read_regular
from . import hangs, program
from .stacks import COMMUNICATION, QUEUE, Frame, Place, place_of

__all__ = ["Attached", "Job", "PtraceDeniedError", "PySpyMissingError", "RankSeen", "attach", "find_job"]

_ROLES = ("MS_WORKER", "MS_SCHED")
_ENVIRON_BYTES = 1 << 20
_SCRIPT_BYTES = 4 << 20
_LOG_TAIL_BYTES = 16 << 10
_LOG_LINES = 8
_CHATTER = ("[WARNING]", "[INFO]", "[DEBUG]")  # MindSpore's own log lines: the rank's words and errors are kept
_PY_SPY_S = 60.0
_WORKER_LOG = re.compile(r"^worker_(\d+)\.log$")
_MSRUN_DEFAULT_PORT = 8118  # msrun's --master_port default
_MSRUN_DEFAULT_ADDR = "127.0.0.1"
#: Locals of a MindSpore frame that name the primitive it runs (``_run_op(obj, op_name, args)``).
_OP_LOCALS = ("op_name", "prim_name")
_TYPE_REPR = re.compile(r"^<(\w+) at 0x[0-9a-f]+>$")


class PySpyMissingError(MsDebugError):
    """py-spy, which reads the ranks' stacks, is not installed."""


class PtraceDeniedError(MsDebugError):
    """The system does not let py-spy read a process (ptrace: EPERM)."""


@dataclass(frozen=True)
class _Process:
    pid: int
    ppid: int
    argv: tuple[str, ...]
    env: dict[str, str]
    outputs: tuple[str, ...]  # where its fd 1 and 2 point

    @property
    def job(self) -> tuple[str, str]:
        return self.env.get("MS_SCHED_HOST", ""), self.env.get("MS_SCHED_PORT", "")

    @property
    def role(self) -> str:
        return self.env.get("MS_ROLE", "")


@dataclass(frozen=True)
class Job:
    """One msrun job on this host: where its scheduler listens, its live ranks (rank -> pid),
    its scheduler and msrun pids where they run here, and its log directory where known."""

    host: str
    port: str
    ranks: dict[int, int]
    total: int
    log_dir: str = ""
    scheduler: int | None = None
    msrun: int | None = None
    exited: tuple[int, ...] = ()  # ranks with a log here and no process

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class RankSeen:
    """One rank as py-spy saw it: its place (None when it has exited), its entry script, its
    frames (innermost first), and the end of its log."""

    rank: int
    pid: int | None
    place: Place | None
    script: str = ""
    frames: tuple[Frame, ...] = ()
    log: str = ""

    @property
    def exited(self) -> bool:
        return self.pid is None

    @property
    def waits(self) -> bool:
        """Whether its stack waits for another rank: in a communication op, or for the ops it
        launched (PyNative runs them asynchronously: a collective among them)."""
        return self.place is not None and self.place.waiting in (COMMUNICATION, QUEUE)


@dataclass(repr=False)
class Attached(Rendered):
    """What ``msdebug hang`` and ``%msrun attach`` found: the job, each rank, and the verdict of
    the hang policy."""

    _views = rendered_by(lambda v: (v.ranks.html_attach, v.ranks.text_attach))

    job: Job
    ranks: list[RankSeen]
    verdict: hangs.Verdict = field(default_factory=lambda: hangs.Verdict(False))

    @property
    def waiting(self) -> list[RankSeen]:
        return [seen for seen in self.ranks if seen.waits]

    @property
    def elsewhere(self) -> list[RankSeen]:
        """The ranks not waiting for another: at a line of their own, or exited."""
        return [seen for seen in self.ranks if not seen.waits]


# --------------------------------------------------------------------------- /proc


def _read(path: str, limit: int) -> bytes | None:
    try:
        return read_regular(path, limit)
    except (OSError, MsDebugError):
        return None


def _process(pid: int) -> _Process | None:
    """What ``/proc`` says of ``pid`` (None when it is gone or not ours to read)."""
    environ = _read(f"/proc/{pid}/environ", _ENVIRON_BYTES)
    cmdline = _read(f"/proc/{pid}/cmdline", _ENVIRON_BYTES)
    stat = _read(f"/proc/{pid}/stat", 4096)
    if environ is None or cmdline is None or stat is None:
        return None
    env = {}
    for item in environ.split(b"\0"):
        name, equals, value = item.decode("utf-8", "replace").partition("=")
        if equals:
            env[name] = value
    fields = stat.decode("ascii", "replace").rpartition(")")[2].split()
    ppid = int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0
    outputs = []
    for fd in (1, 2):
        try:
            outputs.append(os.path.realpath(os.readlink(f"/proc/{pid}/fd/{fd}")))
        except OSError:
            continue
    argv = tuple(part.decode("utf-8", "replace") for part in cmdline.split(b"\0") if part)
    return _Process(pid, ppid, argv, env, tuple(outputs))


def _processes() -> list[_Process]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            process = _process(int(name))
            if process is not None:
                found.append(process)
    return found


def _msrun_args(process: _Process) -> dict[str, str] | None:
    """msrun's own flags when ``process`` is msrun (``python .../msrun --log_dir D ...``), else None."""
    argv = process.argv
    at = next((i for i, part in enumerate(argv[:3]) if os.path.basename(part) == "msrun"), None)
    if at is None:
        return None
    flags: dict[str, str] = {}
    rest = list(argv[at + 1 :])
    while rest and rest[0].startswith("--"):
        name, equals, value = rest.pop(0).partition("=")
        if not equals and rest and not rest[0].startswith("--"):
            value = rest.pop(0)
        flags[name] = value
    return flags


def _msrun_job(process: _Process, flags: dict[str, str]) -> tuple[tuple[str, str], str]:
    """The job (scheduler host, port) and log directory of an msrun process, from its flags."""
    try:
        cwd = os.readlink(f"/proc/{process.pid}/cwd")
    except OSError:
        cwd = "/"
    log_dir = os.path.realpath(os.path.join(cwd, flags.get("--log_dir", ".")))
    host = flags.get("--master_addr", _MSRUN_DEFAULT_ADDR)
    return (host, flags.get("--master_port", str(_MSRUN_DEFAULT_PORT))), log_dir


def _command(pid: int) -> str:
    """``pid``'s command line, short and on one line, for an error line."""
    data = _read(f"/proc/{pid}/cmdline", _ENVIRON_BYTES) or b""
    words = [part.decode("utf-8", "replace") for part in data.split(b"\0") if part]
    text = " ".join(shlex.quote(" ".join(word.split())) for word in words) or "?"
    return text if len(text) <= 80 else text[:79] + "…"


def _inside(path: str, folder: str) -> bool:
    return os.path.dirname(path) == folder


def find_job(target: str) -> Job:
    """The msrun job that ``target`` names: a log directory, or the pid of msrun or of any
    process it started.

    Raises
    ------
    MsDebugError
        One line: no such directory or process, no job there, a process that is no part of one.
    """
    target = str(target).strip()
    processes = _processes()
    members = [process for process in processes if process.role in _ROLES and process.job[1]]
    log_dir = ""
    msrun_pid = None
    if target.isdigit():
        pid = int(target)
        chosen = next((process for process in processes if process.pid == pid), None) or _process(pid)
        if chosen is None and os.path.exists(f"/proc/{pid}"):
            raise MsDebugError(f"process {pid} ({_command(pid)}) is not one this user may read (its environment).")
        if chosen is None:
            raise MsDebugError(f"no process {pid} on this host.")
        flags = _msrun_args(chosen)
        if chosen.role in _ROLES:
            key = chosen.job
        elif flags is not None:
            key, log_dir = _msrun_job(chosen, flags)
            msrun_pid = pid
        else:
            raise MsDebugError(
                f"process {pid} ({_command(pid)}) is no part of an msrun job: neither msrun nor a process it started "
                "(no MS_ROLE in its environment); give msrun's pid, a rank's, or the job's --log_dir."
            )
    else:
        folder = os.path.realpath(os.path.expanduser(target))
        if not os.path.isdir(folder):
            raise MsDebugError(f"no such directory: {echo(target)}; give the job's --log_dir or a pid.")
        log_dir = folder
        keys = {process.job for process in members if any(_inside(out, folder) for out in process.outputs)}
        if not keys:
            logs = sorted(name for name in _listdir(folder) if _WORKER_LOG.match(name))
            if logs:
                raise MsDebugError(
                    f"no process of an msrun job writes to {echo(target)}: the job that wrote "
                    f"{', '.join(logs[:4])}{' ...' if len(logs) > 4 else ''} has ended."
                )
            raise MsDebugError(
                f"no msrun job logs to {echo(target)}: it holds no worker_<rank>.log, and no process of a job "
                "writes there; give the job's --log_dir or a pid."
            )
        if len(keys) > 1:
            listed = ", ".join(f"{host}:{port}" for host, port in sorted(keys))
            raise MsDebugError(f"several msrun jobs log to {echo(target)} (schedulers at {listed}); give a rank's pid.")
        (key,) = keys
    job = [process for process in members if process.job == key]
    if msrun_pid is None:
        msrun_pid = next(
            (process.pid for process in processes if _msrun_args(process) is not None
             and _msrun_job(process, _msrun_args(process))[0] == key), None)  # fmt: skip
    return _job(key, job, log_dir, msrun_pid)


def _listdir(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _job(key: tuple[str, str], members: list[_Process], log_dir: str, msrun_pid: int | None) -> Job:
    pids = {process.pid for process in members}
    ranks: dict[int, int] = {}
    scheduler = None
    total = 0
    for process in sorted(members, key=lambda p: p.pid):
        if process.ppid in pids and process.env.get("RANK_ID") == _parent_rank(process, members):
            continue  # a child of a rank (a data loader's worker) inherits its environment
        total = max(total, _int(process.env.get("MS_WORKER_NUM")))
        if process.role == "MS_SCHED":
            scheduler = process.pid
            continue
        rank = _int(process.env.get("RANK_ID"), -1)
        if rank < 0:
            rank = next((int(m[1]) for out in process.outputs if (m := _WORKER_LOG.match(os.path.basename(out)))), -1)
        if rank >= 0:
            ranks.setdefault(rank, process.pid)
        if not log_dir:
            log_dir = next((os.path.dirname(out) for out in process.outputs if _WORKER_LOG.match(os.path.basename(out))),
                           "")  # fmt: skip
    if not ranks and scheduler is None and msrun_pid is None:
        raise MsDebugError(f"no process of the msrun job at {key[0]}:{key[1]} runs on this host.")
    exited = []
    if log_dir:
        for name in _listdir(log_dir):
            found = _WORKER_LOG.match(name)
            if found and int(found[1]) not in ranks and (not total or int(found[1]) < total):
                exited.append(int(found[1]))
    return Job(key[0], key[1], ranks, total or len(ranks) + len(exited), log_dir, scheduler, msrun_pid,
               tuple(sorted(exited)))  # fmt: skip


def _parent_rank(process: _Process, members: list[_Process]) -> str | None:
    parent = next((m for m in members if m.pid == process.ppid), None)
    return parent.env.get("RANK_ID") if parent is not None and parent.role == process.role else None


def _int(text: str | None, default: int = 0) -> int:
    return int(text) if text is not None and text.isdigit() else default


# --------------------------------------------------------------------------- py-spy


def py_spy_path() -> str:
    """The py-spy of this environment (beside its python), else the one on PATH."""
    found = program("py-spy")
    if found is None:
        raise PySpyMissingError(
            "py-spy reads the ranks' stacks and is not installed: pip install py-spy (or pip install 'msdebug[all]')."
        )
    return found


def _ptrace_advice(pid: int) -> str:
    """One line: what to change so that this user may read ``pid``."""
    scope = _read("/proc/sys/kernel/yama/ptrace_scope", 16)
    level = scope.decode("ascii", "replace").strip() if scope else ""
    head = f"py-spy may not read process {pid} (ptrace: operation not permitted)"
    if level and level != "0":
        return (f"{head}: kernel.yama.ptrace_scope is {level}; `sudo sysctl kernel.yama.ptrace_scope=0`, or run "
                "as root or with CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE).")  # fmt: skip
    return (f"{head}: give this process CAP_SYS_PTRACE (docker run --cap-add SYS_PTRACE, and a seccomp profile that "
            "allows ptrace and process_vm_readv), or set kernel.yama.ptrace_scope to 0 with sysctl.")  # fmt: skip


_DENIED = ("Permission denied", "Operation not permitted", "os error 1)", "EPERM")
_GONE = ("No such process", "os error 3)", "Failed to find python version", "process doesn't exist")


def read_stack(pid: int, py_spy: str | None = None) -> list[Frame] | None:
    """The main thread's frames of ``pid`` (innermost first), read by py-spy; None when the
    process has gone meanwhile.

    Raises
    ------
    PtraceDeniedError
        When the system does not let py-spy read it.
    """
    command = [py_spy or py_spy_path(), "dump", "--pid", str(pid), "--json", "--locals"]
    try:
        done = subprocess.run(command, capture_output=True, timeout=_PY_SPY_S, check=False)
    except subprocess.TimeoutExpired:
        raise MsDebugError(f"py-spy did not read process {pid} within {_PY_SPY_S:.0f} s.") from None
    said = done.stderr.decode("utf-8", "replace") + done.stdout.decode("utf-8", "replace")[:2000]
    if done.returncode != 0:
        if not os.path.exists(f"/proc/{pid}"):
            return None
        if any(word in said for word in _DENIED):
            raise PtraceDeniedError(_ptrace_advice(pid))
        if any(word in said for word in _GONE):
            return None
        last = said.strip().splitlines()[-1] if said.strip() else f"exit status {done.returncode}"
        raise MsDebugError(f"py-spy could not read process {pid}: {last[:300]}")
    try:
        threads = json.loads(done.stdout)
    except ValueError:
        raise MsDebugError(f"py-spy's answer for process {pid} is not JSON: {said[:200]}") from None
    main = next((t for t in threads if t.get("os_thread_id") == pid), None)
    main = main or next((t for t in threads if t.get("thread_name") == "MainThread"), threads[0] if threads else {})
    return [_frame(frame) for frame in main.get("frames") or []]


def _frame(frame: dict) -> Frame:
    """A py-spy frame: its function by its own name (py-spy gives ``Class.method``, faulthandler
    ``method``; the analysis matches the latter), and the primitive a MindSpore frame runs."""
    name = str(frame.get("name", ""))
    path = str(frame.get("filename", ""))
    op = ""
    if "/mindspore/" in path:
        values = {str(local.get("name")): str(local.get("repr") or "") for local in frame.get("locals") or []}
        for local in _OP_LOCALS:
            if values.get(local, "").startswith('"'):
                op = values[local].strip('"')
                break
        else:
            typed = _TYPE_REPR.match(values.get("self", "") or values.get("obj", ""))
            if typed and name.endswith("__call__"):
                op = typed[1]
    return Frame(path, int(frame.get("line") or 0), name.rpartition(".")[2] or name, op)


# --------------------------------------------------------------------------- the report


def _entry(frames: list[Frame]) -> str:
    """The script the rank runs: its outermost frame outside the libraries."""
    for frame in reversed(frames):
        path = frame.path
        if path and not path.startswith("<") and "/site-packages/" not in path and "/lib/python3" not in path:
            return path
    return ""


def _source(path: str) -> str:
    data = _read(path, _SCRIPT_BYTES) if path else None
    return data.decode("utf-8", "replace") if data is not None else ""


def _log_tail(log_dir: str, rank: int) -> str:
    if not log_dir:
        return ""
    path = os.path.join(log_dir, f"worker_{rank}.log")
    try:
        size = os.stat(path).st_size
    except OSError:
        return ""
    data = _read(path, _LOG_TAIL_BYTES + size) if size <= _LOG_TAIL_BYTES else None
    if data is None:
        data = _read_tail(path, size)
    text = data.decode("utf-8", "replace") if data else ""
    lines = [line for line in text.rstrip("\n").splitlines() if line.strip() and not line.startswith(_CHATTER)]
    return "\n".join(lines[-_LOG_LINES:])


def _read_tail(path: str, size: int) -> bytes:
    try:
        return read_regular(path, _LOG_TAIL_BYTES, offset=max(0, size - _LOG_TAIL_BYTES))
    except (OSError, MsDebugError):
        return b""


def attach(target: str) -> Attached:
    """Find the job ``target`` names (:func:`find_job`), read each live rank's stack with
    py-spy, and judge where the ranks are.

    Raises
    ------
    PySpyMissingError, PtraceDeniedError, MsDebugError
        One line each.
    """
    job = find_job(target)
    py_spy = py_spy_path()
    with ThreadPoolExecutor(max_workers=min(8, max(1, len(job.ranks)))) as pool:
        read = dict(zip(job.ranks, pool.map(lambda pid: read_stack(pid, py_spy), job.ranks.values()), strict=True))
    seen = []
    for rank in sorted(set(job.ranks) | set(job.exited)):
        frames = read.get(rank)
        if frames is None:
            seen.append(RankSeen(rank, None, None, log=_log_tail(job.log_dir, rank)))
            continue
        script = _entry(frames)
        place = place_of(frames, _source(script), 0, script or None)
        seen.append(RankSeen(rank, job.ranks[rank], place, script, tuple(frames)))
    states = {s.rank: hangs.RankNow(s.rank, not s.exited, s.place) for s in seen}
    return Attached(job, seen, hangs.judge(states, {}))
