"""``%msprint`` / ``%%msprint``: Print operator output inline, in order, in the cell that made it.

The IPython edge of :mod:`msdebug.capture`: a cell magic around one cell, and a pair of
``pre_run_cell`` / ``post_run_cell`` hooks for every cell (``%msprint on``, which is the
``MsDebug.print_capture`` preference, so ``%config MsDebug.print_capture = True`` works too).
"""

from __future__ import annotations

import inspect
import shlex
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from ...errors import MsDebugError

__all__ = ["PrintMagics", "CellCapture", "ACTIONS"]

ACTIONS = ("on", "off", "status", "--file", "--help")


class CellCapture:
    """Captures each cell from ``pre_run_cell`` to ``post_run_cell`` and shows it at the end.

    A cell that runs while ``print_file_path`` sends Print output to a file is left alone:
    that output belongs in the file. On Ascend, where MindSpore writes the print file itself,
    the values appended during the cell are read back and shown.
    """

    def __init__(self, shell) -> None:
        self.shell = shell
        self.every_cell = False
        self.current = None
        self.ascend_offset: tuple[str, int] | None = None
        self.last = None

    def register(self) -> None:
        events = self.shell.events
        if self.pre not in events.callbacks["pre_run_cell"]:
            events.register("pre_run_cell", self.pre)
        if self.post not in events.callbacks["post_run_cell"]:
            events.register("post_run_cell", self.post)

    def unregister(self) -> None:
        self.stop()
        for name, hook in (("pre_run_cell", self.pre), ("post_run_cell", self.post)):
            if hook in self.shell.events.callbacks[name]:
                self.shell.events.unregister(name, hook)

    def pre(self, info=None) -> None:
        from ... import backend

        self.ascend_offset = None
        if backend.is_imported():
            path = _ascend_print_file()
            if path:
                self.ascend_offset = (path, _size(path))
                return
        if not self.every_cell or self.current is not None:
            return
        from ...capture import PrintCapture, active_print_file

        if active_print_file():
            return
        try:
            capture = PrintCapture(show=True)
            capture.__enter__()
        except MsDebugError as error:  # pragma: no cover - the environment refused (no memfd, no fds)
            print(f"msdebug: print capture is off for this cell: {error}")
            return
        self.current = capture

    def post(self, result=None) -> None:
        self.stop()
        if self.ascend_offset is not None:
            self._show_ascend(*self.ascend_offset)

    def stop(self) -> None:
        capture, self.current = self.current, None
        if capture is not None:
            capture.__exit__(None, None, None)
            self.last = capture.log

    def _show_ascend(self, path: str, offset: int) -> None:
        """Show what MindSpore appended to its binary print file during the cell."""
        from IPython.display import display

        from ...printfile import PrintFileError, PrintLog, decode_print_bytes

        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                data = handle.read()
            if data:
                self.last = PrintLog(data, decode_print_bytes(data, path), "binary file", path)
                display(self.last)
        except (OSError, PrintFileError) as error:
            print(f"msdebug: could not read back {path}: {error}")


def _ascend_print_file() -> str:
    from ...backend import get_backend

    ms = get_backend()
    if not ms.writes_print_files():
        return ""
    return ms.read("print_file_path") or ""


def _size(path: str) -> int:
    import os

    try:
        return os.path.getsize(path)
    except OSError:
        return 0


@magics_class
class PrintMagics(Magics):
    """``%msprint`` and ``%%msprint``."""

    def __init__(self, shell, cells: CellCapture) -> None:
        super().__init__(shell)
        self.cells = cells

    @no_var_expand
    @line_cell_magic
    def msprint(self, line: str, cell: str | None = None) -> Any:
        """Show the Print operator's output inline, in order, in the cell that printed it.

        Usage::

            %%msprint                    capture this cell (GRAPH, PYNATIVE and @jit Print, print())
            %%msprint --file out/p.log   ... and also write it to a new file
            %msprint on                  capture every cell from now on
            %msprint off                 stop capturing every cell
            %msprint status              what happens to Print output now

        The output is shown when the cell ends: strings as text, tensors with shape, dtype,
        min / max / mean and their values. ``msdebug.last_print()`` returns it as data
        (``.items``, ``.tensors``, ``.text``). ``%mscontext print_file_path=p.txt`` sends
        Print output to a file instead of the screen, on every device.
        """
        try:
            words = shlex.split(line)
        except ValueError as error:
            raise UsageError(f"%msprint: {error} in {line!r}") from None
        try:
            if cell is not None:
                return self._cell(words, line, cell)
            return self._line(words)
        except MsDebugError as error:
            raise UsageError(str(error)) from None

    def _cell(self, words: list[str], line: str, cell: str) -> Any:
        from ...capture import PrintCapture
        from .context import run_body

        path = None
        if words:
            if words[0] != "--file" or len(words) != 2:
                raise UsageError(f"%%msprint takes nothing or --file PATH, got {line.strip()!r}")
            path = words[1]
        capture = PrintCapture(file=path, show=True)

        def after(entered: PrintCapture) -> str:
            self.cells.last = entered.log
            return "%%msprint: the output printed before the error is shown above"

        value = run_body(self.shell, "msprint", line, cell, capture, after)
        self.cells.last = capture.log
        return value

    def _line(self, words: list[str]) -> Any:
        if words == ["--help"]:
            print(inspect.cleandoc(self.msprint.__doc__))
            return None
        if len(words) > 1 or (words and words[0] not in ("on", "off", "status")):
            from ...keys import did_you_mean

            hint = did_you_mean(words[0], ("on", "off", "status")) if words else ""
            raise UsageError(f"%msprint takes on, off or status, got {' '.join(words)!r}{hint}")
        if words and words[0] in ("on", "off"):
            from ..extension import preferences

            preferences(self.shell).print_capture = words[0] == "on"
        return status(self.cells)


class Status:
    """What happens to Print output in this kernel; a line of text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def status(cells: CellCapture) -> Status:
    from ... import backend
    from ...capture import active_print_file

    path = active_print_file()
    if path:
        return Status(f"Print output goes to {path} (print_file_path), not to the screen.")
    if backend.is_imported():
        ascend = _ascend_print_file()
        if ascend:
            return Status(f"MindSpore writes Print output to {ascend}; msdebug shows what each cell added.")
    if cells.every_cell:
        return Status("print capture on: every cell's Print output is shown inline, in order, when the cell ends.")
    return Status("print capture off: %%msprint captures one cell, %msprint on every cell.")
