"""Print output captured in order, completely, from plain Python, IPython and real kernels.

Everything runs against the real MindSpore CPU build: GRAPH-mode and @jit Print write to
fd 1 from C++, PyNative Print goes through print().
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap
import time
import types

import pytest

import msdebug

from helpers import Kernel, run_python, text_of

NET = """
import numpy as np, mindspore as ms
from mindspore import nn, ops, Tensor
class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.p = ops.Print()
    def construct(self, x, i):
        self.p("graph", i)
        return x
@ms.jit
def jitted(x, i):
    ops.print_("jit", i)
    return x
ms.set_context(mode=ms.GRAPH_MODE)
net, x = Net(), Tensor(np.ones(2, np.float32))
"""

INTERLEAVED = """
for i in range(200):
    kind = i % 3
    if kind == 0:
        print("py", i)
    elif kind == 1:
        net(x, Tensor(i))
    else:
        jitted(x, Tensor(i))
"""


def _expected_interleaved() -> list[str]:
    lines = []
    for i in range(200):
        # GRAPH and jit Print show a scalar tensor as its bare value.
        lines += [f"py {i}"] if i % 3 == 0 else [("graph" if i % 3 == 1 else "jit"), str(i)]
    return lines


def _run_file(code: str, tmp_path: pathlib.Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``code`` as a script: GRAPH mode compiles from source files, not from ``-c``."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    return run_python(f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')", timeout=timeout)


def _shown(outputs: list[dict]) -> str:
    """The text/plain of the capture's display (what nbval compares)."""
    shown = [o["data"]["text/plain"] for o in outputs if o["type"] == "display_data"]
    assert len(shown) == 1, outputs
    return shown[0]


# --------------------------------------------------------------------------- plain Python


def test_plain_python_keeps_order_and_shows_on_exit(tmp_path):
    out = _run_file(
        NET
        + """
import msdebug
with msdebug.capture_print() as cap:
"""
        + textwrap.indent(INTERLEAVED, "    ")
        + """
print("after", len(cap.log.items), len(cap.log.text.splitlines()))
""",
        tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines[:-1] == _expected_interleaved()
    assert lines[-1] == f"after {len(_expected_interleaved())} {len(_expected_interleaved())}"


def test_c_code_holding_the_gil_writes_4_mb_without_deadlock():
    # ctypes.PyDLL keeps the GIL during the call: a pipe-and-thread capture would hang here
    # once the pipe buffer is full. 4 MB in one write(2), then 3000 small ones.
    out = run_python(
        """
import ctypes, os, msdebug
libc = ctypes.PyDLL(None)
big = b"x" * (4 << 20) + b"\\n"
fds = len(os.listdir("/proc/self/fd"))
with msdebug.capture_print(show=False) as cap:
    libc.write(1, big, len(big))
    for i in range(3000):
        line = b"line %d\\n" % i
        libc.write(1, line, len(line))
print(len(cap.log.raw) == len(big) + sum(len(b"line %d\\n" % i) for i in range(3000)), cap.log.raw[:len(big)] == big,
      len(os.listdir("/proc/self/fd")) - fds)
""",
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["True", "True", "0"]


def test_nested_captures_and_a_thread():
    out = run_python("""
import threading, msdebug
with msdebug.capture_print(show=False) as outer:
    print("outer 1")
    with msdebug.capture_print(show=False) as inner:
        print("inner")
        t = threading.Thread(target=lambda: print("from a thread"))
        t.start(); t.join()
    print("outer 2")
print(repr(outer.log.text), repr(inner.log.text))
""")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "'outer 1\\nouter 2\\n' 'inner\\nfrom a thread\\n'"


def test_an_error_inside_keeps_the_output_and_restores_fd_1(tmp_path):
    out = run_python("""
import os, sys, msdebug
fds = len(os.listdir("/proc/self/fd"))
try:
    with msdebug.capture_print(show=False) as cap:
        print("before")
        os.write(1, b"c level\\n")
        raise ValueError("boom")
except ValueError:
    pass
print(repr(cap.log.text), sys.stdout is sys.__stdout__, len(os.listdir("/proc/self/fd")) - fds)
""")
    assert out.stdout.strip() == "'before\\nc level\\n' True 0", out.stderr


def test_no_fd_leaks_over_many_captures():
    # This check failed once on purpose: with the memfd left open it grows by one per capture.
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        with msdebug.capture_print(show=False):
            os.write(1, b"x" * 70000)
    assert len(os.listdir("/proc/self/fd")) == before


# --------------------------------------------------------------------------- print_file_path


def test_print_file_path_on_cpu_writes_print_output_to_a_new_file(tmp_path):
    (tmp_path / "taken.txt").write_text("keep me\n")
    out = _run_file(
        NET
        + f"""
import os, time, msdebug
os.chdir({str(tmp_path)!r})
report = msdebug.set(print_file_path="run.txt")
print("on screen")
net(x, Tensor(1)); ms.set_context(mode=ms.PYNATIVE_MODE); net(x, Tensor(2)); jitted(x, Tensor(3)).asnumpy()
print("path", msdebug.get("print_file_path"))
msdebug.set(print_file_path="taken.txt")
net(x, Tensor(4))
print("second", os.path.basename(msdebug.get("print_file_path")).split(".")[:2])
msdebug.set(print_file_path="")
print("screen again"); net(x, Tensor(5))
""",
        tmp_path,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines[0] == "on screen" and lines[1] == f"path {tmp_path / 'run.txt'}"
    assert lines[2] == "second ['taken', 'txt']"
    assert lines[3:] == ["screen again", "graph", "Tensor(shape=[], dtype=Int64, value= 5)"]
    assert (tmp_path / "run.txt").read_text() == "graph\n1\ngraph\nTensor(shape=[], dtype=Int64, value= 2)\njit\n3\n"
    assert (tmp_path / "taken.txt").read_text() == "keep me\n"
    (suffixed,) = [p for p in tmp_path.iterdir() if p.name.startswith("taken.txt.")]
    assert abs(int(suffixed.name.rsplit(".", 1)[1]) - time.time()) < 600
    assert suffixed.read_text() == "graph\nTensor(shape=[], dtype=Int64, value= 4)\n"
    assert msdebug.read_print_file(tmp_path / "run.txt").source == "text file"


def test_print_file_path_refuses_directories_and_taken_suffixes(ip, tmp_path, monkeypatch):
    from IPython.core.error import UsageError

    import msdebug.recorders.print as recorder

    with pytest.raises(UsageError, match=r"print_file_path should be a file path, but .* is a directory"):
        ip.run_line_magic("mscontext", f"print_file_path={tmp_path}")
    # The suffix is the clock's second; the test holds the clock still rather than racing it
    # (on a loaded machine a second passes between writing the files and setting the key).
    monkeypatch.setattr(recorder, "time", types.SimpleNamespace(time=lambda: 1_700_000_000.5))
    (tmp_path / "a.txt").write_text("first\n")
    (tmp_path / "a.txt.1700000000").write_text("second\n")
    with pytest.raises(UsageError, match=r"exists and so does .*a\.txt\.1700000000; msdebug never overwrites"):
        ip.run_line_magic("mscontext", f"print_file_path={tmp_path / 'a.txt'}")
    assert msdebug.get("print_file_path") == ""
    assert (tmp_path / "a.txt").read_text() == "first\n"


def test_print_file_path_in_an_unwritable_directory(ip, tmp_path):
    from IPython.core.error import UsageError

    if os.geteuid() == 0:
        locked = pathlib.Path("/sys/kernel")  # root may write anywhere else; sysfs refuses new files
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o555)
    with pytest.raises(UsageError, match=rf"cannot create the print file {locked / 'p.txt'}: Permission denied"):
        ip.run_line_magic("mscontext", f"print_file_path={locked / 'p.txt'}")
    assert msdebug.get("print_file_path") == "" and not (locked / "p.txt").exists()


def test_a_scoped_print_file_is_undone_after_the_cell(ip, tmp_path):
    ip.run_cell(
        f"%%mscontext print_file_path={tmp_path / 'scoped.txt'}\nimport msdebug\nseen = msdebug.get('print_file_path')"
    )
    assert ip.user_ns["seen"] == str(tmp_path / "scoped.txt")
    assert msdebug.get("print_file_path") == ""
    assert (tmp_path / "scoped.txt").exists()


# --------------------------------------------------------------------------- real kernels


@pytest.fixture(scope="module")
def graph_kernel():
    k = Kernel()
    status, outputs = k.run("%load_ext msdebug")
    assert status == "ok", outputs
    status, outputs = k.run(NET)
    assert status == "ok", outputs
    yield k
    k.close()


@pytest.mark.kernel
def test_200_interleaved_prints_in_order_three_times(graph_kernel):
    for _ in range(3):
        status, outputs = graph_kernel.run("%%msprint\n" + INTERLEAVED)
        assert status == "ok", outputs
        assert _shown(outputs).splitlines() == _expected_interleaved()
        assert text_of(outputs, name="stdout") == ""


@pytest.mark.kernel
def test_300_cells_with_60_kb_each_lose_nothing(graph_kernel):
    status, _ = graph_kernel.run("%msprint on")
    assert status == "ok"
    try:
        for n in range(300):
            status, outputs = graph_kernel.run(f"import os\nos.write(1, b'{n % 10}' * 60000 + b'\\n')")
            assert status == "ok"
            assert _shown(outputs) == str(n % 10) * 60000, f"cell {n}"
            assert text_of(outputs, name="stdout") == ""
    finally:
        graph_kernel.run("%msprint off")


@pytest.mark.kernel
def test_a_failing_cell_shows_what_it_printed_then_the_error(graph_kernel):
    status, outputs = graph_kernel.run("%%msprint\nprint('before')\nnet(x, Tensor(7))\n1/0")
    assert status == "error"
    assert [o["type"] for o in outputs] == ["display_data", "error"]
    assert _shown(outputs) == "before\ngraph\n7"
    assert outputs[1]["ename"] == "ZeroDivisionError"
    assert "%%msprint: the output printed before the error is shown above" in outputs[1]["traceback"][-1]
    status, outputs = graph_kernel.run("import sys; print(type(sys.stdout).__name__)")
    assert text_of(outputs, name="stdout") == "OutStream\n"


@pytest.mark.kernel
def test_4_mb_print_in_a_kernel(graph_kernel):
    status, outputs = graph_kernel.run(
        "%%msprint\nimport ctypes\nbig = b'y' * (4 << 20)\n"
        "ctypes.PyDLL(None).write(1, big, len(big))\nmsdebug_len = len(big)"
    )
    assert status == "ok"
    assert _shown(outputs) == "y" * (4 << 20)


@pytest.mark.kernel
def test_last_print_returns_the_data(graph_kernel):
    graph_kernel.run("%%msprint\nnet(x, Tensor(np.full(2, 11, np.float32)))")
    status, outputs = graph_kernel.run(
        "import msdebug\nlog = msdebug.last_print()\nprint(log.items[1].values.tolist(), type(log.tensors[0]).__name__)"
    )
    assert text_of(outputs, name="stdout") == "[11.0, 11.0] ndarray\n"


def test_terminal_ipython_shows_the_same_text(tmp_path):
    script = tmp_path / "cells.ipy"
    script.write_text(
        "%load_ext msdebug\n" + NET + "\n%msprint on\nprint('py'); net(x, Tensor(1)); jitted(x, Tensor(2))\n"
    )
    ipython = pathlib.Path(sys.executable).with_name("ipython")
    out = subprocess.run(
        [str(ipython), "--quick", "--no-banner", "--colors=nocolor", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines()[-5:] == ["py", "graph", "1", "jit", "2"]


def test_on_ascend_msdebug_leaves_the_file_to_mindspore_and_shows_what_a_cell_added(ip, tmp_path, monkeypatch):
    # Fake backend for an Ascend-only path: this machine has no Ascend. MindSpore writes the
    # binary file itself there; the cell below appends what its Print kernel would write.
    from IPython.utils.capture import capture_output

    from msdebug import backend
    from msdebug.dumps.print import write_print_file

    ms = backend.get_backend()
    path = tmp_path / "ascend.pb"
    write_print_file(path, [["from an earlier cell"]])
    real_read = ms.read
    monkeypatch.setattr(ms, "writes_print_files", lambda: True)
    monkeypatch.setattr(ms, "read", lambda name: str(path) if name == "print_file_path" else real_read(name))
    ip.user_ns["append"] = lambda: path.open("ab").write(
        _print_message(["loss:", __import__("numpy").float32([0.25, 0.5])])
    )
    with capture_output() as captured:
        ip.run_cell("append()")
    (shown,) = captured.outputs
    assert shown.data["text/plain"].splitlines()[:2] == ["1 text line · 1 tensor · binary file " + str(path), "loss:"]
    assert "from an earlier cell" not in shown.data["text/plain"]
    assert str(ip.run_line_magic("msprint", "status")).startswith(f"MindSpore writes Print output to {path}")


def _print_message(args) -> bytes:
    from msdebug.dumps.print import _message_classes

    message = _message_classes()[0]()
    for arg in args:
        value = message.value.add()
        if isinstance(arg, str):
            value.desc = arg
        else:
            value.tensor.tensor_type = "Float32"
            value.tensor.dims.extend(arg.shape)
            value.tensor.tensor_content = arg.tobytes()
    return message.SerializeToString()


@pytest.mark.kernel
def test_nbclient_keeps_graph_and_jit_prints_in_their_cells(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    from helpers import kernel_env

    cells = [
        "%load_ext msdebug",
        NET,
        "%msprint on",
        "print('a'); net(x, Tensor(1)); jitted(x, Tensor(2))",
        "print('b'); jitted(x, Tensor(3))",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = NotebookClient(nb, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.km = client.create_kernel_manager()
    client.execute(env=kernel_env())
    shown = [
        [o["data"]["text/plain"] for o in cell.outputs if o.output_type == "display_data"] for cell in nb.cells[3:]
    ]
    assert shown == [["a\ngraph\n1\njit\n2"], ["b\njit\n3"]]
