"""msdebug agrees with MindSpore: each check runs in a fresh process against the real set_context."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import kernel_env, run_python


def _result(code: str) -> dict:
    done = run_python(code)
    assert done.returncode == 0, done.stderr[-3000:]
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "stderr": done.stderr}


def test_jit_level_auto_goes_back_to_the_default_on_2_10():
    result = _result(
        """
        import json, mindspore as ms, msdebug
        from msdebug.backend import get_backend
        from msdebug.keys import CATALOG
        start = (ms.get_context("jit_config"), get_backend().read("jit_level"))
        msdebug.set(jit_level="O0")
        msdebug.set(jit_level="auto")
        after = (ms.get_context("jit_config"), get_backend().read("jit_level"))
        msdebug.set(jit_config={"jit_level": "O1", "infer_boost": "off"})
        msdebug.set(jit_config={"jit_level": "auto", "infer_boost": "off"})
        print(json.dumps({"start": start, "after": after, "dict": ms.get_context("jit_config")}))
        """
    )
    assert result["after"] == result["start"]
    assert result["dict"] == {"infer_boost": "off"}


def test_device_id_set_twice_as_mindspore_s_own_test_does():
    # MindSpore's test_set_device_id: set_context(device_id=1), then 2, and reads 2. On CPU the
    # device in use stays CPU:0 (get_current_device), and msdebug says so beside the value.
    result = _result(
        """
        import json, mindspore as ms, msdebug
        first = msdebug.set(device_id=1)
        second = msdebug.set(device_id=2)
        print(json.dumps({
            "device_id": ms.get_context("device_id"), "msdebug": msdebug.get("device_id"),
            "report": repr(second), "current": list(ms.get_current_device()),
            "note": msdebug.describe("device_id").extra[-1],
        }))
        """
    )
    assert (result["device_id"], result["msdebug"], result["current"]) == (2, 2, ["CPU", 0])
    assert result["report"] == "device_id: 1 → 2"
    assert result["note"].startswith("set with set_context(device_id=...); the device in use is CPU:0")
    assert "deprecated" not in result["stderr"]


def test_after_set_device_msdebug_refuses_what_mindspore_refuses():
    result = _result(
        """
        import json, mindspore as ms, msdebug
        from msdebug.errors import DeviceLockedError
        ms.set_device("CPU")
        try:
            ms.set_device("CPU", 1)
            mindspore_refused = False
        except RuntimeError:
            mindspore_refused = True
        try:
            msdebug.set(device="CPU:1")
            refused = ""
        except DeviceLockedError as error:
            refused = str(error)
        print(json.dumps({"mindspore_refused": mindspore_refused, "refused": refused}))
        """
    )
    assert result["mindspore_refused"] and "set_device" in result["refused"]


# Every key MindSpore 2.10 deprecates (and still accepts), each with a value other than the one it
# starts with, in catalog order (infer_boost after jit_config, whose jit_level O0 it needs).
DEPRECATED_VALUES = {
    "pynative_synchronize": True,
    "jit_config": {"jit_level": "O0"},
    "jit_syntax_level": "strict",
    "exec_order": "dfs",
    "debug_level": "debug",
    "max_call_depth": 2000,
    "check_bprop": True,
    "support_binary": True,
    "enable_graph_kernel": True,
    "graph_kernel_flags": "--opt_level=1",
    "device_id": 1,
    "deterministic": "ON",
    "save_graphs": 1,
    "save_graphs_path": "{tmp}/graphs",
    "print_file_path": "{tmp}/print.txt",
    "env_config_path": "{tmp}/env.json",
    "reserve_class_name_in_scope": False,
    "enable_profiling": True,
    "profiling_options": '{{"output": "{tmp}/profile"}}',
    "memory_optimize_level": "O1",
    "runtime_num_threads": 1,
    "inter_op_parallel_num": 2,
    "op_timeout": 1000,
    "enable_compile_cache": True,
    "compile_cache_path": "{tmp}/cache",
    "aoe_tune_mode": "online",
    "aoe_config": {"job_type": "1"},
    "aoe_job_type": "2",
    "infer_boost": "on",
    # set_auto_parallel_context's
    "auto_parallel_search_mode": "sharding_propagation",
    "strategy_ckpt_load_file": "{tmp}/load.ckpt",
    "strategy_ckpt_save_file": "{tmp}/save.ckpt",
    "full_batch": True,
}
# The deprecated keys msdebug refuses here, and why (the words its one line must hold).
DEPRECATED_REFUSED = {
    # the CPU build has no other target, and CPU is the one it has
    "device_target": ("GPU", "not available in this MindSpore build"),
    # device_filtered keys: MindSpore drops them off their platforms, so msdebug refuses them on CPU
    "disable_format_transform": (True, "only takes effect on GPU"),
    "enable_reduce_precision": (False, "only takes effect on Ascend"),
    "max_device_memory": ("2GB", "only takes effect on GPU, Ascend"),
    "mempool_block_size": ("2GB", "only takes effect on GPU, Ascend"),
    "variable_memory_max_size": ("2GB", "only takes effect on Ascend"),
    "ascend_config": ({"precision_mode": "force_fp16"}, "only takes effect on Ascend"),
    "gpu_config": ({"conv_fprop_algo": "normal"}, "only takes effect on GPU"),
    # accepted by set_context but ignored since 2.7: setting them changes nothing
    "enable_sparse": (True, "accepted but ignored by MindSpore"),
    "auto_tune_mode": ("GA", "accepted but ignored by MindSpore"),
    "enable_auto_mixed_precision": (False, "accepted but ignored by MindSpore"),
}


def test_every_deprecated_key_is_set_through_msdebug_without_a_deprecation_line(tmp_path):
    (tmp_path / "env.json").write_text('{"rdr": {"enable": false}}')
    values = {
        name: (value.format(tmp=tmp_path) if isinstance(value, str) else value)
        for name, value in DEPRECATED_VALUES.items()
    }
    values.update({name: value for name, (value, _) in DEPRECATED_REFUSED.items()})
    result = _result(
        f"""
        import json, mindspore as ms, msdebug
        from msdebug.keys import CATALOG, UNSET
        from msdebug.errors import MsDebugError
        from msdebug.backend import get_backend
        version = get_backend().version
        values = json.loads({json.dumps(values)!r})
        deprecated, outcome = [], {{}}
        for key in CATALOG.values():
            if not key.deprecated_in or not key.available_in(version):
                continue
            deprecated.append(key.name)
            if key.name not in values:
                continue
            try:
                before = msdebug.get(key.name)  # for the ignored keys this refuses already
                msdebug.set(**{{key.name: values[key.name]}})
                outcome[key.name] = ["set", repr(before), repr(key.coerce(values[key.name])), repr(msdebug.get(key.name))]
            except MsDebugError as error:
                outcome[key.name] = ["refused", str(error)]
        msdebug.set(print_file_path="")  # msdebug's own fd 1 redirection on CPU: the result goes to stdout
        print(json.dumps({{"version": version, "deprecated": deprecated, "outcome": outcome}}))
        """
    )
    assert result["version"] == "2.10.0", "the lists above are MindSpore 2.10's; check them for another version"
    # every deprecated key of the installed MindSpore is tried, none left out
    assert sorted(result["deprecated"]) == sorted([*DEPRECATED_VALUES, *DEPRECATED_REFUSED])
    for name in DEPRECATED_VALUES:
        verdict, *rest = result["outcome"][name]
        assert verdict == "set", (name, rest)
        before, wanted, after = rest  # repr()s of MindSpore's value before, the value given (validated), after
        assert after == wanted != before, (name, before, wanted, after)
    for name, (_, why) in DEPRECATED_REFUSED.items():
        verdict, message = result["outcome"][name]
        assert verdict == "refused" and why in message, (name, message)
    words = ("deprecated", "will be removed", "is currently replaced by")
    lines = [line for line in result["stderr"].splitlines() if any(word in line for word in words)]
    assert lines == [], lines[:5]


def test_a_bad_env_config_file_keeps_the_file_name(tmp_path):
    bad = tmp_path / "bad_env.json"
    bad.write_text('{"rdr": {"enable": tru}}')
    result = _result(
        f"""
        import json, msdebug
        from msdebug.errors import MsDebugError
        try:
            msdebug.set(env_config_path={str(bad)!r})
            message = ""
        except MsDebugError as error:
            message = str(error)
        print(json.dumps({{"message": message}}))
        """
    )
    assert "bad_env.json" in result["message"] and "\n" not in result["message"], result["message"]


def test_exception_dump_in_ascend_config_says_removed_since_2_6_and_the_replacement():
    result = _result(
        """
        import json, msdebug
        from msdebug.errors import MsDebugError
        messages = []
        for value in ({"exception_dump": "1"}, '{"exception_dump": "2"}'):
            try:
                msdebug.set(ascend_config=value)
            except MsDebugError as error:
                messages.append(str(error))
        print(json.dumps({"messages": messages}))
        """
    )
    assert len(result["messages"]) == 2
    for message in result["messages"]:
        assert "removed in MindSpore 2.6" in message and "aclinit_config" in message, message


def test_the_panel_refuses_an_out_of_range_device_id_like_the_magic():
    result = _result(
        """
        import json, mindspore as ms, msdebug
        from IPython.testing.globalipapp import start_ipython
        from IPython.core.error import UsageError
        ip = start_ipython()
        ip.run_line_magic("load_ext", "msdebug")
        try:
            ip.run_line_magic("mscontext", "device_id=99999")
            magic = ""
        except UsageError as error:
            magic = str(error)
        panel = msdebug.panel()
        panel.controls["device_id"].value = 99999
        print(json.dumps({
            "magic": magic, "panel": panel.error, "box": panel.controls["device_id"].value,
            "device_id": ms.get_context("device_id"),
        }))
        """
    )
    assert "4095" in result["magic"]
    assert result["panel"] == result["magic"], result
    assert result["box"] == 0 and result["device_id"] == 0, result


# --------------------------------------------------------------------------- profiler settings

_PROFILER_AGREEMENT = """
import json, warnings
import mindspore
from mindspore import log
from mindspore.profiler.envprofiler import EnvProfiler
from mindspore.profiler.common.profiler_parameters import ProfilerParameters
from mindspore.profiler.common import constant
from mindspore.profiler.dynamic_profile.dynamic_profiler_config_context import DynamicProfilerConfigContext
from msdebug.backend.profile import profiler_tables
from msdebug.errors import ProfilerOptionsError
from msdebug.recorders.profile import check_config, config_fields, option_fields, profiler_options

said = []
log.warning = lambda message, *args, **kwargs: said.append(str(message))

def samples(fields, base):
    # one valid value per field and per enum value, with what MindSpore needs beside it
    for name, field in fields.items():
        values = {"bool": [True, False], "str": ["/tmp/p"], "enum": list(field.choices), "int": list(field.choices),
                  "list": [[c] for c in field.choices] or [["a", "b"]]}.get(field.kind, [])
        for value in values:
            if name in ("hbm_ddr", "pcie") and value is True:
                continue  # deprecated: msdebug refuses it (a refused sample below)
            extra = {"mstx": True} if name.startswith("mstx_domain") or value in ("LevelNone", -1) else {}
            if name == "aic_metrics" and value not in ("None", "AiCoreNone"):
                extra = {"profiler_level": "Level1"}
            if value in ("Level1", "Level2", 1, 2) and name == "profiler_level":
                extra = {"aic_metrics": "PipeUtilization"}
            yield {**base, **extra, name: value}

def mindspore_options(options):
    said.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        params = EnvProfiler._convert_options_to_profiler_params(options)
        kept = ProfilerParameters(**{k: v for k, v in params.items() if k not in ("start", "output_path")})
    # every ProfilerParameters builds a default Schedule, which always says this
    heard = [m for m in said + [str(w.message) for w in caught] if "won't be using warmup" not in m]
    dropped = [k for k in options if k not in params]
    def plain(value):
        value = getattr(value, "value", value)
        return sorted(plain(v) for v in value) if isinstance(value, (list, set)) else value
    changed = [k for k in options if k in params and k not in ("start", "output_path")
               and plain(getattr(kept, k)) != plain(options[k])]
    return heard, dropped, changed

def mindspore_config(config):
    said.clear()
    context = DynamicProfilerConfigContext(config)
    context.args
    return list(said), [k for k in config if k not in context.to_dict()]

live = {
    "params": {k: getattr(t, "__name__", None) or str(t) for k, (t, _) in ProfilerParameters.PARAMS.items()},
    "enums": {name: [m.value for m in getattr(constant, name)] for name in profiler_tables()["enums"]},
    "config": list(DynamicProfilerConfigContext({}).to_dict()),
}
read = profiler_tables()
out = {"tables": [read["params"] == {k: v if v in ("bool", "str", "list") or v in read["enums"] else read["params"][k]
                                     for k, v in live["params"].items()},
                  {k: list(v) for k, v in read["enums"].items()} == live["enums"],
                  list(read["config"]) == live["config"]]}
base = {"start": True, "output_path": "/tmp/p"}
out["accepted"] = []
for options in samples({k: f for k, f in option_fields().items() if k not in base}, base):
    profiler_options(apply=False, **options)
    out["accepted"].append([options, *mindspore_options(options)])
out["refused"] = []
for change in ({"profiler_level": "Level9"}, {"aic_metrics": "AiCoreNone"}, {"activities": ["TPU"]},
               {"export_type": "csv"}, {"host_sys": ["gpu"]}, {"mstx_domain_include": ["a"]},
               {"profiler_level": "LevelNone"}, {"aic_metrics": "Memory"},
               {"profiler_level": "Level2", "aic_metrics": "None"}, {"op_time": True}, {"aicore_metrics": 1}, {"pcie": True},
               {"record_shapes": True, "activities": ["NPU"]}, {"ouput_path": "/tmp/q"},
               {"mstx": True, "mstx_domain_include": ["a"], "mstx_domain_exclude": ["b"]}):
    options = {**base, **change}
    try:
        profiler_options(apply=False, **options)
        out["refused"].append([options, "accepted"])
    except ProfilerOptionsError as error:
        out["refused"].append([options, str(error), *mindspore_options(options)])
steps = {"start_step": 2, "stop_step": 3}
out["config_accepted"] = []
for config in samples({k: f for k, f in config_fields().items() if k not in steps}, steps):
    check_config(config)
    out["config_accepted"].append([config, *mindspore_config(config)])
out["config_refused"] = []
for change in ({"profiler_level": "Level9"}, {"aic_metrics": "Nothing"}, {"activities": ["TPU"]},
               {"export_type": ["csv"]}, {"with_stack": "true"}, {"prof_path": 3}, {"profile_framework": 1},
               {"mstx_domain_include": "a"}, {"analyse_mode": "sync"}):
    config = {**steps, **change}
    try:
        check_config(config)
        out["config_refused"].append([config, "accepted"])
    except ProfilerOptionsError as error:
        out["config_refused"].append([config, str(error), *mindspore_config(config)])
print(json.dumps(out))
"""


def test_profiler_settings_agree_with_mindspore_s_own_parsers():
    # MindSpore's tables as msdebug reads them (without importing) are MindSpore's live ones; every
    # option and profiler_config.json value msdebug accepts, MindSpore's EnvProfiler/ProfilerParameters
    # and DynamicProfilerConfigContext take without a warning and keep; every value of a sample msdebug
    # refuses, MindSpore drops, resets or warns about.
    result = _result(_PROFILER_AGREEMENT)
    assert result["tables"] == [True, True, True]
    names = {name for options, *_ in result["accepted"] for name in options}
    assert {"mstx_domain_include", "mstx_domain_exclude", "host_sys", "aic_metrics", "export_type"} <= names
    for options, heard, dropped, changed in result["accepted"]:
        assert (heard, dropped, changed) == ([], [], []), options
    for options, verdict, *mindspore in result["refused"]:
        assert verdict != "accepted" and "\n" not in verdict, options
        heard, dropped, changed = mindspore
        assert heard or dropped or changed, (options, verdict)
    for config, heard, dropped in result["config_accepted"]:
        assert (heard, dropped) == ([], []), config
    for config, verdict, *mindspore in result["config_refused"]:
        assert verdict != "accepted" and "\n" not in verdict, config
        heard, dropped = mindspore
        assert heard or dropped, (config, verdict)


# --------------------------------------------------------------------------- data dump JSON

# One process runs several configs: MindSpore parses MINDSPORE_DUMP_CONFIG at the graph's compile,
# a refused file raises there and is parsed again at the next call, and the first file it takes
# is latched for the process (reference dump-nan-profiler.md 0.2 and 1.3).
_DUMP_AGREEMENT = """
import glob, json, os, sys
import numpy as np
from msdebug.errors import DumpConfigError
from msdebug.recorders.datadump import check_config

here = os.getcwd()
config_file = os.path.join(here, "dump.json")
os.environ["MINDSPORE_DUMP_CONFIG"] = config_file
open(config_file, "w").write("{}")
import mindspore as ms
from mindspore import nn

class Net(nn.Cell):
    def construct(self, x):
        return (x * 2).sqrt()

ms.set_context(mode=ms.GRAPH_MODE)
net = Net()
out = []
for config in json.loads(sys.argv[1]):
    try:
        check_config(config)
        verdict = "accepted"
    except DumpConfigError as error:
        verdict = str(error)
    with open(config_file, "w") as handle:
        json.dump(config, handle)
    try:
        for _ in range(2):
            net(ms.Tensor(np.ones(3, np.float32))).asnumpy()
        mindspore = "ran"
    except RuntimeError as error:
        mindspore = "refused: " + str(error).splitlines()[0]
    path = config["common_dump_settings"]["path"]
    files = sorted(os.path.relpath(f, path) for f in glob.glob(path + "/**/*.npy", recursive=True))
    out.append([config, verdict, mindspore, files])
    if mindspore == "ran":
        break  # latched: this process dumps with that file until it ends
print(json.dumps(out))
"""

_DUMP_BASE = {
    "common_dump_settings": {
        "dump_mode": 0,
        "path": "{tmp}/out",
        "net_name": "Net",
        "iteration": "all",
        "saved_data": "tensor",
        "input_output": 0,
        "kernels": [],
        "support_device": [0],
    },
    "e2e_dump_settings": {"enable": True, "trans_flag": True},
}


def _dump_configs(tmp_path, *changes: dict) -> list[dict]:
    configs = []
    for number, change in enumerate(changes):
        common = {**_DUMP_BASE["common_dump_settings"], "path": f"{tmp_path}/out{number}"}
        common.update(change)
        configs.append({**_DUMP_BASE, "common_dump_settings": {k: v for k, v in common.items() if v is not None}})
    return configs


def _run_dumps(tmp_path, configs: list[dict]) -> list:
    # GRAPH mode compiles from source: the script is a file, not python -c
    (tmp_path / "dump_agreement.py").write_text(_DUMP_AGREEMENT)
    done = subprocess.run(
        [sys.executable, "dump_agreement.py", json.dumps(configs)],
        capture_output=True,
        text=True,
        timeout=300,
        env=kernel_env(),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _honoured(config: dict, files: list[str]) -> str:
    """'' when the files written are what ``config`` asks for; else what differs."""
    common = config["common_dump_settings"]
    if not files:
        return "no tensor written"
    iterations = {f.split("/")[3] for f in files}  # rank_0/<net_name>/<graph>/<iteration>/<file>
    first = str(common.get("initial_iteration", 0))
    if {f.split("/")[1] for f in files} != {common["net_name"]} or first not in iterations:
        return f"written under {sorted({'/'.join(f.split('/')[1:4]) for f in files})}"
    ops = {f.split("/")[4].split(".")[0] for f in files if not f.split("/")[4].startswith("Parameter.")}
    if common["dump_mode"] == 1 and not ops <= {k for k in common["kernels"]}:
        return f"ops {sorted(ops)} beside the kernels {common['kernels']}"
    sides = {".input." if ".input." in f else ".output." for f in files if not f.split("/")[4].startswith("Param")}
    wanted = {0: {".input.", ".output."}, 1: {".input."}, 2: {".output."}}[common["input_output"]]
    if sides != wanted:
        return f"{sorted(sides)} written for input_output {common['input_output']}"
    return ""


def test_dump_configs_msdebug_refuses_mindspore_refuses_and_one_it_accepts_is_written(tmp_path):
    # Every config msdebug refuses here, MindSpore's DumpJsonParser refuses too (a RuntimeError at the
    # graph call); the last, which msdebug accepts, MindSpore takes and writes as asked.
    refused = [
        {"dump_mode": 2},
        {"dump_mode": "0"},
        {"dump_mode": True},
        {"path": "{tmp}/dump.v1"},
        {"path": "relative"},
        {"net_name": "My Net"},
        {"net_name": None},
        {"iteration": "first"},
        {"iteration": 0},
        {"saved_data": "statistic"},
        {"saved_data": "tensors"},
        {"input_output": 3},
        {"input_output": 1.0},
        {"kernels": "Default/Sqrt-op0"},
        {"support_device": ["0"]},
        {"op_debug_mode": 5},
        {"overflow_number": 2},
        {"initial_iteration": -1},
        {"initial_iteration": 2**64},
    ]
    accepted = {"dump_mode": 1, "kernels": ["Sqrt"], "input_output": 2, "initial_iteration": 5, "file_format": "npy"}
    changes = [{k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in c.items()} for c in refused]
    configs = _dump_configs(tmp_path, *changes, {}, accepted)
    configs[-2]["e2e_dump_settings"] = {"enable": "true", "trans_flag": True}
    results = _run_dumps(tmp_path, configs)
    assert len(results) == len(configs), results[-1]
    for config, verdict, mindspore, files in results[:-1]:
        assert verdict != "accepted" and "\n" not in verdict, (config, mindspore, files[:2])
        assert mindspore.startswith("refused: ") and files == [], (config, mindspore)
    config, verdict, mindspore, files = results[-1]
    assert (verdict, mindspore) == ("accepted", "ran"), results[-1]
    assert _honoured(config, files) == "", (files, _honoured(config, files))
    assert any("/5/Sqrt." in f for f in files), files


def test_dump_configs_msdebug_refuses_and_mindspore_takes_are_not_written_as_asked(tmp_path):
    # MindSpore takes these (one process each: the first file taken is latched) and writes something
    # other than what they ask for: a uint32 iteration wrapped round, no tensor in exception dump mode.
    for number, change in enumerate(({"initial_iteration": 2**32 + 5}, {"op_debug_mode": 4})):
        [[config, verdict, mindspore, files]] = _run_dumps(tmp_path, _dump_configs(tmp_path / str(number), change))
        assert verdict != "accepted" and "\n" not in verdict, (config, mindspore, files[:2])
        assert mindspore == "ran" and _honoured(config, files) != "", (config, files[:2])


# Values for set_auto_parallel_context: some MindSpore takes, some it refuses. msdebug must give the
# same verdict, and where both take one, leave the same value behind.
PARALLEL_TRIES = [
    ("parallel_mode", "semi_auto_parallel"),
    ("parallel_mode", "bogus"),
    ("device_num", 0),
    ("device_num", 4097),  # the documents say up to 4096; MindSpore checks only > 0
    ("global_rank", 4095),
    ("global_rank", 4096),
    ("gradients_mean", True),
    ("gradients_mean", "yes please"),
    ("search_mode", "dynamic_programming"),
    ("search_mode", "x"),
    ("auto_parallel_search_mode", "sharding_propagation"),
    ("pipeline_stages", 0),
    ("pipeline_stages", 4),
    ("pipeline_config", {"pipeline_interleave": True}),
    ("pipeline_config", {"bogus": 1}),
    ("pipeline_config", {"pipeline_interleave": True, "pipeline_scheduler": "gpipe"}),
    ("pipeline_config", {"pipeline_interleave": False, "pipeline_scheduler": "gpipe"}),
    ("pipeline_config", {"pipeline_interleave": True, "pipeline_scheduler": "nope"}),
    ("parallel_optimizer_config", {"gradient_accumulation_shard": True}),
    ("parallel_optimizer_config", {"gradient_accumulation_shard": True, "optimizer_level": "level1"}),
    ("parallel_optimizer_config", {"optimizer_level": "level4"}),
    ("parallel_optimizer_config", {"parallel_optimizer_threshold": -1}),
    ("parallel_optimizer_config", {"optimizer_weight_shard_size": -1}),
    ("parallel_optimizer_config", {"optimizer_weight_shard_size": 0}),
    ("parallel_optimizer_config", {"bogus": 1}),
    ("all_reduce_fusion_config", [10, 20]),
    ("all_reduce_fusion_config", ["a"]),
    ("dataset_strategy", "full_batch"),
    ("dataset_strategy", ((1, 1),)),
    ("dataset_strategy", "x"),
    ("strategy_ckpt_load_file", "/tmp/x.ckpt"),
    ("strategy_ckpt_load_file", 3),
    ("comm_fusion", {"allreduce": {"mode": "size", "config": 32}}),
    ("comm_fusion", {"bogus": {}}),
    ("comm_fusion", {"allreduce": {"mode": "fast", "config": 32}}),
    ("strategy_ckpt_config", {"save_file": "/tmp/s.ckpt"}),
    ("strategy_ckpt_config", {"bogus": ""}),
    ("strategy_ckpt_config", {"only_trainable_params": "no way"}),
    ("dump_local_norm_path", "/tmp/norm"),
    ("full_batch", True),
    ("enable_alltoall", "sometimes"),
    ("group_ckpt_save_file", "/tmp/g.ckpt"),
    ("force_fp32_communication", True),
    ("auto_pipeline", True),
]
# Where msdebug takes more than MindSpore, on purpose: what %mscontext types (text) and the tuple
# any Python sequence could be. Each is turned into the form MindSpore takes.
PARALLEL_LENIENT = [
    ("device_num", "2"),
    ("gradients_mean", "on"),
    ("parallel_mode", "DATA_PARALLEL"),
    ("all_reduce_fusion_config", (10, 20)),
]


def test_auto_parallel_keys_msdebug_refuses_what_mindspore_refuses_and_takes_what_it_takes():
    result = _result(
        f"""
        import json, mindspore as ms, msdebug
        from msdebug.errors import MsDebugError
        from msdebug.backend import get_backend
        backend = get_backend()
        start = msdebug.snapshot()
        def state():
            return {{**backend.read_all(), **backend.write_only()}}
        verdicts = []
        for name, value in {PARALLEL_TRIES + PARALLEL_LENIENT!r}:
            try:
                ms.set_auto_parallel_context(**{{name: value}})
                theirs = "took"
            except (ValueError, TypeError, KeyError) as error:
                theirs = "refused"
            after = ms.get_auto_parallel_context(name) if backend.readable(name) else None
            ms.reset_auto_parallel_context()
            try:
                msdebug.set(**{{name: value}})
                ours, why = "took", ""
            except MsDebugError as error:
                ours, why = "refused", str(error)
            same = ms.get_auto_parallel_context(name) == after if backend.readable(name) else True
            msdebug.restore(start)
            verdicts.append([name, repr(value), theirs, ours, why, same])
        print(json.dumps({{"verdicts": verdicts}}))
        """
    )
    disagree = [v[:4] for v in result["verdicts"] if v[2] != v[3]]
    assert disagree == [[name, repr(value), "refused", "took"] for name, value in PARALLEL_LENIENT]
    assert [v[:2] for v in result["verdicts"][: len(PARALLEL_TRIES)] if not v[5]] == []  # both took it: same value
    refused = [v for v in result["verdicts"] if v[3] == "refused"]
    assert len(refused) >= 20 and all("\n" not in v[4] and v[4].startswith(v[0]) for v in refused), refused
    # refused before MindSpore saw them (msdebug's own words), not with MindSpore's error passed on
    assert [v[:2] for v in refused if "MindSpore refused" in v[4]] == []


# --------------------------------------------------------------------------- integer fields

# What MindSpore does with a JSON float with no fraction (2.0) and with true in each integer field of
# each config msdebug checks: "takes" (applies it as that whole number), "drops" (warns and keeps its
# default) or "refuses" (raises). From MindSpore's sources; asked for real in the next tests where the
# installed MindSpore can be (env_config's rdr section only by 2.7.0: tests/test_rdr_live.py).
# MS_PROFILER_OPTIONS has no integer field (ProfilerParameters.PARAMS: bool, str, list and enums).
_UNSIGNED = {2.0: "refuses", True: "refuses"}  # DumpJsonParser's CheckJsonUnsignedType: is_number_unsigned()
_PYTHON_INT = {2.0: "drops", True: "drops"}  # DynamicProfilerConfigContext: isinstance(int), not bool; -1 kept
INTEGER_FIELDS = {
    # EnvConfigParser::ParseRdrMode, common/debug/env_config_parser.cc:255-262 (2.7.0): a comparison by value
    # (`content != 1 && content != 2`, nlohmann 3.10.1), no type check; true is no number: warns, mode 1
    ("env_config", "rdr.mode"): {2.0: "takes", True: "drops"},
    # debug/data_dump/dump_json_parser.cc (2.7.0 lines): ParseDumpMode 564, ParseInputOutput 762,
    # ParseOpDebugMode 909, ParseOverflowNumber 579, ParseInitialIteration 683, ParseSampleMode 891,
    # ParseSampleNum 900
    ("dump", "common_dump_settings.dump_mode"): _UNSIGNED,
    ("dump", "common_dump_settings.input_output"): _UNSIGNED,
    ("dump", "common_dump_settings.op_debug_mode"): _UNSIGNED,
    ("dump", "common_dump_settings.overflow_number"): _UNSIGNED,
    ("dump", "common_dump_settings.initial_iteration"): _UNSIGNED,
    ("dump", "e2e_dump_settings.sample_mode"): _UNSIGNED,
    ("dump", "e2e_dump_settings.sample_num"): _UNSIGNED,
    # ParseSupportDevice, dump_json_parser.cc:872: `uint32_t device_id = device;` converts, no check
    ("dump", "common_dump_settings.support_device"): {2.0: "takes", True: "takes"},
    # dynamic_profile/dynamic_profiler_config_context.py:282-304 (_check_non_special_params)
    ("profiler_config", "start_step"): _PYTHON_INT,
    ("profiler_config", "stop_step"): _PYTHON_INT,
    ("profiler_config", "analyse_mode"): _PYTHON_INT,
}
# Where msdebug refuses what MindSpore takes, on purpose.
STRICTER = {
    # MindSpore takes true as device 1 and 2.5 as device 2, and on CPU never reads the list again
    ("dump", "common_dump_settings.support_device"): "a device number is a whole number",
}
# What a field needs beside it for MindSpore to read it at all.
_BESIDE = {"overflow_number": {"op_debug_mode": 3}, "sample_num": {"sample_mode": 1}}


def _integer_fields() -> set[tuple[str, str]]:
    from msdebug.recorders import datadump, envconfig
    from msdebug.recorders.profile import config_fields, option_fields

    def walk(spec, prefix=""):
        for name, field in spec.items():
            if field.kind == "object":
                yield from walk(field.fields or {}, f"{prefix}{name}.")
            elif field.kind == "int" or (field.kind == "list" and field.items == "uint"):
                yield prefix + name

    schemas = {
        "env_config": envconfig.SPEC,
        "dump": datadump.SPEC,
        "profiler_options": option_fields(),
        "profiler_config": config_fields(),
    }
    return {(schema, name) for schema, spec in schemas.items() for name in walk(spec)}


def _dump_config(name: str, value, path: str = "/tmp/out") -> dict:
    section, key = name.split(".")
    config = json.loads(json.dumps(_DUMP_BASE))
    config["common_dump_settings"]["path"] = path
    where = config[section]
    where.update(_BESIDE.get(key, {}))
    where[key] = [value] if key == "support_device" else value
    return config


def _msdebug_verdict(schema: str, name: str, value) -> tuple[str, object]:
    """("accepts", the value msdebug keeps) or ("refuses", its message)."""
    from msdebug.errors import MsDebugError
    from msdebug.recorders import datadump, envconfig
    from msdebug.recorders.profile import check_config

    try:
        if schema == "env_config":
            section, key = name.split(".")
            kept = envconfig.EnvConfig.from_dict({section: {key: value}}).flat()[name]
        elif schema == "dump":
            section, key = name.split(".")
            kept = datadump.check_config(_dump_config(name, value))[section][key]
        else:
            check_config({"start_step": 2, "stop_step": 3, name: value})
            kept = value
    except MsDebugError as error:
        return "refuses", str(error)
    return "accepts", kept


def test_every_integer_field_of_every_schema_has_mindspore_s_verdict():
    assert _integer_fields() == set(INTEGER_FIELDS)


@pytest.mark.parametrize(
    ("schema", "name", "value"),
    [(schema, name, value) for (schema, name), verdicts in INTEGER_FIELDS.items() for value in verdicts],
)
def test_an_integer_field_given_2_0_or_true_gets_mindspore_s_verdict(schema, name, value):
    mindspore = INTEGER_FIELDS[schema, name][value]
    verdict, said = _msdebug_verdict(schema, name, value)
    if mindspore == "takes" and (schema, name) not in STRICTER:
        # what msdebug reports is what MindSpore applies: the whole number, written back as one
        assert verdict == "accepts" and said == int(value) and type(said) is int, said
    else:
        assert verdict == "refuses", (schema, name, value, said)
        # one line that names the field and repeats the value (as JSON or as Python)
        key = name.rpartition(".")[2]
        given = [value] if key == "support_device" else value
        assert "\n" not in said and key in said and any(f"got {v}." in said for v in (json.dumps(given), given)), said


def test_mindspore_2_10_refuses_a_float_or_true_in_every_unsigned_dump_field(tmp_path):
    # The dump fields the table says MindSpore refuses: each raises at the graph call, and says why.
    refused = [
        (name, value)
        for (schema, name), verdicts in INTEGER_FIELDS.items()
        if schema == "dump"
        for value, verdict in verdicts.items()
        if verdict == "refuses"
    ]
    configs = [_dump_config(name, value, f"{tmp_path}/out{n}") for n, (name, value) in enumerate(refused)]
    results = _run_dumps(tmp_path, configs)
    assert len(results) == len(configs), results[-1]
    for (name, value), (_, verdict, mindspore, files) in zip(refused, results, strict=True):
        assert verdict != "accepted", (name, value)
        assert mindspore.startswith("refused: ") and "should be unsigned int type" in mindspore, (
            name,
            value,
            mindspore,
        )
        assert files == [], (name, value)


def test_mindspore_2_10_takes_a_float_or_true_as_a_support_device(tmp_path):
    # The one integer field MindSpore converts without a check; msdebug refuses it (STRICTER).
    config = _dump_config("common_dump_settings.support_device", 2.0, f"{tmp_path}/out")
    config["common_dump_settings"]["support_device"] = [2.0, True]
    [[_, verdict, mindspore, files]] = _run_dumps(tmp_path, [config])
    assert "support_device must be a list of device numbers, got [2.0, True]." in verdict, verdict
    assert "\n" not in verdict
    assert mindspore == "ran" and files, mindspore


def test_mindspore_2_10_drops_a_float_or_true_in_every_profiler_config_integer():
    cases = [
        [name, value]
        for (schema, name), verdicts in INTEGER_FIELDS.items()
        if schema == "profiler_config"
        for value in verdicts
    ]
    result = _result(
        f"""
        import json
        from mindspore import log
        from mindspore.profiler.dynamic_profile.dynamic_profiler_config_context import DynamicProfilerConfigContext
        said = []
        log.warning = lambda message, *args, **kwargs: said.append(str(message))
        out = []
        for name, value in json.loads({json.dumps(cases)!r}):
            said.clear()
            config = {{"start_step": 2, "stop_step": 3, name: value}}
            kept = DynamicProfilerConfigContext(config).to_dict()[name]
            out.append([name, value, kept, list(said)])
        print(json.dumps({{"out": out}}))
        """
    )
    assert len(result["out"]) == len(cases)
    for name, value, kept, said in result["out"]:
        expected = INTEGER_FIELDS["profiler_config", name][value]
        assert expected == "drops" and kept == -1, (name, value, kept)
        assert any(f"'{name}' should be int" in line for line in said), (name, value, said)
