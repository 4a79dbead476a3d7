"""Helpers for tests: fresh interpreters, fresh IPython shells and real Jupyter kernels."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

from warm import zygote as warm_interpreter


def kernel_env() -> dict[str, str]:
    """The environment a Jupyter server gives a kernel.

    pytest sets PYTEST_CURRENT_TEST, and ipykernel turns its fd capture off when it sees
    it: a kernel started from a test would then show less than the same kernel in
    JupyterLab. Tests and nbval use this environment so they see what people see.
    """
    return {name: value for name, value in os.environ.items() if name != "PYTEST_CURRENT_TEST"}


def run_python(
    code: str, timeout: float = 180, env: dict[str, str] | None = None, warm: bool = True
) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter of this environment; returns its output.

    ``warm``: the interpreter starts with MindSpore already imported (a fork of this test
    process's warm interpreter, see warm.py), where ``env`` is the kernels' environment.
    ``warm=False`` for a test about what happens at import, or that interrupts the process at
    any moment until it exits.
    """
    if warm and env is None:
        zygote = warm_interpreter(kernel_env())
        if zygote is not None:
            return zygote.run(textwrap.dedent(code), os.getcwd(), timeout)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or kernel_env(),
        cwd=os.getcwd(),
    )


# What every fresh shell starts with: a new IPython shell ``ip``, msdebug not loaded yet.
FRESH_SHELL = """\
import os, sys
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython
ip = start_ipython()
"""


class ShellOutput(list):
    """The lines a fresh shell printed; its stderr is ``.stderr``."""

    stderr: str = ""


def fresh_shell(code: str, env: dict[str, str] | None = None, warm: bool = True) -> ShellOutput:
    """Run ``code`` in a new IPython shell ``ip`` in a fresh interpreter; returns its stdout lines.

    The code also has ``os``, ``sys`` and ``UsageError``; ``warm`` as in :func:`run_python`. A
    non-zero exit fails the test with the interpreter's stderr in the message.
    """
    result = run_python(FRESH_SHELL + textwrap.dedent(code), env=env, warm=warm)
    assert result.returncode == 0, f"the fresh shell exited with {result.returncode}:\n{result.stderr[-4000:]}"
    lines = ShellOutput(result.stdout.splitlines())
    lines.stderr = result.stderr
    return lines


class Kernel:
    """A real Jupyter kernel, driven the way JupyterLab drives it."""

    def __init__(self, warm: bool = True) -> None:
        """``warm``: the kernel is forked from one that has imported MindSpore and ipykernel in the
        same environment (warm.py). ``warm=False`` for a test about what a kernel has not imported
        yet."""
        from jupyter_client.manager import KernelManager

        # Its own working directory: MindSpore writes there (rank_0/om/ after a failed compile).
        self.cwd = tempfile.mkdtemp(prefix="msdebug-kernel-")
        # Where the kernel writes its Python stacks on SIGUSR2, for a request that hangs.
        self.stacks = self.cwd + ".stacks"
        register = f"import faulthandler, signal; faulthandler.register(signal.SIGUSR2, open({self.stacks!r}, 'w'))"
        self.manager = KernelManager(kernel_name="python3")
        if not warm:
            self.manager.kernel_spec.metadata["kernel_provisioner"] = {"provisioner_name": "local-provisioner"}
        self.manager.start_kernel(
            env=kernel_env(), cwd=self.cwd, extra_arguments=[f"--IPKernelApp.exec_lines={[register]!r}"]
        )
        self.client = self.manager.client()
        self.client.start_channels()
        try:
            self.client.wait_for_ready(timeout=60)
        except RuntimeError:
            self.client.stop_channels()
            self.manager.shutdown_kernel()
            raise

    def run(self, code: str, timeout: float = 300) -> tuple[str, list[dict]]:
        """Execute ``code``; returns the reply status and the iopub outputs of that request."""
        return self.finish(self.client.execute(code), timeout)

    def finish(self, msg_id: str, timeout: float = 300) -> tuple[str, list[dict]]:
        """Wait for the request ``msg_id`` to end; returns its reply status and iopub outputs.

        It ends at its idle status: ipykernel replies to a failed cell before it aborts the
        requests already queued, so a request sent at the reply alone may come back "aborted".
        """
        outputs = []
        while True:
            try:
                msg = self.client.get_iopub_msg(timeout=timeout)
            except queue.Empty:
                raise AssertionError(self._hung(msg_id, timeout, outputs)) from None
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content["execution_state"] == "idle":
                break
            if kind in ("stream", "execute_result", "display_data", "error"):
                outputs.append({"type": kind, **content})
        self.last_reply = self.reply(msg_id, timeout)  # its execution_count is the cell's number
        return self.last_reply["status"], outputs

    def run_with_late_output(self, code: str, timeout: float = 300) -> tuple[str, list[dict]]:
        """:meth:`run`, with the fd output the cell wrote that ipykernel published after its idle
        status. ipykernel reads fds 1 and 2 in a thread of its own (C++ logs, ``os.write``), which
        on a busy machine may publish after the reply, and under the next request's header. A
        silent request then writes a mark to both fds: the pipes keep order, so what comes before
        the two marks is this cell's."""
        status, outputs = self.run(code, timeout)
        mark = f"msdebug-test-mark-{os.getpid()}-{time.monotonic_ns()}"
        self.client.execute(f"import os; os.write(1, b'{mark}\\n'); os.write(2, b'{mark}\\n')", silent=True)
        marked: set[str] = set()
        while len(marked) < 2:
            try:
                msg = self.client.get_iopub_msg(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"the marks written to fds 1 and 2 never came back (got {marked})") from None
            if msg["msg_type"] != "stream":
                continue
            name, text = msg["content"]["name"], msg["content"]["text"]
            if mark in text:
                marked.add(name)
                text = text.replace(mark + "\n", "")
            if text:
                outputs.append({"type": "stream", "name": name, "text": text})
        return status, outputs

    def evaluate(self, setup: str, expression: str, timeout: float = 300) -> str:
        """Run ``setup``, then return ``expression``'s text/plain as the execute reply carries it
        (user_expressions): an answer that does not depend on the cell's stdout stream."""
        msg_id = self.client.execute(setup, user_expressions={"value": expression})
        reply = self.reply(msg_id, timeout)
        assert reply["status"] == "ok", f"the request came back {reply['status']!r}: {reply}"
        value = reply["user_expressions"]["value"]
        assert value["status"] == "ok", value
        return value["data"]["text/plain"]

    def start_until(self, code: str, marker: str, timeout: float = 300) -> str:
        """Start ``code`` and return its msg_id once it has created the file ``marker`` in the
        kernel's directory: an event, so an interrupt sent next lands inside the cell however
        slow the machine is (a cell's output may be captured until it ends; a file is not)."""
        path = os.path.join(self.cwd, marker)
        msg_id = self.client.execute(code)
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            assert time.monotonic() < deadline, f"the cell did not reach {marker!r} in {timeout} s"
            assert self.manager.is_alive(), "the kernel died before the cell reached its marker"
            time.sleep(0.02)
        return msg_id

    def complete(self, code: str) -> tuple[list[str], str]:
        """``complete_request`` at the end of ``code``: matches and the text they replace."""
        msg_id = self.client.complete(code, len(code))
        content = self.reply(msg_id, 60)
        return content["matches"], code[content["cursor_start"] : content["cursor_end"]]

    def _hung(self, msg_id: str, timeout: float, outputs: list[dict]) -> str:
        """Why a request gave no idle status in ``timeout`` s: whether the kernel still lives,
        whether it replied (then iopub lost messages), and where its threads stand (gdb)."""
        lines = [f"no idle status for the request after {timeout} s; outputs so far: {outputs!r:.2000}"]
        if not self.manager.is_alive():
            return "\n".join([*lines, "the kernel is dead"])
        try:
            reply = self.reply(msg_id, 5)
            lines.append(f"the kernel replied {reply['status']!r}: iopub lost the messages after it")
        except queue.Empty:
            lines.append("the kernel sent no reply either: it is stuck inside the request")
        pid = self.manager.provisioner.process.pid
        lines.append(f"its Python threads:\n{self.python_stacks()[-8000:]}")
        if shutil.which("gdb"):
            native = subprocess.run(
                ["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 8"],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            lines.append(f"its native threads (gdb):\n{native.stdout[:12000]}")
        return "\n".join(lines)

    def python_stacks(self, timeout: float = 30) -> str:
        """The Python stacks of every thread of the kernel, as faulthandler writes them (SIGUSR2):
        what a kernel that does not answer is doing."""
        written = len(_text(self.stacks))
        os.kill(self.manager.provisioner.process.pid, signal.SIGUSR2)
        deadline = time.monotonic() + timeout
        while len(_text(self.stacks)) == written and time.monotonic() < deadline:
            time.sleep(0.1)
        return _text(self.stacks)[written:]

    def reply(self, msg_id: str, timeout: float) -> dict:
        """The content of the shell reply to ``msg_id`` (replies to earlier requests are skipped)."""
        reply = self.client.get_shell_msg(timeout=timeout)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.client.get_shell_msg(timeout=timeout)
        return reply["content"]

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
        shutil.rmtree(self.cwd, ignore_errors=True)
        if os.path.exists(self.stacks):
            os.remove(self.stacks)


def _text(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read()
    except FileNotFoundError:
        return ""


def text_of(outputs: list[dict], kind: str = "stream", name: str | None = None) -> str:
    """All text of one output kind (streams by name, results by their text/plain)."""
    parts = []
    for out in outputs:
        if out["type"] != kind or (name and out.get("name") != name):
            continue
        parts.append(out.get("text") or out.get("data", {}).get("text/plain", ""))
    return "".join(parts)


def labextension_missing() -> str | None:
    """Why the status-bar labextension is absent, where a machine without node explains it.

    ``pip install -e .`` builds it with node; without node the build is optional
    (hatch-jupyter-builder's ``optional-editable-build``) and the extension is left out. With
    node on the machine a missing build is a failure, never a skip: None.
    """
    from msdebug.cli import status_bar_missing

    return None if shutil.which("node") is not None else status_bar_missing()
