"""Ctrl-C that waits while msdebug switches something: the context, fd 1, ``sys.stdout``.

A ``KeyboardInterrupt`` can be raised between any two calls of Python code. A switch that is
half done when it lands (fd 1 moved but ``sys.stdout`` not yet, a key written but its undo
not yet armed) leaves the kernel changed for good. Deferring the signal with a handler that
is swapped in at the start of a switch and out at its end still leaves windows: the
interpreter checks for signals when it enters any Python function, so an interrupt can land
on the first line of the very code meant to put things back.

So the decision is taken by one SIGINT handler, from the stack, at the moment the signal is
handled: while a frame of a :func:`protected` function is on the stack (the entry of that
function included), the interrupt waits and is raised when the outermost protected call
returns; a frame of an :func:`interruptible` function nearer the top (waiting for MindSpore's
queue) lets it through at once, and the protected code around it then finishes its switch in
``finally``. The handler is installed by :func:`hold` for as long as a switched state lives
(a scoped cell, a capture) and removed by the matching :func:`let_go`; elsewhere it hands the
signal to the handler it replaced. Only the main thread receives signals, so from other
threads all of this does nothing.

An interrupt raised inside a special method that C code called may never reach Python:
``PyObject_HasAttr`` and pybind11's ``hasattr`` and ``getattr`` with a default clear any
error of ``__getattr__`` or ``__getattribute__``, and a finalizer's error is only printed.
MindSpore's C++ looks up a missing Cell attribute at every GRAPH call (``get_args_for_run``)
and clears what ``__getattr__`` raised, so a Ctrl-C handled there was lost and the cell ran
on. While such a method is on the stack the handler raises nothing; a profile function
(``sys.setprofile``, this thread only) raises the interrupt at the first call or return in
one of the frames that were below that method, that is once the C code has returned (where
protected code runs there, the interrupt waits for it). Asking for the signal again would not
do: the handler would run again at once, inside itself; and C code may call other Python
functions first.

C code may clear the error of any Python function it calls, not only of special methods:
MindSpore's ``get_args_for_run`` also calls the ``has_init`` property of its input tensors. So
an interrupt raised anywhere is watched (:func:`_watching`, the same kind of profile function)
until it reaches a frame below the one it was raised in. If the first of those frames to run
again has not seen it, and Python code has not handled it (an ``except`` in the frame itself),
C code in between cleared it, and it is raised again there.
"""

from __future__ import annotations

import dis
import functools
import signal
import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any, TypeVar

__all__ = ["protected", "interruptible", "hold", "let_go", "keep_while_held", "enter_held"]

Function = TypeVar("Function", bound=Callable[..., Any])
T = TypeVar("T")

_PROTECTED: set[CodeType] = set()
_INTERRUPTIBLE: set[CodeType] = set()
_WRAPPERS: set[CodeType] = set()  # protected() wrappers: they protect until they start to leave

_holds = 0  # how many hold() are open; the handler is installed while it is above 0
_previous: Any = None  # the handler ours replaced
_pending = False  # an interrupt arrived while protected; raised when the protected code ends
#: The count of holds below the latest install of our handler over another one while holds were
#: open (someone replaced ours: those holds can no longer put anything back); 0 when none.
_reinstalled_over = 0
deferred = 0  # interrupts that waited for protected code, since the process started (tests count them)
passed_on = 0  # interrupts raised outside a special method C code called, not in it (tests count them)
# Special methods whose errors C code may clear (see above): an interrupt waits until none runs.
_CLEARED_BY_C = frozenset({"__getattr__", "__getattribute__", "__del__"})
_below: list[FrameType] = []  # where _outside raises, or _watching looks: the frames below
_below_ids: set[int] = set()
_raised: BaseException | None = None  # the interrupt _watching follows, and the frame it was raised in
_raised_in: FrameType | None = None
raised_again = 0  # interrupts that C code cleared and _watching raised again (tests count them)
# A frame's last instruction when it returns or yields (not when an exception leaves it).
_RETURNS = frozenset(dis.opmap[name] for name in ("RETURN_VALUE", "RETURN_CONST", "YIELD_VALUE") if name in dis.opmap)
_keepers: list[Callable[[bool], None]] = []  # told True at the first hold(), False after the last let_go()


def _handler(signum: int, frame: FrameType | None) -> None:
    global _pending, deferred
    if _protecting(frame):
        _pending = True
        deferred += 1
        return
    _pending = False  # one that waited is answered by this one: it is raised now, not later again
    if _raise_outside(frame):
        return
    previous = _previous
    try:
        if callable(previous):
            previous(signum, frame)
            return
        raise KeyboardInterrupt
    except KeyboardInterrupt as interrupt:
        _watch(interrupt, frame)
        raise


def _protecting(frame: FrameType | None) -> bool:
    while frame is not None:
        code = frame.f_code
        if code in _INTERRUPTIBLE:
            return False
        if code in _PROTECTED and not (code in _WRAPPERS and frame.f_locals.get("_leaving")):
            return True
        frame = frame.f_back
    return False


def _raise_outside(frame: FrameType | None) -> bool:
    """When a special method whose errors C code may clear is on the stack, have
    :func:`_outside` raise the interrupt in a frame below it, and return True. False when none
    is, none is below it, or another profile function is in use: the interrupt is raised here."""
    global passed_on
    below: list[FrameType] = []
    special = False
    while frame is not None:
        if frame.f_code.co_name in _CLEARED_BY_C:
            special = True
            below.clear()  # only the frames below the outermost one
        else:
            below.append(frame)
        frame = frame.f_back
    if not special:
        return False
    current = sys.getprofile()
    if current is _outside:
        return True  # one is owed already: this one is the same Ctrl-C
    if current is not None or not below:
        return False
    passed_on += 1
    _set_below(below)
    sys.setprofile(_outside)
    return True


def _set_below(below: list[FrameType]) -> None:
    _below[:] = below
    _below_ids.clear()
    _below_ids.update(map(id, below))


def _outside(frame: FrameType, event: str, arg: Any) -> None:
    """The profile function of :func:`_raise_outside`: at the first call or return in a frame
    below the special method, it goes, and the interrupt is raised there, or waits for the
    protected code it came in."""
    global _pending, deferred
    if id(frame) not in _below_ids:
        return
    _stop()
    if not _protecting(frame):
        raise KeyboardInterrupt
    _pending = True  # raised by the protected call's end
    deferred += 1


def _watch(interrupt: BaseException, frame: FrameType | None) -> None:
    """Follow ``interrupt``, just raised in ``frame``, with :func:`_watching` (not where
    another profile function is in use, or no frame is below)."""
    global _raised, _raised_in
    if frame is None or frame.f_back is None or sys.getprofile() not in (None, _watching):
        return
    below = []
    outer = frame.f_back
    while outer is not None:
        below.append(outer)
        outer = outer.f_back
    _raised, _raised_in = interrupt, frame
    _set_below(below)
    sys.setprofile(_watching)


def _returns(frame: FrameType) -> bool:
    """Whether ``frame`` returns or yields (rather than an exception leaving it)."""
    code = frame.f_code.co_code
    return 0 <= frame.f_lasti < len(code) and code[frame.f_lasti] in _RETURNS


def _watching(frame: FrameType, event: str, arg: Any) -> None:
    """The profile function of :func:`_watch`: stops once Python code has the interrupt;
    raises it again in a frame below where it was raised when C code in between cleared it."""
    global _pending, deferred, raised_again
    interrupt = _raised
    if frame is _raised_in or (event == "call" and frame.f_back is _raised_in):
        # The frame it was raised in returns, or runs on: in an except or finally block for it
        # (go on watching), or after Python code handled it.
        if (event == "return" and _returns(frame)) or (event != "return" and sys.exc_info()[1] is not interrupt):
            _stop()
        return
    if id(frame) not in _below_ids:
        return
    _stop()
    if event == "c_exception" or (event == "return" and not _returns(frame)):
        return  # an exception is on its way through this frame: the interrupt, or what it became
    reached = sys.exc_info()[1] is interrupt
    trace = interrupt.__traceback__ if interrupt is not None else None
    while trace is not None and not reached:
        reached = trace.tb_frame is frame
        trace = trace.tb_next
    if reached:
        return
    raised_again += 1  # it never came here: the C code between cleared it
    if not _protecting(frame):
        raise KeyboardInterrupt
    _pending = True
    deferred += 1


def _stop() -> None:
    global _raised, _raised_in
    sys.setprofile(None)
    _below.clear()
    _below_ids.clear()
    _raised = _raised_in = None


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def hold() -> None:
    """Install the handler (if it is not installed already) until the matching :func:`let_go`.

    Called from protected code or not, an interrupt anywhere in here leaves the count and the
    handler agreeing: the handler is installed first (before it, an interrupt goes to the old
    handler and nothing has changed), the count goes up after (our handler then lets it wait).
    """
    global _holds, _previous, _pending, _reinstalled_over
    if not _main_thread():
        return
    current = signal.getsignal(signal.SIGINT)
    if current is not _handler and callable(current):
        # A new hold: what waited in an earlier one was raised by the old handler already.
        _pending = False
        _previous = signal.signal(signal.SIGINT, _handler)
        # Holds still open whose handler someone replaced (a hold never let go, then another
        # library's handler): the handler goes back when this hold's count is let go.
        _reinstalled_over = _holds
    _holds += 1
    if _holds == 1:
        _tell_keepers(True)  # after the handler: an interrupt in a keeper waits


def let_go() -> None:
    """Undo one :func:`hold`; the last one puts the replaced handler back.

    The count goes down while our handler still lets interrupts wait (this code is protected);
    putting the old handler back is the last step, so an interrupt it raises leaves nothing half
    done. An interrupt that waited is raised by the protected call's end (``_deliver``).
    """
    global _holds, _reinstalled_over
    if not _main_thread() or not _holds:
        return
    _holds -= 1
    if not _holds:
        _tell_keepers(False)  # before the handler goes: an interrupt in a keeper waits
    if _holds == _reinstalled_over and signal.getsignal(signal.SIGINT) is _handler:
        _reinstalled_over = 0
        signal.signal(signal.SIGINT, _previous)


def enter_held(start: Callable[[], T], undo: Callable[[], object]) -> T:
    """A protected context manager's ``__enter__``: :func:`hold` SIGINT until its ``__exit__``, then ``start()``.

    When ``start`` raises (an interrupt that waited inside it is raised as it returns, so here
    too), ``undo()`` puts back what it did and the exception goes on.
    """
    hold()
    try:
        return start()
    except BaseException:
        undo()
        raise


def keep_while_held(keeper: Callable[[bool], None]) -> None:
    """Register ``keeper``: called with True at the first :func:`hold` (and now, when one is
    open) and with False after the last :func:`let_go`: code that would take SIGINT from the
    handler while msdebug holds it (MindSpore installs its own at every graph run) is kept off."""
    if keeper in _keepers:
        return
    _keepers.append(keeper)
    if _holds and _main_thread():
        keeper(True)


def _tell_keepers(holding: bool) -> None:
    for keeper in _keepers:
        try:
            keeper(holding)
        except Exception:  # noqa: BLE001, S110 - a keeper that fails must not break the hold
            pass


def _deliver(caller: FrameType | None) -> None:
    """Raise the interrupt that waited, once no protected frame is left below the caller.

    Only in the main thread: the interrupt is its own, and another thread that leaves a
    protected call (ipykernel's IO thread sending a stream message) must not take it.
    """
    global _pending
    if _pending and _main_thread() and not _protecting(caller):
        _pending = False
        if _raise_outside(caller):
            return
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as interrupt:
            _watch(interrupt, sys._getframe(1))  # it leaves the protected call's frame into the caller
            raise


def protected(function: Function) -> Function:
    """Decorator: a Ctrl-C that arrives while ``function`` runs waits until it has returned.

    The interrupt is then raised in the caller, as if it had arrived just after the call.
    """

    @functools.wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        hold()
        try:
            return function(*args, **kwargs)
        finally:
            let_go()
            # From here this frame protects nothing: an interrupt that waited is raised below,
            # one that arrives now is raised at once (in the caller, as if just after the call).
            _leaving = True  # noqa: F841 - read by _protecting() through f_locals
            _deliver(sys._getframe(1))

    _PROTECTED.add(function.__code__)
    _PROTECTED.add(guarded.__code__)
    _WRAPPERS.add(guarded.__code__)
    return guarded  # type: ignore[return-value]


def interruptible(function: Function) -> Function:
    """Decorator: a wait inside protected code that Ctrl-C may still stop (MindSpore's queue).

    The protected code around it must put things back in ``finally``.
    """
    _INTERRUPTIBLE.add(function.__code__)
    return function


_PROTECTED.update((hold.__code__, let_go.__code__, _tell_keepers.__code__))
