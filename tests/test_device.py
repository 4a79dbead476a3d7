"""Device changes, each in a fresh process: MindSpore fixes the device once per process."""

from __future__ import annotations

from helpers import ShellOutput, fresh_shell

MAGIC = """
ip.run_line_magic("load_ext", "msdebug")

def magic(line):
    try:
        print("ok:", repr(ip.run_line_magic("mscontext", line)).replace("\\n", " | "))
    except UsageError as error:
        print("usage error:", error)
"""


def session(body: str) -> ShellOutput:
    return fresh_shell(MAGIC + body)


def test_before_the_first_operator_a_device_can_be_chosen_once_and_a_missing_target_is_refused_quietly():
    out = session(
        """
magic("device=GPU:0")
magic("device_target=Ascend")
magic("device=CPU:1")
import mindspore as ms, msdebug
print("current:", tuple(ms.get_current_device()))
magic("device=CPU:1")
magic("device_id=2")
magic("device=CPU:2")
print("after:", ms.get_context("device_id"), tuple(ms.get_current_device()), msdebug.get("device_id"))
"""
    )
    assert out[0].startswith("usage error: device: GPU is not available in this MindSpore build (it supports CPU)")
    assert out[0].endswith(
        "make this the first cell of a fresh kernel: import mindspore; mindspore.set_device('GPU', 0)"
    )
    assert out[1].startswith("usage error: device: Ascend is not available")
    # MindSpore itself would first log "libcuda.so ... is not found" errors; msdebug never asks it.
    assert "libcuda" not in out.stderr and "[ERROR]" not in out.stderr
    assert out[2] == "ok: device: CPU:0 → CPU:1"
    assert out[3] == "current: ('CPU', 1)"
    assert out[4] == "ok: device: CPU:1 (unchanged)"
    # device_id alone keeps set_context's meaning; after set_device MindSpore accepts it and ignores
    # it, and msdebug says so; device= is refused: set_device was called.
    assert out[5] == (
        "ok: device_id: 1 (unchanged)  [2 ignored: mindspore.set_device() already chose CPU:1, which stays "
        "in use (MindSpore ignores set_context(device_id=...) after it)]"
    )
    assert out[6] == (
        "usage error: device: mindspore.set_device() already chose CPU:1 and can be called only once per "
        "process; restart the kernel and make this the first cell: import mindspore; mindspore.set_device('CPU', 2)"
    )
    assert out[7] == "after: 1 ('CPU', 1) 1"  # MindSpore's own view and msdebug's agree


def test_device_id_alone_before_set_device_is_set_context_and_may_change_again():
    out = session(
        """
magic("device_id=1")
magic("device_id=2")
import mindspore as ms
print("after:", ms.get_context("device_id"), tuple(ms.get_current_device()))
"""
    )
    assert out[:2] == ["ok: device_id: 0 → 1", "ok: device_id: 1 → 2"]
    assert out[2] == "after: 2 ('CPU', 0)"


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
