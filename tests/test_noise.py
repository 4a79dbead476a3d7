"""Log noise in a real kernel, with ipykernel's fd capture on as in JupyterLab.

ipykernel names each cell after a file it never writes (/tmp/ipykernel_<pid>/<hash>.py).
Whenever MindSpore wants a source line (compile errors, IR dumps) it logs "The file ...
may not exists" from C++, with the GIL held. For save_graphs that is a line per IR node:
far more than the 64 KiB fd-capture pipe holds, and the kernel deadlocks. msdebug writes
the cell files, which removes the lines, the hang, and gives the IR its source lines.

What the tests read of stderr includes what ipykernel publishes after the cell's reply
(``Kernel.run_with_late_output``): it forwards fd 2 from a thread, late on a busy machine.
"""

from __future__ import annotations

import glob
import os
import re

from helpers import run_python, text_of

NET = """
import numpy as np, mindspore as ms
from mindspore import nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 2)

    def construct(self, x):
        return self.dense(x)
"""

COMPILE_ERROR = """
class Bad(nn.Cell):
    def construct(self, x):
        return undefined_thing + x

ms.set_context(mode=ms.GRAPH_MODE)
try:
    Bad()(ms.Tensor(np.ones((1, 3), np.float32)))
except NameError as error:
    print("NameError")
"""


def _save_graphs_cell(path) -> str:
    return (
        f"ms.set_context(mode=ms.GRAPH_MODE, save_graphs=1, save_graphs_path={str(path)!r})\n"
        "print(Net()(ms.Tensor(np.ones((2, 3), np.float32))).shape)\n"
        "ms.set_context(save_graphs=0)"
    )


# --------------------------------------------------------------------------- premise checks
# MindSpore's and ipykernel's own behaviour, without msdebug: the reason for the cell files.
# When one fails, MindSpore or ipykernel changed, and the cell files may no longer be needed.


def test_premise_ir_dumps_of_code_without_a_file_flood_stderr(tmp_path):
    cell = NET + _save_graphs_cell(tmp_path / "graphs")
    result = run_python(
        f"""
        import linecache
        cell = {cell!r}
        name = "/tmp/no_such_ipykernel_dir/cell.py"   # a cell file ipykernel never wrote
        linecache.cache[name] = (len(cell), None, cell.splitlines(True), name)
        exec(compile(cell, name, "exec"), {{"__name__": "__main__"}})
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr.count("may not exists") > 1000
    assert len(result.stderr) > 64 * 1024  # more than a pipe holds


def test_premise_a_compile_error_in_a_kernel_logs_may_not_exists_without_msdebug(kernel):
    kernel.run(NET)
    status, outputs = kernel.run_with_late_output(COMPILE_ERROR)
    assert text_of(outputs, name="stdout") == "NameError\n"
    assert "may not exists" in text_of(outputs, name="stderr")


# --------------------------------------------------------------------------- msdebug


def test_with_msdebug_the_same_error_finds_its_source(kernel):
    kernel.run("%load_ext msdebug")
    kernel.run(NET)
    status, outputs = kernel.run_with_late_output(COMPILE_ERROR)
    assert text_of(outputs, name="stdout") == "NameError\n"
    assert "may not exists" not in text_of(outputs, name="stderr")


def test_with_msdebug_save_graphs_finishes_in_a_kernel_and_the_ir_has_source_lines(kernel, tmp_path):
    kernel.run("%load_ext msdebug")
    kernel.run(NET)
    status, outputs = kernel.run_with_late_output(_save_graphs_cell(tmp_path), timeout=120)  # hangs without msdebug
    assert status == "ok"
    assert text_of(outputs, name="stdout") == "(2, 2)\n"
    assert "may not exists" not in text_of(outputs, name="stderr")
    files = glob.glob(str(tmp_path / "*.ir"))
    assert len(files) > 50  # without the cell files the kernel stopped after 4
    # The last pipeline stage (24_execute in 2.10, 23_execute in 2.7): the dump finished.
    [execute] = [f for f in files if re.fullmatch(r"\d+_execute_\d+\.ir", os.path.basename(f))]
    with open(execute, encoding="utf-8", errors="replace") as handle:
        assert "/    def construct(self, x):/" in handle.read()


def test_msdebugs_own_calls_add_no_deprecation_lines(kernel):
    kernel.run("%load_ext msdebug")
    status, outputs = kernel.run_with_late_output(
        "%mscontext pynative_synchronize=true device_target=CPU save_graphs=0"
    )
    assert status == "ok" and text_of(outputs, name="stderr") == ""
    status, outputs = kernel.run_with_late_output("%%mscontext pynative_synchronize=false max_call_depth=999\nx = 1")
    assert status == "ok" and text_of(outputs, name="stderr") == ""
    # The same setting made directly still shows MindSpore's own warning: msdebug hides only its own.
    status, outputs = kernel.run_with_late_output("import mindspore as ms; ms.set_context(pynative_synchronize=True)")
    assert "'pynative_synchronize' will be deprecated" in text_of(outputs, name="stderr")


def test_cell_files_can_be_turned_off(kernel):
    kernel.run("%load_ext msdebug\n%config MsDebug.cell_files = False")
    kernel.run(NET)
    status, outputs = kernel.run_with_late_output(COMPILE_ERROR)
    assert "may not exists" in text_of(outputs, name="stderr")
