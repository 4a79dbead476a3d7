"""How a ``%%msrun`` cell ended on its ranks, as text: the first rank that raised first, with
its traceback, then one line per other rank (finished, still running, waiting in a
collective, dead with the end of its log).

Pure: the cell's :class:`~msdebug.ranks.pool.CellRun` comes in by duck typing. Everything a
rank said is bounded; the text goes to a terminal or a notebook's stderr, never into HTML.
"""

from __future__ import annotations

__all__ = ["summary", "text_report"]

_MAX_TRACEBACK_LINES = 60
_MAX_CODE = 120
_MAX_LOG_LINE = 300


def _code(code: str) -> str:
    code = code.strip()
    return code if len(code) <= _MAX_CODE else code[: _MAX_CODE - 1] + "…"


def _at(line: int, code: str) -> str:
    if not line:
        return ""
    return f" at line {line}" + (f": `{_code(code)}`" if code else "")


def _rank_line(result, first) -> str:
    where = _at(result.line, result.code)
    if result.state == "finished":
        return f"rank {result.rank}: finished"
    if result.state == "interrupted":
        return f"rank {result.rank}: interrupted{where}"
    if result.state == "raised":
        return f"rank {result.rank}: raised {result.ename}: {result.evalue}{_at(result.line, '')}"
    if result.state == "collective":
        return f"rank {result.rank}: waits in a collective ({result.collective}){where}"
    if result.state == "running":
        place = where or (f" in {result.frame}" if result.frame else "")
        reached = " and never reached the collective the others wait in" if first else ""
        return f"rank {result.rank}: still running{place}{reached}; `%msrun interrupt --ranks {result.rank}` stops it"
    if result.state == "dead":
        return f"rank {result.rank}: died ({result.exit})"
    return f"rank {result.rank}: {result.state}"


def summary(run) -> str:
    """One line: what went wrong on which ranks ('' when every rank finished)."""
    failures, dead, busy = run.failures, run.dead, run.busy
    parts = []
    if failures:
        first = failures[0]
        parts.append(f"rank {first.rank} raised {first.ename} first{_at(first.line, '')}")
        if len(failures) > 1:
            parts.append(f"{len(failures) - 1} more raised")
    if dead:
        parts.append(", ".join(f"rank {d.rank} died ({d.exit})" for d in dead))
    collective = [b for b in busy if b.state == "collective"]
    running = [b for b in busy if b.state == "running"]
    if collective:
        names = ", ".join(str(b.rank) for b in collective)
        parts.append(f"rank {names} waits in a collective ({collective[0].collective})")
    if running:
        names = ", ".join(str(b.rank) for b in running)
        parts.append(f"rank {names} still runs after {run.hang_after:g} s")
    return "; ".join(parts)


def text_report(run) -> str:
    """The whole report ('' when every rank finished)."""
    if run.ok:
        return ""
    lines = [f"msrun: {summary(run)}"]
    failures = run.failures
    if failures:
        first = failures[0]
        lines.append(f"--- rank {first.rank}, the first to raise ---")
        traceback = first.traceback
        if len(traceback) > _MAX_TRACEBACK_LINES:
            traceback = [*traceback[:5], f"... {len(traceback) - _MAX_TRACEBACK_LINES} lines ...", *traceback[-55:]]
        lines.extend(traceback)
        lines.append("---")
    waits = any(r.state == "collective" for r in run.results)
    for result in run.results:
        if failures and result is failures[0]:
            continue
        lines.append(_rank_line(result, waits))
        if result.state == "dead" and result.log:
            lines.append(f"  worker_{result.rank}.log ends:")
            lines.extend(f"    {line[:_MAX_LOG_LINE]}" for line in result.log.splitlines())
    if any(r.state == "collective" for r in run.results):
        lines.append("A rank stuck in a collective cannot be interrupted: `%msrun restart` starts the ranks again.")
    return "\n".join(lines)
