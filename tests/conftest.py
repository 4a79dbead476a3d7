"""Fixtures: a real IPython shell with msdebug loaded, real kernels, and fresh processes.

Everything runs against the real MindSpore CPU build. MindSpore's context is global to a
process and its device is fixed once an operator runs, so tests that need a pristine
process (device changes, launch_blocking) run their code in a fresh interpreter.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# No fuzz test depends on a clock: hypothesis's deadline and its "too slow" health check time
# each example, and on a loaded machine (CI, two workers, the other core busy) they fail a test
# whose inputs were fine. Every fuzz test inherits this (a test that suppresses another health
# check names too_slow again: its list replaces this one).
settings.register_profile("msdebug", deadline=None, suppress_health_check=[HealthCheck.too_slow])
# The fuzz tests explore new inputs on every developer run; CI (CI=true) replays a fixed
# sequence, so that a green main stays green and a red one is red again on a rerun.
settings.register_profile("ci", parent=settings.get_profile("msdebug"), derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "msdebug")

from warm import use_warm_kernels

from helpers import Kernel
from lab import close_window, lab, shared_lab  # noqa: F401  (JupyterLab for the browser tests)


def pytest_configure(config):
    """Ctrl-C reaches every interpreter and kernel the tests start, however pytest was started.

    A script that starts a command in the background (``cmd &``) makes it ignore SIGINT, and an
    ignored signal stays ignored across exec: the fresh interpreters of the interrupt tests would
    then never see the SIGINT they raise, and the tests would test nothing. A Python handler here
    becomes the default action in every child.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    use_warm_kernels()
    if hasattr(config, "workerinput"):
        # Registered first, so it runs last: after every other exit handler of the worker.
        atexit.register(_end_worker)


def _end_worker() -> None:
    """An xdist worker ends without the interpreter's finalization: for a process that has run
    MindSpore's runtime, its module teardown and C++ destructors take 3-4 s while the whole run
    waits. By now the worker has sent its reports and every exit handler has run."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


@pytest.fixture(autouse=True)
def _in_a_temporary_directory(tmp_path, monkeypatch):
    """MindSpore writes into the working directory (rank_0/om/analyze_fail.ir after a failed
    compile); so do kernels and interpreters started from a test. Keep it all out of the repo."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="session")
def shell():
    """One in-process IPython shell for the session, with ``%load_ext msdebug`` done."""
    from IPython.testing.globalipapp import start_ipython

    ip = start_ipython()
    ip.run_line_magic("load_ext", "msdebug")
    yield ip
    ip.run_line_magic("unload_ext", "msdebug")


@pytest.fixture
def restored_context():
    """Every context key is put back after the test, whatever the test did."""
    import msdebug

    snap = msdebug.snapshot()
    yield
    msdebug.restore(snap)


@pytest.fixture
def ip(shell, restored_context):
    """The shell; every context key is put back after the test."""
    return shell


@pytest.fixture
def kernel():
    """A fresh real kernel for one test."""
    k = Kernel()
    yield k
    k.close()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last browser test in a row, Chromium goes: an idle JupyterLab in its page still
    polls its server, for the rest of the run."""
    if _is_browser(item.nodeid) and (nextitem is None or not _is_browser(nextitem.nodeid)):
        close_window()


def pytest_collection_modifyitems(items):
    """The browser tests run in a row, and the one that drives a JupyterLab of its own comes last:
    the page it leaves would make the next test boot the shared JupyterLab in Chromium again (about
    10 CPU-seconds). Each worker collects everything and orders it the same way, as xdist requires."""
    items.sort(key=lambda item: _is_browser(item.nodeid) and "plain_lab" in item.nodeid)


# How long each unit of work (a module, or all the browser tests) took in a recorded run, in
# seconds: the scheduler hands out the longest first. Refresh it with ``pytest --store-durations``
# after adding slow tests; a unit it does not list counts a third of a second per test.
DURATIONS = Path(__file__).with_name("durations.json")


def pytest_addoption(parser):
    parser.addoption(
        "--store-durations",
        action="store_true",
        help="write how long each module (and the browser tests together) took to tests/durations.json",
    )


def pytest_xdist_make_scheduler(config, log):
    """xdist's ``loadscope`` (each module whole on one worker, so module fixtures are made once),
    with the longest work first, so that no worker is left alone with it at the end.

    The browser tests are one unit: one worker runs them all, with one JupyterLab and one
    Chromium (each costs seconds of a 2-core machine to start, and polls while it is open).
    Units go out longest first, by the durations of a recorded run (``DURATIONS``): the count
    of tests says little, since the slowest modules have few tests, each with its own kernel.
    """
    from xdist.scheduler import LoadScopeScheduling

    recorded = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}

    class LongestFirst(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not getattr(self, "_ordered", False):
                units = sorted(self.workqueue.items(), key=lambda unit: -recorded.get(unit[0], len(unit[1]) / 3))
                self.workqueue.clear()
                self.workqueue.update(units)
                self._ordered = True
            super()._assign_work_unit(node)

    return LongestFirst(config, log)


_durations: dict[str, float] = {}


def pytest_runtest_logreport(report):
    _durations[_unit(report.nodeid)] = _durations.get(_unit(report.nodeid), 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    """With ``--store-durations``, the run's durations per unit go to ``DURATIONS`` (by the
    process that saw every report: xdist's controller, or pytest itself without workers)."""
    if session.config.getoption("store_durations") and not hasattr(session.config, "workerinput"):
        totals = {unit: round(seconds, 1) for unit, seconds in sorted(_durations.items(), key=lambda kv: -kv[1])}
        DURATIONS.write_text(json.dumps(totals, indent=1) + "\n")


def _unit(nodeid: str) -> str:
    """The unit of work a test belongs to: its module, or "browser" for every browser test."""
    return "browser" if _is_browser(nodeid) else nodeid.split("::", 1)[0]


def _is_browser(nodeid: str) -> bool:
    """A test of a browser module (test_browser*.py, test_*_browser.py)."""
    module = nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
    return module.startswith("test_browser") or module.endswith("_browser.py")
