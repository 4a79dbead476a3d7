"""Fresh interpreters and kernels that start with MindSpore already imported.

``import mindspore`` costs about 3 CPU-seconds, and the tests start dozens of fresh interpreters:
on a 2-core machine that alone is minutes. So each test process keeps one interpreter (the
zygote) that has imported MindSpore, numpy and IPython and then waits; every fresh interpreter
is a ``fork()`` of it that runs its code as ``python -c`` runs it: in ``__main__``, in the
test's working directory and environment, with its own stdout and stderr, the same traceback,
``SystemExit`` and exit status, threads joined and ``atexit`` functions run at the end, and an
uncaught KeyboardInterrupt ending it by SIGINT.

It is still a new process with a pristine MindSpore: nothing has run an operator, set the
context or loaded msdebug. What differs from a cold start is what MindSpore does at import:
it read its environment variables and printed its import-time lines in the zygote. Tests about
the import itself, or about variables MindSpore reads at import, or that interrupt the process
at any moment up to its exit, start a cold interpreter (``run_python(..., warm=False)``).

Kernels are started the same way, about 60 of them in a run (:class:`WarmProvisioner`): the
tests' own, nbval's and JupyterLab's. A kernel is still started by jupyter_client's manager,
from the same kernel spec, with the same connection file, environment, working directory and
streams; it leads its own process group, so interrupts reach it as they reach a cold one. A test
about what a kernel has not imported yet starts it cold (``Kernel(warm=False)``, or a notebook
with ``lab.COLD_KERNEL``).
"""

from __future__ import annotations

import json
import locale
import os
import selectors
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable

# The zygote: imports what is slow, then forks one child per request and reports its pid and
# exit status. It reads its requests from the socket passed as argv[1]; EOF ends it.
_ZYGOTE = r"""
import json, os, socket, struct, sys
import numpy, mindspore, IPython.testing.globalipapp

def _become(request, fds):
    # Its globals are the __main__ it clears: everything it uses is local.
    import atexit, builtins, os, signal, sys, threading, numpy, __main__
    for fd, target in zip(fds, (0, 1, 2)):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv[:] = ["-c"]
    numpy.random.seed()  # a new process draws new numbers
    namespace = __main__.__dict__
    loader = namespace.get("__loader__")
    namespace.clear()
    namespace.update(__name__="__main__", __doc__=None, __package__=None, __spec__=None,
                     __loader__=loader, __annotations__={}, __builtins__=builtins)
    status, interrupted = 0, False
    try:
        exec(compile(request["code"], "<string>", "exec"), namespace)
    except SystemExit as exit:
        code = exit.code
        if code is None:
            status = 0
        elif isinstance(code, int):
            status = code
        else:
            print(code, file=sys.stderr)
            status = 1
    except BaseException as error:
        interrupted = isinstance(error, KeyboardInterrupt)
        error.__traceback__ = error.__traceback__.tb_next  # from the code's first line, as -c shows it
        sys.excepthook(type(error), error, error.__traceback__)
        status = 1
    threading._shutdown()
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
    except Exception:
        status = 120
    try:
        sys.stderr.flush()
    except Exception:
        pass
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(status & 0xFF)

sock = socket.socket(fileno=int(sys.argv[1]))
while True:
    header, fds, _, _ = socket.recv_fds(sock, 8, 3)
    if not header:
        break
    size = struct.unpack("q", header)[0]
    data = b""
    while len(data) < size:
        data += sock.recv(size - len(data))
    pid = os.fork()
    if pid == 0:
        sock.close()
        _become(json.loads(data), fds)
    for fd in fds:
        os.close(fd)
    sock.sendall(struct.pack("q", pid))
    _, wait_status = os.waitpid(pid, 0)
    sock.sendall(struct.pack("q", os.waitstatus_to_exitcode(wait_status)))
os._exit(0)  # nothing to finalize: MindSpore's teardown would only keep the test process waiting
"""


class _Process:
    """A zygote: ``script`` run by this Python in ``env``, which reads its requests from a socket
    (``self.sock``); EOF ends it."""

    script = ""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.process = subprocess.Popen(
            [sys.executable, "-c", self.script, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        theirs.close()
        self.sock = ours
        self.lock = threading.Lock()


class Zygote(_Process):
    """One warm interpreter of this environment, started on first use, that forks fresh ones."""

    script = _ZYGOTE

    def run(self, code: str, cwd: str, timeout: float) -> subprocess.CompletedProcess:
        """``python -c code`` in ``cwd``, as :func:`subprocess.run` with ``capture_output`` and
        ``text`` returns it; TimeoutExpired (the child killed) past ``timeout`` seconds."""
        with self.lock:
            out_read, out_write = os.pipe()
            err_read, err_write = os.pipe()
            null = os.open(os.devnull, os.O_RDONLY)
            payload = json.dumps({"code": code, "cwd": cwd, "env": self.env}).encode()
            try:
                socket.send_fds(self.sock, [struct.pack("q", len(payload))], [null, out_write, err_write])
                self.sock.sendall(payload)
            finally:
                for fd in (null, out_write, err_write):
                    os.close(fd)
            pid = self._number(timeout)
            deadline = time.monotonic() + timeout
            streams = _read_until_eof({out_read: bytearray(), err_read: bytearray()}, deadline)
            if streams is None:
                os.kill(pid, 9)
                self._number(60)
                raise subprocess.TimeoutExpired(["python", "-c", code], timeout)
            returncode = self._number(max(deadline - time.monotonic(), 1))
        stdout, stderr = (_text(bytes(streams[fd])) for fd in (out_read, err_read))
        return subprocess.CompletedProcess(["python", "-c", code], returncode, stdout, stderr)

    def _number(self, timeout: float) -> int:
        try:
            return _number(self.sock, timeout)
        except RuntimeError:
            raise RuntimeError(f"the warm interpreter ended (exit status {self.process.poll()})") from None

    def close(self) -> None:
        self.sock.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _number(sock: socket.socket, timeout: float | None) -> int:
    """The next number the zygote wrote to ``sock`` (TimeoutError when none comes in time)."""
    sock.settimeout(timeout)
    data = b""
    while len(data) < 8:
        chunk = sock.recv(8 - len(data))
        if not chunk:
            raise RuntimeError("the zygote ended")
        data += chunk
    return struct.unpack("q", data)[0]


def _read_until_eof(buffers: dict[int, bytearray], deadline: float) -> dict[int, bytearray] | None:
    """Read every pipe in ``buffers`` to its end (then close it); None at ``deadline``."""
    with selectors.DefaultSelector() as selector:
        for fd in buffers:
            selector.register(fd, selectors.EVENT_READ)
        try:
            while selector.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                for key, _ in selector.select(left):
                    chunk = os.read(key.fd, 1 << 16)
                    if chunk:
                        buffers[key.fd] += chunk
                    else:
                        selector.unregister(key.fd)
        finally:
            for fd in buffers:
                os.close(fd)
    return buffers


def _text(data: bytes) -> str:
    """Bytes as :func:`subprocess.run` with ``text=True`` decodes them (universal newlines)."""
    return data.decode(locale.getpreferredencoding(False)).replace("\r\n", "\n").replace("\r", "\n")


_zygote: Zygote | None = None
_zygote_lock = threading.Lock()


def zygote(env: dict[str, str]) -> Zygote | None:
    """This test process's warm interpreter for ``env``; None where ``env`` is not the one it
    was started with (MindSpore read its variables at import: such a test needs a cold start)."""
    global _zygote
    with _zygote_lock:
        if _zygote is None:
            _zygote = Zygote(env)
            import atexit

            atexit.register(_zygote.close)
        return _zygote if _zygote.env == env else None


# Warm kernels ------------------------------------------------------------------------------------
#
# The kernel zygote has imported MindSpore and ipykernel, and forks one kernel per request; several
# run at once. A kernel is what ``python -m ipykernel_launcher -f <connection file>`` would be,
# with the manager's environment, working directory and standard streams, in a session of its
# own (so the manager's signals reach its process group, as jupyter_client's launcher arranges).
# The zygote reaps it and writes its exit status (as Popen.returncode) to the kernel's own socket.
_KERNEL_ZYGOTE = r"""
import json, os, runpy, select, signal, socket, struct, sys
import numpy, mindspore, IPython, ipykernel.kernelapp, ipykernel.ipkernel

control = socket.socket(fileno=int(sys.argv[1]))
wake_read, wake_write = os.pipe()
os.set_blocking(wake_read, False)
os.set_blocking(wake_write, False)
signal.set_wakeup_fd(wake_write)
signal.signal(signal.SIGCHLD, lambda *_: None)
children = {}
request = None
while request is None:
    ready = select.select([control, wake_read], [], [])[0]
    if wake_read in ready:
        while True:
            try:
                if not os.read(wake_read, 512):
                    break
            except BlockingIOError:
                break
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            reply = children.pop(pid)
            try:
                reply.sendall(struct.pack("q", os.waitstatus_to_exitcode(status)))
            except OSError:
                pass
            reply.close()
    if control in ready:
        header, fds, _, _ = socket.recv_fds(control, 8, 4)
        if not header:  # the test process is gone: so are its kernels, as their parent poller would see
            for pid in children:
                os.kill(pid, signal.SIGKILL)
            os._exit(0)
        size = struct.unpack("q", header)[0]
        data = b""
        while len(data) < size:
            data += control.recv(size - len(data))
        pid = os.fork()
        if pid == 0:
            request = json.loads(data)
            break
        for fd in fds[:3]:
            os.close(fd)
        children[pid] = socket.socket(fileno=fds[3])
        children[pid].sendall(struct.pack("q", pid))

# The kernel: nothing of the zygote's loop is left open in it.
signal.set_wakeup_fd(-1)
signal.signal(signal.SIGCHLD, signal.SIG_DFL)
for fd in (wake_read, wake_write, fds[3]):
    os.close(fd)
control.close()
for reply in children.values():
    reply.close()
del children, control
os.setsid()
for fd, target in zip(fds[:3], (0, 1, 2)):
    os.dup2(fd, target)
    os.close(fd)
os.chdir(request["cwd"])
os.environ.clear()
os.environ.update(request["env"])
numpy.random.seed()  # a new process draws new numbers
# MindSpore's logger was set up at import, for the zygote: its name holds the zygote's pid, and its
# console handler writes to the zygote's sys.stderr, which ipykernel replaces. A kernel that
# imports MindSpore in a cell sets it up with ipykernel's stderr, whose warnings reach the cell
# before its reply; set up again on first use, this one does the same.
mindspore.log.GLOBAL_LOGGER = None
sys.argv[:] = request["argv"]
sys.path[0] = os.getcwd()  # as ``python -m`` sets it
runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
"""


class KernelZygote(_Process):
    """The warm kernels of this process for one environment: one zygote, started on first use."""

    script = _KERNEL_ZYGOTE

    def launch(self, module: str, argv: list[str], env: dict[str, str], cwd: str, streams: list[int]) -> WarmKernel:
        """Fork a kernel that runs ``module`` as ``python -m`` does, with ``argv`` and the standard
        streams ``streams`` (file descriptors of this process)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        payload = json.dumps({"module": module, "argv": argv, "env": env, "cwd": cwd}).encode()
        with self.lock:
            try:
                socket.send_fds(self.sock, [struct.pack("q", len(payload))], [*streams, theirs.fileno()])
                self.sock.sendall(payload)
            finally:
                theirs.close()
        return WarmKernel(ours)


class WarmKernel:
    """A forked kernel, as much of :class:`subprocess.Popen` as jupyter_client uses."""

    stdin = stdout = stderr = None

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.returncode: int | None = None
        self.pid = _number(sock, 60)

    def _number(self, timeout: float | None) -> int | None:
        """The zygote's next number about this kernel; None when none came within ``timeout``."""
        try:
            return _number(self.sock, timeout)
        except (TimeoutError, BlockingIOError):
            return None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._number(0)
            if self.returncode is not None:
                self.sock.close()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._number(timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired("kernel", timeout)
            self.sock.close()
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(9)

    def terminate(self) -> None:
        self.send_signal(15)


_kernel_zygotes: dict[tuple[str, ...], KernelZygote] = {}
# What JupyterLab's manager sets for each kernel (neither MindSpore nor ipykernel reads it at import).
_PER_KERNEL = ("JPY_SESSION_NAME",)


def kernel_zygote(env: dict[str, str]) -> KernelZygote:
    """This process's kernel zygote for ``env`` (less its per-kernel variables)."""
    common = {name: value for name, value in env.items() if not name.startswith(_PER_KERNEL)}
    key = tuple(sorted(f"{name}={value}" for name, value in common.items()))
    with _zygote_lock:
        if key not in _kernel_zygotes:
            _kernel_zygotes[key] = KernelZygote(common)
        return _kernel_zygotes[key]


def _fd(value, default: int, null: Callable[[], int]) -> int | None:
    """The file descriptor Popen would give a kernel for ``stdin``/``stdout``/``stderr=value``;
    None for a pipe (the kernel then starts cold)."""
    if value is None:
        return default
    if value == subprocess.DEVNULL:
        return null()
    if isinstance(value, int):
        return value if value >= 0 else None
    return value.fileno()


try:
    from jupyter_client.provisioning import LocalProvisioner
except ImportError:  # pragma: no cover - jupyter_client is a test dependency
    LocalProvisioner = object


class WarmProvisioner(LocalProvisioner):
    """jupyter_client's local provisioner, whose kernels start warm: forked from the kernel zygote
    of their environment, where the kernel spec is this Python's ``ipykernel_launcher``. Every
    other kernel starts as the local provisioner starts it."""

    async def launch_kernel(self, cmd: list[str], **kwargs):
        opened: list[int] = []

        def null() -> int:
            opened.append(os.open(os.devnull, os.O_RDWR))
            return opened[-1]

        # A kernel never reads its stdin (the launcher gives it a pipe nobody writes to).
        streams = [_fd(kwargs.get("stdin"), null(), null), _fd(kwargs.get("stdout"), 1, null)]
        streams.append(_fd(kwargs.get("stderr"), 2, null))
        if cmd[:3] != [sys.executable, "-m", "ipykernel_launcher"] or None in streams:
            for fd in opened:
                os.close(fd)
            return await super().launch_kernel(cmd, **kwargs)
        env = dict(kwargs.get("env") or os.environ)
        env["JPY_PARENT_PID"] = str(os.getpid())  # as jupyter_client's launcher sets it
        cwd = str(kwargs.get("cwd") or os.getcwd())
        try:
            self.process = kernel_zygote(env).launch("ipykernel_launcher", [_LAUNCHER, *cmd[3:]], env, cwd, streams)
        finally:
            for fd in opened:
                os.close(fd)
        self.pid = self.pgid = self.process.pid
        self.cwd = cwd
        return self.connection_info


def _launcher_path() -> str:
    import importlib.util

    return importlib.util.find_spec("ipykernel_launcher").origin


_LAUNCHER = _launcher_path() if LocalProvisioner is not object else ""


def use_warm_kernels() -> None:
    """Kernels that jupyter_client starts in this process start warm (:class:`WarmProvisioner`),
    unless their kernel spec names a provisioner (``local-provisioner`` for a cold start)."""
    from importlib.metadata import EntryPoint

    from jupyter_client.provisioning.factory import KernelProvisionerFactory

    factory = KernelProvisionerFactory.instance()
    factory.provisioners["msdebug-warm"] = EntryPoint(
        name="msdebug-warm", value="warm:WarmProvisioner", group="jupyter_client.kernel_provisioners"
    )
    factory.default_provisioner_name = "msdebug-warm"
