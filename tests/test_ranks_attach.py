"""``msdebug hang`` and ``%msrun attach``: an msrun job started by hand, without msdebug, found
from its log directory or a pid, its ranks' stacks read with py-spy.

One real job for the module (2 CPU ranks, ``msrun --join=True`` as a person types it): rank 0
waits in an AllReduce that rank 1 skips. MindSpore's CPU collectives give up after 30 s, so the
tests that need the hang run right after the job reaches it, and the one that ends a rank runs
last. The inputs that name no job need none and run first.
"""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from IPython.core.error import UsageError

from msdebug.cli import main
from msdebug.ranks import attach as attaching
from msdebug.ranks.stacks import COMMUNICATION, QUEUE
from msdebug.views import ranks as view

TESTS = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent
TRAIN = """\
import os
import signal

import numpy as np
import mindspore as ms
from mindspore import ops
from mindspore.communication import get_rank, init

ms.set_device("CPU")
ms.runtime.launch_blocking()  # each op runs where it is called: a rank waits in its collective's own call
init()
rank = get_rank()
x = ms.Tensor(np.ones(2, np.float32))
print(f"rank {rank} up, pid {os.getpid()}", flush=True)
if rank == 0:
    print("rank 0 enters AllReduce", flush=True)
    y = ops.AllReduce()(x)
else:
    signal.pause()  # rank 1 skips the AllReduce
"""
ALLREDUCE_LINE = 17
RANK1_LINE = 19
START_S = 180


# --------------------------------------------------------------------------- no job needed


def _magic_error(ip, line: str) -> str:
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("msrun", line)
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_attach_without_a_target_or_with_an_option_is_one_line(ip, capsys):
    assert _magic_error(ip, "attach") == "%msrun attach needs a LOGDIR|PID."
    assert _magic_error(ip, "attach --ranks 0") == "%msrun attach needs a LOGDIR|PID."
    assert _magic_error(ip, "attach /tmp --ranks 0") == "%msrun attach takes only LOGDIR or PID, got --ranks."
    ip.run_line_magic("msrun", "--help")
    assert "%msrun attach LOGDIR|PID" in capsys.readouterr().out


def test_a_directory_that_is_not_there_is_one_line(ip, tmp_path):
    message = _magic_error(ip, f"attach {tmp_path / 'nowhere'}")
    assert message.startswith("no such directory: ") and "--log_dir" in message


def test_a_directory_no_job_logs_to_is_one_line(ip, tmp_path):
    assert _magic_error(ip, f"attach {tmp_path}").startswith(f"no msrun job logs to '{tmp_path}'")
    (tmp_path / "worker_0.log").write_text("rank 0 up\n")
    (tmp_path / "worker_1.log").write_text("rank 1 up\n")
    message = _magic_error(ip, f"attach {tmp_path}")
    assert message == (
        f"no process of an msrun job writes to '{tmp_path}': the job that wrote worker_0.log, worker_1.log has ended."
    )


def test_a_pid_that_is_no_rank_or_no_process_is_one_line(ip):
    message = _magic_error(ip, f"attach {os.getpid()}")
    assert message.startswith(f"process {os.getpid()} (") and "is no part of an msrun job" in message
    with open("/proc/sys/kernel/pid_max", encoding="ascii") as handle:
        beyond = int(handle.read()) + 1
    assert _magic_error(ip, f"attach {beyond}") == f"no process {beyond} on this host."


def test_the_cli_says_bad_input_in_one_line_with_status_2(tmp_path, capsys):
    assert main(["hang", str(tmp_path / "nowhere")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("msdebug hang: no such directory: ")


# --------------------------------------------------------------------------- one real job


class Job:
    """``msrun --join=True train.py`` started by hand; its console (msrun tails the workers'
    logs there) is read line by line, so the tests wait on what the ranks print."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.log_dir = folder / "logs"
        self.script = folder / "train.py"
        self.script.write_text(TRAIN, encoding="utf-8")
        held = socket.socket()  # a free port, held until the scheduler has it (both reuse the address)
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        held.bind(("", 0))
        self.port = held.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MS_", "RANK_"))}
        env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"  # msrun starts `python`
        self.lines: list[str] = []
        self.said = threading.Condition()
        self.msrun = subprocess.Popen(
            [str(VENV_BIN / "msrun"), "--worker_num=2", "--local_worker_num=2", f"--master_port={self.port}",
             f"--log_dir={self.log_dir}", "--join=True", "train.py"],
            cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, start_new_session=True,
        )  # fmt: skip
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        try:
            self.wait_for("rank 0 enters AllReduce", "rank 1 up")
        finally:
            held.close()
        self.pids = {int(m[1]): int(m[2]) for line in self.lines if (m := re.match(r"rank (\d) up, pid (\d+)", line))}

    def _read(self) -> None:
        for line in self.msrun.stdout:
            with self.said:
                self.lines.append(line.rstrip("\n"))
                self.said.notify_all()
        with self.said:
            self.lines.append("<msrun ended>")
            self.said.notify_all()

    def wait_for(self, *wanted: str) -> None:
        def seen() -> bool:
            return all(any(line.startswith(w) for line in self.lines) for w in wanted) or "<msrun ended>" in self.lines

        with self.said:
            if not self.said.wait_for(seen, timeout=START_S) or "<msrun ended>" in self.lines:
                tail = "\n".join(line for line in self.lines if not line.startswith("[WARNING]"))[-3000:]
                raise AssertionError(f"the job did not reach the hang; msrun said:\n{tail}")

    def stop(self) -> None:
        try:
            found = attaching.find_job(str(self.log_dir))
            pids = [*found.ranks.values(), found.scheduler]
        except Exception:  # noqa: BLE001 - it has ended already
            pids = list(self.pids.values())
        os.killpg(self.msrun.pid, signal.SIGKILL)
        for pid in pids:
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.msrun.wait(timeout=30)
        self._reader.join(timeout=30)


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    started = Job(tmp_path_factory.mktemp("handmade-job"))
    yield started
    started.stop()


def _check_the_hang(attached, job) -> None:
    assert [seen.rank for seen in attached.ranks] == [0, 1]
    zero, one = attached.ranks
    assert (zero.pid, one.pid) == (job.pids[0], job.pids[1])
    assert zero.script == one.script == str(job.script)
    assert (zero.place.waiting, zero.place.op, zero.place.line) == (COMMUNICATION, "AllReduce", ALLREDUCE_LINE)
    assert zero.place.code == "y = ops.AllReduce()(x)"
    assert (one.place.waiting, one.place.line, one.place.code) == (
        "",
        RANK1_LINE,
        "signal.pause()  # rank 1 skips the AllReduce",
    )
    assert not attached.verdict.deadlock  # rank 1 may still come: one look cannot say it never will


def test_attach_by_log_dir_names_the_collective_and_who_never_came(ip, job):
    attached = ip.run_line_magic("msrun", f"attach {job.log_dir}")
    _check_the_hang(attached, job)
    assert (attached.job.log_dir, attached.job.total, attached.job.msrun) == (str(job.log_dir), 2, job.msrun.pid)
    text = repr(attached)
    assert text.splitlines() == [
        f"msrun: rank 0 waits in AllReduce; rank 1 never came: it is at train.py:{RANK1_LINE}, not in a collective",
        f"the job: 2 of 2 ranks alive on this host, logs in {job.log_dir}; stacks read with py-spy, one look",
        f"  rank 0 (pid {job.pids[0]}) waits in AllReduce at train.py:{ALLREDUCE_LINE}: `y = ops.AllReduce()(x)`",
        f"  rank 1 (pid {job.pids[1]}) is at train.py:{RANK1_LINE}, not in a collective: `signal.pause()  # rank 1 skips the AllReduce`",
    ]
    html = attached._repr_html_()
    assert "rank 0 waits in AllReduce" in html and "<code>" not in text
    assert "`y = ops.AllReduce()(x)`" in html and "&lt;" not in html.replace("&lt;br", "")


@pytest.mark.parametrize("which", ["rank 0", "rank 1", "msrun"])
def test_attach_by_pid_finds_the_same_job(job, which):
    pid = job.msrun.pid if which == "msrun" else job.pids[int(which[-1])]
    attached = attaching.attach(str(pid))
    _check_the_hang(attached, job)
    assert attached.job.log_dir == str(job.log_dir)


def test_the_cli_prints_the_report_and_exits_1_while_a_rank_waits(job):
    done = subprocess.run([str(VENV_BIN / "msdebug"), "hang", str(job.msrun.pid)], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines()[0] == (
        f"msrun: rank 0 waits in AllReduce; rank 1 never came: it is at train.py:{RANK1_LINE}, not in a collective"
    )


def test_py_spy_denied_ptrace_is_one_line_that_says_what_to_change(job):
    """py-spy runs under a seccomp filter that makes ptrace and process_vm_readv fail with EPERM
    (tests/no_pidfd.py's filter, given these calls), as in a container without CAP_SYS_PTRACE."""
    code = (f"import sys; sys.path.insert(0, {str(TESTS)!r}); import no_pidfd; no_pidfd.deny_ptrace(); "
            f"from msdebug.cli import main; sys.exit(main(['hang', {str(job.log_dir)!r}]))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    line = done.stderr.strip()
    assert line.startswith("msdebug hang: py-spy may not read process ")
    assert "(ptrace: operation not permitted)" in line
    assert "CAP_SYS_PTRACE" in line and "kernel.yama.ptrace_scope" in line


def test_py_spy_missing_is_one_line_that_says_how_to_install_it(ip, job, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))  # nothing beside it
    monkeypatch.setenv("PATH", str(tmp_path))
    assert _magic_error(ip, f"attach {job.log_dir}") == (
        "py-spy reads the ranks' stacks and is not installed: pip install py-spy (or pip install 'msdebug[all]')."
    )


def test_a_rank_that_has_exited_is_named_with_the_end_of_its_log(job):
    """Last: rank 0 is ended (msrun first, which would end the others with it); rank 1 goes on."""
    os.killpg(job.msrun.pid, signal.SIGKILL)
    job.msrun.wait(timeout=30)
    ended = os.pidfd_open(job.pids[0])
    try:
        os.kill(job.pids[0], signal.SIGKILL)
        assert select.select([ended], [], [], 30)[0] == [ended]  # readable once it has ended
    finally:
        os.close(ended)
    attached = attaching.attach(str(job.log_dir))
    zero, one = attached.ranks
    assert zero.exited and zero.pid is None and "rank 0 enters AllReduce" in zero.log
    assert (one.pid, one.place.line) == (job.pids[1], RANK1_LINE)
    assert attached.job.exited == (0,) and attached.waiting == []
    text = repr(attached).splitlines()
    assert text[0] == "msrun: no rank waits in a collective"
    assert text[2:6] == [
        "  rank 0 has exited (no process)",
        "    worker_0.log ends:",
        f"      rank 0 up, pid {job.pids[0]}",
        "      rank 0 enters AllReduce",
    ]
    assert (
        text[6]
        == f"  rank 1 (pid {job.pids[1]}) is at train.py:{RANK1_LINE}, not in a collective: `signal.pause()  # rank 1 skips the AllReduce`"
    )


# --------------------------------------------------------------------------- the words, without a process


def _seen(rank, waiting="", op="", line=0, code="", pid=100):
    from msdebug.ranks.stacks import Place

    place = None if pid is None else Place(line=line, code=code, waiting=waiting, op=op)
    return attaching.RankSeen(rank, pid, place, "/w/train.py" if pid else "")


def test_a_rank_that_waits_for_the_ops_it_launched_says_how_to_name_the_collective():
    attached = attaching.Attached(
        attaching.Job("127.0.0.1", "8118", {0: 100, 1: 101}, 2),
        [_seen(0, QUEUE, line=14, code="print(y.asnumpy())"), _seen(1, line=9, code="step()", pid=101)],
    )
    assert view.attach_headline(attached) == (
        "rank 0 waits in the ops it launched; rank 1 never came: it is at train.py:9, not in a collective"
    )
    assert "ms.runtime.launch_blocking()" in repr(attached).splitlines()[2]


def test_the_hang_policy_s_verdict_heads_the_report():
    from msdebug.ranks import hangs

    attached = attaching.Attached(
        attaching.Job("127.0.0.1", "8118", {0: 100}, 2, exited=(1,)),
        [_seen(0, COMMUNICATION, "AllReduce", 16, "y = ops.AllReduce()(x)"), _seen(1, pid=None)],
    )
    attached.verdict = hangs.judge({s.rank: hangs.RankNow(s.rank, not s.exited, s.place) for s in attached.ranks}, {})
    assert attached.verdict.deadlock
    assert view.attach_headline(attached) == "hung: rank 0 waits in AllReduce while rank 1 is done"
