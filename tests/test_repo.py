"""The repository keeps its promises: CI runs exactly the test command README.md gives."""

from __future__ import annotations

import re
import sys
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


def test_every_mutation_of_ci_mutate_still_finds_the_line_it_breaks():
    """``.ci/mutate`` breaks one line per feature; a file moved or a line rewritten would leave
    it with nothing to break, and it would say so only when someone runs it."""
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.SourceFileLoader("ci_mutate", str(ROOT / ".ci" / "mutate"))
    spec = importlib.util.spec_from_loader("ci_mutate", loader)
    mutate = importlib.util.module_from_spec(spec)
    sys.modules["ci_mutate"] = mutate  # its dataclasses look their module up there
    try:
        loader.exec_module(mutate)
    finally:
        del sys.modules["ci_mutate"]
    assert {m.feature for m in mutate.MUTATIONS} >= {"context", "capture", "NaN", "profile", "interrupts"}
    for mutation in mutate.MUTATIONS:
        source = (ROOT / mutation.path).read_text(encoding="utf-8") if (ROOT / mutation.path).is_file() else ""
        assert source.count(mutation.old) == 1, f"{mutation.feature}: {mutation.path} no longer holds its line once"
        for test in mutation.tests:
            path, _, name = test.partition("::")
            assert (ROOT / path).is_file(), f"{mutation.feature}: no {path}"
            if name:
                defined = (ROOT / path).read_text(encoding="utf-8")
                assert f"def {name}(" in defined, f"{mutation.feature}: {path} has no test {name}"
