"""The repository keeps its promises: CI runs exactly the test command README.md gives."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\n(.+?)\n```", section)


def test_readme_has_exactly_two_commands_setup_and_tests():
    setup, tests = _commands()
    assert "jupyter lab notebooks/" in setup and '".[all]"' in setup
    assert tests.endswith("-m pytest") and '".[test]"' in tests


def test_ci_runs_the_readme_test_command_verbatim():
    _, tests = _commands()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert tests in ci.splitlines()
