"""Every snippet of README.md runs as written: in a real Jupyter kernel, in order, the way a
reader runs them.

The rule, also stated in README.md: a block fenced ```python or ```ipython is a cell a reader
can run, and is run here, each block one cell; a plain ``` block is a shell command or a
syntax summary and is not run. A block whose first line begins ``# In a fresh kernel`` is run
in a new kernel (a data dump, for one, must be on before the process's first graph compile).
A runnable block may only be left out with the line ``<!-- readme-test: skip (REASON) -->``
right above its fence, for a reason about the machine (a GPU or Ascend); each one is listed in
the test's output.

The README's paths are relative to the root of a clone. Each kernel starts in its own
temporary directory (what the snippets write stays out of the repository) in which
``tests/data`` is a link to this clone's fixtures, so what a snippet reads is there as it is
for a reader at the clone's root.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import Kernel, text_of

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
SKIP = re.compile(r"<!-- readme-test: skip \((.+)\) -->\s*$")
FRESH = "# In a fresh kernel"
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


def kernels(runnable: list[tuple[int, str, str | None]]) -> list[list[tuple[int, str, str | None]]]:
    """The blocks split into the kernels they run in: a new one at each ``# In a fresh kernel``."""
    groups: list[list[tuple[int, str, str | None]]] = []
    for block in runnable:
        if not groups or block[1].startswith(FRESH):
            groups.append([])
        groups[-1].append(block)
    return groups


def test_the_rule_finds_runnable_blocks_and_leaves_shell_blocks_out():
    text = "a\n```\npip install x\n```\n```python\nx = 1\n```\n<!-- readme-test: skip (GPU only) -->\n```ipython\n%y\n```\n"
    assert blocks(text) == [(5, "x = 1\n", None), (9, "%y\n", "GPU only")]


def test_a_fresh_kernel_block_starts_a_new_kernel():
    runnable = [(1, "a = 1\n", None), (5, "# In a fresh kernel: why\nb\n", None), (9, "c\n", None)]
    assert kernels(runnable) == [[runnable[0]], runnable[1:]]
    assert kernels(runnable[1:]) == [runnable[1:]]


def run_in_one_kernel(group: list[tuple[int, str, str | None]]) -> None:
    kernel = Kernel()
    data = Path(kernel.cwd, "tests", "data")
    try:
        data.parent.mkdir()
        data.symlink_to(ROOT / "tests" / "data")
        for line, code, skip in group:
            if skip is not None:
                print(f"README.md line {line}: not run ({skip})")
                continue
            status, outputs = kernel.run(code)
            errors = [o for o in outputs if o["type"] == "error"]
            if status == "ok" and not errors:
                continue
            shown = "\n".join(f"    {row}" for row in code.rstrip().splitlines())
            # A UsageError comes as stderr text, not as an error message.
            why = "\n".join(f"{e['ename']}: {e['evalue']}" for e in errors) or text_of(outputs, name="stderr")[-2000:]
            pytest.fail(f"README.md line {line}: this block failed:\n{shown}\n{why}", pytrace=False)
    finally:
        if data.is_symlink():
            data.unlink()
        for path in Path(kernel.cwd).rglob("*"):  # MindSpore writes its data dump read-only
            if path.is_dir():
                path.chmod(0o700)
        kernel.close()


@pytest.mark.xdist_group("readme")
def test_every_readme_snippet_runs_as_written():
    runnable = blocks(README.read_text(encoding="utf-8"))
    assert len(runnable) >= 5, "README.md lost its runnable examples (```python / ```ipython blocks)"
    for group in kernels(runnable):
        run_in_one_kernel(group)
