"""Profiling a cell: the real MindSpore CPU profiler in GRAPH and PyNative, step ranges, errors,
interrupts, Model.train callbacks, DynamicProfilerMonitor, MS_PROFILER_OPTIONS, and the readers
on real, hostile and cut-short files.

Each real profile costs seconds on this machine, so the profiles are made once per module
(fixtures) and several tests read each.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import warnings
from pathlib import Path

import numpy as np
import pytest

import msdebug
from msdebug import interrupts
from msdebug.dumps.profile import read_executions, read_profile
from msdebug.errors import InvalidValueError, MsDebugError, ProfileReadError, ProfilerOptionsError
from msdebug.recorders.profile import check_config, parse_steps, profiler_options

from helpers import Kernel, run_python

DATA = Path(__file__).parent / "data"
TWO_RANKS = DATA / "profile_2rank"
OPS = {"MatMul", "BiasAdd", "ReLU"}


def _net():
    from mindspore import nn

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Dense(32, 64)
            self.relu = nn.ReLU()
            self.fc2 = nn.Dense(64, 10)

        def construct(self, x):
            return self.fc2(self.relu(self.fc1(x)))

    return Net()


def _loop(mode: str, output: Path, steps: str | None, timeline: bool = False, count: int = 6):
    import mindspore as ms

    x = ms.Tensor(np.ones((16, 32), np.float32))
    with msdebug.context(mode=mode):
        net = _net()
        with msdebug.profile(steps=steps, output=output, timeline=timeline) as prof:
            for _ in range(count):
                net(x).asnumpy()
                msdebug.step()
    return prof


@pytest.fixture(scope="module")
def graph_profile(tmp_path_factory):
    return _loop("graph", tmp_path_factory.mktemp("graph") / "out", "1:4", timeline=True)


@pytest.fixture(scope="module")
def pynative_profile(tmp_path_factory):
    return _loop("pynative", tmp_path_factory.mktemp("pynative") / "out", "2:5")


# --------------------------------------------------------------------------- real loops


@pytest.mark.parametrize("which", ["graph_profile", "pynative_profile"])
def test_a_real_loop_names_the_ops_it_ran_with_positive_times(which, request):
    report = request.getfixturevalue(which).report
    types = {row.op_type: row for row in report.op_types()}
    assert OPS <= set(types)
    assert all(types[name].total_ms > 0 and types[name].occurrences > 0 for name in OPS)
    assert all(row.total_ms > 0 for row in report.ops())
    assert report.total_ms > 0
    assert not report.partial


def test_the_step_range_is_what_was_recorded(graph_profile, pynative_profile):
    graph, pynative = graph_profile.report, pynative_profile.report
    assert graph.steps.numbers == (1, 2, 3)
    assert pynative.steps.numbers == (2, 3, 4)
    assert graph.steps.mode == "GRAPH" and pynative.steps.mode == "PYNATIVE"
    # 2 MatMul per step in both modes; every execution falls inside a recorded step.
    for report in (graph, pynative):
        assert {row.op_type: row.occurrences for row in report.op_types()}["MatMul"] == 2 * 3
        executions = report.runs[0].executions
        assert executions.per_step_count == [5, 5, 5] and executions.outside == 0
        assert all(ms > 0 for ms in executions.per_step_ms)


def test_graph_op_names_are_full_scope_names(graph_profile):
    names = {row.full_name for row in graph_profile.report.ops()}
    assert "Default/fc1-Dense/MatMul-op0" in names and "Default/fc2-Dense/MatMul-op0" in names


def test_timeline_writes_the_chrome_trace_and_says_how_to_open_it(graph_profile, pynative_profile):
    report = graph_profile.report
    assert report.trace is not None and report.trace.name == "trace_view.json"
    from msdebug.dumps.profile import read_trace

    trace = read_trace(report.trace)
    assert trace.events >= 15 and "CPU OP" in trace.processes and trace.complete
    assert "ui.perfetto.dev" in repr(report) and "chrome://tracing" in report._repr_html_()
    assert pynative_profile.report.trace is None
    assert "--timeline" in pynative_profile.report._repr_html_()


def test_mindspore_output_is_kept_in_the_report_not_printed(graph_profile):
    # The analysis child's progress bar went into the log.
    assert "Parsing" in graph_profile.report.log


def test_the_report_html_has_the_tables_and_a_step_picture(graph_profile):
    html = graph_profile.report._repr_html_()
    assert "<svg" in html and "time per recorded step" in html
    assert "Default/<wbr>fc1-Dense/<wbr>MatMul-op0" in html and "<style" not in html


def test_compare_two_profiles(graph_profile, pynative_profile):
    comparison = msdebug.compare_profiles(graph_profile, pynative_profile.report)
    kinds = {change.name: change.status for change in comparison.comparison.ops}
    assert kinds["Default/fc1-Dense/MatMul-op0"] == "vanished"  # PyNative names ops differently
    assert "new" in kinds.values()
    types = {change.name: change for change in comparison.comparison.op_types}
    assert types["MatMul"].status == "both" and types["MatMul"].speedup > 0
    assert "speed-up" in repr(comparison) and "speed-up" in comparison._repr_html_()


def test_open_profile_reads_a_profile_directory_again(graph_profile):
    again = msdebug.open_profile(graph_profile.output, top=2)
    assert again.steps.numbers == (1, 2, 3)
    assert "... 3 more ops" in repr(again)


# --------------------------------------------------------------------------- errors


def test_an_exception_in_the_profiled_block_keeps_what_was_recorded(tmp_path):
    import mindspore as ms

    x = ms.Tensor(np.ones((16, 32), np.float32))
    net = _net()
    with pytest.raises(ZeroDivisionError):
        with msdebug.profile(output=tmp_path / "out") as prof:
            for number in range(4):
                net(x).asnumpy()
                if number == 2:
                    1 / 0  # noqa: B018 - the failure under test
                msdebug.step()
    report = prof.report
    assert report.partial and "ZeroDivisionError" in report.steps.error
    assert report.steps.numbers == (0, 1, 2)
    assert {row.op_type: row.occurrences for row in report.op_types()}["MatMul"] == 6
    assert "partial" in repr(report) and "partial profile" in report._repr_html_()
    # The profiler was stopped: the next profile starts.
    with msdebug.profile(output=tmp_path / "again") as again:
        net(x).asnumpy()
    assert again.report.steps.numbers == (0,)


def test_bad_arguments_are_one_line_errors(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep me")
    cases = [
        (lambda: parse_steps("5:2"), "0 <= START < STOP"),
        (lambda: parse_steps("two:3"), "START:STOP"),
        (lambda: msdebug.profile(steps=(1, 2, 3)), "START:STOP"),
        (lambda: msdebug.profile(top=0), "top must be"),
        (lambda: msdebug.profile(output=tmp_path / "full").__enter__(), "never writes over"),
        (lambda: msdebug.open_profile(tmp_path / "nothing"), "no such directory"),
        (lambda: msdebug.open_profile(tmp_path), "no profile inside"),
        (lambda: msdebug.compare_profiles(1, 2), "cannot compare"),
        (lambda: msdebug.ProfileSteps(0, 3), "from 1"),
        (lambda: msdebug.ProfileEpochs(3, 2), "stop (2) must be >= start (3)"),
        (lambda: msdebug.dynamic_profile(poll_interval=0), "poll_interval"),
    ]
    for call, words in cases:
        with pytest.raises(MsDebugError) as caught:
            call()
        message = str(caught.value)
        assert words in message and "\n" not in message, message
    assert (tmp_path / "full" / "x").read_text() == "keep me"


# --------------------------------------------------------------------------- option and config validation

BAD_OPTIONS = [
    ({"output_path": "/tmp/x"}, "start is required"),
    ({"start": "yes"}, "start must be true or false, got 'yes'"),
    ({"start": True, "output_path": "rel/dir"}, "output_path must be an absolute path"),
    ({"start": True, "op_time": True}, 'op_time: MindSpore 2.10.0 no longer reads it; use activities ["NPU"]'),
    ({"start": True, "aicore_metrics": 1}, "aicore_metrics: MindSpore 2.10.0 no longer reads it; use aic_metrics."),
    ({"start": True, "timeline_limit": 100}, "timeline_limit: MindSpore 2.10.0 no longer reads it"),
    ({"start": True, "profile_framework": "all"}, "profile_framework: MindSpore 2.10.0 no longer reads it; use activ"),
    ({"start": True, "profiler_level": "Level9"}, "profiler_level must be one of 'LevelNone'"),
    ({"start": True, "profiler_level": "LevelNone"}, 'profiler_level "LevelNone" needs mstx true'),
    ({"start": True, "activities": ["TPU"]}, "activities must be a non-empty list of 'NPU', 'GPU', 'CPU'"),
    ({"start": True, "aic_metrics": "AiCoreNone"}, "aic_metrics must be one of 'PipeUtilization'"),
    ({"start": True, "aic_metrics": "Memory"}, 'aic_metrics needs profiler_level "Level1" or "Level2"'),
    ({"start": True, "record_shapes": True, "activities": ["NPU"]}, 'record_shapes needs "CPU" in activities'),
    ({"start": True, "mstx_domain_include": ["a"]}, "mstx_domain_include needs mstx true"),
    (
        {"start": True, "mstx": True, "mstx_domain_include": ["a"], "mstx_domain_exclude": ["b"]},
        "cannot be set together",
    ),
    ({"start": True, "mstx": True, "mstx_domain_include": [""]}, "mstx_domain_include must be a list of non-empty str"),
    ({"start": True, "export_type": "text"}, "export_type must be a non-empty list of 'db', 'text'"),
    ({"start": True, "ouput_path": "/tmp"}, "unknown key ouput_path (MindSpore would ignore it)"),
    ({"start": True, "ouput_path": "/tmp"}, "Did you mean 'output_path'?"),
]

BAD_CONFIGS = [
    ({"stop_step": 3}, "start_step is required"),
    ({"start_step": 4, "stop_step": 2}, "stop_step (2) must be >= start_step (4)"),
    ({"start_step": 2, "stop_step": -1}, "both be -1"),
    ({"start_step": 0, "stop_step": 2}, "steps count from 1"),
    ({"start_step": "2", "stop_step": 3}, "start_step must be a step number from 1, or -1"),
    ({"start_step": 2, "stop_step": 3, "analyse_mode": 2}, "analyse_mode must be one of -1, 0, 1, got 2"),
    ({"start_step": 2, "stop_step": 3, "profiler_level": 5}, "profiler_level must be one of 'LevelNone', 'Level0'"),
    ({"start_step": 2, "stop_step": 3, "profile_framework": 1}, "profile_framework: MindSpore 2.10.0 no longer reads"),
    ({"start_step": 2, "stop_step": 3, "with_stack": "true"}, "with_stack must be true or false"),
    ({"start_step": 2, "stop_step": 3, "export_type": ["csv"]}, "export_type must be a non-empty list of 'db', 'text'"),
    ({"start_step": 2, "stop_step": 3, "host_sys": ["gpu"]}, "host_sys must be a list of 'cpu', 'mem'"),
    ({"start_step": 2, "stop_step": 3, "mstx_domain_exclude": ["a"]}, "mstx_domain_exclude needs mstx true"),
    ({"start_step": 2, "stop_step": 3, "strat_step": 2}, "Did you mean 'start_step'?"),
    ([1, 2], "the top level must be a JSON object"),
]


@pytest.fixture
def no_profiler_options():
    """MS_PROFILER_OPTIONS unset during the test and after it (a leak would profile every
    interpreter a later test starts)."""
    saved = os.environ.pop("MS_PROFILER_OPTIONS", None)
    yield
    os.environ.pop("MS_PROFILER_OPTIONS", None)
    if saved is not None:
        os.environ["MS_PROFILER_OPTIONS"] = saved


@pytest.mark.parametrize(("values", "message"), BAD_OPTIONS)
@pytest.mark.usefixtures("no_profiler_options")
def test_bad_profiler_options_name_the_field(values, message):
    with pytest.raises(ProfilerOptionsError) as caught:
        profiler_options(apply=False, **values)
    text = str(caught.value)
    assert message in text and "\n" not in text and text.startswith("MS_PROFILER_OPTIONS: ")
    assert "MS_PROFILER_OPTIONS" not in os.environ


@pytest.mark.parametrize(("values", "message"), BAD_CONFIGS)
def test_bad_profiler_config_files_name_the_field(values, message):
    with pytest.raises(ProfilerOptionsError) as caught:
        check_config(values)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_config_file_that_is_not_json(tmp_path):
    config = tmp_path / "profiler_config.json"
    config.write_text('{"start_step": 2,')
    with pytest.raises(ProfilerOptionsError, match=r"profiler_config.json: not JSON \(.* at line 1\)"):
        msdebug.dynamic_profile(cfg_path=tmp_path, output_path=tmp_path / "out")


@pytest.mark.usefixtures("no_profiler_options")
def test_profiler_options_set_late_give_the_first_cell():
    import mindspore  # noqa: F401 - the point: it is imported already

    options = profiler_options(start=True, output_path="/tmp/msprof", mstx=True, mstx_domain_include=["a"])
    assert json.loads(os.environ["MS_PROFILER_OPTIONS"]) == {
        "start": True,
        "output_path": "/tmp/msprof",
        "mstx": True,
        "mstx_domain_include": ["a"],
    }
    text = repr(options)
    assert "already imported" in text and "mstx_domain_include applies only on Ascend" in text
    assert options.first_cell.startswith("%env MS_PROFILER_OPTIONS={") and "import mindspore" in options.first_cell


def test_ms_profiler_options_profile_a_fresh_process_from_import_to_exit(tmp_path):
    options = profiler_options(apply=False, start=True, output_path=str(tmp_path / "env"), activities=["CPU"])
    env = {**os.environ, "MS_PROFILER_OPTIONS": options.json}
    env.pop("PYTEST_CURRENT_TEST", None)
    done = run_python(
        """
        import numpy as np, mindspore as ms
        from mindspore import ops
        x = ms.Tensor(np.ones((4, 4), np.float32))
        for _ in range(3):
            ops.matmul(x, x).asnumpy()
        """,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = msdebug.open_profile(tmp_path / "env")
    assert "MatMul" in {row.op_type for row in report.op_types()}


# --------------------------------------------------------------------------- device_id


def test_device_id_stays_settable_after_a_profile_run():
    done = run_python(
        """
        import msdebug, mindspore as ms
        with msdebug.profile(output="out") as prof:
            print("note:", prof.note)
        print("ops:", len(prof.report.ops()))
        ms.set_context(device_id=1)
        print("device_id set")
        """
    )
    assert "device_id set" in done.stdout, done.stderr[-2000:]
    assert "note: note: the first op run here starts the CPU runtime, which fixes device_id=0" in done.stdout
    assert "ops: 0" in done.stdout


def test_without_msdebug_the_profiler_freezes_device_id():
    # The reason for msdebug's guard: MindSpore's own start/stop reads get_context("device_id").
    done = run_python(
        """
        import mindspore as ms
        from mindspore.profiler import ProfilerActivity, profile, tensorboard_trace_handler
        prof = profile(activities=[ProfilerActivity.CPU], start_profile=False,
                       on_trace_ready=tensorboard_trace_handler("out", analyse_flag=False))
        prof.start(); prof.stop()
        try:
            ms.set_context(device_id=1)
            print("settable")
        except TypeError:
            print("frozen")
        """
    )
    assert "frozen" in done.stdout, done.stderr[-2000:]


# --------------------------------------------------------------------------- callbacks


def test_profile_steps_with_model_train(tmp_path):
    import mindspore.dataset as ds
    from mindspore import nn
    from mindspore.train import Model

    def data():
        for _ in range(5):
            yield np.ones((16, 32), np.float32), np.ones((16,), np.int32)

    with msdebug.context(mode="graph"):
        net = _net()
        loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        model = Model(net, loss, nn.Momentum(net.trainable_params(), 0.01, 0.9))
        callback = msdebug.ProfileSteps(start=2, stop=4, output=tmp_path / "train")
        model.train(1, ds.GeneratorDataset(data, ["x", "y"]), callbacks=[callback], dataset_sink_mode=False)
        epochs = msdebug.ProfileEpochs(start=2, stop=2, output=tmp_path / "epochs")
        model.train(3, ds.GeneratorDataset(data, ["x", "y"]), callbacks=[epochs], dataset_sink_mode=False)
    report = callback.report
    assert report is not None and report.steps.numbers == (1, 2, 3)  # Model.train's steps 2..4
    # both windows let SIGINT go (MindSpore's graph runs outside them may have put in a handler of theirs)
    assert interrupts._holds == 0 and signal.getsignal(signal.SIGINT) is not interrupts._handler
    types = {row.op_type for row in report.op_types()}
    assert "MatMul" in types and "ReLU" in types
    assert report.runs[0].executions.outside == 0
    # Epoch 2 only: one window, the 5 steps of that epoch inside it.
    by_epoch = epochs.report
    assert by_epoch.steps.numbers == (1,)
    assert {row.op_type: row.occurrences for row in by_epoch.op_types()}["ReLU"] == 5


def test_dynamic_profiler_monitor_driven_by_an_edited_config(tmp_path):
    done = run_python(
        f"""
        import time, numpy as np, mindspore as ms, msdebug
        from mindspore import nn
        from msdebug.errors import ProfilerError
        dp = msdebug.dynamic_profile(cfg_path={str(tmp_path / "cfg")!r}, output_path={str(tmp_path / "out")!r},
                                     poll_interval=1)
        print("default config valid:", sorted(dp.config)[:2])
        try:
            dp.report()
        except ProfilerError as error:
            print("before any run:", " ".join(str(error).split()))
        dp.edit(start_step=2, stop_step=3, activities=["CPU"])
        dp.wait_read()      # the monitor's poller has read it (it re-reads the file every second)
        net = nn.Dense(8, 4)
        x = ms.Tensor(np.ones((2, 8), np.float32))
        for _ in range(6):
            net(x).asnumpy()
            dp.step()
        report = dp.report()
        print("runs:", [p.name for p in dp.runs()])
        print("types:", {{r.op_type: r.occurrences for r in report.op_types()}})
        print("log has monitor lines:", "Dynamic Profiler" in "".join(dp.log))
        dp.close()
        """
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "default config valid: ['activities', 'aic_metrics']" in done.stdout
    assert "runs: ['rank0_start2_stop3']" in done.stdout
    # Nothing recorded yet: the message names the wait that works, not a number of seconds to sleep.
    assert "dp.edit(), call dp.wait_read() (the monitor reads the file every 1 s), then run those steps" in done.stdout
    assert "'MatMul': 2" in done.stdout  # one MatMul per step, steps 2 and 3
    assert "log has monitor lines: True" in done.stdout
    assert "[Dynamic Profiler]" not in done.stdout


def test_each_dynamic_profile_reads_its_own_config_beside_other_monitors(tmp_path):
    # MindSpore names the monitors' shared memory after the hour, for every process on the host.
    # Here a killed kernel left that memory behind, and two monitors are open at once: each must
    # still have a poller that reads its own file (before, all three shared one and nobody read).
    done = run_python(
        f"""
        import time, msdebug
        from multiprocessing import shared_memory
        name = time.strftime("DynamicProfileShm%Y%m%d%H", time.localtime())
        try:
            left = shared_memory.SharedMemory(name=name, create=True, size=1 << 20)
        except FileExistsError:
            left = shared_memory.SharedMemory(name=name)
        try:
            first = msdebug.dynamic_profile(cfg_path={str(tmp_path / "a")!r}, output_path={str(tmp_path / "A")!r},
                                            poll_interval=1)
            second = msdebug.dynamic_profile(cfg_path={str(tmp_path / "b")!r}, output_path={str(tmp_path / "B")!r},
                                             poll_interval=1)
            first.edit(start_step=2, stop_step=3)
            second.edit(start_step=5, stop_step=9)
            print("first read:", first.wait_read()["stop_step"])
            print("second read:", second.wait_read()["stop_step"])
            first.close()
            second.close()
        finally:
            left.close()
            left.unlink()
        """
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "first read: 3" in done.stdout
    assert "second read: 9" in done.stdout


# --------------------------------------------------------------------------- readers


def test_two_ranks_from_msrun_mark_the_straggler():
    report = msdebug.open_profile(TWO_RANKS)
    assert [run.rank for run in report.runs] == [0, 1]
    text = repr(report)
    # Rank 1 is the straggler (make_profile.py gives it a 32x wider layer): its compute ops are the
    # slowest, and it spends the least time in AllReduce, where rank 0 waits for it.
    assert "2 ranks" in text
    assert "AllReduce: straggler rank 1 (least time in the collective, 31.309 ms: it arrived last" in text
    assert "MatMul: slowest rank 1 (4.746 ms)" in text
    html = report._repr_html_()
    assert "31.309 ms ◀ straggler" in html and "4.746 ms ◀ slowest" in html and "45.863 ms ◀" not in html


def test_a_collective_marks_the_rank_with_the_least_time_a_compute_op_the_slowest(tmp_path):
    times = {  # op type: (rank 0 ms, rank 1 ms)
        "AllGather": (10.0, 2.0),
        "HcomReduceScatter": (1.0, 6.0),
        "Broadcast": (3.0, 9.0),
        "BroadcastTo": (5.0, 1.0),  # a compute op, though its name starts like a collective's
        "MatMul": (1.0, 7.0),
    }
    for rank in (0, 1):
        framework = tmp_path / f"rank_{rank}" / f"host_{rank}_1_ascend_ms" / "FRAMEWORK"
        framework.mkdir(parents=True)
        rows = "".join(f"{name},1,1,{ms[rank]},{ms[rank]},0.2\n" for name, ms in times.items())
        (framework / f"cpu_op_type_info_{rank}.csv").write_text(
            "op_type,type_occurrences,execution_frequency(per-step),total_compute_time,avg_time(ms),percent\n" + rows
        )
    report = msdebug.open_profile(tmp_path)
    marks = {mark.op_type: (mark.label, mark.rank) for mark in report.rank_marks()}
    assert marks == {
        "AllGather": ("straggler", 1),
        "HcomReduceScatter": ("straggler", 0),
        "Broadcast": ("straggler", 0),
        "BroadcastTo": ("slowest", 0),
        "MatMul": ("slowest", 1),
    }
    text = repr(report)
    assert "AllGather: straggler rank 1 (least time in the collective, 2.000 ms" in text
    assert "BroadcastTo: slowest rank 0 (5.000 ms)" in text


def test_runs_assembled_from_single_machine_jobs_are_told_apart(tmp_path, graph_profile, pynative_profile):
    for rank, profile in enumerate((graph_profile, pynative_profile)):
        shutil.copytree(profile.output, tmp_path / f"rank_{rank}")
    report = msdebug.open_profile(tmp_path)
    assert [run.rank for run in report.runs] == [0, 1]  # both files end in _0: the folders decide


def _copy_run(source: Path, target: Path) -> Path:
    run = next(source.glob("*_ascend_ms"))
    shutil.copytree(run, target / run.name)
    return target / run.name / "FRAMEWORK"


def test_a_truncated_csv_and_timestamp_file_give_a_message_and_what_could_be_read(tmp_path, graph_profile):
    """Wherever the cut falls in the last line, the notes are the same: a last line without its
    line end is a file cut short, and the lines before it are read."""
    framework = _copy_run(graph_profile.output, tmp_path)
    detail, stamps = framework / "cpu_op_detail_info_0.csv", framework / "cpu_op_execute_timestamp_0.txt"
    whole = {path: path.read_bytes() for path in (detail, stamps)}
    (framework / "cpu_op_type_info_0.csv").unlink()
    # The length of each file's last line with its line end: a cut of 1 .. that - 1 bytes falls inside it.
    last = min(len(data) - data.rindex(b"\n", 0, len(data) - 1) - 1 for data in whole.values())
    seen = set()
    for cut in range(1, last):
        for path, data in whole.items():
            path.write_bytes(data[:-cut])
        report = msdebug.open_profile(tmp_path)
        assert len(report.ops()) == 4 and {row.op_type for row in report.op_types()} <= OPS, cut
        seen.add(report.notes)
    assert len(seen) == 1
    notes = " | ".join(seen.pop())
    assert (
        "ops: cpu_op_detail_info_0.csv ends in the middle of a row (the file is cut short); its last row was not read."
    ) in notes
    assert (
        "op executions: cpu_op_execute_timestamp_0.txt ends in the middle of a line (the file is cut short); "
        "the record at the cut was not counted."
    ) in notes
    assert "cpu_op_type_info" in notes and "op types: rebuilt from the ops." in notes


def test_a_fifo_where_a_csv_belongs_is_not_read(tmp_path, graph_profile):
    framework = _copy_run(graph_profile.output, tmp_path)
    (framework / "cpu_op_type_info_0.csv").unlink()
    os.mkfifo(framework / "cpu_op_type_info_0.csv")
    report = msdebug.open_profile(tmp_path)
    assert any("is a FIFO (named pipe); msdebug reads only regular files" in note for note in report.notes)


def _write_profile(root: Path, names: list[str], executions: int = 2) -> Path:
    framework = root / "host_1_20260101000000000_ascend_ms" / "FRAMEWORK"
    framework.mkdir(parents=True)
    with open(framework / "cpu_op_detail_info_0.csv", "w", newline="") as handle:
        import csv

        writer = csv.writer(handle)
        writer.writerow(
            "op_side,op_type,op_name,full_op_name,op_occurrences,op_total_time(ms),op_avg_time(ms),"
            "total_proportion,subgraph,pid".split(",")
        )
        for index, name in enumerate(names):
            writer.writerow(["Host", "Evil<b>", name, name, executions, 1 + index, 0.5, 1 / len(names), "Default", 1])
    with open(framework / "cpu_op_execute_timestamp_0.txt", "w") as handle:
        for name in names[:100]:
            handle.write(f"{name};HostCpuOps;" + " ".join(f"{1_800_000_000_000_000_000 + i},0.5,0" for i in range(2)))
            handle.write(" \n")
    return root


def test_hostile_op_names_are_escaped(tmp_path):
    names = ["<script>alert(1)</script>", 'Default/"onmouseover=alert(1)', "a;b;HostCpuOps;x"]
    report = msdebug.open_profile(_write_profile(tmp_path, names))
    html = report._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html and "Evil<b>" not in html
    assert '"onmouseover' not in html
    assert {row.full_name for row in report.ops()} == set(names)
    assert set(report.runs[0].executions.per_op) == set(names)  # the name with ';' read back whole


def test_the_html_stays_bounded_for_100000_ops(tmp_path):
    names = [f"Default/block{index // 10}/MatMul-op{index}" for index in range(100_000)]
    report = msdebug.open_profile(_write_profile(tmp_path, names), top=15)
    html = report._repr_html_()
    assert len(html) < 60_000
    assert "... 99985 more ops" in html


def test_timestamp_triples_parse_exactly():
    from msdebug.dumps.profile import _parse_triples

    start, duration = _parse_triples(b"1795448225925894390,0.028564,0 17,12,3 5,1.5,0 ")
    assert start.tolist() == [1795448225925894390, 17, 5] and duration.tolist() == [0.028564, 12.0, 1.5]
    # Starts of one width take the one-gather path; a '.' there is refused on it too.
    start, duration = _parse_triples(b"1795448225925894390,0.5,0 1795448225925894391,1.25,7")
    assert start.tolist() == [1795448225925894390, 1795448225925894391] and duration.tolist() == [0.5, 1.25]
    # Durations in exponent notation, as numpy reads them.
    start, duration = _parse_triples(b"5,1e-3,0 6,2.5E+06,1 7,3e0,2")
    assert start.tolist() == [5, 6, 7] and duration.tolist() == [0.001, 2.5e6, 3.0]
    for bad in (
        b"1,2,3 4,5",
        b"1,2.5.1,0",
        b"1;2;3",
        b"17.5,1,0 18.5,2,0",
        b"1,abc,0",
        b"1,,0",
        b"1,nan,0",
        b"1,inf,0",
        b"1,-2,0",
        b"-1,2,0",
        b"1e3,2,0",  # a start is whole ns in digits: a float would round its 19 digits
        b"9223372036854775808,1,0",
        b"18446744073709551616,1,0",
        b"123456789012345678901234,1,0",
        b"1,2,3.5",
        b"1,2,-1",
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert _parse_triples(bad) is None, bad
        assert not caught, (bad, caught[0].message)  # refused, not read through numpy's float fallback


def test_durations_read_as_numpy_reads_floats_on_every_path():
    """Plain decimals take a faster path (two integer columns); it gives the float numpy's float
    parser gives, as do the forms that take the float path (exponents, no '.', a bare '.')."""
    import random

    from msdebug.dumps.profile import _parse_triples

    forms = ["0.028564", "12", "1.5", "2e-5", ".5", "3.", "123456.123456789", "0.000001", "9007199254.740993"]
    forms += ["1.0000000000000002", "99999999999.99999", "0.1234567890123456789", "0.000"]
    rng = random.Random(3)
    for _ in range(300):
        values = [rng.choice(forms) for _ in range(rng.randint(1, 6))]
        _, duration = _parse_triples(" ".join(f"{i},{v},0" for i, v in enumerate(values)).encode())
        assert duration.tolist() == np.array(values, dtype=np.float64).tolist(), values


def _numbers_profile(root: Path, total: str, duration: str) -> Path:
    """A one-op profile whose op detail CSV says ``total`` ms and whose second execution took ``duration`` ms."""
    framework = root / "host_1_20260101000000000_ascend_ms" / "FRAMEWORK"
    framework.mkdir(parents=True)
    (framework / "cpu_op_type_info_0.csv").write_text(
        "op_type,type_occurrences,execution_frequency(per-step),total_compute_time,avg_time(ms),percent\n"
        "MatMul,2,1,2.5,1.25,0.71\nReLU,2,1,1e0,0.5,2.9E-1\n"
    )
    (framework / "cpu_op_detail_info_0.csv").write_text(
        "op_side,op_type,op_name,full_op_name,op_occurrences,op_total_time(ms),op_avg_time(ms),total_proportion\n"
        f"Host,MatMul,MatMul-op0,Default/MatMul-op0,2e0,{total},1.25E+0,1\n"
        "Host,ReLU,ReLU-op1,Default/ReLU-op1,2,1,0.5,0\n"
    )
    (framework / "cpu_op_execute_timestamp_0.txt").write_text(
        "Default/ReLU-op1;HostCpuOps;1795448225925894390,0.5,0 1795448225925894391,5e-1,0 \n"
        f"Default/MatMul-op0;HostCpuOps;1795448225925894392,2.5E+0,0 1795448225925894393,{duration},0 \n"
    )
    return root


def test_numbers_in_exponent_notation_are_read(tmp_path):
    report = msdebug.open_profile(_numbers_profile(tmp_path, "2.5e+00", "2.5e0"))
    assert not report.notes
    assert [(row.op_type, row.total_ms, row.share) for row in report.op_types()] == [
        ("MatMul", 2.5, 0.71),
        ("ReLU", 1.0, 0.29),
    ]
    matmul = next(row for row in report.ops() if row.op_type == "MatMul")
    assert (matmul.occurrences, matmul.total_ms, matmul.avg_ms) == (2, 2.5, 1.25)
    executions = report.runs[0].executions
    assert executions.per_op == {"Default/ReLU-op1": [2, 1.0], "Default/MatMul-op0": [2, 5.0]}
    assert executions.first_ns == 1795448225925894390  # whole ns, not rounded through a float


@pytest.mark.parametrize(
    "total, duration, notes",
    [
        (
            "12abc",
            "2.5",
            [
                "ops: cpu_op_detail_info_0.csv: 1 row(s) with a non-number where a time or count belongs, the first "
                "at line 2 (op_total_time(ms) '12abc' is not a finite number such as 12, 0.5 or 1e-3); skipped."
            ],
        ),
        (
            "inf",
            "nan",
            [
                "ops: cpu_op_detail_info_0.csv: 1 row(s) with a non-number where a time or count belongs, the first "
                "at line 2 (op_total_time(ms) 'inf' is not a finite number such as 12, 0.5 or 1e-3); skipped.",
                "op executions: cpu_op_execute_timestamp_0.txt: 1 line(s) with a malformed record, the first at line "
                "2: duration ms 'nan' is not a finite number such as 12, 0.5 or 1e-3; 2 record(s) around them not "
                "counted.",
            ],
        ),
        (
            "-1e-3",
            "2.5.0",
            [
                "ops: cpu_op_detail_info_0.csv: 1 row(s) with a negative time, count or share, the first at line 2 "
                "(op_total_time(ms) is negative); skipped.",
                "op executions: cpu_op_execute_timestamp_0.txt: 1 line(s) with a malformed record, the first at line "
                "2: duration ms '2.5.0' is not a finite number such as 12, 0.5 or 1e-3; 2 record(s) around them not "
                "counted.",
            ],
        ),
    ],
)
def test_a_bad_number_is_one_note_naming_file_line_and_field(tmp_path, total, duration, notes):
    report = msdebug.open_profile(_numbers_profile(tmp_path, total, duration))
    assert list(report.notes) == notes
    assert [row.full_name for row in report.ops()] == ["Default/ReLU-op1"]
    if duration != "2.5":
        assert list(report.runs[0].executions.per_op) == ["Default/ReLU-op1"]


def test_timestamp_file_in_tiny_blocks_reads_the_same(tmp_path, graph_profile, monkeypatch):
    import msdebug.dumps.profile as reader

    stamps = next(Path(graph_profile.output).glob("*/FRAMEWORK/cpu_op_execute_timestamp_0.txt"))
    whole = read_executions(stamps, graph_profile.report.steps.bounds)
    monkeypatch.setattr(reader, "_BLOCK", 7)
    monkeypatch.setattr(reader, "_BATCH", 1)
    pieces = read_executions(stamps, graph_profile.report.steps.bounds)
    assert pieces.per_op == whole.per_op and pieces.per_step_count == whole.per_step_count


def test_not_a_profile():
    with pytest.raises(ProfileReadError, match="no profile inside"):
        read_profile(DATA / "print")
    with pytest.raises(InvalidValueError):
        msdebug.open_profile(TWO_RANKS, top=-1)


def test_cli_prints_the_tables_and_compares(capsys):
    from msdebug.cli import main

    assert main(["profile", str(TWO_RANKS), "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "AllReduce" in out and "... 4 more ops" in out
    assert main(["profile", str(TWO_RANKS / "rank_0"), "--compare", str(TWO_RANKS / "rank_1")]) == 0
    assert "speed-up" in capsys.readouterr().out
    assert main(["profile", "/nonexistent-profile"]) == 2
    assert "msdebug profile: /nonexistent-profile: no such directory" in capsys.readouterr().err


# --------------------------------------------------------------------------- the magic, in a real kernel


@pytest.fixture(scope="module")
def profiling_kernel():
    kernel = Kernel()
    status, outputs = kernel.run(
        "%load_ext msdebug\n"
        "import numpy as np, mindspore as ms, msdebug\n"
        "from mindspore import nn\n"
        "ms.set_context(mode=ms.GRAPH_MODE)\n"
        "net = nn.SequentialCell([nn.Dense(32, 64), nn.ReLU(), nn.Dense(64, 10)])\n"
        "x = ms.Tensor(np.ones((16, 32), np.float32))"
    )
    assert status == "ok", outputs
    yield kernel
    kernel.close()


def _streams(outputs: list[dict]) -> str:
    return "".join(out.get("text", "") for out in outputs if out["type"] == "stream")


def test_magic_shows_the_report_and_nothing_mindspore_printed(profiling_kernel):
    status, outputs = profiling_kernel.run(
        "%%msprofile --steps 1:3 --timeline --output prof1\nfor _ in range(4):\n    net(x).asnumpy()\n    msdebug.step()"
    )
    assert status == "ok", outputs
    results = [out for out in outputs if out["type"] == "execute_result"]
    assert len(results) == 1
    html = results[0]["data"]["text/html"]
    assert "MatMul" in html and "2 step(s) recorded" in html and "trace_view.json" in html
    streams = _streams(outputs)
    assert "Parsing" not in streams and "[WARNING]" not in streams and "Start parsing" not in streams


def test_magic_with_verbose_lets_mindspore_through(profiling_kernel):
    status, outputs = profiling_kernel.run("%%msprofile --timeline --verbose --output prof2\nnet(x).asnumpy()")
    assert status == "ok", outputs
    assert "Parsing" in _streams(outputs)


def test_magic_error_shows_the_partial_report_then_the_error(profiling_kernel):
    status, outputs = profiling_kernel.run(
        "%%msprofile --output prof3\nfor i in range(3):\n    net(x).asnumpy()\n    msdebug.step()\nraise ValueError('boom')"
    )
    assert status == "error"
    kinds = [out["type"] for out in outputs if out["type"] != "stream"]
    assert kinds == ["display_data", "error"]
    assert (
        "partial profile: ValueError: boom"
        in outputs[[o["type"] for o in outputs].index("display_data")]["data"]["text/html"]
    )
    error = next(out for out in outputs if out["type"] == "error")
    assert error["ename"] == "ValueError" and "the profiler was stopped" in error["traceback"][-1]


def test_magic_bad_options_are_one_line_usage_errors(ip):
    from IPython.core.error import UsageError

    for line, words in (
        ("--stesp 1:2", "Did you mean '--steps'?"),
        ("--steps 3:1", "0 <= START < STOP"),
        ("--top many", "--top needs a whole number"),
        ("--output", "--output needs a value"),
        ("--timeline=yes", "--timeline takes no value"),
    ):
        result = ip.run_cell(f"%%msprofile {line}\npass")
        error = result.error_in_exec
        assert type(error) is UsageError and words in str(error) and "\n" not in str(error), (line, error)


def test_a_kernel_interrupt_during_a_profiled_cell(profiling_kernel):
    kernel = profiling_kernel
    # The interrupt goes once three steps were recorded (an event: the cell makes a file).
    msg_id = kernel.start_until(
        "%%msprofile --output prof4\nimport time\nfor i in range(1000):\n"
        "    net(x).asnumpy()\n    msdebug.step()\n"
        "    if i == 2:\n        open('stepped', 'w').close()\n    time.sleep(0.05)",
        "stepped",
    )
    kernel.manager.interrupt_kernel()
    status, outputs = kernel.finish(msg_id)
    assert status == "error"
    assert [out["ename"] for out in outputs if out["type"] == "error"] == ["KeyboardInterrupt"]
    shown = [out for out in outputs if out["type"] == "display_data"]
    assert len(shown) == 1 and "partial profile: interrupted" in shown[0]["data"]["text/html"]
    # The profiler was stopped in finally: the next profiled cell works.
    status, outputs = kernel.run("%%msprofile --output prof5\nnet(x).asnumpy()")
    assert status == "ok", outputs
    html = next(out for out in outputs if out["type"] == "execute_result")["data"]["text/html"]
    assert "1 step(s) recorded" in html and "partial" not in html


def test_magic_options_complete(profiling_kernel):
    assert profiling_kernel.complete("%%msprofile --st") == (["--steps"], "--st")
    found, fragment = profiling_kernel.complete("%%msprofile --order ")
    assert (sorted(found), fragment) == (["name", "time"], "")


def test_dynamic_profile_as_a_model_train_callback(tmp_path):
    done = run_python(
        f"""
        import time, numpy as np, msdebug
        import mindspore as ms, mindspore.dataset as ds
        from mindspore import nn
        from mindspore.train import Model
        ms.set_context(mode=ms.GRAPH_MODE)
        dp = msdebug.dynamic_profile(cfg_path={str(tmp_path / "cfg")!r}, output_path={str(tmp_path / "out")!r},
                                     poll_interval=1)
        dp.edit(start_step=2, stop_step=3, activities=["CPU"])
        dp.wait_read()
        def data():
            for _ in range(5):
                yield np.ones((4, 8), np.float32), np.ones((4,), np.int32)
        net = nn.Dense(8, 3)
        model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                      nn.Momentum(net.trainable_params(), 0.01, 0.9))
        model.train(1, ds.GeneratorDataset(data, ["x", "y"]), callbacks=[dp.callback], dataset_sink_mode=False)
        report = dp.report()
        print("runs:", [p.name for p in dp.runs()])
        print("types:", sorted(r.op_type for r in report.op_types()))
        """
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "runs: ['rank0_start2_stop3']" in done.stdout
    assert "MatMul" in done.stdout and "ApplyMomentum" in done.stdout
    assert "[Dynamic Profiler]" not in done.stdout


def test_the_older_profiler_api_is_used_where_profile_is_missing():
    # MindSpore before 2.5 has only mindspore.Profiler; 2.10 still has it (deprecated), so hiding
    # mindspore.profiler.profile makes msdebug take that adapter for real. A fresh process: 2.10's
    # wrapper records nothing after another profiler ran in the same process.
    done = run_python(
        """
        import numpy as np, mindspore as ms, mindspore.profiler, msdebug
        from mindspore import nn
        del mindspore.profiler.profile
        net = nn.Dense(8, 4)
        x = ms.Tensor(np.ones((2, 8), np.float32))
        with msdebug.profile(output="legacy") as prof:
            for _ in range(2):
                net(x).asnumpy()
                prof.step()
        print("api:", prof._session.api)
        print("MatMul:", {row.op_type: row.occurrences for row in prof.report.op_types()}["MatMul"])
        """
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "api: mindspore.Profiler" in done.stdout and "MatMul: 2" in done.stdout
