"""The settings panel without a front end: the controls model, listeners, and a panel in a plain shell."""

from __future__ import annotations

import gc
import json
import warnings
import weakref

import mindspore as ms
import pytest

import msdebug
from msdebug import controls, settings
from msdebug.backend import DeviceState
from msdebug.errors import InvalidValueError
from msdebug.keys import CATALOG
from msdebug.recorders.envconfig import rdr_unavailable

from helpers import fresh_shell


@pytest.mark.parametrize(
    "name, widget",
    [
        ("mode", "toggle_buttons"),
        ("pynative_synchronize", "switch"),
        ("check_bprop", "checkbox"),
        ("save_graphs", "dropdown"),
        ("jit_level", "dropdown"),
        ("device_id", "bounded_int"),
        ("max_call_depth", "int"),
        ("save_graphs_path", "text"),
        ("max_device_memory", "text"),
        ("jit_config", "json"),
        ("device_target", "targets"),
    ],
)
def test_each_kind_of_key_gets_its_control(name, widget):
    assert controls.control_for(CATALOG[name]).widget == widget


def test_choices_offer_what_mscontext_takes():
    assert controls.control_for(CATALOG["mode"]).options == (("GRAPH", "graph"), ("PYNATIVE", "pynative"))
    assert controls.control_for(CATALOG["jit_level"]).options[0] == ("auto", "auto")
    # An Ascend entry that starts unset can show that it is unset.
    assert controls.control_for(CATALOG["precision_mode"]).options[0] == ("(not set)", "")


def test_widget_values_round_trip_through_the_catalog():
    save_graphs = controls.control_for(CATALOG["save_graphs"])
    assert controls.to_widget(save_graphs, 0) == "0"  # never False: 0 and False are different options
    assert CATALOG["save_graphs"].coerce(controls.to_widget(save_graphs, 3)) == 3
    jit_config = controls.control_for(CATALOG["jit_config"])
    assert controls.to_widget(jit_config, {"jit_level": "O1"}) == '{"jit_level": "O1"}'
    assert controls.from_widget(jit_config, "  ") == "{}"
    device_id = controls.control_for(CATALOG["device_id"])
    assert (device_id.low, device_id.high) == (0, 4095)


def test_summary_line(restored_context):
    msdebug.set(mode="graph")
    state = settings.state()
    assert controls.summary_line(state).startswith("GRAPH · CPU:0 · sync off")
    assert controls.summary_line(state, capture=False).startswith("GRAPH · CPU:0 · sync off · print capture off")
    msdebug.set(mode="pynative", pynative_synchronize=True)
    assert controls.summary_line(settings.state()).startswith("PYNATIVE · CPU:0 · sync on")


def test_device_lock_reasons():
    fresh = DeviceState("CPU", 0, configured=False, started=False, supported=("CPU",))
    chosen = fresh._replace(device_id=1, configured=True)
    started = fresh._replace(started=True)
    assert settings.device_lock(fresh) == ""
    assert settings.device_lock(chosen) == (
        "mindspore.set_device() already chose CPU:1; MindSpore allows it once per process"
    )
    assert settings.device_lock(started) == "the runtime started on CPU:0, so the device is fixed for this process"
    assert controls.unsupported_targets(fresh) == {
        "GPU": "this MindSpore build cannot run on GPU (it supports CPU)",
        "Ascend": "this MindSpore build cannot run on Ascend (it supports CPU)",
    }


def test_rdr_is_greyed_out_on_versions_that_removed_it():
    assert rdr_unavailable("2.7.0") == ""
    assert rdr_unavailable("2.7.1").startswith("MindSpore 2.7.1 has no Running Data Recorder")
    assert rdr_unavailable("2.10.0").startswith("MindSpore 2.10.0 has no Running Data Recorder")


def test_rdr_fields_are_checked_as_mindspore_checks_them():
    path = controls.write_rdr(True, 2, "/tmp/rdr")
    assert json.loads(path.read_text()) == {"rdr": {"enable": True, "mode": 2, "path": "/tmp/rdr/"}}
    assert json.loads(controls.write_rdr(False, 1, "", based_on=str(path)).read_text()) == {
        "rdr": {"enable": False, "mode": 1}
    }
    bad = [
        ((1, 1, ""), "rdr.enable must be true or false (a JSON boolean), got 1."),
        ((True, 3, ""), "rdr.mode must be 1 ("),
        ((True, True, ""), "rdr.mode must be 1"),
        ((True, 1, "rdr"), "rdr.path must be absolute (start with '/'), got 'rdr'"),
        ((True, 1, "/a b"), "rdr.path may use only letters, digits and - _ . / (MindSpore's rule); '/a b' has ' '."),
        ((True, 1, "/" + "a" * 1024), "rdr.path is 1025 characters long; MindSpore allows at most 1024."),
        ((True, 1, "/" + "a" * 256), "rdr.path: the component"),
    ]
    for args, message in bad:
        with pytest.raises(InvalidValueError) as caught:
            controls.write_rdr(*args)
        assert str(caught.value).startswith(message)


def test_a_new_env_config_keeps_mem_reuse_overwrites_nothing_and_leaves_no_file_per_click(tmp_path):
    original = tmp_path / "env.json"
    original.write_text('{"sys": {"mem_reuse": false}, "rdr": {"enable": false}}')
    path = controls.write_rdr(True, 1, "", based_on=str(original))
    assert path == tmp_path / "mindspore_config.json"  # the working directory, not the user's file
    assert json.loads(original.read_text()) == {"sys": {"mem_reuse": False}, "rdr": {"enable": False}}
    assert json.loads(path.read_text()) == {"rdr": {"enable": True, "mode": 1}, "sys": {"mem_reuse": False}}
    # The next click rewrites msdebug's own file in place: one file, however many clicks.
    assert controls.write_rdr(True, 2, "", based_on=str(path)) == path
    assert json.loads(path.read_text())["rdr"] == {"enable": True, "mode": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["env.json", "mindspore_config.json"]
    config, problem = controls.read_rdr(str(path))
    assert (config.rdr_enable, config.rdr_mode, problem) == (True, 2, "")
    assert controls.read_rdr(str(tmp_path / "missing.json"))[1].endswith(
        "missing.json: cannot read it (No such file or directory)."
    )


# --------------------------------------------------------------------------- listeners


def test_listeners_hear_apply_restore_and_reset_and_are_held_weakly(restored_context):
    heard = []

    class Listener:
        def hear(self):
            heard.append(msdebug.get("mode"))

    listener = Listener()
    unsubscribe = settings.on_change(listener.hear)
    snap = msdebug.snapshot()
    msdebug.set(mode="graph")
    msdebug.restore(snap)
    with msdebug.context(mode="graph"):
        pass
    assert heard == [0, 1, 0, 1]
    ref = weakref.ref(listener)
    del listener
    gc.collect()
    assert ref() is None
    msdebug.set(mode="graph")
    assert heard == [0, 1, 0, 1]
    unsubscribe()  # harmless after the listener is gone


def test_a_failing_listener_is_dropped_with_a_warning_and_the_write_stands(restored_context):
    def broken():
        raise RuntimeError("boom")

    settings.on_change(broken)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        msdebug.set(mode="graph")
        msdebug.set(mode="pynative")
    assert [str(w.message) for w in caught] == [
        "msdebug: a context listener failed and was removed: RuntimeError('boom')"
    ]
    assert ms.get_context("mode") == 1


# --------------------------------------------------------------------------- a panel in a plain shell


def test_in_a_plain_shell_the_panel_is_readable_text(ip):
    ip.run_line_magic("mscontext", "mode=graph")
    panel = ip.run_line_magic("mscontext", "--panel")
    try:
        text = repr(panel)
        lines = text.splitlines()
        assert lines[0].startswith("msdebug panel · GRAPH · CPU:0 · sync off · print capture off")
        assert "* mode                   GRAPH_MODE (0)" in lines
        assert "  GPU disabled: this MindSpore build cannot run on GPU (it supports CPU)" in lines
        assert "  print_file_path        '' (not set)" in lines  # msdebug writes it on CPU, so it is not locked
        assert ip.display_formatter.format(panel)[0]["text/plain"] == text
    finally:
        panel.close()


def test_every_kind_of_control_writes_through_apply(ip):
    panel = msdebug.panel()
    try:
        panel.controls["mode"].value = "graph"  # toggle buttons
        panel.controls["pynative_synchronize"].value = True  # switch
        panel.controls["check_bprop"].value = True  # checkbox
        panel.controls["save_graphs"].value = "1"  # dropdown
        panel.controls["max_call_depth"].value = 321  # int
        panel.controls["save_graphs_path"].value = "graphs-here"  # text
        panel.controls["jit_config"].value = '{"jit_level": "O1"}'  # JSON
        panel.controls["graph_kernel_flags"].value = "--opt_level=1"  # text MindSpore takes as it is
        panel.controls["jit_syntax_level"].value = "strict"  # dropdown of names for numbers
        assert (ms.get_context("mode"), ms.get_context("pynative_synchronize"), ms.get_context("check_bprop")) == (
            0,
            True,
            True,
        )
        assert (ms.get_context("save_graphs"), ms.get_context("max_call_depth")) == (1, 321)
        assert ms.get_context("save_graphs_path").endswith("/graphs-here")  # MindSpore keeps the real path
        assert panel.controls["save_graphs_path"].value == ms.get_context("save_graphs_path")
        assert ms.get_context("jit_config")["jit_level"] == "O1"
        assert (ms.get_context("graph_kernel_flags"), ms.get_context("jit_syntax_level")) == ("--opt_level=1", 0)
        assert panel.controls["jit_level"].value == "O1"  # its entry follows
        assert panel.controls["pynative_synchronize"].description == "on"
        assert panel.error == ""
    finally:
        panel.close()


def test_a_rejected_value_shows_one_line_and_the_control_returns(ip):
    panel = msdebug.panel()
    try:
        panel.controls["max_call_depth"].value = 0
        assert panel.error == "max_call_depth: 0 is out of range; allowed: an integer >= 1."
        assert panel.controls["max_call_depth"].value == 1000
        panel.controls["jit_config"].value = "{not json"
        assert panel.error.startswith("jit_config: expected a dict such as {'jit_level': 'O1'}, got '{not json'")
        assert panel.controls["jit_config"].value == "{}"
        path = panel.controls["save_graphs_path"].value
        panel.controls["save_graphs_path"].value = ""
        assert panel.error == "save_graphs_path: empty value; give a non-empty path, e.g. ./graphs."
        assert panel.controls["save_graphs_path"].value == path == ms.get_context("save_graphs_path")
        assert "error: save_graphs_path: empty value" in panel.text()
        panel.controls["mode"].value = "graph"  # a good write clears the error
        assert panel.error == ""
    finally:
        panel.close()


def test_two_panels_stay_consistent_and_reset_goes_back(ip):
    first, second = msdebug.panel(), msdebug.panel()
    try:
        first.controls["mode"].value = "graph"
        assert second.controls["mode"].value == "graph"
        assert second.model.summary.startswith("GRAPH")
        msdebug.set(save_graphs=2)
        assert (first.controls["save_graphs"].value, second.controls["save_graphs"].value) == ("2", "2")
        second.controls["save_graphs_path"].value = "/tmp"
        assert first.controls["save_graphs_path"].value == "/tmp" and first.model.summary == second.model.summary
        second.reset_button.click()
        assert ms.get_context("mode") == 1 and first.controls["mode"].value == "pynative"
    finally:
        first.close()
        second.close()


def test_a_closed_panel_stops_listening_and_can_be_collected(ip):
    before = len(settings._listeners)
    panel = msdebug.panel()
    try:
        assert len(settings._listeners) == before + 1
    finally:
        panel.close()
    ref = weakref.ref(panel)
    del panel
    gc.collect()
    assert ref() is None
    assert len(settings._listeners) == before


def test_unsupported_targets_are_disabled_with_the_reason(ip):
    from msdebug.backend import get_backend

    panel = msdebug.panel()
    try:
        # CPU stays selectable until an operator has run in this process (earlier tests may have run one).
        assert panel.targets["CPU"].value and panel.targets["CPU"].disabled == get_backend().device().started
        assert panel.targets["GPU"].disabled
        assert panel.targets["GPU"].tooltip == "this MindSpore build cannot run on GPU (it supports CPU)"
        panel.targets["GPU"].value = True  # set from code anyway: refused, stays on CPU
        assert panel.error.startswith("device: GPU is not available in this MindSpore build")
        assert panel.targets["CPU"].value and not panel.targets["GPU"].value
    finally:
        panel.close()


def test_without_ipywidgets_the_panel_says_how_to_install_it():
    first, second = fresh_shell(
        """
sys.modules["ipywidgets"] = None
import msdebug
ip.run_line_magic("load_ext", "msdebug")
try:
    msdebug.panel()
except ImportError as error:
    print(type(error).__name__, error)
try:
    ip.run_line_magic("mscontext", "--panel")
except UsageError as error:
    print("usage error:", error)
"""
    )
    assert first.startswith("WidgetsMissingError the settings panel needs ipywidgets, which is not installed")
    assert first.endswith('install it with: pip install ipywidgets  (or pip install "msdebug[all]")')
    assert second.startswith("usage error: the settings panel needs ipywidgets")


def test_while_a_cell_runs_panels_wait_for_its_end(ip):
    panel = ip.user_ns["panel"] = msdebug.panel()
    try:
        result = ip.run_cell(
            "import msdebug\n"
            "for _ in range(3):\n"
            "    with msdebug.context(mode='graph'):\n"
            "        pass\n"
            "msdebug.set(save_graphs=1)\n"
            "during = panel.controls['save_graphs'].value"
        )
        assert result.success
        assert ip.user_ns["during"] == "0"  # held: nothing refreshed inside the cell
        assert panel.controls["save_graphs"].value == "1"  # one refresh at its end
    finally:
        panel.close()


def test_sync_says_where_it_acts(restored_context):
    msdebug.set(mode="graph")
    assert controls.model(settings.state())["pynative_synchronize"].note == (
        "acts on PYNATIVE execution; GRAPH mode runs whole graphs anyway"
    )
    msdebug.set(mode="pynative")
    assert controls.model(settings.state())["pynative_synchronize"].note == ""


def test_the_print_capture_switch_is_msprint_on(ip):
    from msdebug.ipython.prefs import preferences

    panel = msdebug.panel()
    try:
        assert panel.capture.value is False and not panel.capture.disabled
        panel.capture.value = True
        assert preferences(ip).print_capture is True
        assert "print capture on" in panel.model.summary
        ip.run_cell("%msprint off")
        assert panel.capture.value is False and "print capture off" in panel.model.summary
    finally:
        preferences(ip).print_capture = False
        panel.close()
