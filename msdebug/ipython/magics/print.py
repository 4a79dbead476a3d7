"""``%msprint`` / ``%%msprint``: Print operator output inline, in order, in the cell that made it.

The magic edge of :mod:`msdebug.recorders.print`: a cell magic around one cell; ``%msprint on`` switches the
per-cell hooks (:class:`msdebug.ipython.hooks.CellCapture`) through the ``MsDebug.print_capture``
preference, so ``%config MsDebug.print_capture = True`` works too.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from ... import backend
from ..hooks import CellCapture, ascend_print_file
from ..prefs import preferences
from ._cellbody import run_body
from ._parse import Form, Option, Parsed, Spec, magic_spec

__all__ = ["PRINT", "PrintMagics", "Status", "status"]

PRINT = Spec(
    "msprint",
    line=Form(words=("on", "off", "status")),
    cell=Form(options=(Option("--file", "PATH", "also write the output to this new file"),)),
)


@magics_class
class PrintMagics(Magics):
    """``%msprint`` and ``%%msprint``."""

    SPECS = (PRINT,)

    @no_var_expand
    @line_cell_magic
    @magic_spec(PRINT)
    def msprint(self, args: Parsed) -> Any:
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
        cells = preferences(self.shell).prints
        if args.cell is None:
            if args.word in ("on", "off"):
                preferences(self.shell).print_capture = args.word == "on"
            return status(cells)
        from ...recorders.print import PrintCapture

        capture = PrintCapture(file=args.get("--file"), show=True)

        def after(entered: PrintCapture) -> str:
            cells.last = entered.log
            return "%%msprint: the output printed before the error is shown above"

        value = run_body(self.shell, "msprint", args.line, args.cell, capture, after)
        cells.last = capture.log
        return value


class Status:
    """What happens to Print output in this kernel; a line of text."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def status(cells: CellCapture) -> Status:
    """Where Print output goes now: a file, MindSpore's own file, every cell captured, or the screen."""
    from ...recorders.print import active_print_file

    path = active_print_file()
    if path:
        return Status(f"Print output goes to {path} (print_file_path), not to the screen.")
    if backend.is_imported():
        ascend = ascend_print_file()
        if ascend:
            return Status(f"MindSpore writes Print output to {ascend}; msdebug shows what each cell added.")
    if cells.every_cell:
        return Status("print capture on: every cell's Print output is shown inline, in order, when the cell ends.")
    return Status("print capture off: %%msprint captures one cell, %msprint on every cell.")
