"""The auto-parallel context (set_auto_parallel_context) in %mscontext, against the real MindSpore."""

from __future__ import annotations

import inspect
import json
import re

import mindspore as ms
import pytest

import msdebug
from msdebug import settings
from msdebug.backend import get_backend
from msdebug.errors import InvalidValueError, NotApplicableError, UnknownKeyError
from msdebug.keys import CATALOG, GROUPS

from helpers import run_python

PARALLEL = sorted(name for name, key in CATALOG.items() if key.api == "set_auto_parallel_context")

# A value other than the start-up one for each key MindSpore can read back, set on a CPU build.
SAMPLES = {
    "parallel_mode": "semi_auto_parallel",
    "device_num": 8,
    "global_rank": 3,
    "gradients_mean": True,
    "gradient_fp32_sync": False,
    "loss_repeated_mean": False,
    "search_mode": "sharding_propagation",
    "parameter_broadcast": True,
    "strategy_ckpt_load_file": "/tmp/msdebug-load.ckpt",
    "strategy_ckpt_save_file": "/tmp/msdebug-save.ckpt",
    "full_batch": True,
    "dataset_strategy": ((2, 1), (2, 1)),
    "enable_parallel_optimizer": True,
    "force_fp32_communication": True,
    "enable_alltoall": True,
    "all_reduce_fusion_config": [20, 35],
    "pipeline_stages": 2,
    "pipeline_result_broadcast": True,
    "comm_fusion": {"allreduce": {"mode": "size", "config": 32}},
    "strategy_ckpt_config": {"save_file": "/tmp/msdebug-strategy.json"},
    "auto_pipeline": True,
    "dump_local_norm": True,
    "dump_local_norm_path": "/tmp/msdebug-norm",
    "dump_device_local_norm": True,
}


def _parallel() -> dict:
    """Every auto-parallel key MindSpore can read back, as it reads it."""
    backend = get_backend()
    return {name: backend.read(name) for name in PARALLEL if backend.readable(name)}


def test_the_catalog_has_every_key_set_auto_parallel_context_documents():
    documented = set(re.findall(r"^    ([a-z_0-9]+) \(", inspect.getdoc(ms.set_auto_parallel_context), re.M))
    assert len(documented) >= 27 and set(PARALLEL) == documented
    assert set(PARALLEL) <= set(get_backend().live_keys())
    assert ("parallel", "Auto-parallel (set_auto_parallel_context)") in GROUPS


def test_the_keys_mindspore_cannot_read_back_are_the_write_only_ones():
    refused = set()
    for name in PARALLEL:
        try:
            ms.get_auto_parallel_context(name)
        except ValueError:
            refused.add(name)
    assert (
        refused
        == {name for name in PARALLEL if CATALOG[name].write_only}
        == {
            "pipeline_config",
            "parallel_optimizer_config",
            "group_ckpt_save_file",
        }
    )


def test_the_defaults_are_what_a_fresh_mindspore_starts_with():
    done = run_python(
        """
        import json, mindspore as ms
        from msdebug.keys import CATALOG
        names = [n for n, k in CATALOG.items() if k.api == "set_auto_parallel_context" and not k.write_only]
        print(json.dumps({n: [CATALOG[n].kind.from_raw(ms.get_auto_parallel_context(n)), CATALOG[n].default]
                          for n in names}))
        """
    )
    assert done.returncode == 0, done.stderr[-2000:]
    pairs = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(pairs) == len(PARALLEL) - 3
    assert {name: started for name, (started, _) in pairs.items()} == {name: d for name, (_, d) in pairs.items()}


def test_msdebug_writes_have_exactly_the_effect_of_set_auto_parallel_context(restored_context):
    assert set(SAMPLES) == {name for name in PARALLEL if not CATALOG[name].write_only} - {"auto_parallel_search_mode"}
    snap = msdebug.snapshot()
    start = _parallel()
    for name, value in SAMPLES.items():
        ms.set_auto_parallel_context(**{name: value})
        by_mindspore = _parallel()
        assert by_mindspore != start, name  # the sample is not the start-up value
        msdebug.restore(snap)
        assert _parallel() == start, f"{name} was not put back"
        report = msdebug.set(**{name: value})
        assert _parallel() == by_mindspore, name
        assert [change.key.name for change in report.changes] == [name]
        msdebug.restore(snap)
        assert _parallel() == start, f"{name} was not put back"


def test_fusion_indices_go_back_to_none_and_every_other_key_stays(restored_context):
    msdebug.set(parallel_mode="data_parallel", device_num=4, dataset_strategy="full_batch")
    msdebug.set(pipeline_config={"pipeline_interleave": True, "pipeline_scheduler": "gpipe"})
    before = _parallel()
    msdebug.set(all_reduce_fusion_config=[20, 35])
    # set_auto_parallel_context refuses [] ("can not be empty"): msdebug resets and puts the rest back.
    report = msdebug.set(all_reduce_fusion_config=[])
    assert ms.get_auto_parallel_context("all_reduce_fusion_config") == []
    assert _parallel() == before
    assert [(c.old, c.new) for c in report.changes] == [([20, 35], [])]
    assert settings.get("pipeline_config") == {"pipeline_interleave": True, "pipeline_scheduler": "gpipe"}


def test_bad_values_are_one_line_with_what_is_allowed(restored_context):
    cases = {
        "parallel_mode=dataparallel": "Did you mean 'data_parallel'?",
        "global_rank=4096": "allowed: an integer from 0 to 4095",
        "device_num=0": "allowed: an integer >= 1",
        "pipeline_config={'pipeline_interleave': True}": "needs the entries pipeline_interleave and pipeline_scheduler",
        "pipeline_config={'pipeline_interleave': False, 'pipeline_scheduler': 'gpipe'}": "only '1f1b' is allowed",
        "parallel_optimizer_config={'optimizer_levl': 'level2'}": "Did you mean 'optimizer_level'?",
        "parallel_optimizer_config={'optimizer_weight_shard_size': 0}": "an integer >= 1, or -1",
        "dataset_strategy=full": "data_parallel, full_batch, or one shard strategy per input",
        "all_reduce_fusion_config=(1.5,)": "a list of integers",
        "comm_fusion={'allreduce': {'mode': 'fast'}}": "'fast' is not allowed; use auto, size or index",
    }
    before = _parallel()
    for typed, expected in cases.items():
        with pytest.raises(InvalidValueError) as caught:
            settings.apply(dict([typed.split("=", 1)]))
        assert expected in str(caught.value) and "\n" not in str(caught.value), (typed, str(caught.value))
    assert _parallel() == before


def test_did_you_mean_looks_in_both_key_sets(ip):
    for typed, expected in (("gradient_mean", "gradients_mean"), ("paralel_mode", "parallel_mode"), ("mdoe", "mode")):
        with pytest.raises(UnknownKeyError, match=f"Did you mean '{expected}'"):
            settings.apply({typed: "1"})


def test_the_table_shows_them_in_their_group_marked_changed_and_deprecated(ip, restored_context):
    msdebug.set(parallel_mode="data_parallel")
    state = settings.state()
    groups = dict(state.groups())
    rows = {row.key.name: row for row in groups["Auto-parallel (set_auto_parallel_context)"]}
    assert set(rows) == set(PARALLEL)
    assert rows["parallel_mode"].changed and not rows["device_num"].changed
    assert rows["auto_parallel_search_mode"].key.status() == "deprecated (already in MindSpore 2.7); use search_mode"
    changed = ip.run_line_magic("mscontext", "--changed")
    assert "parallel_mode" in repr(changed) and "data_parallel" in repr(changed)
    info = repr(msdebug.describe("parallel_mode"))
    assert "stand_alone" in info and "before the network is built" in info


def test_a_scoped_cell_sets_them_for_the_cell_only(ip, restored_context):
    result = ip.run_cell(
        "%%mscontext parallel_mode=auto_parallel device_num=4\n"
        "import mindspore\ninside = mindspore.get_auto_parallel_context('parallel_mode')"
    )
    assert result.success, result.error_in_exec
    assert ip.user_ns["inside"] == "auto_parallel"
    assert ms.get_auto_parallel_context("parallel_mode") == "stand_alone"
    assert ms.get_auto_parallel_context("device_num") == 1
    with pytest.raises(NotApplicableError, match="cannot be scoped to a cell: MindSpore cannot read it back"):
        with msdebug.context(group_ckpt_save_file="/tmp/groups.ckpt"):
            pass


def test_setting_one_after_a_network_was_built_warns_in_the_report():
    done = run_python(
        """
        import json, msdebug
        from mindspore import nn
        before = msdebug.set(gradients_mean=True).notes  # no Cell yet
        net = nn.SequentialCell([nn.Dense(2, 2), nn.ReLU()])
        after = msdebug.set(parallel_mode="data_parallel")
        print(json.dumps({
            "before": before, "after": after.notes, "shown": repr(after),
            "set_context": msdebug.set(mode="graph").notes,
            "unchanged": msdebug.set(parallel_mode="data_parallel").notes,
        }))
        """
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["before"] == []
    (note,) = result["after"]
    assert (
        note.startswith("warning: parallel_mode changed after 3 Cells were built") and "build the network again" in note
    )
    assert "note: warning: parallel_mode" in result["shown"]
    assert result["set_context"] == [] and result["unchanged"] == []  # only auto-parallel keys that changed


def test_a_shard_strategy_read_back_as_lists_is_put_back(restored_context):
    msdebug.set(dataset_strategy="((2, 1), (2, 1))")
    assert settings.get("dataset_strategy") == ((2, 1), (2, 1))
    snap = msdebug.snapshot()  # MindSpore reads it back as [[2, 1], [2, 1]] and only takes tuples
    msdebug.set(dataset_strategy="full_batch")
    report = msdebug.restore(snap)
    assert ms.get_auto_parallel_context("dataset_strategy") == [[2, 1], [2, 1]]
    # full_batch is the same setting under its old name: it goes back with it.
    assert {c.key.name: (c.old, c.new) for c in report.changes} == {
        "full_batch": (True, False),
        "dataset_strategy": ("full_batch", ((2, 1), (2, 1))),
    }


def test_what_msdebug_wrote_to_a_key_mindspore_cannot_read_is_put_back_too(restored_context):
    snap = msdebug.snapshot()
    assert snap["pipeline_config"] == {"pipeline_interleave": False, "pipeline_scheduler": "1f1b"}
    msdebug.set(pipeline_config="{'pipeline_interleave': True, 'pipeline_scheduler': 'gpipe'}", device_num=2)
    assert {row.key.name for row in settings.state(changed_only=True).rows} >= {"pipeline_config", "device_num"}
    report = msdebug.restore(snap)
    assert {c.key.name for c in report.changes} == {"pipeline_config", "device_num"}
    assert settings.get("pipeline_config") == snap["pipeline_config"]
    assert not {"pipeline_config", "device_num"} & {row.key.name for row in settings.state(changed_only=True).rows}


def test_the_panel_has_them_in_a_group_of_their_own_and_sets_them(restored_context):
    from msdebug import controls

    panel = controls.model(settings.state())
    groups = dict(panel.groups)
    states = {state.control.name: state for state in groups["Auto-parallel (set_auto_parallel_context)"]}
    assert set(states) == set(PARALLEL)
    assert states["parallel_mode"].control.widget == "dropdown"
    assert states["device_num"].control.widget == "int" and states["global_rank"].control.widget == "bounded_int"
    assert states["comm_fusion"].control.widget == "json"
    # What a control hands back goes through the same validation as %mscontext.
    field = states["dataset_strategy"].control
    settings.apply({"dataset_strategy": controls.from_widget(field, "((2, 1), (2, 1))")})
    assert ms.get_auto_parallel_context("dataset_strategy") == [[2, 1], [2, 1]]
    again = dict(controls.model(settings.state()).groups)["Auto-parallel (set_auto_parallel_context)"]
    shown = {state.control.name: state for state in again}["dataset_strategy"]
    assert shown.changed and shown.shown == "((2, 1), (2, 1))"
