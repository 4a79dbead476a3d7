"""Processes where ``pidfd_open`` fails with ENOSYS, as on Linux before 5.3 (Ascend's usual hosts
run 4.19 or 3.10) or under a container's seccomp profile that does not know the call; and, by the
same seccomp filter, processes that may not ptrace (:func:`deny_ptrace`, for ``msdebug hang``).

``python no_pidfd.py ARGS...`` installs a seccomp filter through libseccomp (ctypes), then execs
``python ARGS...``: the filter stays with that process and with every process it starts, so a
kernel started this way runs msrun, its supervisors and its ranks without pidfds too.
:func:`kernels` is a Jupyter path whose ``python3`` kernel starts so.
"""

from __future__ import annotations

import atexit
import ctypes
import errno
import functools
import json
import os
import shutil
import sys
import tempfile

__all__ = ["deny", "deny_pidfd_open", "deny_ptrace", "kernels"]

_ALLOW = 0x7FFF0000  # SCMP_ACT_ALLOW
_ERRNO = 0x00050000  # SCMP_ACT_ERRNO(0); the errno goes in the low 16 bits
_PIDFD_OPEN = 434  # the same number on every architecture Linux added it to (5.3)


def deny_pidfd_open() -> None:
    """From now on, ``pidfd_open`` fails with ENOSYS in this process and its children."""
    deny({"pidfd_open": errno.ENOSYS}, {"pidfd_open": _PIDFD_OPEN})


def deny_ptrace() -> None:
    """From now on, ``ptrace`` and ``process_vm_readv`` fail with EPERM in this process and its
    children, as under a container without CAP_SYS_PTRACE or with ``kernel.yama.ptrace_scope``
    3: py-spy, started from here, may not read another process."""
    deny({"ptrace": errno.EPERM, "process_vm_readv": errno.EPERM})


def deny(calls: dict[str, int], numbers: dict[str, int] | None = None) -> None:
    """From now on, each system call of ``calls`` fails with its errno in this process and its
    children. ``numbers``: a call's number where an old libseccomp may not know its name."""
    seccomp = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    seccomp.seccomp_init.restype = ctypes.c_void_p
    seccomp.seccomp_init.argtypes = [ctypes.c_uint32]
    seccomp.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
    seccomp.seccomp_load.argtypes = [ctypes.c_void_p]
    seccomp.seccomp_release.argtypes = [ctypes.c_void_p]
    seccomp.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    context = seccomp.seccomp_init(_ALLOW)
    if not context:
        raise OSError("seccomp_init failed")
    try:
        for name, error in calls.items():
            number = seccomp.seccomp_syscall_resolve_name(name.encode("ascii"))
            # A libseccomp older than the call does not know its name: pidfd_open's number is the same everywhere.
            number = number if number >= 0 else (numbers or {}).get(name, number)
            added = seccomp.seccomp_rule_add(context, _ERRNO | error, number, 0)
            if added < 0:
                raise OSError(-added, f"seccomp_rule_add({name}): {os.strerror(-added)}")
        loaded = seccomp.seccomp_load(context)  # sets no_new_privs first, as an unprivileged filter needs
        if loaded < 0:
            raise OSError(-loaded, f"seccomp_load: {os.strerror(-loaded)}")
    finally:
        seccomp.seccomp_release(context)


@functools.cache
def kernels() -> str:
    """A directory for ``JUPYTER_PATH`` whose ``python3`` kernel runs under :func:`deny_pidfd_open`."""
    path = tempfile.mkdtemp(prefix="msdebug-no-pidfd-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    spec = os.path.join(path, "kernels", "python3")
    os.makedirs(spec)
    argv = [sys.executable, os.path.abspath(__file__), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    with open(os.path.join(spec, "kernel.json"), "w", encoding="utf-8") as handle:
        json.dump({"argv": argv, "display_name": "Python 3 (no pidfd)", "language": "python"}, handle)
    return path


if __name__ == "__main__":
    deny_pidfd_open()
    os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
