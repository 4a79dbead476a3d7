"""How a ``%%msrun`` cell ended on its ranks, as text: the first rank that raised first, with
its traceback; on a deadlock, where the ranks' communication first differs; then one line per
other rank (finished, still running, waiting in communication, dead with the end of its log).
And the live note of a cell whose ranks are merely slow.

Pure: the cell's :class:`~msdebug.ranks.pool.CellRun` (and the records of its
:class:`~msdebug.ranks.hangs.Difference`) come in by duck typing. Everything a rank said is
bounded; the text goes to a terminal or a notebook's stderr, never into HTML.
"""

from __future__ import annotations

__all__ = [
    "attach_headline",
    "build_attach",
    "difference_line",
    "html_attach",
    "note",
    "summary",
    "text_attach",
    "text_report",
]

_MAX_TRACEBACK_LINES = 60
_MAX_CODE = 120
_MAX_LOG_LINE = 300
_MAX_TEXT = 200  # a name or place a rank's records carry

# What a busy rank waits in (msdebug.ranks.stacks' words), as the report says it.
_WAITS = {
    "communication": "waits in {op}",
    "queue": "waits for the ops it launched",
    "graph": "runs a graph",
    "end of cell": "waits at the end of the cell for the ops it launched",
}


def _code(code: str) -> str:
    code = code.strip()
    return code if len(code) <= _MAX_CODE else code[: _MAX_CODE - 1] + "…"


def _short(text: object) -> str:
    text = str(text)
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


def _at(line: int, code: str) -> str:
    if not line:
        return ""
    return f" at line {line}" + (f": `{_code(code)}`" if code else "")


def _where(record) -> str:
    """Where a record was launched: its innermost place, then the cell line that called it."""
    at = list(record.at)
    if not at:
        return ""
    first = at[0]
    text = f" at {_short(first)}"
    if record.graph:
        text += f" in graph {_short(record.graph)}"
    elif first.function and first.function != "<module>":
        text += f" in {_short(first.function)}"
    outer = next((where for where in at[1:] if where.cell is not None), None)
    if outer is not None and (outer.cell, outer.line) != (first.cell, first.line):
        text += f", called at {_short(outer)}"
    return text


def _record(record, group: bool = True) -> str:
    """``AllReduce (group mccl_world_group, float32 [2]) at cell [5], line 3``."""
    details = [f"group {_short(record.group)}"] if group and record.kind == "collective" else []
    if record.shapes:
        details.append(_short(record.shapes))
    return f"{_short(record.op)} ({', '.join(details)}){_where(record)}" if details else f"{record.op}{_where(record)}"


def difference_line(difference) -> str:
    """``the ranks differ at collective #7 of group G: rank 0's #7 is AllReduce (...) at cell [5],
    line 3; rank 1 never reached #7 (it launched 6)``."""
    seq = difference.seq
    if difference.kind == "collective":
        head = f"the ranks differ at collective #{seq} of group {_short(difference.group)}"
    else:
        sender, _, receiver = str(difference.stream).rpartition(":")[2].partition(">")
        head = f"the ranks differ at message #{seq} from rank {sender} to rank {receiver} (group {_short(difference.group)})"
    parts = []
    for rank, record in sorted(difference.records.items()):
        if record is None:
            launched = difference.counts.get(rank, 0)
            parts.append(f"rank {rank} never reached #{seq} (it launched {launched})")
        else:
            parts.append(f"rank {rank}'s #{seq} is {_record(record, group=False)}")
    return f"{head}: " + "; ".join(parts)


def _busy(result, first) -> str:
    place = getattr(result, "place", None)
    waiting = place.waiting if place is not None else ""
    where = _at(result.line, result.code)
    inner = ""
    if place is not None and place.inner:
        inner = f", in {_short(place.inner)}" + (f": `{_code(place.inner_code)}`" if place.inner_code else "")
    if waiting:
        pending = getattr(result, "pending", None)
        op = place.op or (pending.op if pending is not None else "a collective")
        text = f"rank {result.rank}: {_WAITS[waiting].format(op=op)}{where or inner.removeprefix(',')}{inner if where else ''}"
        if waiting == "end of cell" and pending is not None:  # no line of this cell says what it waits for
            text += f": {_short(pending.op)} #{pending.seq}{_where(pending)}"
        return text
    if result.state == "collective":  # placed without a recorder's help: the old way
        return f"rank {result.rank}: waits in a collective ({result.collective}){where}"
    if result.line:
        shown = where + inner
    elif inner:
        shown = " " + inner.removeprefix(", ")
    else:
        shown = f" in {result.frame}" if result.frame else ""
    reached = " and never reached the collective the others wait in" if first else ""
    return f"rank {result.rank}: still running{shown}{reached}; `%msrun interrupt --ranks {result.rank}` stops it"


def _rank_line(result, first) -> str:
    if result.state == "finished":
        return f"rank {result.rank}: finished"
    if result.state == "interrupted":
        return f"rank {result.rank}: interrupted{_at(result.line, result.code)}"
    if result.state == "raised":
        return f"rank {result.rank}: raised {result.ename}: {result.evalue}{_at(result.line, '')}"
    if result.state in ("collective", "running"):
        return _busy(result, first)
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
    why = getattr(run, "why", "")
    if why:
        parts.append(why)
    elif busy:
        collective = [b for b in busy if b.state == "collective"]
        running = [b for b in busy if b.state == "running"]
        if collective:
            names = ", ".join(str(b.rank) for b in collective)
            parts.append(f"rank {names} waits in a collective ({collective[0].collective or 'communication'})")
        if running:
            names = ", ".join(str(b.rank) for b in running)
            parts.append(f"rank {names} still runs after {run.hang_after:g} s")
    return "; ".join(parts)


def text_report(run) -> str:
    """The whole report ('' when every rank finished)."""
    if run.ok:
        return ""
    lines = [f"msrun: {summary(run)}"]
    difference = getattr(run, "difference", None)
    if difference is not None:
        lines.append(difference_line(difference))
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
        lines.append(_rank_line(result, waits and difference is None))
        if result.state == "dead" and result.log:
            lines.append(f"  worker_{result.rank}.log ends:")
            lines.extend(f"    {line[:_MAX_LOG_LINE]}" for line in result.log.splitlines())
    if waits:
        lines.append("A rank stuck in a collective cannot be interrupted: `%msrun restart` starts the ranks again.")
    return "\n".join(lines)


def note(run, seconds: float) -> str:
    """The live note of a cell whose busy ranks are not hung: ``msrun: rank 0 still at line 3
    after 30 s; rank 1 done``."""
    parts, done = [], []
    for result in run.results:
        if result.state in ("running", "collective"):
            place = getattr(result, "place", None)
            waiting = place.waiting if place is not None else ""
            if waiting:
                op = place.op or "a collective"
                what = _WAITS[waiting].format(op=op)
            else:
                what = "still"
            where = f" at line {result.line}" if result.line else ""
            if place is not None and place.inner:
                where += f" ({_short(place.inner)})" if where else f" in {_short(place.inner)}"
            elif not where and result.frame:
                where = f" in {_short(result.frame)}"
            parts.append(f"rank {result.rank} {what}{where}")
        elif result.state == "finished":
            done.append(result.rank)
        else:
            parts.append(f"rank {result.rank} {result.state}")
    text = "; ".join(parts) + f" after {seconds:.0f} s"
    if done:
        text += f"; rank {', '.join(map(str, done))} done"
    return f"msrun: {text}"


# --------------------------------------------------------------------------- an attached job

_NOT_IN = "not in a collective"


def _script_at(seen) -> str:
    """``train.py:16`` (the rank's entry script and its line), or its innermost place elsewhere."""
    place = seen.place
    if place.line and seen.script:
        return f"{seen.script.rpartition('/')[2]}:{place.line}"
    if place.inner:
        return _short(place.inner)
    return _short(place.frame) if place.frame else "an unknown place (py-spy read no frame)"


def _seen_line(seen) -> str:
    """One rank of an attached job: where it is, and what it waits in."""
    if seen.exited:
        return f"rank {seen.rank} has exited (no process)"
    place, pid = seen.place, f" (pid {seen.pid})"
    code = f": `{_code(place.code)}`" if place.line and place.code else ""
    inner = f", in {_short(place.inner)}" if place.line and place.inner else ""
    where = _script_at(seen)
    if place.waiting == "communication":
        return f"rank {seen.rank}{pid} waits in {place.op or 'a communication op'} at {where}{code}{inner}"
    if place.waiting == "queue":
        return (f"rank {seen.rank}{pid} waits for the ops it launched at {where}{code}{inner}: PyNative runs them "
                "asynchronously, a collective among them has not completed (ms.runtime.launch_blocking() in the "
                "script makes a rank wait in the collective's own call, which names it)")  # fmt: skip
    if place.waiting:
        return f"rank {seen.rank}{pid} {_WAITS[place.waiting].format(op='')} at {where}{code}{inner}"
    return f"rank {seen.rank}{pid} is at {where}, {_NOT_IN}{code}{inner}"


def attach_headline(attached) -> str:
    """One line: the hang policy's verdict, or who waits in what and who has not come."""
    verdict = attached.verdict
    if verdict.deadlock:
        return f"hung: {verdict.why}"
    waiting, elsewhere = attached.waiting, attached.elsewhere
    if not waiting:
        return "no rank waits in a collective"
    ops = sorted({seen.place.op or "the ops it launched" for seen in waiting})
    head = f"rank {', '.join(str(s.rank) for s in waiting)} waits in {' and '.join(ops)}"
    if not elsewhere:
        return head + "; every rank waits"
    came = []
    for seen in elsewhere:
        came.append(f"rank {seen.rank} has exited" if seen.exited else
                    f"rank {seen.rank} never came: it is at {_script_at(seen)}, {_NOT_IN}")  # fmt: skip
    return head + "; " + "; ".join(came)


def build_attach(attached):
    """The report of an msrun job attached from outside (:class:`msdebug.ranks.attach.Attached`)."""
    from . import report as r

    job = attached.job
    here = f"{len(job.ranks)} of {job.total} ranks alive on this host" if job.total else f"{len(job.ranks)} ranks"
    where = f"logs in {job.log_dir}" if job.log_dir else f"scheduler at {job.where}"
    sections: list = [
        r.Line([f"msrun: {attach_headline(attached)}"], look="bad" if attached.waiting else "strong"),
        r.Line([f"the job: {here}, {where}; stacks read with py-spy, one look"], look="note"),
    ]
    for seen in attached.ranks:
        sections.append(r.Line([_seen_line(seen)], indent=2))
        if seen.exited and seen.log:
            sections.append(r.Line([f"worker_{seen.rank}.log ends:"], look="note", indent=4))
            sections.append(r.Pre(seen.log, indent=6))
    return r.Report(sections)


def _attach_renderers():
    from . import report as r

    return r.renderers(build_attach)


def html_attach(attached) -> str:
    return _attach_renderers()[0](attached)


def text_attach(attached) -> str:
    return _attach_renderers()[1](attached)
