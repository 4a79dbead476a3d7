"""Run a cell magic's body the way IPython runs a cell, inside a context manager.

The body is compiled and run by the magic itself rather than by a nested ``run_cell``, so an
error propagates out of the magic: the cell then fails for nbclient and nbval, with one
traceback made of the body's own frames, and In[] numbers and line numbers match the cell.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from IPython.core.displayhook import DisplayHook

from ...errors import MagicUsageError

__all__ = ["run_body"]


class _BodyFailed:
    """Renders the body's traceback from the body's own frames, plus one line from the magic."""

    def __init__(self, shell, codes: tuple, error: BaseException, after: Callable[[], str]) -> None:
        self.shell, self.codes, self.error, self.after = shell, codes, error, after

    def __call__(self) -> list[str]:
        tb = self.error.__traceback__
        while tb is not None and tb.tb_frame.f_code not in self.codes:
            tb = tb.tb_next
        stb = self.shell.InteractiveTB.structured_traceback(
            type(self.error), self.error, tb or self.error.__traceback__, tb_offset=0
        )
        note = self.after()
        return [*stb, f"({note})"] if note else stb


def run_body(shell, magic: str, line: str, cell: str, manager, after: Callable[[Any], str]) -> Any:
    """Run a cell magic's body inside the context manager ``manager``; return the body's
    last expression's value (``None`` when it ends with ``;``).

    The body is compiled and run here rather than by a nested ``run_cell`` so that an
    error propagates out of the magic: the cell then fails for nbclient and nbval,
    with one traceback made of the body's own frames, then the line ``after(entered)`` gives
    (``entered``: what the manager's ``__enter__`` returned; called once it has exited).
    """
    # The visible cell and its In[] number: IPython stores input N at index N of its history.
    # A nested cell magic (only possible as the first line of a body) sits further down the
    # same cell: blank lines in front keep its line numbers those of the visible cell.
    raw_cell, number, blank = f"%%{magic} {line}\n{cell}", shell.execution_count, 0
    history = getattr(shell, "history_manager", None)
    stored = history.input_hist_raw[-1] if history is not None and history.input_hist_raw else ""
    position = stored.rfind(cell.rstrip("\n")) if stored.startswith("%%") and cell.strip() else -1
    if position > 0:
        raw_cell, number = stored, len(history.input_hist_raw) - 1
        blank = stored.count("\n", 0, position) - 1
    # One comment line stands for the magic line.
    source = "\n" * blank + f"# %%{magic} {line}\n{shell.transform_cell(cell)}"
    filename = shell.compile.cache(source, number, raw_code=raw_cell)
    tree = shell.compile.ast_parse(source, filename=filename)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    try:
        body = shell.compile(tree, filename, "exec")
        tail = shell.compile(ast.Expression(last.value), filename, "eval") if last is not None else None
    except SyntaxError as error:
        if "outside" in str(error) and ("await" in str(error) or "async" in str(error)):
            raise MagicUsageError(
                f"%%{magic} cannot run top-level await; put the awaiting code in its own cell."
            ) from None
        raise
    quiet = last is not None and DisplayHook.semicolon_at_end_of_expression(source)
    value = None
    with manager as entered:
        try:
            exec(body, shell.user_global_ns, shell.user_ns)
            if tail is not None:
                value = eval(tail, shell.user_global_ns, shell.user_ns)
        except BaseException as error:
            # The innermost scope's rendering wins: it shows the frames that failed.
            if not isinstance(getattr(error, "_render_traceback_", None), _BodyFailed):
                try:
                    error._render_traceback_ = _BodyFailed(shell, (body, tail), error, lambda: after(entered))
                except (AttributeError, TypeError):  # exceptions with __slots__ keep IPython's rendering
                    pass
            raise
    return None if quiet else value
