"""N persistent MindSpore ranks started through MindSpore's own ``msrun``, each an IPython kernel.

:class:`Pool` runs ``msrun --join=False`` with :mod:`msdebug.ranks.worker` as the task script,
waits for each worker's connection file (an event: the file appears complete), and holds one
``jupyter_client`` client per rank. :meth:`Pool.execute` sends a cell to the ranks, hands each
output to a callback as it arrives, rank by rank, in order, and returns a :class:`CellRun`: how
each rank ended, and which failed first. No IPython here: the magic
(:mod:`msdebug.ipython.magics.ranks`) drives it.

On several hosts each host's notebook starts its own ranks with the same ``--master-addr`` and
``--master-port``; msrun starts the job's scheduler on the host that has that address. Where it
does, :meth:`Pool.start` waits until the scheduler listens, and starts again on a new port when
the one msdebug chose was taken meanwhile (it holds the port until then, see :func:`_free_port`).

It waits on events only: one poll over every rank's iopub socket and, per rank, a pidfd or,
where the system has none (``pidfd_open`` needs Linux 5.3; Ascend hosts run 4.19 or 3.10), the
FIFO ``rank<R>.ended`` whose writer is the rank's supervisor: either wakes it at once when the
rank dies. The hang watch's deadline is the only timeout.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import re
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import zmq

from ..errors import MsDebugError, did_you_mean, echo
from ..files import ascii_number, read_regular
from ..interrupts import interruptible, protected
from . import hangs, program
from . import stacks as stack_reading
from .flight import CELL_MARK, Flight, Record, read_flight
from .hangs import Difference
from .stacks import Place
from .worker import _start_time, role_name

__all__ = ["CellRun", "Pool", "RankResult", "RanksBusyError"]

#: ``output(rank, kind, content)``: kind "stdout" or "stderr" with text, "display" with a MIME
#: bundle (a result or a display of that rank), or "error" with the traceback of its error.
OutputFn = Callable[[int, str, object], None]
#: ``note(run, seconds)``: the cell has run ``seconds``; its busy ranks are placed, none is hung.
NoteFn = Callable[["CellRun", float], None]

_LOG_LINES = 12  # of a dead rank's worker_<rank>.log
_LOG_TAIL_BYTES = 64 << 10
_REPLY_S = 10.0  # for a rank's execute reply once its cell is idle (it is sent just before)
#: The range of seconds between a rank's heartbeats (MindSpore's default: 3 to 5), unless set.
_HEARTBEAT = ("MS_RETRY_INTERVAL_LOWER", "MS_RETRY_INTERVAL_UPPER")
_ASK_AGAIN_S = 0.5  # a rank's first answers can be lost while its iopub subscription takes hold
_PORT_TRIES = 3  # launches, each on a new port, when msrun's scheduler finds the one msdebug chose taken
#: msrun's own flags that %msrun's options set (--msrun-args may not), and the option that does.
_SET_BY_MSDEBUG = {
    "--worker_num": "--worker-num", "--local_worker_num": "-n", "--master_addr": "--master-addr",
    "--master_port": "--master-port", "--node_rank": "--node-rank", "--log_dir": "--log-dir",
    "--cluster_time_out": "--cluster-time-out", "--join": "", "--help": "", "-h": "",
}  # fmt: skip
#: The variable that chooses which devices a process sees, for each MindSpore backend that has some.
_VISIBLE_DEVICES = {"Ascend": "ASCEND_RT_VISIBLE_DEVICES", "GPU": "CUDA_VISIBLE_DEVICES"}


class RanksBusyError(MsDebugError):
    """A cell was sent to ranks that still run an earlier one."""


@dataclass
class RankResult:
    """How one rank ended a cell.

    ``state``: "finished", "raised", "running" (still busy, computing), "collective" (still
    busy, waiting in communication or for the ops it launched), "dead" or "interrupted".
    """

    rank: int
    state: str = "running"
    ename: str = ""
    evalue: str = ""
    traceback: list[str] = field(default_factory=list)
    failed_at: str = ""  # the rank's own clock (ISO 8601) when it raised: the order of failures
    line: int = 0  # the cell line a busy rank is at, or where the error was raised
    code: str = ""  # that line's code
    collective: str = ""  # the communication op a busy rank's stack is in
    stacks: str = ""  # its Python stacks (faulthandler), for a busy rank
    place: Place | None = None  # where a busy rank is (its stacks, read)
    pending: Record | None = None  # a busy rank's record where the ranks differ, or the last it launched
    frame: str = ""  # a busy rank's innermost frame, when it is outside the cell
    exit: str = ""  # how a dead rank ended ("killed by SIGSEGV", "exit status 3")
    log: str = ""  # the last lines of a dead rank's worker log


@dataclass
class CellRun:
    """One ``%%msrun`` cell on the ranks: each rank's result, in rank order."""

    results: list[RankResult]
    hang_after: float
    interrupted: bool = False
    why: str = ""  # why the busy ranks are a deadlock
    difference: Difference | None = None  # the first place where the ranks' communication differs

    @property
    def failures(self) -> list[RankResult]:
        """The ranks that raised, the first to raise first (then by rank)."""
        raised = [r for r in self.results if r.state == "raised"]
        return sorted(raised, key=lambda r: (r.failed_at or "~", r.rank))

    @property
    def busy(self) -> list[RankResult]:
        return [r for r in self.results if r.state in ("running", "collective")]

    @property
    def dead(self) -> list[RankResult]:
        return [r for r in self.results if r.state == "dead"]

    @property
    def ok(self) -> bool:
        return all(r.state == "finished" for r in self.results)


@dataclass
class _Cell:
    """One cell being waited for."""

    requests: dict[int, str]
    results: dict[int, RankResult]
    show: OutputFn
    run: CellRun
    sent: str
    note: NoteFn | None
    schedule: hangs.Schedule


def _pending(difference: Difference | None, rank: int) -> Record | None:
    """A busy rank's record where the ranks differ (None when it never got there)."""
    return difference.records.get(rank) if difference is not None else None


class _PortTaken(MsDebugError):
    """msrun's scheduler could not listen on its port: another process has it."""


def _free_port() -> socket.socket:
    """A socket that holds a port no one had, on every address, without listening: the pool keeps
    it until it stops. Both it and MindSpore's scheduler set SO_REUSEADDR, so the scheduler can
    bind the port, while anyone else who asks for a port, or binds this one, cannot have it in
    the seconds the scheduler takes to start (as they could a port only probed, then let go)."""
    reserved = socket.socket()
    reserved.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    reserved.bind(("", 0))
    return reserved


@functools.cache
def msrun_flags() -> tuple[str, ...]:
    """The flags of the installed msrun, as its ``--help`` lists them (it imports MindSpore: a few
    seconds, once per kernel)."""
    try:
        shown = subprocess.run([msrun_path(), "--help"], capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise MsDebugError(f"`msrun --help` failed: {error}") from None
    flags = sorted(set(re.findall(r"(?m)^  (--[A-Za-z][\w-]*)", shown.stdout)))  # argparse's option lines
    if shown.returncode != 0 or not flags:
        raise MsDebugError(f"`msrun --help` listed no flags (exit status {shown.returncode}): {shown.stderr[-300:]}")
    return tuple(flags)


def _msrun_args(given: str | Sequence[str]) -> tuple[str, ...]:
    """``--msrun-args``: msrun's own flags, each known to the installed msrun and not one that
    msdebug sets (each with its value, after ``=`` or as the next word)."""
    if not given:
        return ()
    try:
        words = shlex.split(given) if isinstance(given, str) else list(given)
    except ValueError as error:
        raise MsDebugError(f"--msrun-args: {error} in {echo(given)}.") from None
    flags = [flag for flag in msrun_flags() if flag not in _SET_BY_MSDEBUG]
    value_next = False
    for word in words:
        if not word.startswith("-") and value_next:
            value_next = False
            continue
        name, equals, _ = word.partition("=")
        if not name.startswith("-"):
            raise MsDebugError(f"--msrun-args: {echo(word)} is neither one of msrun's flags nor a flag's value.")
        if name in _SET_BY_MSDEBUG:
            ours = _SET_BY_MSDEBUG[name]
            raise MsDebugError(
                f"--msrun-args: %msrun sets msrun's {name} itself; use %msrun start {ours}."
                if ours
                else f"--msrun-args: {name} is not for the job %msrun starts."
            )
        if name not in flags:
            raise MsDebugError(
                f"--msrun-args: the installed msrun has no flag {echo(name)}; it has {', '.join(flags)}."
                + did_you_mean(name, flags)
            )
        value_next = not equals
    return tuple(words)


def _devices(given: str | Sequence[int] | None, workers: int) -> tuple[int, ...] | None:
    """``--devices 4,5``: one device number per rank on this host, each once."""
    if given is None:
        return None
    parts = given.split(",") if isinstance(given, str) else [str(part) for part in given]
    numbers = [ascii_number(part.strip(), 4095) for part in parts]
    if None in numbers or len(set(numbers)) != len(numbers):
        raise MsDebugError(f"--devices is a list of distinct device numbers, such as 4,5; got {echo(given)}.")
    if len(numbers) != workers:
        raise MsDebugError(f"--devices names one device per rank on this host: {workers}, got {echo(given)}.")
    return tuple(numbers)


def _listens(pid: int, port: int) -> bool:
    """Whether the process ``pid`` holds a TCP socket that listens on ``port``."""
    sockets = set()
    for table in ("tcp", "tcp6"):
        try:
            text = read_regular(f"/proc/{pid}/net/{table}", 64 << 20).decode("ascii", "replace")
        except (OSError, MsDebugError):
            continue
        for line in text.splitlines()[1:]:
            fields = line.split()  # sl, local address:port (hex), remote, state (0A: LISTEN), ..., inode
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rpartition(":")[2], 16) == port:
                sockets.add(f"socket:[{fields[9]}]")
    if not sockets:
        return False
    try:
        held = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in held:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in sockets:
                return True
        except OSError:
            continue
    return False


def msrun_path() -> str:
    """The msrun of this environment (beside its python), else the one on PATH."""
    found = program("msrun")
    if found is None:
        raise MsDebugError(
            "msrun is not installed in this environment; it comes with MindSpore (pip install mindspore)."
        )
    return found


class Pool:
    """``workers`` ranks on this host; ``master_port``, ``log_dir`` and ``msrun_args`` go to msrun."""

    def __init__(
        self,
        workers: int,
        master_port: int | None = None,
        log_dir: str | os.PathLike | None = None,
        *,
        total: int | None = None,
        node_rank: int | None = None,
        master_addr: str | None = None,
        cluster_time_out: int | None = None,
        devices: str | Sequence[int] | None = None,
        msrun_args: str | Sequence[str] = "",
    ) -> None:
        for name, value in (("the number of ranks", workers), ("the number of ranks on all hosts", total or workers)):
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 4096:
                raise MsDebugError(f"{name} is a whole number from 1 to 4096, got {value!r}.")
        total = total or workers
        if total < workers:
            raise MsDebugError(f"the ranks on all hosts ({total}) are fewer than the ranks on this one ({workers}).")
        if total > workers and node_rank is None:
            raise MsDebugError(
                f"{total} ranks on several hosts need this host's --node-rank (0 to {total // workers - 1})."
            )
        if total > workers and (not master_addr or master_port is None):
            raise MsDebugError(
                f"{total} ranks on several hosts need --master-addr and --master-port: where rank 0's scheduler "
                "listens, the same on every host."
            )
        self.workers = workers
        self.total = total
        self.node_rank = node_rank if total > workers else None
        self.first = (self.node_rank or 0) * workers  # msrun numbers a host's ranks from node_rank * local
        self.master_addr = master_addr
        self.cluster_time_out = cluster_time_out
        self.devices = _devices(devices, workers)
        self.msrun_args = _msrun_args(msrun_args)
        self._reserved: socket.socket | None = None  # holds a port msdebug chose (see _free_port)
        self._port_given = master_port is not None
        self.master_port = master_port if master_port is not None else self._reserve()
        self.dir = Path(tempfile.mkdtemp(prefix="msdebug-ranks-"))
        self._log_dir = log_dir
        self.log_dir = Path(log_dir) if log_dir is not None else self.dir / "logs"
        self.scheduler = ""  # where the job's scheduler listens, once started
        self.notes: list[str] = []  # what the person should know about the start, one line each
        self._visible: str | None = None  # the device-visibility variable, once asked
        self.process: subprocess.Popen | None = None
        self.clients: dict[int, object] = {}
        self.pids: dict[int, int] = {}
        self.busy: dict[int, str] = {}  # rank -> the msg_id of a cell it still runs
        self.on_busy = None  # called with the busy ranks whenever they change (the status bar)
        self._pidfds: dict[int, int] = {}  # rank -> a pidfd of its process, where pidfd_open works
        self._fifos: dict[int, int] = {}  # rank -> the read end of its supervisor's FIFO (see worker)
        self._offset = 0

    @property
    def ranks(self) -> list[int]:
        """This host's ranks."""
        return list(range(self.first, self.first + self.workers))

    def _reserve(self) -> int:
        self._reserved = _free_port()
        return self._reserved.getsockname()[1]

    def visible_devices(self) -> str:
        """The variable that gives the ranks their ``devices`` on this MindSpore's backend ('' on
        CPU, which has none to choose, or without ``devices``)."""
        if self.devices is None:
            return ""
        if self._visible is None:
            from ..backend.ranks import device_target

            target = device_target()
            self._visible = _VISIBLE_DEVICES.get(target, "")
            if not self._visible:
                listed = ",".join(map(str, self.devices))
                self.notes.append(f"  --devices {listed} has no effect: this MindSpore runs on {target}")
        return self._visible

    def device_of(self) -> dict[int, int]:
        """The device of each rank on this host, where ``devices`` chose them (msrun gives local
        rank i the ``DEVICE_ID`` i: the i-th of the devices the rank sees)."""
        return dict(zip(self.ranks, self.devices, strict=True)) if self.visible_devices() else {}

    def _idle(self, rank: int) -> None:
        """``rank`` ended the cell it ran (or died): no longer busy."""
        if self.busy.pop(rank, None) is not None:
            self._busy_changed()

    def _busy_changed(self) -> None:
        if self.on_busy is not None:
            self.on_busy(sorted(self.busy))

    def msrun_command(self) -> list[str]:
        """The msrun command line that starts the job."""
        from . import worker

        command = [
            msrun_path(),
            f"--worker_num={self.total}",
            f"--local_worker_num={self.workers}",
            f"--master_port={self.master_port}",
            f"--log_dir={self.log_dir}",
            "--join=False",
        ]
        if self.node_rank is not None:
            command.append(f"--node_rank={self.node_rank}")
        if self.master_addr:
            command.append(f"--master_addr={self.master_addr}")
        if self.cluster_time_out is not None:
            command.append(f"--cluster_time_out={self.cluster_time_out}")
        return [*command, *self.msrun_args, worker.__file__, str(self.dir)]

    # -- life cycle
    def environment(self) -> dict[str, str]:
        """The environment msrun and the ranks start with: this one, adjusted."""
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")  # msrun starts `python`
        env["MSDEBUG_PARENT"] = f"{os.getpid()}:{_start_time(os.getpid())}"
        if self.visible_devices():
            env[self.visible_devices()] = ",".join(map(str, self.devices or ()))
        if not any(name in env for name in _HEARTBEAT):
            # init() returns at a rank's first heartbeat after the cluster is complete: by
            # MindSpore's default every 3 to 5 s, for the few ranks of a notebook every second.
            env.update(dict.fromkeys(_HEARTBEAT, "1"))
        for name in [name for name in env if name.startswith("JPY_")]:
            # This kernel's own: a worker kernel that inherits JPY_PARENT_PID ends as soon as msrun
            # (its parent, which returns at once with --join=False) is gone.
            del env[name]
        return env

    def start(self, timeout: float = 180.0) -> None:
        """Start msrun and connect to every rank within ``timeout`` seconds; raises with msrun's
        own words when it fails. A port msdebug chose that the scheduler finds taken is replaced by
        a new one (up to ``_PORT_TRIES`` launches); a port the person gave is an error."""
        deadline = time.monotonic() + timeout
        for launch in range(1, _PORT_TRIES + 1):
            try:
                self._launch(deadline)
                return
            except _PortTaken:
                taken = self.master_port
                if self._port_given:
                    raise MsDebugError(
                        f"--master-port {taken} is taken on this host: msrun's scheduler could not listen on it; "
                        "choose another, or leave it out for a free one."
                    ) from None
                if launch == _PORT_TRIES:
                    raise MsDebugError(f"msrun's scheduler found {_PORT_TRIES} free ports taken in turn.") from None
                self._renew()
                self.notes.append(f"  port {taken} was taken before the scheduler listened; now {self.master_port}")

    def _renew(self) -> None:
        """After a stopped launch: a new directory and port for the next one."""
        self.dir = Path(tempfile.mkdtemp(prefix="msdebug-ranks-"))
        self.log_dir = Path(self._log_dir) if self._log_dir is not None else self.dir / "logs"
        self.pids.clear()
        self.master_port = self._reserve()

    def _launch(self, deadline: float) -> None:
        env = self.environment()
        for rank in self.ranks:  # open before msrun starts: a supervisor opens its end at once
            fifo = self.dir / f"{role_name(rank)}.ended"
            os.mkfifo(fifo, 0o600)
            self._fifos[rank] = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        log = open(self.dir / "msrun.log", "xb")  # noqa: SIM115 - msrun writes into it while it runs
        with log:
            self.process = subprocess.Popen(
                self.msrun_command(), env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        try:
            for rank in self.ranks:
                self.clients[rank] = self._connect(rank, deadline)
            self._ready(deadline)
            self._scheduler_listens(deadline)
        except BaseException:
            self.stop()
            raise

    def _scheduler_listens(self, deadline: float) -> None:
        """Where msrun started the job's scheduler on this host (``--master-addr`` is one of its
        addresses), wait until it listens on the port; raise when it ended instead."""
        where = f"{self.master_addr or '127.0.0.1'}:{self.master_port}"
        try:  # msrun returns once it has started every process (--join=False)
            self.process.wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise MsDebugError(f"msrun did not return in time: {self._msrun_log()}") from None
        if "Start scheduler process" not in _tail(self.dir / "msrun.log"):
            self.scheduler = f"at {where}, on another host"
            return
        while True:
            pid = ascii_number(_text_of(self.dir / "scheduler.pid"))
            if pid is not None and _listens(pid, self.master_port):
                self.scheduler = f"here, at {where}"
                return
            ended = self.exit_of("scheduler")
            said = _tail(self.log_dir / "scheduler.log")
            if ended and "Address already in use" in said:
                raise _PortTaken(where)
            if ended or time.monotonic() > deadline:
                last = "\n".join(said.rstrip("\n").splitlines()[-_LOG_LINES:])
                what = f"ended while starting ({ended})" if ended else f"did not listen on {where} in time"
                raise MsDebugError(f"msrun's scheduler {what}; its log ends:\n{last}")
            time.sleep(0.05)

    def _connect(self, rank: int, deadline: float):
        from jupyter_client import BlockingKernelClient

        connection = self.dir / f"rank{rank}.json"
        while True:  # the file appears once the rank's kernel listens
            info = self._read_connection(connection)
            if info is not None:
                break
            if self.process is not None and self.process.poll() not in (None, 0):
                refused = re.findall(r"(?m)^\S+: error: (.*)$", _tail(self.dir / "msrun.log"))  # argparse's line
                if refused:
                    raise MsDebugError(f"msrun refused its arguments: {refused[-1]}")
                raise MsDebugError(f"msrun failed (exit status {self.process.returncode}): {self._msrun_log()}")
            ended = self.exit_of(role_name(rank))
            if ended:
                raise MsDebugError(f"rank {rank} ended while starting ({ended}); its log ends:\n{self.log_tail(rank)}")
            if time.monotonic() > deadline:
                raise MsDebugError(f"rank {rank} did not start in time; its log ends:\n{self.log_tail(rank)}")
            time.sleep(0.05)
        client = BlockingKernelClient()
        client.load_connection_info(info)
        client.start_channels()
        self.pids[rank] = int((self.dir / f"rank{rank}.pid").read_text(encoding="ascii"))
        try:
            self._pidfds[rank] = os.pidfd_open(self.pids[rank])
        except OSError:  # no pidfds here (or it has died already): its supervisor's FIFO tells
            pass
        return client

    def _ready(self, deadline: float) -> None:
        """Wait until every rank has answered a ``kernel_info`` request over iopub (the idle
        status it publishes for it reaches this client, so its output will too): one poll over
        all ranks at once, instead of jupyter_client's ``wait_for_ready`` rank after rank, which
        also waits 0.2 s of silence on iopub each time. A status published before this client's
        subscription took hold is lost (ZeroMQ's slow joiner), so a rank that has not answered
        within ``_ASK_AGAIN_S`` is asked again."""
        asked = {rank: {client.kernel_info()} for rank, client in self.clients.items()}
        poller, sockets, pidfds = self._poller(asked)
        last = time.monotonic()
        while asked:
            now = time.monotonic()
            if now > deadline:
                rank = min(asked)
                raise MsDebugError(f"rank {rank} did not answer in time; its log ends:\n{self.log_tail(rank)}")
            for key in _poll(poller, max(0.0, min(last + _ASK_AGAIN_S, deadline) - now) * 1000):
                if key in pidfds:
                    rank = pidfds[key]
                    ended = self.exit_of(role_name(rank)) or "ended"
                    raise MsDebugError(
                        f"rank {rank} ended while starting ({ended}); its log ends:\n{self.log_tail(rank)}"
                    )
                rank = sockets[key]
                while rank in asked:
                    try:
                        msg = self.clients[rank].get_iopub_msg(timeout=0)
                    except queue.Empty:
                        break
                    idle = msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle"
                    if idle and msg["parent_header"].get("msg_id") in asked[rank]:
                        del asked[rank]
                        poller.unregister(key)
            if asked and time.monotonic() - last >= _ASK_AGAIN_S:
                for rank, ids in asked.items():
                    ids.add(self.clients[rank].kernel_info())
                last = time.monotonic()

    @staticmethod
    def _read_connection(path: Path) -> dict | None:
        try:
            return json.loads(path.read_text(encoding="utf-8"))  # ipykernel writes it whole, then uses it
        except (OSError, ValueError):
            return None

    def _msrun_log(self) -> str:
        return _tail(self.dir / "msrun.log")[-600:]

    def log_tail(self, rank: int, lines: int = _LOG_LINES) -> str:
        """The last ``lines`` lines of ``worker_<rank>.log`` (msrun's log of that rank), or, after
        a crash, faulthandler's report of it (up to twice as many lines)."""
        text = _tail(self.log_dir / f"worker_{rank}.log")
        logged = text.rstrip("\n").splitlines()
        crash = max((i for i, line in enumerate(logged) if line.startswith("Fatal Python error:")), default=None)
        if crash is not None:  # faulthandler's report: the error, then the innermost frames first
            kept = [line for line in logged[crash:] if not line.startswith("Extension modules:")]
            return "\n".join(kept[: 2 * lines])
        return "\n".join(logged[-lines:])

    def exit_of(self, stem: str) -> str:
        """How the process ``stem`` (``rank<R>``, ``scheduler``) ended, or '' while it runs."""
        try:
            return json.loads((self.dir / f"{stem}.exit").read_text(encoding="utf-8"))["text"]
        except (OSError, ValueError, KeyError, TypeError):
            return ""

    def alive(self, rank: int) -> bool:
        if rank not in self.pids or self.exit_of(role_name(rank)):
            return False
        fd = self._pidfds.get(rank, self._fifos.get(rank))
        if fd is None:
            return False
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return not poller.poll(0)  # readable (or hung up): it has ended

    # -- running cells
    def execute(
        self,
        code: str,
        ranks: Sequence[int] | None = None,
        output: OutputFn | None = None,
        hang_after: float = 30.0,
        count: int | None = None,
        note: NoteFn | None = None,
    ) -> CellRun:
        """Run ``code`` on ``ranks`` (all by default) at once; ``output(rank, kind, content)`` gets
        each stream and display as it comes.

        ``code`` is the cell below its ``%%msrun`` line: line numbers in tracebacks and stacks are
        the notebook cell's, and with ``count`` (the notebook's execution count) the cell is
        named as the notebook names it. Returns when every rank is idle again or dead, or on a
        deadlock (:func:`msdebug.ranks.hangs.judge`): the busy ranks are then reported with where
        they are and where the ranks' collectives differ (they stay busy for later cells). A
        rank that is merely slower is not a deadlock: ``note(run, seconds)`` is told where the
        busy ranks are, ``hang_after`` seconds after the cell started (or after a rank was done),
        then less and less often, and the wait goes on. A first Ctrl-C interrupts every rank and
        waits for them; a second one stops waiting.

        Raises
        ------
        RanksBusyError
            When a chosen rank still runs an earlier cell.
        """
        chosen = list(self.clients) if ranks is None else list(ranks)
        show = output or (lambda rank, kind, content: None)
        self.settle(show)
        still = [rank for rank in chosen if rank in self.busy]
        if still:
            listed = ", ".join(map(str, still))
            raise RanksBusyError(
                f"rank {listed} still runs an earlier cell; `%msrun interrupt --ranks {listed}` "
                "stops it (or `%msrun restart` for a rank stuck in a collective)."
            )
        # Line 1 of the notebook cell is its %%msrun line: a comment in its place keeps the line
        # numbers of tracebacks and stacks the notebook's (IPython drops leading empty lines). A
        # cell magic inside (%%msprint) must stay first: then the ranks count from line 2.
        nested = code.lstrip().startswith("%%")
        sent, offset = (code, 1) if nested else (CELL_MARK + code, 0)
        requests = {}
        for rank in chosen:
            if not self.alive(rank):
                continue
            if count is not None:  # silent: it does not count itself
                self.clients[rank].execute(f"get_ipython().execution_count = {int(count)}", silent=True)
            requests[rank] = self.clients[rank].execute(sent)
        self.busy.update(requests)
        self._busy_changed()
        results = {rank: RankResult(rank) for rank in chosen}
        for rank in chosen:
            if rank not in requests:
                self._mark_dead(results[rank])
        run = CellRun([results[rank] for rank in chosen], hang_after)
        self._offset = offset
        self._wait(_Cell(requests, results, show, run, sent, note, hangs.Schedule(hang_after, time.monotonic())))
        return run

    def _wait(self, cell: _Cell) -> None:
        """Take every rank's messages as they come until each is idle or dead, with the hang
        watch (:class:`msdebug.ranks.hangs.Schedule` says when to look): the cell ends early
        only on a deadlock."""
        waiting = set(cell.requests)
        poller, sockets, pidfds = self._poller(waiting)
        interrupts = 0
        while waiting:
            # A Ctrl-C may land anywhere in here: each message is taken whole (protected), and
            # the interrupt is then raised between two of them, where it is caught.
            try:
                if self._step(poller, sockets, pidfds, waiting, cell):
                    return
            except KeyboardInterrupt:
                interrupts += 1
                cell.run.interrupted = True
                if interrupts > 1:  # the second Ctrl-C: stop waiting; the ranks stay busy
                    raise
                self.interrupt(sorted(waiting))
        if cell.run.interrupted:
            if any(result.state == "dead" for result in cell.results.values()):
                # MindSpore's own SIGINT handler ends a rank whose launched ops still run: say so
                return
            raise KeyboardInterrupt

    def _step(self, poller, sockets, pidfds, waiting: set[int], cell: _Cell) -> bool:
        """One wait for messages, a death or the hang watch; True when the cell is reported hung."""
        schedule = cell.schedule
        now = time.monotonic()
        if now >= schedule.check_at and not cell.run.interrupted:
            return self._look(waiting, cell)
        for key in _poll(poller, max(0.0, schedule.check_at - now) * 1000):
            if key in pidfds:  # a rank died
                rank = pidfds.pop(key)
                poller.unregister(key)
                self._mark_dead(cell.results[rank])
                waiting.discard(rank)
                self._idle(rank)
                schedule.rank_done(time.monotonic())
            elif self._drain(sockets[key], cell.requests[sockets[key]], cell.results[sockets[key]], cell.show,
                             cell.run.interrupted):  # fmt: skip
                waiting.discard(sockets[key])
                schedule.rank_done(time.monotonic())
        return False

    def _look(self, waiting: set[int], cell: _Cell) -> bool:
        """The hang watch's look at the busy ranks: their flight records always, their stacks
        only for a report or a note that is due. True (and the busy ranks placed) on a deadlock."""
        schedule, now = cell.schedule, time.monotonic()
        flights = self.flights()
        states = {rank: hangs.RankNow(rank, rank in waiting) for rank in self.ranks}
        verdict = hangs.judge(states, flights)
        due = schedule.stacks_due(now)
        if verdict.deadlock or due:
            for rank in sorted(waiting):
                self._place(cell.results[rank], cell.sent, flights.get(rank))
            states = {rank: hangs.RankNow(rank, rank in waiting, cell.results[rank].place if rank in waiting else None)
                      for rank in self.ranks}  # fmt: skip
            verdict = hangs.judge(states, flights)
        if verdict.deadlock:
            cell.run.why, cell.run.difference = verdict.why, verdict.difference
            for rank in waiting:
                result = cell.results[rank]
                result.pending = _pending(verdict.difference, rank)
                if result.pending is not None and result.place is not None and result.place.waiting:
                    result.state = "collective"  # a graph run waits in its collective
            return True
        schedule.checked(time.monotonic(), stacks_read=due)
        if due and cell.note is not None:
            cell.note(cell.run, now - schedule.start)
        return False

    def flights(self) -> dict[int, Flight]:
        """Every rank's flight records now (a rank whose file cannot be read is left out)."""
        found = {}
        for rank in self.ranks:
            flight = read_flight(self.dir / f"{role_name(rank)}.flight", rank)
            if flight is not None:
                found[rank] = flight
        return found

    def _poller(self, ranks) -> tuple[zmq.Poller, dict, dict]:
        poller = zmq.Poller()
        sockets, pidfds = {}, {}
        for rank in ranks:
            socket_ = self.clients[rank].iopub_channel.socket
            poller.register(socket_, zmq.POLLIN)
            sockets[socket_] = rank
            fd = self._pidfds.get(rank, self._fifos.get(rank))
            if fd is not None:
                poller.register(fd, zmq.POLLIN)
                pidfds[fd] = rank
        return poller, sockets, pidfds

    @protected
    def _drain(self, rank: int, msg_id: str, result: RankResult, show: OutputFn, interrupted: bool) -> bool:
        """Handle every message of ``rank`` that has come; True once its cell ``msg_id`` is idle."""
        client = self.clients[rank]
        while True:
            try:
                msg = client.get_iopub_msg(timeout=0)
            except queue.Empty:
                return False
            if msg["parent_header"].get("msg_id") != msg_id:
                continue  # the silent execution-count request, or an earlier cell's last words
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                show(rank, content["name"], content["text"])
            elif kind in ("execute_result", "display_data"):
                show(rank, "display", content["data"])
            elif kind == "error":
                result.state = "interrupted" if interrupted and content["ename"] == "KeyboardInterrupt" else "raised"
                result.ename, result.evalue = content["ename"], content["evalue"]
                result.traceback = list(content["traceback"])
                result.failed_at = str(msg["header"].get("date", ""))
                result.line = stack_reading.error_line(result.traceback) + self._offset
                show(rank, "error", "\n".join(result.traceback))
            elif kind == "status" and content["execution_state"] == "idle":
                self._ended(rank, msg_id, result)
                self._idle(rank)
                return True

    def _ended(self, rank: int, msg_id: str, result: RankResult) -> None:
        """The rank's cell is idle: its execute reply says how it ended (a UsageError in a
        rank, such as a misspelt magic, is written to stderr and sends no error message)."""
        if result.state not in ("running", "collective"):
            return
        result.state = "finished"
        try:
            reply = self.clients[rank].get_shell_msg(timeout=_REPLY_S)
            while reply["parent_header"].get("msg_id") != msg_id:
                reply = self.clients[rank].get_shell_msg(timeout=_REPLY_S)
        except queue.Empty:
            return
        content = reply["content"]
        if content.get("status") == "error":
            result.state = "raised"
            result.ename, result.evalue = content.get("ename", "Error"), content.get("evalue", "")
            result.traceback = list(content.get("traceback") or [f"{result.ename}: {result.evalue}"])
            result.failed_at = str(reply["header"].get("date", ""))
        elif content.get("status") == "aborted":
            result.state = "raised"
            result.ename, result.evalue = "Aborted", "the rank did not run the cell"

    def settle(self, show: OutputFn) -> None:
        """Take in what busy ranks said since their cell was reported, without waiting: their
        output goes on (nothing is lost), and a rank whose earlier cell has ended is free again
        (before each cell, and for ``%msrun status``)."""
        for rank, msg_id in list(self.busy.items()):
            if not self.alive(rank):
                self._idle(rank)
                continue
            self._drain(rank, msg_id, RankResult(rank), show, False)

    @protected
    def _mark_dead(self, result: RankResult) -> None:
        stem = role_name(result.rank)
        ended = self.exit_of(stem)
        deadline = time.monotonic() + 5
        while not ended and time.monotonic() < deadline:  # its supervisor writes it as the rank ends
            time.sleep(0.02)
            ended = self.exit_of(stem)
        result.state = "dead"
        result.exit = ended or "ended"
        result.log = self.log_tail(result.rank)

    def _place(self, result: RankResult, sent: str, flight: Flight | None = None) -> None:
        """Where a busy rank is: its stacks, its cell line, what it waits in, and the innermost
        line of the person's code when that is elsewhere (an earlier cell's function)."""
        result.stacks = self.stacks(result.rank)
        if flight is not None and flight.running:
            place = stack_reading.place(result.stacks, sent, self._offset, flight.running, flight.cells)
        else:
            place = stack_reading.place(result.stacks, sent, self._offset)
        result.place = place
        result.line, result.code, result.collective, result.frame = place.line, place.code, place.op, place.frame
        result.state = "collective" if place.waiting and place.waiting != stack_reading.GRAPH else "running"

    def stacks(self, rank: int, timeout: float = 10.0) -> str:
        """The Python stacks of every thread of ``rank`` now (faulthandler, on SIGUSR1). The rank
        appends to its ``.stacks`` file, which is emptied first: it holds one dump at most."""
        path = self.dir / f"rank{rank}.stacks"
        try:
            os.truncate(path, 0)
            os.kill(self.pids[rank], signal.SIGUSR1)
        except (OSError, KeyError):
            return ""
        deadline = time.monotonic() + timeout
        size = 0
        while time.monotonic() < deadline:  # until the dump has stopped growing
            time.sleep(0.05)
            now = path.stat().st_size
            if now and now == size:
                break
            size = now
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(1 << 20)

    def wait_idle(
        self, ranks: Sequence[int] | None = None, timeout: float = 10.0, output: OutputFn | None = None
    ) -> list[int]:
        """Wait until ``ranks`` (every busy one by default) have ended the cells they still run,
        or ``timeout`` seconds; their last output goes to ``output``. Returns the ranks still busy
        (one stuck in MindSpore's C++, such as a collective, does not end on Ctrl-C)."""
        show = output or (lambda rank, kind, content: None)
        chosen = [rank for rank in (self.busy if ranks is None else ranks) if rank in self.busy]
        poller, sockets, pidfds = self._poller(chosen)
        deadline = time.monotonic() + timeout
        while any(rank in self.busy for rank in chosen) and time.monotonic() < deadline:
            for key in _poll(poller, (deadline - time.monotonic()) * 1000):
                rank = pidfds.get(key, sockets.get(key))
                if key in pidfds:
                    poller.unregister(key)
                    self._idle(rank)
                elif rank in self.busy:
                    self._drain(rank, self.busy[rank], RankResult(rank), show, True)
        return [rank for rank in chosen if rank in self.busy]

    def interrupt(self, ranks: Sequence[int] | None = None) -> list[int]:
        """Ctrl-C on ``ranks`` (all by default; each worker is in a session of its own); returns
        the ranks it reached."""
        reached = []
        for rank in self.pids if ranks is None else ranks:
            if self.alive(rank):
                os.kill(self.pids[rank], signal.SIGINT)
                reached.append(rank)
        return reached

    @protected
    def stop(self, timeout: float = 10.0) -> None:
        """Shut every rank down, then kill msrun's scheduler. An idle rank gets ``timeout``
        seconds to end; one still busy with a cell is killed at once: its main thread is in the
        cell (a collective that never completes, a loop), so it could not act on the request; so
        is one never asked (a start that failed or was interrupted before it connected).

        A Ctrl-C while idle ranks get their time ends that wait, and the rest is killed all the
        same before it is raised; one anywhere else in here waits for the end (the notebook has
        dropped the pool by then: a job left half stopped would run on out of its reach).
        """
        supervisors = {stem: pid for stem, pid in self._supervisors().items() if stem != "scheduler"}
        busy = {role_name(rank) for rank in self.busy}
        busy |= set(supervisors) - {role_name(rank) for rank in self.clients}  # a start cut short: never asked
        try:
            for client in self.clients.values():
                try:
                    client.shutdown()
                    client.stop_channels()
                except Exception:  # noqa: BLE001, S110 - a rank that died cannot be asked
                    pass
            for stem, pid in supervisors.items():
                if stem in busy:
                    _signal(pid, signal.SIGKILL, group=True)  # msrun gave each rank a session of its own
            # A supervisor opens its FIFO before it names itself, and ends after it wrote the exit.
            ends = {role_name(rank): fd for rank, fd in self._fifos.items()}
            _wait_ended([ends[stem] for stem in supervisors if stem in ends and stem not in busy], timeout)
        finally:
            for stem, pid in supervisors.items():
                if not self.exit_of(stem):
                    _signal(pid, signal.SIGKILL, group=True)
            if self.process is not None:
                _signal(self.process.pid, signal.SIGKILL, group=True)  # the scheduler, in msrun's group
                self.process.wait(timeout=timeout)
            for fds in (self._pidfds, self._fifos):
                while fds:
                    os.close(fds.popitem()[1])
            if self._reserved is not None:
                self._reserved.close()
                self._reserved = None
            self.clients.clear()
            self.busy.clear()
            shutil.rmtree(self.dir, ignore_errors=True)

    def _supervisors(self) -> dict[str, int]:
        found = {}
        for path in self.dir.glob("*.supervisor"):
            try:
                found[path.stem] = int(path.read_text(encoding="ascii"))
            except (OSError, ValueError):
                continue
        return found


def _text_of(path: Path) -> str:
    """A small file the job wrote in the pool's directory ('' while there is none)."""
    try:
        return read_regular(path, 64).decode("ascii", "replace").strip()
    except (OSError, MsDebugError):
        return ""


def _tail(path: Path) -> str:
    """The last ``_LOG_TAIL_BYTES`` of a log msrun or MindSpore wrote ('' when there is none)."""
    from ..files import open_regular

    try:
        with open_regular(path) as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - _LOG_TAIL_BYTES))
            return handle.read(_LOG_TAIL_BYTES).decode("utf-8", "replace")
    except (OSError, MsDebugError):
        return ""


@interruptible
def _poll(poller: zmq.Poller, timeout_ms: float) -> list:
    """The sockets and pidfds ready within ``timeout_ms``; Ctrl-C ends the wait."""
    return [key for key, _ in poller.poll(timeout_ms)]


@interruptible
def _wait_ended(fds: Sequence[int], timeout: float) -> None:
    """Wait until every one of ``fds`` (each readable once its process has ended) is readable,
    or ``timeout`` seconds, with no timer; Ctrl-C ends the wait."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    waiting = len(fds)
    deadline = time.monotonic() + timeout
    while waiting and (left := deadline - time.monotonic()) > 0:
        for fd, _ in poller.poll(left * 1000):
            poller.unregister(fd)
            waiting -= 1


def _signal(pid: int, number: int, group: bool = False) -> None:
    try:
        if group:
            os.killpg(pid, number)
        else:
            os.kill(pid, number)
    except (ProcessLookupError, PermissionError):
        pass
