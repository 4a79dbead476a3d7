"""``%mscontext`` and ``%%mscontext``: show, explain, set and scope MindSpore's context."""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable
from typing import Any

from IPython.core.displayhook import DisplayHook
from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from ...errors import MsDebugError

__all__ = ["MsDebugMagics", "parse_line", "FLAGS"]

_AROUND_EQUALS = re.compile(r"\s*=\s*")
_NEEDS_SCANNING = re.compile(r"[\"'{}\[\]()]")

FLAGS = ("--changed", "--reset", "--help", "--panel")  # the magic's docstring says what each does


def _tokens(line: str) -> list[str]:
    """Split on spaces outside quotes and brackets; ``key = value`` becomes ``key=value``."""
    if not _NEEDS_SCANNING.search(line):
        return _AROUND_EQUALS.sub("=", line).split()
    tokens: list[str] = []
    buf: list[str] = []
    quote, depth = "", 0
    text = line.strip()
    for i, char in enumerate(text):
        if quote:
            buf.append(char)
            if char == quote and text[i - 1] != "\\":
                quote = ""
        elif char in "\"'":
            quote = char
            buf.append(char)
        elif char in "{[(":
            depth += 1
            buf.append(char)
        elif char in "}])":
            depth -= 1
            buf.append(char)
        elif char.isspace() and depth == 0:
            rest = text[i:].lstrip()
            if (buf and buf[-1] == "=") or rest.startswith("="):
                continue  # spaces around '=' belong to one assignment
            if buf:
                tokens.append("".join(buf))
                buf = []
        else:
            buf.append(char)
    if quote or depth:
        raise UsageError(f"unclosed {'quote' if quote else 'bracket'} in: {line.strip()}")
    if buf:
        tokens.append("".join(buf))
    return tokens


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text[1:-1]
    return text


def parse_line(line: str) -> tuple[dict[str, Any], list[str], list[str]]:
    """``'mode=graph --changed sync'`` -> assignments, flags and bare names.

    Raises
    ------
    UsageError
        For unclosed quotes, unknown flags and keys given twice.
    """
    assignments: dict[str, Any] = {}
    flags: list[str] = []
    names: list[str] = []
    for token in _tokens(line):
        if token.startswith("-"):
            if token not in FLAGS:
                from ...keys import did_you_mean

                raise UsageError(
                    f"unknown option {token}; use {', '.join(FLAGS)}." + did_you_mean(token, FLAGS)
                )
            flags.append(token)
        elif "=" in token:
            name, _, value = token.partition("=")
            if name in assignments:
                raise UsageError(f"{name} is given twice.")
            assignments[name] = _unquote(value)
        else:
            names.append(token)
    return assignments, flags, names


@magics_class
class MsDebugMagics(Magics):
    """The magics ``%load_ext msdebug`` registers."""

    @no_var_expand
    @line_cell_magic
    def mscontext(self, line: str, cell: str | None = None) -> Any:
        """Show, explain, set and scope MindSpore's context.

        Usage::

            %mscontext                      table of every key: value, default, platforms, status
            %mscontext --changed            only the keys that differ from their defaults
            %mscontext mode                 what one key means, its allowed values, default, status
            %mscontext mode=graph           set keys (validated first; all or nothing)
            %mscontext device=CPU:0         device_target and device_id together
            %mscontext --reset              back to the context when msdebug was loaded
            %mscontext --panel              a settings panel (ipywidgets), in sync with the context

            %%mscontext mode=pynative pynative_synchronize=true
            ...                             the cell runs with these settings; afterwards
                                            every key is as before, also after an error

        Values: mode=graph|pynative|GRAPH_MODE|0|1; booleans true/false, on/off, yes/no,
        1/0; quoted strings ("a b"); dicts as jit_config={"jit_level": "O1"}.
        """
        assignments, flags, names = parse_line(line)
        try:
            if cell is not None:
                if flags or names:
                    raise UsageError(
                        f"%%mscontext takes only key=value settings, got {' '.join(flags + names)}"
                    )
                return _run_scoped(self.shell, line, cell, assignments)
            return self._line(assignments, flags, names)
        except MsDebugError as error:
            raise UsageError(str(error)) from None

    def _line(self, assignments: dict[str, Any], flags: list[str], names: list[str]) -> Any:
        from ... import settings  # imports the key catalog: only once a magic is used

        if "--help" in flags:
            print(inspect.cleandoc(self.mscontext.__doc__))
            return None
        if len(flags) > 1 or (flags and (assignments or names)):
            raise UsageError(f"use {' or '.join(flags)} on its own.")
        if names and assignments:
            raise UsageError(f"{names[0]}: write {names[0]}=VALUE to set it, or %mscontext {names[0]} for help.")
        if len(names) > 1:
            raise UsageError(f"one key at a time for help, or write key=value to set: {' '.join(names)}")
        if names:
            return settings.describe(names[0])
        if assignments:
            return settings.apply(assignments)
        if flags == ["--reset"]:
            return settings.reset()
        if flags == ["--panel"]:
            from ..panel import panel

            return panel()
        return settings.state(changed_only=flags == ["--changed"])


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


def _run_scoped(shell, line: str, cell: str, assignments: dict[str, Any]) -> Any:
    """Run a cell body under ``settings.context``; return its last expression's value."""
    from ... import settings  # imports the key catalog: only once a magic is used

    def after(scope: settings.Scope) -> str:
        if scope.problem:
            return f"%%mscontext: {scope.problem}"
        return "%%mscontext: the MindSpore context was restored after this error"

    return run_body(shell, "mscontext", line, cell, settings.context(assignments), after)


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
            raise UsageError(f"%%{magic} cannot run top-level await; put the awaiting code in its own cell.") from None
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
