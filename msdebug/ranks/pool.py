"""N persistent MindSpore ranks started through MindSpore's own ``msrun``, each an IPython kernel.

:class:`Pool` runs ``msrun --join=False`` with :mod:`msdebug.ranks.worker` as the task script,
waits for each worker's connection file (an event: the file appears complete), and holds one
``jupyter_client`` client per rank. :meth:`Pool.execute` sends a cell to the ranks and hands
each output to a callback as it arrives, rank by rank, in order; the result says how each rank
ended. No IPython here: the magic (:mod:`msdebug.ipython.magics.msrun`) drives it.
"""

from __future__ import annotations

import json
import os
import queue
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

from ..errors import MsDebugError

__all__ = ["Pool", "RankResult"]

OutputFn = Callable[[int, str, str], None]  # rank, "stdout" | "stderr" | "result", text


@dataclass
class RankResult:
    """How one rank ended a cell."""

    rank: int
    status: str = "running"  # "ok", "error", "aborted", "running", "dead"
    ename: str = ""
    evalue: str = ""
    traceback: list[str] = field(default_factory=list)
    finished_at: float = 0.0
    stacks: str = ""  # Python stacks of a rank still busy when the others were done ("hung")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _msrun() -> str:
    """The msrun of this environment (beside its python), else the one on PATH."""
    here = Path(sys.executable).with_name("msrun")
    if here.exists():
        return str(here)
    found = shutil.which("msrun")
    if found is None:
        raise MsDebugError(
            "msrun is not installed in this environment; it comes with MindSpore (pip install mindspore)."
        )
    return found


def _start_time(pid: int) -> str:
    from .worker import _start_time as read

    return read(pid)


class Pool:
    """``workers`` ranks on this host; ``master_port``, ``log_dir`` and ``msrun_args`` go to msrun."""

    def __init__(
        self,
        workers: int,
        master_port: int | None = None,
        log_dir: str | os.PathLike | None = None,
        msrun_args: Sequence[str] = (),
    ) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 64:
            raise MsDebugError(f"the number of ranks is a whole number from 1 to 64, got {workers!r}.")
        self.workers = workers
        self.master_port = master_port or _free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="msdebug-ranks-"))
        self.log_dir = Path(log_dir) if log_dir is not None else self.dir / "logs"
        self.msrun_args = list(msrun_args)
        self.process: subprocess.Popen | None = None
        self.clients: dict[int, object] = {}
        self.pids: dict[int, int] = {}

    # -- life cycle
    def start(self, timeout: float = 180.0) -> None:
        """Start msrun and connect to every rank; raises with msrun's own words when it fails."""
        from . import worker

        env = dict(os.environ)
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")  # msrun starts `python`
        env["MSDEBUG_PARENT"] = f"{os.getpid()}:{_start_time(os.getpid())}"
        env.setdefault("GLOG_v", "3")  # MindSpore's cluster building logs ~30 warnings per rank otherwise
        env.pop("PYTEST_CURRENT_TEST", None)
        for name in [name for name in env if name.startswith("JPY_")]:
            # This kernel's own: a worker kernel that inherits JPY_PARENT_PID ends as soon as msrun
            # (its parent, which returns at once with --join=False) is gone.
            del env[name]
        command = [
            _msrun(),
            f"--worker_num={self.workers}",
            f"--local_worker_num={self.workers}",
            f"--master_port={self.master_port}",
            f"--log_dir={self.log_dir}",
            "--join=False",
            *self.msrun_args,
            worker.__file__,
            str(self.dir),
        ]
        log = open(self.dir / "msrun.log", "xb")  # noqa: SIM115 - msrun writes into it while it runs
        with log:
            self.process = subprocess.Popen(
                command, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        for rank in range(self.workers):
            self.clients[rank] = self._connect(rank, deadline)

    def _connect(self, rank: int, deadline: float):
        from jupyter_client import BlockingKernelClient

        connection = self.dir / f"rank{rank}.json"
        while True:
            info = self._read_connection(connection)
            if info is not None:
                break
            if self.process is not None and self.process.poll() not in (None, 0):
                raise MsDebugError(f"msrun failed (exit status {self.process.returncode}): {self._msrun_log()}")
            if time.monotonic() > deadline:
                raise MsDebugError(f"rank {rank} did not start in time; its log: {self.worker_log(rank)[-400:]}")
            time.sleep(0.05)
        client = BlockingKernelClient()
        client.load_connection_info(info)
        client.start_channels()
        client.wait_for_ready(timeout=max(deadline - time.monotonic(), 1))
        self.pids[rank] = int((self.dir / f"rank{rank}.pid").read_text(encoding="ascii"))
        return client

    @staticmethod
    def _read_connection(path: Path) -> dict | None:
        try:
            return json.loads(path.read_text(encoding="utf-8"))  # ipykernel writes it whole, then uses it
        except (OSError, ValueError):
            return None

    def _msrun_log(self) -> str:
        try:
            return (self.dir / "msrun.log").read_text(encoding="utf-8", errors="replace")[-600:]
        except OSError:
            return ""

    def worker_log(self, rank: int) -> str:
        """The last of ``worker_<rank>.log`` (msrun's log of that rank)."""
        try:
            return (self.log_dir / f"worker_{rank}.log").read_text(encoding="utf-8", errors="replace")[-4000:]
        except OSError:
            return ""

    def alive(self, rank: int) -> bool:
        pid = self.pids.get(rank)
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    # -- running cells
    def execute(
        self,
        code: str,
        ranks: Sequence[int] | None = None,
        output: OutputFn | None = None,
        hang_after: float = 30.0,
    ) -> list[RankResult]:
        """Run ``code`` on ``ranks`` (all by default) at once; ``output(rank, name, text)`` gets each
        stream and result as it comes. Returns when every rank is idle again or dead, or when some
        ranks are done and the others are still busy ``hang_after`` seconds later: those are
        "hung", with their Python stacks (they go on running)."""
        chosen = list(self.clients) if ranks is None else list(ranks)
        requests = {rank: self.clients[rank].execute(code) for rank in chosen}
        results = {rank: RankResult(rank) for rank in chosen}
        waiting = set(chosen)
        poller = zmq.Poller()
        sockets = {}
        for rank in chosen:
            socket_ = self.clients[rank].iopub_channel.socket
            poller.register(socket_, zmq.POLLIN)
            sockets[socket_] = rank
        checked = time.monotonic()
        interrupted = False
        first_done = 0.0
        while waiting:
            if first_done and time.monotonic() - first_done > hang_after:
                for rank in waiting:
                    results[rank].status = "hung"
                    results[rank].stacks = self.stacks(rank)
                break
            try:
                ready = dict(poller.poll(200))  # ms: a message wakes it at once
            except KeyboardInterrupt:
                # Ctrl-C in the notebook: every rank gets one, and the cell ends once they are idle.
                interrupted = True
                self.interrupt()
                continue
            if time.monotonic() - checked > 0.2:
                checked = time.monotonic()
                for rank in list(waiting):
                    if not self.alive(rank):
                        results[rank].status = "dead"
                        waiting.discard(rank)
            for socket_ in ready:
                rank = sockets[socket_]
                try:
                    msg = self.clients[rank].get_iopub_msg(timeout=0)
                except queue.Empty:
                    continue
                if msg["parent_header"].get("msg_id") != requests[rank] or rank not in waiting:
                    continue
                kind, content = msg["msg_type"], msg["content"]
                if kind == "stream" and output is not None:
                    output(rank, content["name"], content["text"])
                elif kind in ("execute_result", "display_data") and output is not None:
                    output(rank, "result", content["data"].get("text/plain", ""))
                elif kind == "error":
                    results[rank].status = "error"
                    results[rank].ename, results[rank].evalue = content["ename"], content["evalue"]
                    results[rank].traceback = list(content["traceback"])
                    results[rank].finished_at = time.monotonic()
                elif kind == "status" and content["execution_state"] == "idle":
                    if results[rank].status == "running":
                        results[rank].status = "ok"
                        results[rank].finished_at = time.monotonic()
                    waiting.discard(rank)
                    first_done = first_done or time.monotonic()
        if interrupted:
            raise KeyboardInterrupt
        return [results[rank] for rank in chosen]

    def stacks(self, rank: int, timeout: float = 10.0) -> str:
        """The Python stacks of every thread of ``rank`` now (faulthandler, on SIGUSR1)."""
        path = self.dir / f"rank{rank}.stacks"
        try:
            before = path.stat().st_size
            os.kill(self.pids[rank], signal.SIGUSR1)
        except (OSError, KeyError):
            return ""
        deadline = time.monotonic() + timeout
        size = before
        while time.monotonic() < deadline:  # until the dump has stopped growing
            time.sleep(0.05)
            now = path.stat().st_size
            if now > before and now == size:
                break
            size = now
        with open(path, encoding="utf-8", errors="replace") as handle:
            handle.seek(before)
            return handle.read(1 << 20)

    def interrupt(self) -> None:
        """Ctrl-C on every rank (each worker is in a session of its own)."""
        for rank, pid in self.pids.items():
            if self.alive(rank):
                os.kill(pid, signal.SIGINT)

    def stop(self, timeout: float = 10.0) -> None:
        """Shut every rank down, then msrun's scheduler; whatever is left after ``timeout`` is killed."""
        for client in self.clients.values():
            try:
                client.shutdown()
                client.stop_channels()
            except Exception:  # noqa: BLE001, S110 - a rank that died cannot be asked
                pass
        (self.dir / "stop").touch()
        deadline = time.monotonic() + timeout
        while any(self.alive(rank) for rank in self.pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        for rank, pid in self.pids.items():
            if self.alive(rank):
                os.kill(pid, signal.SIGKILL)
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)  # the scheduler, and msrun if it still runs
            except (ProcessLookupError, PermissionError):
                pass
            self.process.wait(timeout=timeout)
        self.clients.clear()
        shutil.rmtree(self.dir, ignore_errors=True)
