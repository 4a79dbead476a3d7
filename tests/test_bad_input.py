"""Every bad input gives one clear line, changes nothing, and the shell keeps working."""

from __future__ import annotations

import re

import mindspore as ms
import pytest
from IPython.core.error import UsageError

import msdebug
from msdebug.keys import version_tuple

from helpers import text_of

# (what the person typed after %mscontext, a regex the one-line message must match)
BAD_LINES = [
    ("mdoe=graph", r"unknown context key 'mdoe'\. Did you mean 'mode'\?"),
    ("pynative_sync=true", r"unknown context key 'pynative_sync'\. Did you mean 'pynative_synchronize'\?"),
    ("mode=grpah", r"mode: 'grpah' is not allowed; use graph or pynative .*Did you mean 'graph'\?"),
    ("mode=5", r"mode: '5' is not allowed"),
    ("mode=", r"mode: empty value; use graph or pynative"),
    ("max_call_depth=abc", r"max_call_depth: expected an integer >= 1, got 'abc'"),
    ("max_call_depth=0", r"max_call_depth: 0 is out of range; allowed: an integer >= 1"),
    ("device_id=5000", r"device_id: 5000 is out of range; allowed: an integer from 0 to 4095"),
    ("pynative_synchronize=maybe", r"pynative_synchronize: expected true or false .*got 'maybe'"),
    ("save_graphs=4", r"save_graphs: '4' is not allowed; use 0, 1, 2 or 3"),
    (
        "jit_syntax_level=strcit",
        r"jit_syntax_level: 'strcit' is not allowed; use strict, compatible or lax.*Did you mean 'strict'\?",
    ),
    ("deterministic=sometimes", r"deterministic: 'sometimes' is not allowed; use ON or OFF"),
    ("save_graphs_path=", r"save_graphs_path: empty value; give a non-empty path, e\.g\. \./graphs"),
    ("save_graphs_path=''", r"save_graphs_path: empty value"),
    (
        'jit_config={"jit_levl": "O1"}',
        r"jit_config: unknown entry 'jit_levl'; allowed: jit_level, infer_boost\. Did you mean 'jit_level'\?",
    ),
    ('jit_config={"jit_level": "O7"}', r"jit_config: entry 'jit_level': 'O7' is not allowed; use auto, O0, O1 or O2"),
    ("jit_config=O1", r"jit_config: expected a dict such as \{'jit_level': 'O1'\}, got 'O1'"),
    ("jit_level=fast", r"jit_level: 'fast' is not allowed; use auto, O0, O1 or O2"),
    ("max_device_memory=2MB", r"max_device_memory: expected a size such as 2GB or 3\.5GB, got '2MB'"),
    (
        "max_device_memory=2GB",
        r"max_device_memory only takes effect on GPU, Ascend; this process runs on CPU, where MindSpore ignores it\. Nothing was changed\.",
    ),
    ("print_file_path=.", r"print_file_path should be a file path, but \. is a directory"),
    ("precision_mode=force_fp16", r"precision_mode only takes effect on Ascend \(an entry of ascend_config\)"),
    ("enable_dump=true", r"enable_dump was removed in MindSpore 2\.5"),
    ("save_ms_model=true", r"save_ms_model was removed before MindSpore 1\.2"),
    ("enable_sparse=true", r"enable_sparse is accepted but ignored by MindSpore .*, so setting it has no effect"),
    (
        "device=GPU",
        r"device: GPU is not available in this MindSpore build \(it supports CPU\); .*first cell of a fresh kernel: import mindspore; mindspore\.set_device\('GPU'\)",
    ),
    (
        "device_target=Ascend",
        r"device: Ascend is not available in this MindSpore build .*mindspore\.set_device\('Ascend'\)",
    ),
    ("device=TPU:0", r"device: 'TPU:0' is not a device; use CPU, GPU or Ascend"),
    ("device=CPU device_id=0", r"give either device=TARGET:ID or device_target / device_id, not both"),
    (
        "env_config_path=/no/such/config.json",
        r"MindSpore refused env_config_path='/no/such/config\.json': .*is not exists",
    ),
    ("mode=graph mode=pynative", r"mode is given twice"),
    ("--chnaged", r"unknown option --chnaged; .*Did you mean '--changed'\?"),
    ("--reset mode=graph", r"use --reset on its own"),
    ("mode save_graphs=1", r"mode: write mode=VALUE to set it, or %mscontext mode for help"),
    ('save_graphs_path="unclosed', r"unclosed quote in: save_graphs_path=\"unclosed"),
    ("nosuchkey", r"unknown context key 'nosuchkey'"),
]


if version_tuple(ms.__version__) >= (2, 10):  # still accepted by 2.7 .. 2.9
    BAD_LINES += [
        ("grad_for_scalar=true", r"grad_for_scalar was removed in MindSpore 2\.10; use Tensor inputs"),
        (
            "precompile_only=true",
            r"precompile_only was removed in MindSpore 2\.10; use the environment variable MS_DEV_PRECOMPILE_ONLY",
        ),
    ]


@pytest.mark.parametrize("line, message", BAD_LINES, ids=[line for line, _ in BAD_LINES])
def test_bad_input_gives_one_line_and_changes_nothing(ip, line, message):
    before = dict(msdebug.snapshot())
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("mscontext", line)
    text = str(caught.value)
    assert "\n" not in text
    assert re.search(message, text), text
    assert dict(msdebug.snapshot()) == before
    # The shell carries on: the same cell through run_cell reports a UsageError, then works.
    result = ip.run_cell(f"%mscontext {line}")
    assert type(result.error_in_exec) is UsageError
    assert ip.run_cell("%mscontext mode=graph").success
    assert msdebug.get("mode") == 0


BAD_CELLS = [
    ("%%mscontext --changed\nx = 1", r"%%mscontext takes only key=value settings, got --changed"),
    ("%%mscontext mode=graph max_device_memory=2GB\nx = 1", r"max_device_memory only takes effect on GPU, Ascend"),
    ("%%mscontext device=CPU:7\nx = 1", r"device: cannot be scoped to one cell, MindSpore sets it once per process"),
    ("%%mscontext mode=grpah\nx = 1", r"Did you mean 'graph'\?"),
    ("%%mscontext mode=graph\nawait something()", r"%%mscontext cannot run top-level await"),
]


@pytest.mark.parametrize("cell, message", BAD_CELLS, ids=[c.split("\n")[0] for c, _ in BAD_CELLS])
def test_bad_scoped_cell_does_not_run_the_body(ip, cell, message):
    ip.user_ns.pop("x", None)
    before = dict(msdebug.snapshot())
    result = ip.run_cell(cell)
    assert type(result.error_in_exec) is UsageError
    assert re.search(message, str(result.error_in_exec)), str(result.error_in_exec)
    assert "x" not in ip.user_ns
    assert dict(msdebug.snapshot()) == before


def test_bad_input_in_a_real_kernel_is_a_usage_error_and_the_kernel_carries_on(kernel):
    assert kernel.run("%load_ext msdebug")[0] == "ok"
    status, outputs = kernel.run("%mscontext mode=grpah")
    # IPython shows a UsageError as one stderr line, without a traceback; the cell fails.
    assert status == "error"
    assert [out["type"] for out in outputs] == ["stream"]
    assert text_of(outputs, name="stderr") == (
        "UsageError: mode: 'grpah' is not allowed; use graph or pynative (also GRAPH_MODE, 0, "
        "PYNATIVE_MODE, 1). Did you mean 'graph'?\n"
    )
    status, outputs = kernel.run("%mscontext mode=graph\nimport mindspore; print(mindspore.get_context('mode'))")
    assert status == "ok"
    assert text_of(outputs, name="stdout") == "0\n"
