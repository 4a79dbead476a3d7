"""apply / snapshot / restore / context against the real MindSpore context."""

from __future__ import annotations

import json
import logging
import os

import mindspore as ms
import pytest

import msdebug
from msdebug import settings
from msdebug.backend import get_backend
from msdebug.errors import MindSporeRefusedError, NotApplicableError

from helpers import run_python


@pytest.fixture
def samples(tmp_path):
    """A non-default value for every key that has an effect on, or is accepted by, a CPU build."""
    config = tmp_path / "env_config.json"
    config.write_text(json.dumps({"sys": {"mem_reuse": True}}))
    return {
        "mode": 0,
        "pynative_synchronize": True,
        "jit_config": {"jit_level": "O1"},
        "jit_syntax_level": 0,
        "exec_order": "dfs",
        "debug_level": 1,
        "max_call_depth": 2000,
        "check_bprop": True,
        "support_binary": True,
        "enable_graph_kernel": True,
        "graph_kernel_flags": "--opt_level=1",
        "deterministic": "ON",
        "save_graphs": 1,
        "save_graphs_path": str(tmp_path / "graphs"),
        "env_config_path": str(config),
        "reserve_class_name_in_scope": False,
        "enable_profiling": True,
        "profiling_options": "task_trace",
        "memory_optimize_level": "O1",
        "runtime_num_threads": 1,
        "inter_op_parallel_num": 2,
        "op_timeout": 60,
        "enable_compile_cache": True,
        "compile_cache_path": str(tmp_path / "cache"),
        "aoe_tune_mode": "online",
        "aoe_config": {"job_type": "1"},
        "enable_task_opt": True,
        "compute_communicate_fusion_level": 1,
        "pp_1f1b_overlap": "AlltoAll",
    }


def _raw() -> dict:
    """Every restorable key's raw value (a snapshot leaves out the device, which cannot go back)."""
    backend = get_backend()
    values = {**backend.read_all(), **backend.write_only()}  # what msdebug wrote where MindSpore cannot read
    return {name: value for name, value in values.items() if name not in ("device_target", "device_id")}


def _effect() -> tuple[dict, dict]:
    """Everything a write can change: the raw context and the environment variables it sets."""
    env = {k: v for k, v in os.environ.items() if k in ("HCCL_DETERMINISTIC", "TE_PARALLEL_COMPILER")}
    return _raw(), env


def test_msdebug_writes_have_exactly_the_effect_of_set_context(restored_context, samples):
    """The direct per-key path msdebug uses for 2.7-2.10 must equal mindspore.set_context."""
    snap = msdebug.snapshot()
    for name, value in samples.items():
        ms.set_context(**{name: value})
        by_mindspore = _effect()
        msdebug.restore(snap)
        msdebug.set(**{name: value})
        by_msdebug = _effect()
        msdebug.restore(snap)
        assert by_msdebug == by_mindspore, name
        assert _effect()[0] == dict(snap), f"{name} was not restored exactly"


def test_an_entry_key_is_merged_into_its_dict(restored_context):
    msdebug.set(jit_config={"infer_boost": "off"})
    report = msdebug.set(jit_level="O1")
    assert ms.get_context("jit_config") == {"infer_boost": "off", "jit_level": "O1"}
    assert ms.get_context("jit_level") == "O1"
    assert [(c.key.name, c.old, c.new) for c in report.changes] == [("jit_level", "", "O1")]


def test_restore_resets_the_entries_a_dict_key_set(restored_context):
    snap = msdebug.snapshot()
    ms.set_context(jit_config={"jit_level": "O1", "infer_boost": "off"})
    msdebug.restore(snap)
    assert ms.get_context("jit_config") == {}
    assert ms.get_context("jit_level") == ""  # set_context(jit_config={}) would leave O1 here


def test_snapshot_restore_undoes_raw_set_context_calls(restored_context, samples):
    snap = msdebug.snapshot()
    expected = {name: ms.get_context(name) for name in samples}
    for name, value in samples.items():
        ms.set_context(**{name: value})
    report = msdebug.restore(snap)
    assert {change.key.name for change in report.changes} >= set(samples) - {"pynative_synchronize"} | {
        "pynative_synchronize"
    }
    assert {name: ms.get_context(name) for name in samples} == expected
    assert _raw() == dict(snap)


def test_all_or_nothing_when_mindspore_refuses_a_later_key(restored_context):
    before = dict(msdebug.snapshot())
    with pytest.raises(MindSporeRefusedError, match="env_config_path"):
        msdebug.set(mode="graph", env_config_path="/no/such/config.json")
    assert dict(msdebug.snapshot()) == before


def test_a_partial_write_inside_mindspore_is_rolled_back(restored_context):
    before = dict(msdebug.snapshot())
    # MindSpore's own setter applies both entries, then raises: msdebug must undo them.
    with pytest.raises(MindSporeRefusedError, match="Only jit_level set O0 can set infer_boost to on"):
        msdebug.set(jit_config={"jit_level": "O1", "infer_boost": "on"})
    assert dict(msdebug.snapshot()) == before
    assert ms.get_context("jit_level") == ""


def test_msdebug_does_not_log_mindsporess_deprecation_lines_for_its_own_calls(restored_context):
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = ms.log._get_logger()
    logger.addHandler(handler)
    try:
        snap = msdebug.snapshot()
        msdebug.set(pynative_synchronize=True, save_graphs=1, max_call_depth=900)
        msdebug.restore(snap)
        with msdebug.context(device_id=0, pynative_synchronize=True):
            pass
        assert [r.getMessage() for r in records] == []
        ms.set_context(pynative_synchronize=True)  # the same call made directly does log
        assert any("deprecated" in r.getMessage() for r in records)
    finally:
        logger.removeHandler(handler)


def test_context_restores_after_success_error_and_interrupt(restored_context):
    msdebug.set(mode="pynative")
    with msdebug.context(mode="graph", save_graphs=1) as scope:
        assert (msdebug.get("mode"), msdebug.get("save_graphs")) == (0, 1)
    assert (msdebug.get("mode"), msdebug.get("save_graphs")) == (1, 0)
    assert [c.key.name for c in scope.restored.changes] == ["mode", "save_graphs"]
    for exc in (ValueError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(exc)):
            with msdebug.context(mode="graph"):
                raise exc
        assert msdebug.get("mode") == 1


def test_context_also_undoes_what_the_block_changed(restored_context):
    with msdebug.context():
        ms.set_context(max_call_depth=123, exec_order="dfs")
    assert (ms.get_context("max_call_depth"), ms.get_context("exec_order")) == (1000, "bfs")


def test_nested_contexts_unwind_in_order(restored_context):
    with msdebug.context(mode="graph"):
        with msdebug.context(mode="pynative", pynative_synchronize=True):
            assert (msdebug.get("mode"), msdebug.get("pynative_synchronize")) == (1, True)
        assert (msdebug.get("mode"), msdebug.get("pynative_synchronize")) == (0, False)
    assert msdebug.get("mode") == 1


def test_memory_limits_cannot_be_scoped(restored_context):
    with pytest.raises(NotApplicableError):
        with msdebug.context(max_device_memory="2GB"):
            pass


def test_state_marks_changes_and_platforms(restored_context):
    msdebug.set(mode="graph", exec_order="dfs")
    state = settings.state(changed_only=True)
    assert [row.key.name for row in state.rows] == ["mode", "exec_order"]
    exec_order = state.rows[1]
    assert exec_order.changed and not exec_order.applies  # an Ascend-only key, inert on CPU
    assert state.summary().startswith(f"MindSpore {ms.__version__} · GRAPH · CPU:0 · sync off")


def test_reading_never_freezes_device_id_or_memory_limits():
    result = run_python(
        """
        import mindspore as ms, msdebug
        msdebug.get("device_id"); msdebug.table(); msdebug.snapshot(); msdebug.describe("device_id")
        repr(msdebug.table()); msdebug.table()._repr_html_()
        ms.set_context(device_id=1)          # still settable: msdebug did not freeze it
        from mindspore._c_expression import ms_ctx_param as P
        from mindspore.context import _context
        _context().set_param(P.max_device_memory, 2.0)   # likewise (CPU skips it in set_context)
        ms.get_context("device_id")          # get_context does freeze it ...
        try:
            ms.set_context(device_id=2)
        except TypeError as error:
            print("frozen by get_context:", "can not be set repeatedly" in str(error))
        """
    )
    assert result.returncode == 0, result.stderr
    assert "frozen by get_context: True" in result.stdout


def test_launch_blocking_keeps_sync_on_and_says_so():
    result = run_python(
        """
        import mindspore as ms, msdebug
        ms.runtime.launch_blocking()
        print("get:", msdebug.get("pynative_synchronize"))
        try:
            msdebug.set(pynative_synchronize=False)
        except msdebug.errors.NotApplicableError as error:
            print("set:", error)
        print("summary:", msdebug.table().summary())
        """
    )
    assert result.returncode == 0, result.stderr
    assert "get: True" in result.stdout
    assert "set: pynative_synchronize stays on: mindspore.runtime.launch_blocking() was called" in result.stdout
    assert "sync on (launch_blocking)" in result.stdout
