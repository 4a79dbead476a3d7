"""A rank's C-level output (fd 1 and 2) in the output of the request that wrote it.

ipykernel's own fd capture forwards a pipe from a thread that may still be behind when the
reply goes: the last lines a cell wrote in C then arrived after the cell had ended, where the
pool no longer reads them. wurlitzer reads its pipes empty, but only when the redirection
ends, and setting one up for every request cost 12 ms per cell on 4 ranks here.

So fd 1 and 2 point at pipes for the rank's whole life, and one thread forwards them to
``sys.stdout`` and ``sys.stderr`` (and, as ipykernel does, to the rank's log). It reads and
forwards under a lock, only the bytes a pipe holds (so it never blocks in ``read()`` with the
lock held); :meth:`COutput.drain`, called at the end of each request, takes that lock and
forwards what the pipes still hold: whatever C wrote before the drain is then in ``sys.stdout``
or ``sys.stderr``, ahead of the reply.
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import os
import select
import sys
import termios
import threading

from ..interrupts import protected

__all__ = ["COutput"]

_PIPE_BYTES = 1 << 20  # as wurlitzer: a writer that holds the GIL blocks later
_CHUNK = 1 << 16


class COutput:
    """Start forwarding fd 1 and 2; keep the instance for :meth:`drain`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pipes: dict[int, tuple[str, int, codecs.IncrementalDecoder]] = {}
        for fd, name in ((1, "stdout"), (2, "stderr")):
            read, write = os.pipe()
            try:
                fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
            except OSError:
                pass  # above /proc/sys/fs/pipe-max-size: the default size
            log = os.dup(fd)
            os.dup2(write, fd)
            os.close(write)
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            self._pipes[read] = (name, log, decoder)
        threading.Thread(target=self._forward_forever, name="msdebug-c-output", daemon=True).start()

    def _forward_forever(self) -> None:
        poller = select.poll()
        for read in self._pipes:
            poller.register(read, select.POLLIN)
        while True:
            for read, _ in poller.poll():
                self._forward(read)

    def _forward(self, read: int) -> None:
        """Forward what the pipe ``read`` holds, under the lock: it never waits in ``read()`` (the
        other caller may have taken the bytes since the poll), so neither holds the other up."""
        with self._lock:
            while left := _unread(read):
                self._forward_bytes(read, min(left, _CHUNK))

    def _forward_bytes(self, read: int, size: int) -> None:
        data = os.read(read, size)
        name, log, decoder = self._pipes[read]
        # Neither may end the forwarding: the pipes would fill and their writers wait for good.
        with contextlib.suppress(OSError):
            os.write(log, data)
        text = decoder.decode(data)
        if text:
            with contextlib.suppress(ValueError):  # the stream closed as the kernel shuts down
                getattr(sys, name).write(text)

    @protected
    def drain(self) -> None:
        """Forward what fd 1 and 2 hold now (called at the end of a request, before its reply)."""
        for read in self._pipes:
            self._forward(read)


def _unread(fd: int) -> int:
    """How many bytes the pipe ``fd`` holds."""
    count = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, count)
    return int.from_bytes(count, sys.byteorder)
