"""Device changes, each in a fresh process: MindSpore fixes the device once per process."""

from __future__ import annotations

from helpers import run_python

SESSION = """
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython
ip = start_ipython()
ip.run_line_magic("load_ext", "msdebug")

def magic(line):
    try:
        print("ok:", repr(ip.run_line_magic("mscontext", line)).replace("\\n", " | "))
    except UsageError as error:
        print("usage error:", error)
"""


def session(body: str):
    result = run_python(SESSION + body)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_device_can_be_chosen_before_the_first_operator_and_only_once():
    out = session(
        """
magic("device=CPU:1")
import mindspore as ms
print("current:", tuple(ms.get_current_device()))
magic("device=CPU:1")
magic("device_id=2")
"""
    )
    assert out[0] == "ok: device: CPU:0 → CPU:1"
    assert out[1] == "current: ('CPU', 1)"
    assert out[2] == "ok: device: CPU:1 (unchanged)"
    assert out[3] == (
        "usage error: device: mindspore.set_device() already chose CPU:1 and can be called only once per "
        "process; restart the kernel and make this the first cell: import mindspore; mindspore.set_device('CPU', 2)"
    )


def test_after_the_first_operator_the_device_is_fixed_and_the_message_gives_a_first_cell():
    out = session(
        """
import numpy as np, mindspore as ms
(ms.Tensor(np.ones(2, np.float32)) + 1).asnumpy()
magic("device=CPU:3")
magic("device=CPU")
magic("device_target=CPU")
print("still works:", (ms.Tensor(np.ones(2, np.float32)) * 2).asnumpy().tolist())
"""
    )
    assert out[0] == (
        "usage error: device: the runtime already started on CPU:0, so it cannot change to CPU:3 in this "
        "process; restart the kernel and make this the first cell: import mindspore; mindspore.set_device('CPU', 3)"
    )
    assert out[1:3] == ["ok: device: CPU:0 (unchanged)", "ok: device: CPU:0 (unchanged)"]  # what already is: fine
    assert out[3] == "still works: [2.0, 2.0]"


def test_a_target_the_build_lacks_is_refused_before_mindspore_logs_anything():
    result = run_python(SESSION + 'magic("device=GPU:0")\nmagic("device_target=Ascend")\n')
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("usage error: device: GPU is not available in this MindSpore build (it supports CPU)")
    assert lines[0].endswith(
        "make this the first cell of a fresh kernel: import mindspore; mindspore.set_device('GPU', 0)"
    )
    assert lines[1].startswith("usage error: device: Ascend is not available")
    # MindSpore itself would first log "libcuda.so ... is not found" errors; msdebug never asks it.
    assert "libcuda" not in result.stderr and "[ERROR]" not in result.stderr
