"""The msdebug command in a terminal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import mindspore as ms
import numpy as np

import msdebug

from helpers import kernel_env, labextension_missing


def msdebug_command(*args: str) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("msdebug")
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=180, env=kernel_env())


def test_info_prints_versions_device_and_the_table():
    result = msdebug_command("info")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"msdebug {msdebug.__version__}"
    assert f"numpy {np.__version__}" in lines
    assert f"MindSpore {ms.__version__}" in lines
    assert "device CPU:0 (this build supports CPU)" in lines
    # With node the install built the status bar; without, info says why it is missing.
    assert f"JupyterLab status bar: {labextension_missing() or 'installed'}" in lines
    assert f"MindSpore {ms.__version__} · PYNATIVE · CPU:0 · sync off · runtime not started" in lines
    for title in ("Execution", "Device", "Debugging and dumps", "Memory", "Threads and timeouts"):
        assert title in lines
    assert any(line.split()[:2] == ["mode", "PYNATIVE_MODE"] for line in lines)
    assert result.stderr == ""  # no MindSpore log lines in a terminal either


def test_info_changed_and_python_dash_m():
    result = subprocess.run(
        [sys.executable, "-m", "msdebug", "info", "--changed"],
        capture_output=True,
        text=True,
        timeout=180,
        env={**kernel_env(), "GLOG_v": "3"},
    )
    assert result.returncode == 0, result.stderr
    assert "every key has its default value" in result.stdout
    assert "GLOG_v=3" in result.stdout


def test_no_command_prints_help_and_fails():
    result = msdebug_command()
    assert result.returncode == 2
    assert "info" in result.stdout and "versions, device and the context table" in result.stdout
