"""A rank's C-level output (fd 1 and 2) in the output of the request that wrote it.

ipykernel's own fd capture forwards a pipe from a thread that may still be behind when the
reply goes: the last lines a cell wrote in C then arrived after the cell had ended, where the
pool no longer reads them. wurlitzer reads its pipes empty, but only when the redirection
ends, and setting one up for every request cost 12 ms per cell on 4 ranks here.

A pipe has a second flaw: C code that writes more than it holds (1 MiB at most) while holding
the GIL waits for a reader that needs the GIL, for good. So fd 1 and 2 point at files for the
rank's whole life (unlinked, in ``/dev/shm`` where there is one, opened for appending): a
write to a file never waits for its reader. One thread forwards what they gain to
``sys.stdout`` and ``sys.stderr`` (and, as ipykernel does, to the rank's log), woken by inotify
as they are written; what it has forwarded is punched out of the file, so the file holds only
what is still to come. :meth:`COutput.drain`, called at the end of each request, forwards what
the files hold under the same lock: whatever C wrote before the drain is then in
``sys.stdout`` or ``sys.stderr``, ahead of the reply.
"""

from __future__ import annotations

import codecs
import contextlib
import ctypes
import fcntl
import os
import select
import sys
import tempfile
import threading

from ..interrupts import protected

__all__ = ["COutput"]

_CHUNK = 1 << 16
_IN_MODIFY = 0x2
_PUNCH_HOLE = 0x3  # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE: the file's length stays


class _Stream:
    """One of fd 1 and 2: its file, how far it is forwarded, and where it goes."""

    def __init__(self, fd: int, name: str, directory: str | None) -> None:
        self.name = name
        with tempfile.TemporaryFile(dir=directory) as file:
            self.file = os.dup(file.fileno())  # unlinked already: gone with the last descriptor
        fcntl.fcntl(self.file, fcntl.F_SETFL, fcntl.fcntl(self.file, fcntl.F_GETFL) | os.O_APPEND)
        self.log = os.dup(fd)
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.done = 0  # bytes forwarded (and punched out)
        os.dup2(self.file, fd)


class COutput:
    """Start forwarding fd 1 and 2; keep the instance for :meth:`drain`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        directory = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        self._streams = [_Stream(1, "stdout", directory), _Stream(2, "stderr", directory)]
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
        watch = self._watch()
        if watch is not None:
            threading.Thread(target=self._forward_forever, args=(watch,), name="msdebug-c-output", daemon=True).start()

    def _watch(self) -> int | None:
        """An inotify descriptor that is readable when either file is written; None where there
        is none to be had (``fs.inotify.max_user_instances`` reached): the output then comes at
        the end of each request, with its reply."""
        fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            said = f"msdebug: C-level output comes with each reply (inotify: {os.strerror(ctypes.get_errno())})\n"
            with contextlib.suppress(OSError):  # the rank's log says why its C output comes late
                os.write(self._streams[1].log, said.encode())
            return None
        for stream in self._streams:
            self._libc.inotify_add_watch(fd, f"/proc/self/fd/{stream.file}".encode(), _IN_MODIFY)
        return fd

    def _forward_forever(self, watch: int) -> None:
        poller = select.poll()
        poller.register(watch, select.POLLIN)
        while True:
            poller.poll()
            with contextlib.suppress(BlockingIOError):
                while os.read(watch, 4096):  # the events say no more than "written"
                    pass
            self._forward_all()

    def _forward_all(self) -> None:
        """Forward what the files hold, under the lock (the thread and :meth:`drain` share it)."""
        with self._lock:
            for stream in self._streams:
                self._forward(stream)

    def _forward(self, stream: _Stream) -> None:
        start = stream.done
        while data := os.pread(stream.file, _CHUNK, stream.done):
            stream.done += len(data)
            # Neither may end the forwarding: the files would grow, unread, for good.
            with contextlib.suppress(OSError):
                os.write(stream.log, data)
            text = stream.decoder.decode(data)
            if text:
                with contextlib.suppress(ValueError):  # the stream closed as the kernel shuts down
                    getattr(sys, stream.name).write(text)
        if stream.done > start:  # what is forwarded no longer takes memory (or disk)
            self._libc.fallocate(stream.file, _PUNCH_HOLE, start, stream.done - start)

    @protected
    def drain(self) -> None:
        """Forward what fd 1 and 2 hold now (called at the end of a request, before its reply)."""
        self._forward_all()
