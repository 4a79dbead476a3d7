"""Every snippet of README.md runs as written: in one fresh Jupyter kernel, in order, in a
temporary directory (the kernel's own).

The rule, also stated in README.md: a block fenced ```python or ```ipython is a cell a reader
can run, and is run here, each block one cell; a plain ``` block is a shell command or a
syntax summary and is not run. A runnable block may only be left out with the line
``<!-- readme-test: skip (REASON) -->`` right above its fence, for a reason about the machine
(a GPU or Ascend); each one is listed in the test's output.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import Kernel

README = Path(__file__).resolve().parent.parent / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
SKIP = re.compile(r"<!-- readme-test: skip \((.+)\) -->\s*$")
RUN = ("python", "ipython")


def blocks(text: str) -> list[tuple[int, str, str | None]]:
    """(line number, code, skip reason or None) of every runnable block, in order."""
    found = []
    for match in FENCE.finditer(text):
        if match.group(1) not in RUN:
            continue
        before = text[: match.start()].rstrip("\n").rpartition("\n")[2]
        skip = SKIP.search(before)
        found.append((text.count("\n", 0, match.start()) + 1, match.group(2), skip.group(1) if skip else None))
    return found


def test_the_rule_finds_runnable_blocks_and_leaves_shell_blocks_out():
    text = "a\n```\npip install x\n```\n```python\nx = 1\n```\n<!-- readme-test: skip (GPU only) -->\n```ipython\n%y\n```\n"
    assert blocks(text) == [(5, "x = 1\n", None), (9, "%y\n", "GPU only")]


@pytest.mark.xdist_group("readme")
def test_every_readme_snippet_runs_as_written_in_one_kernel():
    runnable = blocks(README.read_text(encoding="utf-8"))
    assert len(runnable) >= 5, "README.md lost its runnable examples (```python / ```ipython blocks)"
    kernel = Kernel()
    try:
        for line, code, skip in runnable:
            if skip is not None:
                print(f"README.md line {line}: not run ({skip})")
                continue
            status, outputs = kernel.run(code)
            errors = [o for o in outputs if o["type"] == "error"]
            shown = "\n".join(f"    {row}" for row in code.rstrip().splitlines())
            assert status == "ok" and not errors, f"README.md line {line}: this block failed:\n{shown}\n" + "\n".join(
                f"{e['ename']}: {e['evalue']}" for e in errors
            )
    finally:
        kernel.close()
