"""What the settings do to real MindSpore code, driven through the magics in a real kernel.

A real kernel, not the in-process test shell: MindSpore's graph compiler resolves the
names a ``construct`` uses through ``sys.modules["__main__"]``, which is the user's
namespace in a kernel (and in terminal IPython) but pytest's module in-process.
"""

from __future__ import annotations

import pytest

from helpers import Kernel, text_of

NET = """
import numpy as np, mindspore as ms
from mindspore import nn

calls = []

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 2)

    def construct(self, x):
        calls.append("python")  # runs only when construct runs as Python (PyNative)
        return self.dense(x)

net = Net()
x = ms.Tensor(np.ones((1, 3), np.float32))

def run_three():
    calls.clear()
    outs = [net(x).asnumpy() for _ in range(3)]
    return len(calls), outs[0].round(6).ravel().tolist()
"""

FAULTY = """
import traceback
from mindspore import ops

data = ms.Tensor(np.arange(3, dtype=np.float32))

def steps():
    y = ops.gather(data, ms.Tensor(np.array([10])), 0)  # the faulty operator
    z = y * 2
    return z.asnumpy()                                  # the first sync point

def raising_line():
    try:
        steps()
    except RuntimeError as error:
        assert "the 'input_indices' should be in the range [0, 3), but got 10" in str(error)
        return [f for f in traceback.extract_tb(error.__traceback__) if f.name == "steps"][-1].line
"""


@pytest.fixture(scope="module")
def nb():
    kernel = Kernel()
    assert kernel.run("%load_ext msdebug")[0] == "ok"
    assert kernel.run(NET)[0] == "ok"
    assert kernel.run(FAULTY)[0] == "ok"
    yield kernel
    kernel.close()


def value(kernel: Kernel, code: str):
    status, outputs = kernel.run(code)
    assert status == "ok", outputs
    return eval(text_of(outputs, "execute_result"))  # noqa: S307 - our own repr of plain data


def test_mode_decides_whether_construct_runs_as_python(nb):
    eager_calls, eager_out = value(nb, "%mscontext mode=pynative\nrun_three()")
    graph_calls, graph_out = value(nb, "%mscontext mode=graph\nrun_three()")
    again_calls, _ = value(nb, "%mscontext mode=pynative\nrun_three()")
    assert (eager_calls, graph_calls, again_calls) == (3, 0, 3)  # GRAPH compiled construct: no Python
    assert graph_out == pytest.approx(eager_out, rel=1e-6)


def test_a_scoped_cell_runs_the_same_net_in_graph_mode(nb):
    assert value(nb, "%%mscontext mode=graph\nrun_three()")[0] == 0
    assert value(nb, "run_three()")[0] == 3
    assert value(nb, "ms.get_context('mode')") == 1


def test_pynative_synchronize_moves_the_error_to_the_faulty_line(nb):
    nb.run("%mscontext mode=pynative pynative_synchronize=false")
    assert value(nb, "raising_line()").startswith("return z.asnumpy()")  # asynchronous: next sync point
    assert value(nb, "%mscontext pynative_synchronize=true\nraising_line()").startswith("y = ops.gather(")
    assert value(nb, "%mscontext pynative_synchronize=false\nraising_line()").startswith("return z.asnumpy()")


def test_a_scoped_cell_makes_only_that_cell_synchronous(nb):
    nb.run("%mscontext mode=pynative pynative_synchronize=false")
    assert value(nb, "%%mscontext pynative_synchronize=true\nraising_line()").startswith("y = ops.gather(")
    assert value(nb, "raising_line()").startswith("return z.asnumpy()")
