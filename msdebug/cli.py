"""The ``msdebug`` command: ``msdebug info`` prints versions, the device and the context table;
``msdebug print-file PATH`` decodes a print file; ``msdebug dump PATH`` summarises RDR trees and
saved IR graphs in a terminal; ``msdebug profile DIR`` prints a profile's op tables;
``msdebug watch-report DIR`` prints the report of a run ``%%mswatch --save DIR`` saved;
``msdebug hang LOGDIR|PID`` says where the ranks of a running msrun job are (py-spy).

A Unix tool: exit 0 when done (also when the reader of its output, ``head``, has gone), 2 with
one line on stderr when the input is wrong, ``dump --nan`` 1 when it finds a non-finite value,
and ``diff`` 1 when the runs differ and 3 when nothing could be compared (never 0 for nothing);
``watch-report`` 1 when a condition tripped and 3 when no step or no tensor was watched;
``hang`` 1 when a rank waits in a collective.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import shutil
import sys
import time

from . import __version__, backend
from .errors import echo

__all__ = ["main", "environment_lines", "printable", "status_bar_missing", "BAD_INPUT"]

BAD_INPUT = 2  # the exit status of every one-line error, as argparse's own
NOTHING_COMPARED = 3  # msdebug diff: no tensor pair to compare (a side ran no op, or nothing aligned)

#: Said wherever the JupyterLab status bar is missing (``msdebug info``, the tests that need it).
STATUS_BAR_MISSING = (
    "the JupyterLab status bar is not built: Node.js 20+ with npm was missing when msdebug was installed "
    "(apt-get install nodejs npm, then pip install -e . again)"
)

# C0 and C1 control characters (but newline and tab) and the bidi overrides: a dump's file
# name or a print file's text must not retitle, clear or reorder the terminal it is shown in.
_UNPRINTABLE = {
    code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    for code in (*range(0x00, 0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A))
    if chr(code) not in "\n\t"
}


def printable(text: str) -> str:
    """``text`` safe for a terminal: control characters written as escapes (``\\x1b``)."""
    return text.translate(_UNPRINTABLE)


def _say(text: str = "", end: str = "\n", file=None) -> None:
    """Everything the command prints goes through here (see :func:`printable`)."""
    print(printable(text), end=end, file=file or sys.stdout)


def environment_lines() -> list[str]:
    """Versions and known environment problems, one line each."""
    lines = [f"msdebug {__version__}", f"Python {platform.python_version()} ({sys.executable})"]
    numpy = backend.package_version("numpy")
    lines.append(f"numpy {numpy or 'not installed'}")
    if numpy and int(numpy.split(".")[0]) >= 2:
        lines.append(
            '  warning: with numpy 2 the first PyNative operator of every MindSpore process fails; install "numpy<2"'
        )
    mindspore = backend.installed_version()
    lines.append(f"MindSpore {mindspore}" if mindspore else f"MindSpore not installed; {backend.INSTALL_HINT}")
    lines.append(f"JupyterLab status bar: {status_bar_missing() or 'installed'}")
    level = os.environ.get("GLOG_v")
    lines.append(f"GLOG_v={level}" if level is not None else "GLOG_v not set (MindSpore logs WARNING and above)")
    return lines


def status_bar_missing() -> str | None:
    """Why the status-bar labextension is absent (``pip install -e .`` without node builds
    none: hatch-jupyter-builder's ``optional-editable-build``); None when it is there."""
    from pathlib import Path

    beside = Path(__file__).resolve().parent / "labextension" / "package.json"  # editable installs
    shared = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "msdebug" / "package.json"  # wheels
    return None if beside.is_file() or shared.is_file() else STATUS_BAR_MISSING


def _info(args: argparse.Namespace) -> int:
    _say("\n".join(environment_lines()))
    if backend.installed_version() is None:
        return 0
    from . import settings

    state = settings.state(changed_only=args.changed)
    device = state.device
    _say(f"device {device} (this build supports {', '.join(device.supported)})")
    _say()
    _say(repr(state))
    return 0


def _print_file(args: argparse.Namespace) -> int:
    from .dumps.print import read_print_file
    from .errors import MsDebugError

    try:
        log = read_print_file(args.path, args.format)
    except MsDebugError as error:
        _say(f"msdebug print-file: {error}", file=sys.stderr)
        return BAD_INPUT
    _say(repr(log) if log.source == "binary file" else log.text, end="" if log.source != "binary file" else "\n")
    return 0


class _TextProgress:
    """A progress line on stderr for scans that last more than two seconds (terminals only)."""

    def __init__(self, stream=None, after: float = 2.0) -> None:
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self.after = after
        self.shown = 0.0
        self.live = hasattr(self.stream, "isatty") and self.stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.live or now - self.started < self.after or now - self.shown < 0.2:
            return
        self.shown = now
        part = done / total if total else 1.0
        bar = "#" * int(part * 30)
        print(f"\rscanning [{bar:<30}] {part:4.0%} of {total / 2**20:.0f} MB", end="", file=self.stream, flush=True)

    def close(self) -> None:
        if self.live and self.shown:
            print(file=self.stream)


def _dump_nan(args: argparse.Namespace) -> int:
    """``--nan``: the first value an op made non-finite in a data dump (``--inf``: the first
    non-finite tensor of any kind); exit 1 found, 0 all finite, 2 not a data dump."""
    from .dumps.datadump import find_data_dump
    from .dumps.nan import scan_dump
    from .errors import MsDebugError

    if find_data_dump(args.path) is None:
        _say(f"msdebug dump: --nan needs a data dump (rank_*/execution_order), not {args.path}", file=sys.stderr)
        return 2
    progress = _TextProgress()
    try:
        report = scan_dump(args.path, rank=args.rank, progress=progress, inf=args.inf)
    except MsDebugError as error:
        _say(f"msdebug dump: {error}", file=sys.stderr)
        return 2
    finally:
        progress.close()
    _say(repr(report))
    return 1 if report.found else 0


def _dump(args: argparse.Namespace) -> int:
    """Summaries of a dump copied off a machine: every rank, or the one given."""
    from .dumps.explorer import open_dump
    from .errors import MsDebugError

    if args.nan:
        return _dump_nan(args)
    if args.inf:
        _say("msdebug dump: --inf goes with --nan", file=sys.stderr)
        return BAD_INPUT
    try:
        explorer = open_dump(args.path)
    except MsDebugError as error:
        _say(f"msdebug dump: {error}", file=sys.stderr)
        return BAD_INPUT
    if getattr(explorer, "kind", "") == "datadump" and (args.memory or args.graph or args.diff):
        _say("msdebug dump: a data dump has --exec-order and --nan; --graph, --memory and --diff are for "
              "RDR trees and save_graphs directories", file=sys.stderr)  # fmt: skip
        return 2
    _say(repr(explorer))
    tree = getattr(explorer, "tree", None) or getattr(explorer, "dump", None)  # RDR tree or data dump
    ranks = [r.rank for r in tree.ranks] if tree is not None else [None]
    if args.rank is not None:
        ranks = [args.rank]
    sections = []
    if args.exec_order:
        sections.append(lambda rank: explorer.exec_order(graph=args.graph_id, rank=rank, limit=args.limit))
    if args.memory:
        sections.append(lambda rank: explorer.memory(rank=rank, limit=args.limit))
    if args.graph:
        sections.append(lambda rank: explorer.graph(args.graph, args.search, args.op, rank=rank, limit=args.limit))
    if args.diff:
        sections.append(lambda rank: explorer.diff(*args.diff, rank=rank, limit=args.limit))
    status = 0
    for rank in ranks:
        title = f"rank {rank}: " if rank is not None and len(ranks) > 1 else ""
        for section in sections:
            try:  # one missing piece (no memory list in a mode-1 tree) must not hide the others
                _say(f"\n{title}{section(rank)!r}")
            except MsDebugError as error:
                _say(f"msdebug dump: {title}{error}", file=sys.stderr)
                status = BAD_INPUT
    return status


def _positive(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of rows, 1 or more, got {echo(text)}")
    return number


def _profile(args: argparse.Namespace) -> int:
    """The tables of a profiler output directory, or two compared."""
    from .errors import MsDebugError
    from .recorders.profile import compare_profiles, open_profile

    try:
        if args.compare:
            order = "name" if args.order == "name" else "change"
            _say(repr(compare_profiles(args.path, args.compare, top=args.top, order=order)))
        else:
            _say(repr(open_profile(args.path, top=args.top, order=args.order)))
    except MsDebugError as error:
        _say(f"msdebug profile: {error}", file=sys.stderr)
        return BAD_INPUT
    return 0


def _diff(args: argparse.Namespace) -> int:
    """Two runs compared: saved runs, data dumps or msprobe dumps. 1 when they differ, 0 when
    they agree within the tolerance, 2 on error, 3 when nothing could be compared."""
    from .dumps.diff import diff_runs
    from .errors import MsDebugError

    try:
        a, b = _diff_sides(args)
        report = diff_runs(a, b, args.rtol, args.atol, args.rule)
    except MsDebugError as error:
        _say(f"msdebug diff: {error}", file=sys.stderr)
        return BAD_INPUT
    _say(repr(report))
    if report.differs:
        return 1
    return NOTHING_COMPARED if report.nothing_compared else 0


def _diff_sides(args: argparse.Namespace) -> list:
    """A and B, each read with the ``--rank``, ``--iteration`` and ``--graph`` its kind has: one
    that only the other side has is said in this side's notes; one that neither has is an error."""
    from .dumps.diff import CHOICES, RUN_KINDS, read_any_run, run_kind
    from .errors import InvalidValueError

    kinds = [run_kind(args.a), run_kind(args.b)]
    given = {option: getattr(args, option) for option in ("rank", "iteration", "graph")}
    given = {option: value for option, value in given.items() if value is not None}
    for option, value in given.items():
        if not any(option in RUN_KINDS[kind][1] for kind in kinds):
            a, b = (RUN_KINDS[kind][0] for kind in kinds)
            raise InvalidValueError(
                f"--{option} {value}: neither A ({a}) nor B ({b}) has a {option} to choose; --{option} chooses "
                f"{CHOICES[option]}."
            )
    runs = []
    for path, kind, other in ((args.a, kinds[0], "B"), (args.b, kinds[1], "A")):
        takes = RUN_KINDS[kind][1]
        run = read_any_run(path, **{option: value for option, value in given.items() if option in takes})
        skipped = [f"--{option} {value}" for option, value in given.items() if option not in takes]
        if skipped:
            run.notes.insert(0, f"{' and '.join(skipped)} chose in {other} only: {path} is {RUN_KINDS[kind][0]}")
        runs.append(run)
    return runs


def _watch_report(args: argparse.Namespace) -> int:
    """The report of a saved watch: 1 when a condition tripped, 0 when none did, 3 when nothing
    was watched (no step, or no tensor), 2 with one line when DIR is no saved watch."""
    if not os.path.isdir(args.path):
        what = "does not exist" if not os.path.exists(args.path) else "is not a directory"
        _say(f"msdebug watch-report: {echo(args.path)} {what}; give the DIR of %%mswatch --save DIR.", file=sys.stderr)
        return BAD_INPUT
    from .dumps.watch import WatchHistory
    from .errors import MsDebugError
    from .views.watch import text_report

    try:
        history = WatchHistory.load(args.path)
    except (MsDebugError, OSError, ValueError) as error:
        why = " ".join(str(error).split())  # one line, whatever the reader said
        _say(f"msdebug watch-report: {echo(args.path)} is not a saved watch: {why}", file=sys.stderr)
        return BAD_INPUT
    _say(text_report(history))
    if history.first_trip is not None:
        return 1
    return NOTHING_COMPARED if not len(history.steps) or not history.watched else 0


def _whole(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expected a whole number from 0, got {echo(text)}")
    return int(text)


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (0 <= value < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number from 0, got {echo(text)}")
    return value


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``msdebug`` command.

    A reader that stops early (``msdebug dump D | head -1``) closes the pipe: that ends the
    command quietly with status 0, as ``cat`` and ``grep`` do, without a traceback and without
    a second error when the interpreter flushes stdout on its way out.
    """
    try:
        status = _main(argv)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at interpreter shutdown
    except BrokenPipeError:
        _stdout_to_devnull()
        return 0
    return status


def _stdout_to_devnull() -> None:
    """Point fd 1 at /dev/null: what is still buffered in ``sys.stdout`` is flushed at exit and
    must go nowhere, not raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, sys.stdout.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass  # stdout is not a file descriptor (an embedding host): nothing will flush to the pipe


def _hang(args: argparse.Namespace) -> int:
    from .errors import MsDebugError
    from .ranks.attach import attach

    try:
        attached = attach(args.target)
    except MsDebugError as error:
        _say(f"msdebug hang: {error}", file=sys.stderr)
        return BAD_INPUT
    _say(repr(attached))
    return 1 if attached.waiting else 0


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="msdebug", description="See MindSpore's runtime context.")
    parser.add_argument("--version", action="version", version=f"msdebug {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = commands.add_parser("info", help="versions, device and the context table")
    info.add_argument("--changed", action="store_true", help="only keys that differ from their defaults")
    info.set_defaults(run=_info)
    prints = commands.add_parser("print-file", help="decode a print file (binary from Ascend, or text)")
    prints.add_argument("path", help="the file print_file_path named")
    prints.add_argument("--format", choices=("auto", "binary", "text"), default="auto")
    prints.set_defaults(run=_print_file)
    dump = commands.add_parser(
        "dump", help="summaries of an RDR tree, a save_graphs directory, an .ir file or a data dump"
    )
    dump.add_argument("path", help="rdr path (rank_*/rdr/), save_graphs directory, one .ir file, or a data dump path")
    dump.add_argument("--graph", metavar="NAME", help="the IR of one graph: a stage (optimize), a label or a file name")
    dump.add_argument("--search", default="", help="with --graph: only nodes whose text contains this")
    dump.add_argument("--op", default="", help="with --graph: only nodes of this op type")
    dump.add_argument("--exec-order", action="store_true", help="kernels in execution order (RDR)")
    dump.add_argument("--graph-id", type=int, help="with --exec-order: the kernel graph (default: the first)")
    dump.add_argument("--memory", action="store_true", help="memory per kernel, largest first (RDR)")
    dump.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), help="nodes that changed between two passes")
    dump.add_argument("--rank", type=int, help="only this rank (default: every rank)")
    dump.add_argument("--limit", type=_positive, default=200, help="at most this many rows per table (default 200)")
    dump.add_argument(
        "--nan",
        action="store_true",
        help="data dumps: the first NaN an op made, or infinity made from finite values (infinities that came "
        "in as data are listed); exit 1 when a non-finite value is found, 0 when all are finite",
    )
    dump.add_argument(
        "--inf", action="store_true", help="with --nan: the first non-finite tensor of any kind, also one that came in"
    )
    dump.set_defaults(run=_dump)
    prof = commands.add_parser("profile", help="op tables of a profiler output directory (rank_* inside too)")
    prof.add_argument("path", help="the profiler's output directory, or a folder holding several")
    prof.add_argument(
        "--top", type=_positive, default=15, help="single ops listed before the rest is folded (default 15)"
    )
    prof.add_argument("--compare", metavar="OTHER", help="compare with this profile (PATH before, OTHER after)")
    prof.add_argument("--order", choices=("time", "name"), default="time", help="rows longest first, or by name")
    prof.set_defaults(run=_profile)
    diff = commands.add_parser(
        "diff",
        help="the first op where two runs differ: saved runs (%%%%msdiff --save), data dumps or msprobe dumps",
        epilog="--rank, --iteration and --graph choose in both A and B, where each has them (a saved run has no "
        "graph); to choose differently per side, name the folder: DUMP/rank_1, DUMP/rank_0/NET/GRAPH/ITERATION, "
        "RUNS/rank_1, MSPROBE/step2/rank1. Exit status: 0 they agree, 1 they differ, 2 bad input, 3 nothing to "
        "compare (a run with no op, or no op aligned)",
    )
    diff.add_argument("a", help="the run to check: a saved run, a MindSpore data dump or an msprobe dump")
    diff.add_argument("b", help="the reference run, of any of those kinds")
    diff.add_argument(
        "--rank", type=_whole, help="that rank of a dump or of runs saved inside %%%%msrun (default: the first)"
    )
    diff.add_argument(
        "--iteration",
        type=_whole,
        help="that iteration of a data dump, or step of an msprobe dump (default: the first)",
    )
    diff.add_argument("--graph", type=_whole, help="that graph of a data dump (default: the one with the most kernels)")
    diff.add_argument("--rtol", type=_tolerance, help="relative tolerance (default per dtype, see the README)")
    diff.add_argument("--atol", type=_tolerance, help="absolute tolerance (default per dtype)")
    diff.add_argument("--rule", choices=("allclose", "msprobe"), default="allclose", help="the verdict per tensor")
    diff.set_defaults(run=_diff)
    watch = commands.add_parser(
        "watch-report",
        help="the report of a watched training that %%%%mswatch --save DIR (or msdebug.watch(save=DIR)) saved",
        epilog="Exit status: 0 nothing tripped, 1 a condition tripped, 2 bad input, 3 nothing was watched",
    )
    watch.add_argument("path", metavar="DIR", help="the directory the watch saved its statistics in")
    watch.set_defaults(run=_watch_report)
    hang = commands.add_parser(
        "hang",
        help="where the ranks of an msrun job are, read with py-spy: who waits in which collective, who never came",
        epilog="Exit status: 0 no rank waits in a collective, 1 a rank waits in one (the report says who has not "
        "come), 2 bad input (no such job, py-spy missing or not allowed to read the ranks)",
    )
    hang.add_argument("target", metavar="LOGDIR|PID", help="the job's --log_dir, or the pid of msrun or of a rank")
    hang.set_defaults(run=_hang)
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    from .views._text import REPR_WIDTH, text_width

    # Names in the tables are shortened in the middle to the terminal's width (COLUMNS first;
    # a pipe gets repr's width).
    with text_width(shutil.get_terminal_size((REPR_WIDTH, 24)).columns):
        return args.run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
