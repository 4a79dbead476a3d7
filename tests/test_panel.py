"""The settings panel in real Jupyter kernels: the widget and its text, changes made elsewhere, the device lock."""

from __future__ import annotations

import json

from helpers import Kernel, fresh_shell, run_python, text_of


def out(kernel: Kernel, code: str) -> str:
    status, outputs = kernel.run(code)
    assert status == "ok", outputs
    return text_of(outputs, name="stdout")


def test_in_a_kernel_the_panel_is_a_widget_with_its_text_and_follows_changes_made_elsewhere(kernel):
    # What only a kernel shows; each control, two panels and rejected values are tested in
    # process (tests/test_panel_model.py).
    status, outputs = kernel.run("%load_ext msdebug\nimport msdebug\nimport mindspore as ms\np = msdebug.panel()\np")
    assert status == "ok", outputs
    [result] = [o for o in outputs if o["type"] == "execute_result"]
    assert set(result["data"]) == {"text/plain", "application/vnd.jupyter.widget-view+json"}
    assert result["data"]["text/plain"].startswith("msdebug panel · PYNATIVE · CPU:0 · sync off")

    out(kernel, "%mscontext mode=graph")
    assert out(kernel, 'print(p.controls["mode"].value, p.model.summary)').startswith("graph GRAPH · CPU:0")
    out(kernel, "msdebug.set(save_graphs=2)")
    assert out(kernel, 'print(p.controls["save_graphs"].value)') == "2\n"
    # Behind msdebug's back: the post_run_cell hook catches it once the cell ends.
    during = out(kernel, 'ms.set_context(max_call_depth=77)\nprint(p.controls["max_call_depth"].value)')
    after = out(kernel, 'print(p.controls["max_call_depth"].value)')
    assert (during, after) == ("1000\n", "77\n")
    scoped = out(kernel, '%%mscontext mode=pynative\nprint(ms.get_context("mode"))\nms.set_context(save_graphs=3)')
    assert scoped == "1\n"
    # Panels wait for the end of a cell: the scoped cell's settings and their restore.
    assert out(kernel, 'print(p.controls["mode"].value, p.controls["save_graphs"].value)') == "graph 2\n"
    out(kernel, "%mscontext --reset")
    assert out(kernel, 'print(p.controls["mode"].value, p.controls["max_call_depth"].value)') == "pynative 1000\n"


def test_device_controls_lock_once_the_runtime_started():
    kernel = Kernel()
    try:
        out(kernel, "%load_ext msdebug\nimport msdebug, numpy as np, mindspore as ms\np = msdebug.panel()")
        before = out(kernel, 'print(p.controls["device_id"].disabled, p.first_cell_button.layout.display)')
        assert before == "False none\n"
        out(kernel, 'p.controls["device_id"].value = 1')  # still free: CPU:1
        out(kernel, "(ms.Tensor(np.ones(2, np.float32)) + 1).asnumpy()")  # the first operator
        locked = out(
            kernel,
            'print(p.controls["device_id"].disabled, p.targets["CPU"].disabled, p.first_cell_button.layout.display)\n'
            "print(p.model.device_lock)\n"
            "p.first_cell_button.click()\n"
            "print(p.first_cell.value)\n"
            'p.controls["device_id"].value = 2\n'
            "print(p.error)",
        )
        lines = locked.splitlines()
        assert lines[0] == "True True "
        assert lines[1] == "the runtime started on CPU:1, so the device is fixed for this process"
        assert "import mindspore; mindspore.set_device(&#x27;CPU&#x27;, 1)</pre>" in lines[2]
        assert lines[3].startswith("device: the runtime already started on CPU:1, so it cannot change to CPU:2")
        text = out(kernel, "print(p.text())")
        assert "first cell for a fresh kernel: import mindspore; mindspore.set_device('CPU', 1)" in text
    finally:
        kernel.close()


def test_the_extension_adds_and_removes_its_post_run_cell_hook():
    out = fresh_shell(
        """
from msdebug.ipython.hooks import hold_during_cell, refresh_after_cell
hooks = lambda: ip.events.callbacks["post_run_cell"].count(refresh_after_cell) + ip.events.callbacks["pre_run_cell"].count(hold_during_cell)
ip.run_line_magic("load_ext", "msdebug"); a = hooks()
ip.run_line_magic("load_ext", "msdebug"); b = hooks()
ip.run_line_magic("unload_ext", "msdebug"); c = hooks()
print(a, b, c, "mindspore" in sys.modules, "ipywidgets" in sys.modules)
""",
        warm=False,  # it asks whether loading imports MindSpore: a process that never did
    )
    assert out[-1] == "2 2 0 False False"


def test_the_rdr_section_is_written_to_a_new_file_where_rdr_exists(tmp_path):
    # RDR exists only up to MindSpore 2.7.0; this environment has 2.10, so the panel's
    # model is asked about 2.7.0 directly. The file itself is checked by MindSpore 2.10.
    from msdebug import controls
    from msdebug.recorders.envconfig import rdr_unavailable

    assert rdr_unavailable("2.7.0") == ""
    path = str(controls.write_rdr(True, 2, str(tmp_path)))
    result = run_python(
        f"import mindspore as ms\nms.set_context(env_config_path={path!r})\nprint(ms.get_context('env_config_path'))"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith(path.rsplit("/", 1)[1])
    assert json.load(open(path)) == {"rdr": {"enable": True, "mode": 2, "path": f"{tmp_path}/"}}
