"""Fresh interpreters that start with MindSpore already imported.

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


class Zygote:
    """One warm interpreter of this environment, started on first use, that forks fresh ones."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.process = subprocess.Popen(
            [sys.executable, "-c", _ZYGOTE, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        theirs.close()
        self.sock = ours
        self.lock = threading.Lock()

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
        self.sock.settimeout(timeout)
        data = b""
        while len(data) < 8:
            chunk = self.sock.recv(8 - len(data))
            if not chunk:
                raise RuntimeError(f"the warm interpreter ended (exit status {self.process.poll()})")
            data += chunk
        return struct.unpack("q", data)[0]

    def close(self) -> None:
        self.sock.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


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
