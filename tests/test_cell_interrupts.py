"""Ctrl-C at any moment of any msdebug cell magic: the kernel lives, hooks and handlers are as before.

A real kernel gets two real SIGINTs (``KernelManager.interrupt_kernel()``) 0-3 ms apart at a
random moment of a cell that loops until interrupted: PyNative ``%%msnan`` (about 900 hooked
attributes go in and out), GRAPH ``%%msprofile``, ``%%msprint`` and ``%%mscontext`` loops
(MindSpore installs its own SIGINT handler, which ends the process, at every graph run).
After every round the kernel must answer, ``Primitive.__call__`` and the Tensor operators must
be the originals, and SIGINT must be Python's default handler, at the C level too. The rounds
are counted, not timed; ``msdebug.interrupts.deferred`` shows how many interrupts landed inside
protected code (the hooks' install and removal, the profiler's start and stop).
"""

from __future__ import annotations

import os
import queue
import random
import time

import pytest

from helpers import Kernel, text_of

_SETUP = r"""
%load_ext msdebug
import ctypes, signal
import numpy as np
import mindspore as ms
import msdebug
from msdebug import interrupts
from mindspore import nn, Tensor
from mindspore.common.tensor import Tensor as _T
from mindspore.ops.primitive import Primitive as _P
from msdebug.backend.hooks import TENSOR_METHODS as _NAMES

_ORIGINAL = {name: _T.__dict__.get(name) for name in _NAMES}
_ORIGINAL_CALL = _P.__dict__["__call__"]

class _Action(ctypes.Structure):
    _fields_ = [("handler", ctypes.c_void_p), ("rest", ctypes.c_byte * 160)]

def _c_handler():
    action = _Action()
    ctypes.CDLL(None).sigaction(signal.SIGINT, None, ctypes.byref(action))
    return action.handler

signal.signal(signal.SIGINT, signal.default_int_handler)
_PYTHON_C_HANDLER = _c_handler()

def _intact():
    return {
        "primitive": _P.__dict__["__call__"] is _ORIGINAL_CALL,
        "tensor": all(_T.__dict__.get(name) is f for name, f in _ORIGINAL.items()),
        "handler": signal.getsignal(signal.SIGINT) is signal.default_int_handler,
        "c_handler": _c_handler() == _PYTHON_C_HANDLER,
    }

net = nn.Dense(16, 16)
x = Tensor(np.ones((4, 16), np.float32))
"""

# Each cell says it has started its loop (a file: the cell's output may be held until it ends),
# then loops until interrupted; the loop ends by itself after a minute, so that interrupts that
# were lost fail the count below instead of hanging the test.
_LOOP = "import os, time\nopen('inside', 'w').close()\n_end = time.monotonic() + 60\nwhile time.monotonic() < _end:\n"
_CELLS = {
    "msnan": "%%msnan --pynative\n" + _LOOP + "    y = net(x) * 2 + 1\n",
    "msprofile": "%%msprofile\n" + _LOOP + "    net(x)\n    msdebug.step()\n",
    "msprint": "%%msprint\n" + _LOOP + "    net(x)\n",
    "mscontext": "%%mscontext max_call_depth=50\n" + _LOOP + "    net(x)\n",
    "msdiff": "%%msdiff --repeat\n" + _LOOP + "    y = net(x) * 2 + 1\n",
}


@pytest.fixture(scope="module")
def kernel():
    k = Kernel()
    status, outputs = k.run(_SETUP)
    assert status == "ok", outputs
    yield k
    k.close()


def _finish(k: Kernel, msg_id: str) -> list[str]:
    """Wait for the interrupted cell's end; the names of the errors it reported."""
    errors, printed = [], {"stdout": "", "stderr": ""}
    try:
        while True:
            msg = k.client.get_iopub_msg(timeout=120)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "error":
                errors.append(msg["content"]["ename"])
            elif msg["msg_type"] == "stream" and msg["content"]["text"].strip() == "KeyboardInterrupt":
                # The second interrupt landed while IPython formatted the first one's traceback:
                # IPython then prints this line instead (InteractiveShell.showtraceback).
                errors.append("KeyboardInterrupt")
            elif msg["msg_type"] == "stream":
                printed[msg["content"]["name"]] += msg["content"]["text"]
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                if "Unexpected exception formatting exception" in printed["stdout"]:
                    errors.append(_shown_by_ipythons_fallback(printed["stderr"]))
                return errors
    except queue.Empty:
        return errors  # ipykernel may lose the idle status when an interrupt lands in its own code


def _shown_by_ipythons_fallback(stderr: str) -> str:
    """The error a cell ended in when IPython's formatter failed on its traceback (a frame of
    MindSpore's at "line None", seen twice in about 1500 rounds): IPython then prints the chain
    as Python does, the formatter's own error last, and sends no error message. The error it
    was showing ends the part before the one that goes through ``showtraceback``."""
    parts = stderr.split("During handling of the above exception, another exception occurred:")
    shown = next((parts[i - 1] for i in range(len(parts) - 1, 0, -1) if "in showtraceback" in parts[i]), "")
    last = shown.strip().splitlines()[-1:] or ["(not found)"]
    return last[0].split(":")[0]


def _value(k: Kernel, expression: str):
    status, outputs = k.run(f"print(repr({expression}))", timeout=120)
    assert status == "ok", outputs
    return eval(text_of(outputs, name="stdout").strip(), {"inf": float("inf")})  # noqa: S307 - our own repr


@pytest.mark.parametrize(
    ("magic", "mode", "rounds", "landed"),
    [("msnan", "PYNATIVE_MODE", 12, 4), ("msprofile", "GRAPH_MODE", 6, 2), ("msprint", "GRAPH_MODE", 8, 0),
     ("mscontext", "GRAPH_MODE", 8, 0), ("msdiff", "PYNATIVE_MODE", 12, 4)],
)  # fmt: skip
def test_double_interrupts_at_any_moment_of_a_cell_magic(kernel, magic, mode, rounds, landed):
    k = kernel
    status, outputs = k.run(f"ms.set_context(mode=ms.{mode}); net(x).asnumpy();")
    assert status == "ok", outputs
    rng = random.Random(magic)
    deferred_before = _value(k, "interrupts.deferred")
    landed_rounds = 0
    number = 0
    # At least `rounds` rounds, and on until `landed` of them had an interrupt wait for
    # protected code: on a loaded machine fewer of the random moments fall there.
    while number < rounds or (landed_rounds < landed and number < rounds * 5):
        number += 1
        before = _value(k, "interrupts.deferred")
        marker = os.path.join(k.cwd, "inside")
        if os.path.exists(marker):
            os.remove(marker)
        msg_id = k.start_until(_CELLS[magic], "inside")
        # The first interrupt in the loop, at once or a little later; the second 0-3 ms after
        # it, often inside the hooks' removal or the profiler's stop.
        time.sleep(rng.choice((0.0, rng.uniform(0.0, 0.05), rng.uniform(0.05, 0.5))))
        k.manager.interrupt_kernel()
        time.sleep(rng.uniform(0.0, 0.003))
        k.manager.interrupt_kernel()
        errors = _finish(k, msg_id)
        # Every round ends in a KeyboardInterrupt, and in nothing else: none is lost or turned into
        # another error (the second one, 0-3 ms later, may add a second KeyboardInterrupt).
        assert errors and set(errors) == {"KeyboardInterrupt"}, (number, errors)
        intact = _value(k, "_intact()")  # the kernel answers
        assert intact == {"primitive": True, "tensor": True, "handler": True, "c_handler": True}, (number, intact)
        landed_rounds += _value(k, "interrupts.deferred") > before
    # Enough rounds hit the protected parts.
    assert landed_rounds >= landed, (landed_rounds, _value(k, "interrupts.deferred") - deferred_before)
    # And the magic still works afterwards.
    status, outputs = k.run(_CELLS[magic].replace("+ 60", "+ 0.05"))
    assert status == "ok", outputs


def test_a_function_imported_in_an_earlier_msnan_cell_reports_to_the_running_watch(kernel):
    k = kernel
    status, outputs = k.run(
        "ms.set_context(mode=ms.PYNATIVE_MODE)\na = Tensor(np.ones(4, np.float32))\nzero = Tensor(np.zeros(4, np.float32))"
    )
    assert status == "ok", outputs
    status, outputs = k.run("%%msnan\nfrom mindspore.mint import div")
    assert status == "ok", outputs
    status, outputs = k.run("%%msnan\nq = div(a, zero)")
    assert status == "ok", outputs
    shown = "\n".join(out["data"].get("text/plain", "") for out in outputs if out["type"] == "display_data")
    assert "All finite" not in shown and "Div" in shown, shown
    # Outside a watch the old wrapper calls straight through, and nothing is left hooked.
    assert _value(k, "(div(a, zero).asnumpy().tolist(), _intact())") == (
        [float("inf")] * 4,
        {"primitive": True, "tensor": True, "handler": True, "c_handler": True},
    )


def test_ctrl_c_while_mindspore_reads_a_cells_attributes_in_c_is_not_lost(kernel):
    # At every GRAPH call MindSpore's C++ looks up a Cell attribute that is missing and clears
    # whatever __getattr__ raised: a Ctrl-C handled in there was lost, and the cell ran on
    # (1 double interrupt in about 300 of the test above, under load). Here the signal
    # arrives exactly there: this Cell sends it to its own process from __getattr__ when C++
    # below compile_and_run calls it.
    k = kernel
    status, outputs = k.run(
        "import os, sys\n"
        "ms.set_context(mode=ms.GRAPH_MODE)\n"
        "_trap = []\n"
        "class Trapped(nn.Dense):\n"
        "    def __getattr__(self, name):\n"
        "        if _trap and _trap[0] == 'armed' and sys._getframe(1).f_code.co_name == 'compile_and_run':\n"
        "            _trap[0] = name\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "            len(name)  # the handler runs at the check after this call, in here\n"
        "        return super().__getattr__(name)\n"
        "trapped = Trapped(16, 16)\n"
        "trapped(x).asnumpy();"  # compiled before the trap is armed
    )
    assert status == "ok", outputs
    before = _value(k, "interrupts.passed_on")
    status, outputs = k.run(
        "%%msprint\n_trap[:] = ['armed']\nfor _ in range(3):\n    trapped(x)\n_trap.append('ran on')"
    )
    assert _value(k, "_trap") != ["armed"], "MindSpore no longer looks up a missing attribute from C++ here"
    assert status == "error" and [o["ename"] for o in outputs if o["type"] == "error"] == ["KeyboardInterrupt"], outputs
    assert _value(k, "_trap")[1:] == [], "the cell ran on after the interrupt"
    assert _value(k, "interrupts.passed_on") > before
    assert _value(k, "_intact()") == {"primitive": True, "tensor": True, "handler": True, "c_handler": True}


def test_ctrl_c_while_mindspore_calls_a_tensor_property_from_c_is_not_lost(kernel):
    # The same C++ also calls Tensor.has_init for the cell's inputs and clears its error too:
    # the second way a double interrupt was lost (1 in about 700 rounds after the fix above).
    # Here has_init sends SIGINT to its own process when C++ below compile_and_run calls it.
    k = kernel
    status, outputs = k.run(
        "import os, sys\n"
        "from mindspore.common.tensor import Tensor as _Tensor\n"
        "ms.set_context(mode=ms.GRAPH_MODE)\n"
        "_has_init = _Tensor.__dict__['has_init']\n"
        "_trap = []\n"
        "def _trapped_has_init(self):\n"
        "    if _trap and _trap[0] == 'armed' and sys._getframe(1).f_code.co_name == 'compile_and_run':\n"
        "        _trap[0] = 'fired'\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        len('the handler runs at the check after this call, in here')\n"
        "    return _has_init.fget(self)\n"
        "_Tensor.has_init = property(_trapped_has_init, _has_init.fset)\n"
        "plain = nn.Dense(16, 16)\n"
        "plain(x).asnumpy();"  # compiled before the trap is armed
    )
    assert status == "ok", outputs
    try:
        before = _value(k, "interrupts.raised_again")
        status, outputs = k.run(
            "%%msprint\n_trap[:] = ['armed']\nfor _ in range(3):\n    plain(x)\n_trap.append('ran on')"
        )
        assert _value(k, "_trap")[:1] == ["fired"], "MindSpore no longer calls has_init from C++ here"
        errors = [o["ename"] for o in outputs if o["type"] == "error"]
        assert status == "error" and errors == ["KeyboardInterrupt"], outputs
        assert _value(k, "_trap")[1:] == [], "the cell ran on after the interrupt"
        assert _value(k, "interrupts.raised_again") > before
        assert _value(k, "_intact()") == {"primitive": True, "tensor": True, "handler": True, "c_handler": True}
    finally:
        k.run("_Tensor.has_init = _has_init")
