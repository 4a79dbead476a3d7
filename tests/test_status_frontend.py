"""The status bar's front end as a package: its jest unit tests, and JupyterLab seeing it installed.

Both run in the environment pytest runs in: ``pip install -e .`` (or a wheel) put the built
labextension there, and left ``extension/node_modules`` from the build behind.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import labextension_missing

ROOT = Path(__file__).resolve().parent.parent
EXTENSION = ROOT / "extension"


def _tool(name: str) -> str | None:
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def test_the_pure_modules_pass_their_unit_tests():
    jlpm = _tool("jlpm")
    if shutil.which("node") is None:
        pytest.skip(f"jest needs node; {labextension_missing() or 'node is missing'}")
    assert jlpm is not None, "JupyterLab's jlpm is missing from this environment (pip install -e '.[test]')"
    if not (EXTENSION / "node_modules" / ".bin" / "jest").exists():
        pytest.skip("extension/node_modules is missing: pip install -e . (or jlpm install in extension/) installs it")
    result = subprocess.run([jlpm, "test", "--ci"], cwd=EXTENSION, capture_output=True, text=True, timeout=300)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report[-4000:]
    assert re.search(r"Tests:\s+\d+ passed, \d+ total", report), report[-2000:]


def test_one_version_for_python_and_npm():
    import msdebug

    package = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))
    assert msdebug.__version__ == package["version"]
    schema = json.loads((EXTENSION / "schema" / "plugin.json").read_text(encoding="utf-8"))
    assert set(schema["properties"]) == {"enabled", "fields"}


def test_jupyterlab_lists_the_labextension_enabled():
    """What ``pip install .``, ``pip install -e .`` and a wheel must give (CI installs with -e)."""
    if why := labextension_missing():
        pytest.skip(why)
    result = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    listing = re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)
    version = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))["version"]
    assert re.search(rf"msdebug v{re.escape(version)} enabled\s+OK \(python, msdebug\)", listing), listing
