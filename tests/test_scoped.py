"""%%mscontext: the body runs under the settings; afterwards every key is as before."""

from __future__ import annotations

import re

import mindspore as ms
import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

import msdebug

from helpers import kernel_env, text_of


def test_success_applies_then_restores_and_shows_the_last_value(ip):
    ip.run_line_magic("mscontext", "mode=pynative")
    result = ip.run_cell(
        "%%mscontext mode=graph pynative_synchronize=true\n"
        "import mindspore as ms\n"
        "inside = (ms.get_context('mode'), ms.get_context('pynative_synchronize'))\n"
        "inside"
    )
    assert result.success
    assert result.result == (0, True)
    assert ip.user_ns["inside"] == (0, True)
    assert (ms.get_context("mode"), ms.get_context("pynative_synchronize")) == (1, False)


def test_a_trailing_semicolon_hides_the_value_as_in_any_cell(ip):
    assert ip.run_cell("%%mscontext mode=graph\n1 + 1;").result is None
    assert ip.run_cell("%%mscontext mode=graph\n1 + 1  # comment").result == 2


def test_an_exception_fails_the_cell_and_the_context_still_comes_back(ip):
    ip.run_line_magic("mscontext", "mode=pynative")
    result = ip.run_cell("%%mscontext mode=graph save_graphs=1\nbefore_error = 1\nraise ValueError('boom')\nafter = 2")
    assert isinstance(result.error_in_exec, ValueError)
    assert ip.user_ns["before_error"] == 1 and "after" not in ip.user_ns
    assert (msdebug.get("mode"), msdebug.get("save_graphs")) == (1, 0)


def test_keyboard_interrupt_in_the_body_restores(ip):
    ip.run_line_magic("mscontext", "mode=pynative")
    result = ip.run_cell("%%mscontext mode=graph\nraise KeyboardInterrupt")
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert msdebug.get("mode") == 1


def test_keys_the_body_itself_changes_are_put_back(ip):
    ip.run_cell("%%mscontext mode=graph\nimport mindspore as ms\nms.set_context(max_call_depth=10, exec_order='dfs')")
    assert (ms.get_context("max_call_depth"), ms.get_context("exec_order")) == (1000, "bfs")


def test_nested_scopes(ip):
    ip.run_line_magic("mscontext", "mode=pynative")
    result = ip.run_cell(
        "%%mscontext mode=graph\n"
        "%%mscontext pynative_synchronize=on\n"
        "import mindspore as ms\n"
        "(ms.get_context('mode'), ms.get_context('pynative_synchronize'))"
    )
    assert result.result == (0, True)
    assert (msdebug.get("mode"), msdebug.get("pynative_synchronize")) == (1, False)


def test_a_scope_inside_a_loop_of_cells_leaves_nothing_behind(ip):
    before = dict(msdebug.snapshot())
    for value in ("graph", "pynative", "0", "1"):
        assert ip.run_cell(f"%%mscontext mode={value} save_graphs=2\nx = 1").success
    assert dict(msdebug.snapshot()) == before


def test_one_clean_traceback_in_a_real_kernel(kernel):
    kernel.run("%load_ext msdebug")
    status, outputs = kernel.run("%%mscontext mode=graph\nx = 1\ny = undefined_name + x\n")
    assert status == "error"
    [error] = [out for out in outputs if out["type"] == "error"]
    assert (error["ename"], error["evalue"]) == ("NameError", "name 'undefined_name' is not defined")
    text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error["traceback"]))  # drop colours
    assert "----> 3 y = undefined_name + x" in text
    assert "(%%mscontext: the MindSpore context was restored after this error)" in text
    assert "run_cell_magic" not in text and "magics.py" not in text
    assert len(outputs) == 1  # nothing else: no second traceback, no stray log lines
    status, outputs = kernel.run("import mindspore as ms; ms.get_context('mode')")
    assert text_of(outputs, "execute_result") == "1"


def test_a_real_interrupt_restores_the_context(kernel):
    kernel.run("%load_ext msdebug\n%mscontext mode=pynative")
    msg_id = kernel.start_until(
        "%%mscontext mode=graph save_graphs=3\nimport time\nopen('inside', 'w').close()\nwhile True:\n    time.sleep(0.01)",
        "inside",
    )
    kernel.manager.interrupt_kernel()
    status, outputs = kernel.finish(msg_id)
    assert status == "error"
    assert [out["ename"] for out in outputs if out["type"] == "error"] == ["KeyboardInterrupt"]
    status, outputs = kernel.run("import mindspore as ms; (ms.get_context('mode'), ms.get_context('save_graphs'))")
    assert text_of(outputs, "execute_result") == "(1, 0)"


def _notebook(*sources: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    return nb


def test_nbclient_fails_on_an_error_in_a_scoped_body(tmp_path):
    nb = _notebook("%load_ext msdebug", "%%mscontext mode=graph\n1 / 0", "print('not reached')")
    client = NotebookClient(nb, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.km = client.create_kernel_manager()
    with pytest.raises(CellExecutionError, match="ZeroDivisionError"):
        client.execute(env=kernel_env())
    outputs = nb.cells[1].outputs
    assert [out.output_type for out in outputs] == ["error"]
    assert nb.cells[2].outputs == []
