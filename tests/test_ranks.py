"""``%msrun`` (prototype): real ranks started through MindSpore's msrun on this CPU build."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from helpers import Kernel, text_of


def _rank_processes() -> set[int]:
    found = subprocess.run(["pgrep", "-f", "msdebug/ranks/worker.py"], capture_output=True, text=True).stdout
    return {int(pid) for pid in found.split()}


def _gone(pids: set[int]) -> bool:
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                    return False
        except OSError:
            continue
    return True


@pytest.fixture(scope="module")
def ranks():
    kernel = Kernel()
    status, outputs = kernel.run("%load_ext msdebug\n%msrun start -n 2", timeout=300)
    assert status == "ok", outputs
    status, outputs = kernel.run(
        "%%msrun\nimport numpy as np, mindspore as ms\nfrom mindspore import ops\n"
        "from mindspore.communication import init, get_rank\ninit()",
        timeout=300,
    )
    assert status == "ok", outputs
    yield kernel
    kernel.run("%msrun stop", timeout=120)
    kernel.close()


def test_an_allreduce_on_two_ranks_prints_per_rank(ranks):
    status, outputs = ranks.run("%%msrun\nprint(ops.AllReduce()(ms.Tensor(np.ones(2, np.float32) * (get_rank() + 1))))")
    assert status == "ok", outputs
    assert sorted(text_of(outputs, "stream", "stdout").splitlines()) == ["[rank 0] [3. 3.]", "[rank 1] [3. 3.]"]


def test_each_rank_keeps_its_namespace(ranks):
    ranks.run("%%msrun\nmine = get_rank() * 10")
    status, outputs = ranks.run("%%msrun --ranks 1\nprint(mine)")
    assert text_of(outputs, "stream", "stdout").splitlines() == ["[rank 1] 10"]


def test_a_rank_that_raises_is_named(ranks):
    status, outputs = ranks.run("%%msrun\nif get_rank() == 1:\n    raise ValueError('rank one fails')")
    assert "[rank 1] error: ValueError: rank one fails" in text_of(outputs, "stream", "stderr")


def test_ctrl_c_in_the_notebook_interrupts_every_rank(ranks):
    for rank in (0, 1):
        marker = f"/tmp/msdebug-rank-loop-{rank}"
        if os.path.exists(marker):
            os.remove(marker)
    msg_id = ranks.client.execute(
        "%%msrun\nimport time\nopen(f'/tmp/msdebug-rank-loop-{get_rank()}', 'w').close()\nwhile True:\n    time.sleep(0.01)"
    )
    deadline = time.monotonic() + 120
    while not all(os.path.exists(f"/tmp/msdebug-rank-loop-{rank}") for rank in (0, 1)):
        assert time.monotonic() < deadline, "the ranks never started the loop"
        time.sleep(0.02)
    ranks.manager.interrupt_kernel()
    status, outputs = ranks.finish(msg_id, 120)
    assert status == "error" and [o["ename"] for o in outputs if o["type"] == "error"] == ["KeyboardInterrupt"]
    status, outputs = ranks.run("%%msrun\nprint('still here')")
    assert sorted(text_of(outputs, "stream", "stdout").splitlines()) == ["[rank 0] still here", "[rank 1] still here"]


def test_ranks_end_within_seconds_of_a_killed_kernel():
    before = _rank_processes()
    kernel = Kernel()
    try:
        status, outputs = kernel.run("%load_ext msdebug\n%msrun start -n 2", timeout=300)
        assert status == "ok", outputs
        ours = _rank_processes() - before
        assert len(ours) >= 3  # the scheduler and two workers (and their watchers)
        os.kill(kernel.manager.provisioner.process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while not _gone(ours) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(ours), f"still running 5 s after the kernel was killed: {ours}"
    finally:
        kernel.close()


def test_a_rank_left_in_a_collective_is_found_with_its_stack():
    kernel = Kernel()
    try:
        status, outputs = kernel.run("%load_ext msdebug\n%msrun start -n 2\n", timeout=300)
        assert status == "ok", outputs
        status, outputs = kernel.run(
            "%%msrun\nimport numpy as np, mindspore as ms\nfrom mindspore import ops\n"
            "from mindspore.communication import init, get_rank\ninit()",
            timeout=300,
        )
        assert status == "ok", outputs
        # Rank 1 enters an AllReduce that rank 0 never joins.
        status, outputs = kernel.run(
            "%%msrun --hang-after 3\nif get_rank() == 1:\n    print(ops.AllReduce()(ms.Tensor(np.ones(2, np.float32))))",
            timeout=120,
        )
        text = text_of(outputs, "stream", "stderr")
        assert (
            "[rank 1] still busy 3 s after the others finished, at a collective (AllReduce) at cell line 3" in text
        ), (
            status,
            outputs,
        )
        assert "[rank 0]" not in text
        kernel.run("%msrun stop", timeout=120)
    finally:
        kernel.close()
