"""Nothing lost under Ctrl-C and threads: scoped settings, the print capture, its writer.

Interrupts are real signals: SIGINT raised in a fresh interpreter by an interval timer, or
``KernelManager.interrupt_kernel()`` to a real kernel. Nothing here waits for a wall-clock
window: each burst test repeats its round until enough interrupts have landed inside the
switch it guards (``msdebug.interrupts.deferred`` counts the interrupts msdebug made wait),
checks its invariant every round, and has a generous round cap as a safety net only.
"""

from __future__ import annotations

import json
import queue
import random
import textwrap
import time

import pytest

from helpers import Kernel, run_python, text_of

# SIGINT to this process `count` times: the first within `within` seconds, the next ones
# `spread` seconds apart at most. An interval timer (SIGALRM) raises them: a thread could not
# start fast enough to land inside a block that takes half a millisecond. `within` comes from
# `duration(call)`, the time the guarded call takes on this machine now, so the interrupts
# spread over the call whatever the machine's speed; none of the outcomes depends on it.
_BURST = """
import json, os, random, signal, sys, time
from msdebug import interrupts

_out = os.dup(1)  # the test's pipe, whatever happens to fd 1 and sys.stdout


def report(result):
    os.write(_out, (json.dumps(result) + "\\n").encode())

_left = [0]
_spread = [0.0]

def _alarm(signum, frame):
    if _left[0] <= 0:
        return
    _left[0] -= 1
    signal.setitimer(signal.ITIMER_REAL, random.uniform(1e-5, _spread[0]) if _left[0] > 0 else 0)
    signal.raise_signal(signal.SIGINT)

signal.signal(signal.SIGALRM, _alarm)

def burst(within, spread=0.0005, count=2):
    _left[0], _spread[0] = count, spread
    signal.setitimer(signal.ITIMER_REAL, random.uniform(1e-5, within))

def where_raised(error):
    # The function the interrupt came out in: its traceback's last frame that is not msdebug's handler.
    codes, tb = [], error.__traceback__
    while tb is not None:
        codes.append(tb.tb_frame.f_code)
        tb = tb.tb_next
    return [code.co_name for code in codes if code.co_filename != interrupts.__file__][-1]

_fired = [0]

def interrupt_at(n):
    # A profile function that raises SIGINT at the n-th call or return event (Python and C
    # functions alike) after it is set, once; _fired counts them.
    seen = [0]
    def inject(frame, event, arg):
        seen[0] += arg is not sys.setprofile
        if seen[0] == n:
            sys.setprofile(None)
            _fired[0] += 1
            signal.raise_signal(signal.SIGINT)
    return inject

def quiet():
    # After `_left[0] = 0` (a plain store, where no signal is handled): stop the timer.
    signal.setitimer(signal.ITIMER_REAL, 0)

def duration(call, runs=20):
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return sorted(times)[runs // 2]
"""

_SCOPED_KEYS = "mode='graph', save_graphs=1, pynative_synchronize=True, max_call_depth=50"

# Rounds in which at least one interrupt landed inside the guarded switch (and waited), per test.
_LANDED = 30
_CAP = 20000  # rounds; only a safety net: the tests stop at _LANDED


def _run(code: str, seconds: int = 240) -> dict:
    done = run_python(_BURST + textwrap.dedent(code), timeout=seconds)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_double_interrupts_on_context_blocks_leave_every_key_as_it_was():
    result = _run(
        f"""
        import json, mindspore as ms, msdebug
        msdebug.set(mode="pynative")
        before = dict(msdebug.snapshot())
        def block():
            with msdebug.context({_SCOPED_KEYS}):
                pass
        within = 1.5 * duration(block)
        blocks = interrupted = landed = leaked = 0
        while landed < {_LANDED} and blocks < {_CAP}:
            blocks += 1
            waited = interrupts.deferred
            try:
                burst(within)
                block()
                _left[0] = 0
            except KeyboardInterrupt:
                _left[0] = 0
                interrupted += 1
            quiet()
            landed += interrupts.deferred > waited
            if dict(msdebug.snapshot()) != before:
                leaked += 1
                msdebug.restore(before)
        report({{"blocks": blocks, "interrupted": interrupted, "landed": landed, "leaked": leaked}})
        """
    )
    assert result["leaked"] == 0, result
    assert result["landed"] >= _LANDED, result


def test_double_interrupts_on_scoped_cells_leave_every_key_as_it_was():
    result = _run(
        f"""
        import json, mindspore as ms, msdebug
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        ip.run_line_magic("load_ext", "msdebug")
        msdebug.set(mode="pynative")
        before = dict(msdebug.snapshot())
        cell = "%%mscontext mode=graph save_graphs=1 pynative_synchronize=on max_call_depth=50\\nx = 1\\n"
        within = 1.5 * duration(lambda: ip.run_cell(cell, silent=True))
        cells = interrupted = landed = leaked = 0
        while landed < {_LANDED} and cells < {_CAP}:
            cells += 1
            waited = interrupts.deferred
            try:
                burst(within)
                result = ip.run_cell(cell, silent=True)
                _left[0] = 0
                interrupted += isinstance(result.error_in_exec, KeyboardInterrupt)
            except (KeyboardInterrupt, UnboundLocalError):  # IPython's run_cell itself, hit mid-way
                _left[0] = 0
                interrupted += 1
            quiet()
            landed += interrupts.deferred > waited
            if dict(msdebug.snapshot()) != before:
                leaked += 1
                msdebug.restore(before)
        report({{"cells": cells, "interrupted": interrupted, "landed": landed, "leaked": leaked}})
        """
    )
    assert result["leaked"] == 0, result
    assert result["landed"] >= _LANDED, result


def test_many_interrupts_inside_apply_leave_it_all_or_nothing():
    # A plain apply() that is interrupted either changed nothing or everything, and the
    # interrupts that waited in it are raised by it: none is left over for the next call.
    result = _run(
        f"""
        import json, mindspore as ms, msdebug
        keys = ("mode", "save_graphs", "pynative_synchronize", "max_call_depth")
        off = {{"mode": "pynative", "save_graphs": 0, "pynative_synchronize": False, "max_call_depth": 1000}}
        on = {{"mode": "graph", "save_graphs": 1, "pynative_synchronize": True, "max_call_depth": 50}}
        coerce = lambda values: {{k: msdebug.settings._key(k).coerce(v) for k, v in values.items()}}
        msdebug.set(**off)
        def both():
            msdebug.set(**on)
            msdebug.set(**off)
        within = duration(both)  # one set() takes about half of it
        calls = landed = partial = leftover = 0
        while landed < {_LANDED} and calls < {_CAP}:
            calls += 1
            waited = interrupts.deferred
            try:
                burst(within, count=3)
                msdebug.set(**on)
                _left[0] = 0
            except KeyboardInterrupt:
                _left[0] = 0
            quiet()
            landed += interrupts.deferred > waited
            now = {{key: msdebug.get(key) for key in keys}}
            if now not in (coerce(off), coerce(on)):
                partial += 1
            try:
                msdebug.set(**off)  # no signal is sent any more: an interrupt here was left over
            except KeyboardInterrupt:
                leftover += 1
                msdebug.set(**off)
        report({{"calls": calls, "landed": landed, "partial": partial, "leftover": leftover}})
        """
    )
    assert result["partial"] == 0 and result["leftover"] == 0, result
    assert result["landed"] >= _LANDED, result


@pytest.mark.parametrize("around", ["nothing", "a capture"])
def test_an_interrupt_at_any_call_or_return_of_apply_is_raised_by_it_and_leaves_nothing_behind(around):
    # Deterministic, and every position: a profile function raises SIGINT at the n-th call or
    # return event of msdebug.set() (Python functions and C functions alike, msdebug's own
    # hold/let_go/wrapper included), for every n; alone, and inside an open capture (msdebug's
    # handler is installed all along then). Each time: the interrupt either waited and was
    # raised by set() itself or was raised at once; the next set() raises nothing; afterwards
    # the handler is Python's again, no hold is left open, and the context is all or nothing.
    result = _run(
        """
        import contextlib, json, signal, sys, mindspore as ms, msdebug
        around = (lambda: msdebug.capture_print(show=False)) if AROUND == "a capture" else contextlib.nullcontext
        keys = ("mode", "save_graphs", "pynative_synchronize", "max_call_depth")
        off = {"mode": "pynative", "save_graphs": 0, "pynative_synchronize": False, "max_call_depth": 1000}
        on = {"mode": "graph", "save_graphs": 1, "pynative_synchronize": True, "max_call_depth": 50}
        coerce = lambda values: {k: msdebug.settings._key(k).coerce(v) for k, v in values.items()}
        msdebug.set(**off)
        events = [0]
        def count(frame, event, arg):
            events[0] += arg is not sys.setprofile  # the test's own switch of the profile
        with around():
            sys.setprofile(count)
            msdebug.set(**on)
            sys.setprofile(None)
        msdebug.set(**off)
        positions, bad = events[0], []
        raised = 0
        for n in range(1, positions + 1):
            problems = []
            with around():
                try:
                    sys.setprofile(interrupt_at(n))
                    msdebug.set(**on)
                except KeyboardInterrupt:
                    raised += 1
                finally:
                    sys.setprofile(None)
                state = {key: msdebug.get(key) for key in keys}
                try:
                    msdebug.set(**on)  # nothing is sent any more: an interrupt here was left over
                except KeyboardInterrupt:
                    problems.append("left over")
            if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
                problems.append("handler")
                signal.signal(signal.SIGINT, signal.default_int_handler)
            if interrupts._holds:
                problems.append(f"holds={interrupts._holds}")
                interrupts._holds = 0
            if state not in (coerce(off), coerce(on)):
                problems.append("partial")
            msdebug.set(**off)
            if problems:
                bad.append((n, problems))
        report({"positions": positions, "fired": _fired[0], "raised": raised, "deferred": interrupts.deferred,
                "bad": bad[:10]})
        """.replace("AROUND", repr(around))
    )
    assert result["bad"] == [], result
    assert result["positions"] > 100 and result["raised"] == result["fired"] == result["positions"], result
    assert result["deferred"] > 50, result


def test_an_interrupt_at_any_call_or_return_of_a_failed_msdiffs_cleanup_waits_for_it():
    # A %%msdiff run that fails or is interrupted leaves nothing: the side's __exit__ takes its
    # hooks off and removes its recordings (DiffSession.discard), with SIGINT held. A second
    # Ctrl-C inside that removal cut shutil.rmtree short, between its os.close and the flag that
    # says so: the cell ended in "OSError: Bad file descriptor" with the folders half gone
    # (found by test_cell_interrupts). Deterministic, at every position: a profile function
    # raises SIGINT at the n-th call or return event of discard() under a hold, as __exit__
    # calls it. Each time the interrupt waits and is raised after it, and the recordings (the
    # scratch folder, and the --save run that never got its run.json) are gone.
    result = _run(
        """
        import pathlib, shutil, signal, sys, tempfile
        import mindspore as ms
        from mindspore.ops.primitive import Primitive
        from msdebug.recorders.diff import DiffSession
        runs = pathlib.Path(tempfile.mkdtemp())
        def made():
            session = DiffSession("y = 1", {}, "repeat", save="kept", runs_dir=runs)
            for side in (session.scratch / "side1", runs / "kept"):  # what the runs recorded
                for folder in ("a", "a/b", "c"):
                    (side / folder).mkdir(parents=True)
                    (side / folder / "t.npy").write_bytes(b"x" * 64)
            return session
        def left(session):
            return [path.name for path in (session.scratch, runs / "kept") if path.exists()]
        # The real path once: an interrupted side's __exit__ takes the hooks off and discards.
        ms.set_context(mode=ms.PYNATIVE_MODE)
        original = Primitive.__dict__["__call__"]
        session = made()
        shutil.rmtree(runs / "kept")  # the side's recorder makes it
        session.sides[0].__enter__()
        hooked = Primitive.__dict__["__call__"] is not original
        session.sides[0].__exit__(KeyboardInterrupt, KeyboardInterrupt(), None)
        exited = {"hooked": hooked, "unhooked": Primitive.__dict__["__call__"] is original, "left": left(session)}
        events = [0]
        def count(frame, event, arg):
            events[0] += arg is not sys.setprofile
        session = made()
        interrupts.hold()
        sys.setprofile(count)
        session.discard()
        sys.setprofile(None)
        interrupts.let_go()
        positions, bad = events[0], []
        raised = 0
        for n in range(1, positions + 1):
            session = made()
            problems = []
            interrupts.hold()
            try:
                sys.setprofile(interrupt_at(n))
                session.discard()
            except KeyboardInterrupt:
                raised += 1
            except BaseException as error:
                problems.append(repr(error))
            finally:
                sys.setprofile(None)
                interrupts.let_go()
            problems += [f"{name} left" for name in left(session)]
            if interrupts._holds or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
                problems.append(f"holds={interrupts._holds}, handler {signal.getsignal(signal.SIGINT)}")
                interrupts._holds = 0
                signal.signal(signal.SIGINT, signal.default_int_handler)
            for path in (session.scratch, runs / "kept"):
                shutil.rmtree(path, ignore_errors=True)
            if problems:
                bad.append((n, problems))
        report({"exited": exited, "positions": positions, "fired": _fired[0], "raised": raised,
                "deferred": interrupts.deferred, "bad": bad[:10]})
        """
    )
    assert result["exited"] == {"hooked": True, "unhooked": True, "left": []}, result
    assert result["bad"] == [], result
    assert result["positions"] > 100 and result["raised"] == result["fired"] == result["positions"], result
    assert result["deferred"] > 100, result


# --------------------------------------------------------------------------- the print capture


def test_threads_printing_during_a_capture_lose_no_line():
    result = _run(
        """
        import json, threading, msdebug
        lost = []
        for run in range(4):
            def work(name):
                for i in range(3000):
                    print(f"{name} {i}")
            with msdebug.capture_print(show=False) as cap:
                threads = [threading.Thread(target=work, args=(f"t{n}",)) for n in range(5)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
            lines = cap.log.text.splitlines()
            expected = {f"t{n} {i}" for n in range(5) for i in range(3000)}
            lost.append(len(expected - set(lines)))
            assert len(lines) == 15000 or lost[-1], (len(lines), lines[:3])
        report({"lost": lost})
        """
    )
    assert result["lost"] == [0, 0, 0, 0], result


def test_interrupts_at_the_start_and_end_of_captures_keep_stdout_and_fd_1():
    # Double interrupts at random moments around many captures; afterwards sys.stdout and
    # fd 1 are what they were, and every capture whose line was printed kept it.
    result = _run(
        f"""
        import json, os, sys, msdebug
        screen, fd1 = sys.stdout, os.fstat(1)
        def capture():
            with msdebug.capture_print(show=False):
                print("inside")
        within = 1.5 * duration(capture)
        captures = interrupted = landed = printed_and_kept = 0
        while landed < {_LANDED} and captures < {_CAP}:
            captures += 1
            waited = interrupts.deferred
            cap = msdebug.capture_print(show=False)
            printed = False
            try:
                burst(within)
                with cap:
                    print("inside")
                    printed = True
                _left[0] = 0
            except KeyboardInterrupt:
                _left[0] = 0
                interrupted += 1
            quiet()
            landed += interrupts.deferred > waited
            if sys.stdout is not screen or os.fstat(1).st_ino != fd1.st_ino:
                sys.stdout = screen
                report({{"broken_after": captures}})
                raise SystemExit(0)
            if printed:
                if cap.log is None or "inside" not in cap.log.text:
                    report({{"lost_after": captures, "log": None if cap.log is None else cap.log.text}})
                    raise SystemExit(0)
                printed_and_kept += 1
        print("after", flush=True)
        report({{"captures": captures, "interrupted": interrupted, "landed": landed, "kept": printed_and_kept,
                 "broken_after": 0, "lost_after": 0}})
        """
    )
    assert result.get("broken_after") == 0 and result.get("lost_after") == 0, result
    assert result["landed"] >= _LANDED and result["kept"] > 0, result


@pytest.fixture
def capturing_kernel():
    k = Kernel()
    k.run("%load_ext msdebug\nimport mindspore as ms\nms.set_context(mode=ms.PYNATIVE_MODE)\n%msprint on")
    yield k
    k.close()


# The capture's end waits for MindSpore's queue (msdebug.backend.synchronize). In these kernels
# that wait is gated: armed by the cell's last statement (the waits before each print() stay
# as they are), it says so on the kernel's stderr stream and then waits until an interrupt
# stops it. The first interrupt is sent when that line arrives, so it lands in the wait every
# round; the second follows a random few milliseconds later, wherever the kernel is by then:
# the switch back of fd 1 and sys.stdout (msdebug makes it wait), IPython's post-cell hooks,
# ipykernel's reply, the idle loop. The wait's cap (120 s) is a safety net only.
GATE_READY = "msdebug-test: the capture waits for the queue"
GATE = f"""
import sys as _sys, time as _time
from msdebug import backend as _b, interrupts as _interrupts
_sync = _b.synchronize
_armed = [False]
def _gated():
    if _armed[0]:
        _armed[0] = False
        _sys.stderr.write({GATE_READY!r} + "\\n")
        _sys.stderr.flush()
        # Short sleeps: the interrupt may be received by another of the kernel's threads, which
        # does not wake a long sleep; the main thread handles it on its next loop iteration.
        for _ in range(12000):
            _time.sleep(0.01)
    return _sync()
_b.synchronize = _gated
"""

# Run while %msprint is still on: last_print() is the interrupted cell's log then. Also says
# whether anything was left behind: more holds than this cell's own capture, or a SIGINT
# handler other than SIG_IGN for ipykernel to put back after the message (it ignores SIGINT
# between messages; a handler that raises there would stop its event loop).
_PROBE = (
    "import msdebug as _m, signal as _signal\n"
    "_log = _m.last_print()\n"
    "_clean = _interrupts._holds == 1 and get_ipython().kernel.saved_sigint_handler is _signal.SIG_IGN\n"
    "print('probe', _interrupts.deferred, 'queue' in (_log.note if _log is not None else ''), _clean)\n"
)


class Mute(AssertionError):
    """The kernel did not answer (or did not show a print) in time."""


def _run_or_mute(k: Kernel, code: str, timeout: float) -> tuple[str, list[dict]]:
    try:
        return k.run(code, timeout=timeout)
    except (queue.Empty, AssertionError) as why:  # Kernel.run says why it got no answer
        raise Mute(f"no answer in {timeout} s to {code!r}: {str(why)[:300]}") from None


def double_interrupt_round(k: Kernel, number: int, rng: random.Random, timeout: float = 120) -> tuple[bool, int]:
    """One double interrupt at the end of a captured cell, then the kernel must answer and show
    print() again. Returns (the first interrupt stopped the capture's queue wait, how many
    interrupts msdebug has made wait so far in this kernel). Raises Mute."""
    msg_id = k.client.execute(f"print('cell{number}')\n_armed[0] = True")
    deadline = time.monotonic() + timeout
    while True:
        try:
            msg = k.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            raise Mute(f"cell{number} never reached the end of its capture") from None
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream" and GATE_READY in msg["content"].get("text", ""):
            break
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    k.manager.interrupt_kernel()
    time.sleep(rng.uniform(0.0, 0.004))  # spreads the second one; no outcome depends on it
    k.manager.interrupt_kernel()
    # ipykernel may lose the interrupted cell's idle status; the next cells show whether it answers.
    _, outputs = _run_or_mute(k, _PROBE, timeout)
    shown = text_of(outputs) + text_of(outputs, "display_data")
    words = next((line.split() for line in shown.splitlines() if line.startswith("probe ")), [])
    if len(words) != 4:
        raise Mute(f"round {number}: the probe's line was not shown: {outputs}")
    if words[3] != "True":
        raise Mute(f"round {number}: a hold or msdebug's SIGINT handler was left behind after the cell")
    # With the capture off, print() must reach the cell's own output again.
    _run_or_mute(k, "%msprint off", timeout)
    _, outputs = _run_or_mute(k, f"print('after{number}')", timeout)
    if f"after{number}" not in text_of(outputs):
        raise Mute(f"round {number}: print() not shown after the capture was switched off: {outputs}")
    _run_or_mute(k, "%msprint on", timeout)
    return words[2] == "True", int(words[1])


def test_kernel_interrupts_at_the_end_of_captured_cells_never_mute_the_kernel(capturing_kernel):
    k = capturing_kernel
    k.run(GATE)
    rng = random.Random(10)
    rounds = in_the_wait = with_a_wait = 0
    deferred = 0
    # Until the second interrupt has landed in msdebug's switch back (and waited) in 5 rounds.
    while with_a_wait < 5 and rounds < 300:
        rounds += 1
        stopped, now = double_interrupt_round(k, rounds, rng)
        in_the_wait += stopped
        with_a_wait += now > deferred
        deferred = now
    assert in_the_wait == rounds, (in_the_wait, rounds)
    assert with_a_wait >= 5, (with_a_wait, rounds)


def test_an_interrupt_just_before_ipykernel_ignores_sigint_again_does_not_stop_the_kernel(capturing_kernel):
    # ipykernel puts SIG_IGN back in post_handler_hook, after each message; a SIGINT raised on
    # that hook's first line (where a second Ctrl-C lands now and then) escapes dispatch_shell.
    # Without msdebug's guard its event loop stops and the kernel goes away.
    k = capturing_kernel
    k.run("%msprint off")
    msg_id = k.client.execute(
        "import signal as _signal\n"
        "_kernel = get_ipython().kernel\n"
        "_real_hook, _left = type(_kernel).post_handler_hook, [1]\n"
        "def _late():\n"
        "    if _left[0]:\n"
        "        _left[0] = 0\n"
        "        _signal.raise_signal(_signal.SIGINT)\n"
        "    return _real_hook(_kernel)\n"
        "_kernel.post_handler_hook = _late\n"
    )
    status = None
    while status != "idle":  # msdebug sends the idle status ipykernel did not get to send
        msg = k.client.get_iopub_msg(timeout=120)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status":
            status = msg["content"]["execution_state"]
    _, outputs = _run_or_mute(k, "print('still here', _left[0])", 120)
    assert "still here 0" in text_of(outputs), outputs
    _, outputs = _run_or_mute(k, "print(_kernel.saved_sigint_handler is _signal.SIG_IGN)", 120)
    assert text_of(outputs).strip() == "True", outputs


def test_threads_printing_in_a_kernel_with_msprint_lose_no_line(capturing_kernel):
    k = capturing_kernel
    code = (
        "%%msprint\n"
        "import threading\n"
        "def work(name):\n"
        "    for i in range(2000):\n"
        "        print(f'{name} {i}')\n"
        "threads = [threading.Thread(target=work, args=(f't{n}',)) for n in range(5)]\n"
        "for t in threads: t.start()\n"
        "for t in threads: t.join()\n"
        "print('cell end')\n"
    )
    # What was captured is counted, not what is shown: a long log shows only its head and tail.
    count = (
        "import msdebug\n"
        "_lines = set(msdebug.last_print().text.splitlines())\n"
        "_missing = [f't{n} {i}' for n in range(5) for i in range(2000) if f't{n} {i}' not in _lines]\n"
        "print(_missing[:5], len(_missing), 'cell end' in _lines)"
    )
    for _ in range(3):
        status, outputs = k.run(code)
        assert status == "ok"
        status, outputs = k.run(count)  # %msprint is on: its line comes back as the captured log
        printed = (text_of(outputs) + text_of(outputs, "display_data")).strip()
        assert status == "ok" and printed == "[] 0 True", printed


def test_a_thread_keeps_printing_while_the_main_thread_is_captured():
    # Not every thread belongs to the capture: one that started before keeps running during
    # and after it. Its lines written between captures and after the last one reach the real
    # stdout; none is lost (a line written while a capture is open lands in that capture);
    # every capture got the main thread's line. The thread writes whole lines (one write
    # each), so each line lands whole in one place.
    done = run_python(
        _BURST
        + textwrap.dedent(
            """
            import sys, threading, msdebug
            stop, tick = threading.Event(), threading.Event()
            written = [0]
            def chatter():
                while not stop.is_set():
                    sys.stdout.write(f"bg {written[0]}\\n")
                    written[0] += 1
                    tick.set()
            thread = threading.Thread(target=chatter)
            thread.start()
            logs = []
            for _ in range(30):
                tick.clear()
                tick.wait()  # a line written with no capture open
                with msdebug.capture_print(show=False) as cap:
                    print("main")
                logs.append(cap.log.text)
            last = written[0]
            while written[0] < last + 5:  # lines written after the last capture
                tick.clear()
                tick.wait()
            stop.set()
            thread.join()
            stdout_back = sys.stdout is sys.__stdout__
            sys.stdout.flush()
            report({"logs": logs, "written": written[0], "after_last": last, "stdout_back": stdout_back})
            """
        ),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    *lines, last_line = done.stdout.strip().splitlines()
    result = json.loads(last_line)
    assert result["stdout_back"], result
    screen = [int(line.split()[1]) for line in lines if line.startswith("bg ")]
    assert len(screen) == len([line for line in lines if line]), "only whole bg lines on the real stdout"
    captured = []
    for log in result["logs"]:
        own = log.splitlines()
        assert own.count("main") == 1, own[:5]
        captured += [int(line.split()[1]) for line in own if line != "main"]
    assert sorted(screen + captured) == list(range(result["written"])), "each bg line once, none lost"
    assert len(screen) >= 30 and max(screen) >= result["after_last"] + 4, (len(screen), result["after_last"])


def test_the_handler_is_removed_after_each_protected_call():
    result = _run(
        """
        import json, signal, msdebug
        before = signal.getsignal(signal.SIGINT)
        msdebug.set(mode="graph")
        with msdebug.context(mode="pynative"):
            pass
        with msdebug.capture_print(show=False):
            pass
        report({"same": signal.getsignal(signal.SIGINT) is before})
        """
    )
    assert result["same"], result


def test_an_interrupt_inside_a_special_method_that_c_code_called_is_raised_after_it():
    # C code may clear what a special method it called raised: a finalizer's error is only
    # printed ("Exception ignored in ..."), as PyObject_HasAttr and pybind11's hasattr clear
    # the errors of __getattr__ (MindSpore's C++ reads a Cell's attributes so at every GRAPH
    # call). A Ctrl-C handled in there was lost; now it is raised in the frame below, once the C
    # code has returned.
    result = _run(
        """
        import os, signal, sys
        from msdebug import interrupts

        class Finalized:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGINT)
                len("handled here, at the check after this call")

        interrupts.hold()
        raised_in = None
        try:
            thing = Finalized()
            del thing  # runs __del__ from C
            len("the first check outside")
        except KeyboardInterrupt as error:
            raised_in = where_raised(error)
        interrupts.let_go()
        report({"raised_in": raised_in, "passed_on": interrupts.passed_on})
        """
    )
    assert result == {"raised_in": "<module>", "passed_on": 1}, result


def test_an_interrupt_that_c_code_cleared_is_raised_again_where_python_runs_next():
    # Any Python function C code calls may have its error cleared (MindSpore's C++ calls the
    # has_init property of a cell's inputs at each GRAPH call): a weakref callback's is only
    # printed. The interrupt raised in the callback is raised again in the frame below it.
    result = _run(
        """
        import os, signal, sys, weakref
        from msdebug import interrupts

        class Thing:
            pass

        def callback(reference):
            os.kill(os.getpid(), signal.SIGINT)
            len("handled here, at the check after this call")

        interrupts.hold()
        raised_in, handled = None, []
        try:
            thing = Thing()
            reference = weakref.ref(thing, callback)
            del thing  # runs the callback from C, which prints and clears its error
            len("the first check outside")
        except KeyboardInterrupt as error:
            raised_in = where_raised(error)
        # One that Python code handles is not raised again.
        def handles():
            try:
                os.kill(os.getpid(), signal.SIGINT)
                len("raised here")
            except KeyboardInterrupt:
                handled.append(True)
        handles()
        len("no second interrupt here")
        interrupts.let_go()
        report({"raised_in": raised_in, "raised_again": interrupts.raised_again, "handled": handled})
        """
    )
    assert result == {"raised_in": "<module>", "raised_again": 1, "handled": [True]}, result


def test_an_interrupt_that_python_has_keeps_its_traceback_and_is_not_raised_again():
    # Run through exec() as IPython runs a cell: the interrupt leaves exec (C code) as an
    # exception, so the frame below sees it only after the watch has looked there. It must not
    # take that for a cleared interrupt and raise a new one over the person's traceback.
    result = _run(
        """
        import os, signal, sys, traceback
        from msdebug import interrupts

        def loop():
            turns = 0
            while True:
                turns += 1
                if turns == 1000:
                    os.kill(os.getpid(), signal.SIGINT)

        interrupts.hold()
        names = []
        try:
            exec(compile("loop()", "<cell>", "exec"))
        except KeyboardInterrupt:
            names = [frame.name for frame in traceback.extract_tb(sys.exc_info()[2])]
        interrupts.let_go()
        report({"names": names, "raised_again": interrupts.raised_again, "watching": sys.getprofile() is not None})
        """
    )
    assert result["names"][-2:] == ["loop", "_handler"], result  # the person's loop, then msdebug's handler
    assert (result["raised_again"], result["watching"]) == (0, False), result


def test_a_thread_may_use_a_scope_too():
    result = _run(
        """
        import json, threading, msdebug
        seen = []
        def work():
            with msdebug.context(max_call_depth=77):
                seen.append(msdebug.get("max_call_depth"))
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        report({"seen": seen, "after": msdebug.get("max_call_depth")})
        """
    )
    assert result == {"seen": [77], "after": 1000}


def test_an_interrupt_that_waits_in_the_main_thread_is_not_raised_in_another_thread():
    # An interrupt that waits for protected code in the main thread belongs to the main
    # thread. ipykernel's IO thread calls the kernel session's send (protected by msdebug)
    # to flush print(): raised there, it killed the IO thread's loop, so the cell was never
    # interrupted and its later output never shown.
    result = _run(
        """
        import os, signal, threading
        from msdebug import interrupts

        @interrupts.protected
        def thread_send():
            return "sent"

        in_thread = []
        def flush():
            try:
                in_thread.append(thread_send())
            except KeyboardInterrupt:
                in_thread.append("KeyboardInterrupt")

        @interrupts.protected
        def switch():
            os.kill(os.getpid(), signal.SIGINT)  # waits: this frame is protected
            thread = threading.Thread(target=flush)
            thread.start()
            thread.join()

        try:
            switch()
            main = "not interrupted"
        except KeyboardInterrupt:
            main = "KeyboardInterrupt"
        report({"thread": in_thread, "main": main})
        """
    )
    assert result == {"thread": ["sent"], "main": "KeyboardInterrupt"}


# Raises KeyboardInterrupt inside Thread._wait_for_tstate_lock right after its non-blocking
# acquire() has failed: where a Ctrl-C lands now and then (the signal is handled at the next
# instruction). CPython 3.11's except branch then finds the lock held, by the running thread,
# releases it and marks that thread stopped.
_IS_ALIVE_INTERRUPTED = """
import dis, sys, threading
_code = threading.Thread._wait_for_tstate_lock.__code__
_fired = []

def _inject(frame, event, arg):
    if frame.f_code is not _code:
        return None
    frame.f_trace_opcodes = True

    called = []

    def local(frame, event, arg):
        name = dis.opname[frame.f_code.co_code[frame.f_lasti]]
        if event == "opcode" and name == "CALL":
            called.append(name)  # lock.acquire(block, timeout)
        elif event == "opcode" and called and name.startswith("POP_JUMP") and not _fired:
            _fired.append(name)  # its result is being tested: the call has returned
            raise KeyboardInterrupt
        return local

    return local

def interrupted(call):
    sys.settrace(_inject)
    try:
        call()
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)
    return bool(_fired)
"""


def test_a_ctrl_c_inside_is_alive_does_not_make_ipykernel_think_its_iopub_thread_dead():
    # The control, in a plain interpreter: a running thread is then reported dead.
    control = _run(
        _IS_ALIVE_INTERRUPTED
        + textwrap.dedent(
            """
            stop = threading.Event()
            thread = threading.Thread(target=stop.wait)
            thread.start()
            fired = interrupted(thread.is_alive)
            report({"fired": fired, "alive": thread.is_alive(), "running": thread.ident in sys._current_frames()})
            stop.set()
            """
        )
    )
    assert control == {"fired": True, "alive": False, "running": True}
    # In a kernel with msdebug, the same Ctrl-C during print()'s flush (which asks the IOPub
    # thread is_alive()) leaves ipykernel sending from its IOPub thread only.
    k = Kernel()
    try:
        k.run("%load_ext msdebug")
        k.run(_IS_ALIVE_INTERRUPTED)
        setup = (
            "from ipykernel.kernelapp import IPKernelApp\nt = IPKernelApp.instance().iopub_thread.thread\nprint('x')\n"
        )
        alive = k.evaluate(setup + "interrupted(sys.stdout.flush)", "t.is_alive()")
        assert alive == "True"
        status, outputs = k.run("print('after')")
        assert status == "ok" and text_of(outputs) == "after\n", outputs
    finally:
        k.close()


def test_a_ctrl_c_during_ipykernels_flush_waits_for_its_end():
    # ipykernel's flush() waits for its IOPub thread on a threading.Event; a Ctrl-C inside that
    # wait, between the acquire of the event's lock and the block it guards, left the lock held:
    # the IOPub thread blocked in Event.set() and the kernel showed nothing again. With msdebug
    # the interrupt is raised when the flush has returned.
    k = Kernel()
    try:
        k.run("%load_ext msdebug")
        code = """
import os, signal, sys, threading, traceback
def _kill_in_wait(frame, event, arg):
    if event == "call" and frame.f_code is threading.Event.wait.__code__:
        sys.settrace(None)
        os.kill(os.getpid(), signal.SIGINT)
    return None
print('before')
sys.settrace(_kill_in_wait)
try:
    sys.stdout.flush()
    where = "not interrupted"
except KeyboardInterrupt as error:
    where = traceback.extract_tb(error.__traceback__)[-1].filename
finally:
    sys.settrace(None)
"""
        where = k.evaluate(code, "where")
        assert "threading.py" not in where and "interrupts.py" in where, where
        status, outputs = k.run("print('after')", timeout=60)
        assert status == "ok" and text_of(outputs) == "after\n", outputs
    finally:
        k.close()


def test_a_hold_over_a_handler_someone_put_in_place_of_ours_puts_that_one_back():
    """A hold never let go (or let go late) while another library set its own SIGINT handler:
    the next hold installs ours again, and its let go must put that library's handler back (it
    left ours installed for good; seen in the full suite as a watch's test found msdebug's
    handler after the watch had ended)."""
    import signal

    from msdebug import interrupts

    start, holds = signal.getsignal(signal.SIGINT), interrupts._holds  # other tests of this process may hold
    try:
        interrupts.hold()  # left open, as a capture that lasts
        signal.signal(signal.SIGINT, signal.default_int_handler)  # another library's own
        interrupts.hold()
        assert signal.getsignal(signal.SIGINT) is interrupts._handler
        interrupts.let_go()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        interrupts.let_go()  # the old hold ends: nothing of ours to put back
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler and interrupts._holds == holds
        interrupts.hold()  # and the usual pair is untouched
        interrupts.let_go()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, start)
