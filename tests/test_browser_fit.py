"""A profile of a net with five levels of nested cells (tests/nested_net.py) fits the notebook at
1280 px: in a real JupyterLab, and in that notebook, saved and exported with ``jupyter nbconvert
--to html``, opened in Chromium (see lab.py). Its scope names, up to 136 characters without a
space, break at ``/``; none is cut.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nested_net

from helpers import kernel_env
from lab import browser_marks, chromium, open_notebook, run_cell, write_notebook

pytestmark = browser_marks

WIDTH = 1280
SETUP = "%load_ext msdebug\nms.set_context(mode=ms.GRAPH_MODE)"
PROFILED = "%%msprofile --steps 1:3 --top 25\ntrain_nested(4)"
CELLS = [Path(nested_net.__file__).read_text(encoding="utf-8"), SETUP, PROFILED]
LONGEST = "Grad_Conv2D/Conv2DBackpropFilter-op0"

# Every output (and every element in it) shows all it holds: nothing scrolls or sticks out sideways.
_TOO_WIDE = """
selector => Array.from(document.querySelectorAll(selector)).flatMap((output, i) => {
  const right = output.getBoundingClientRect().right + 1;
  // Inside a picture only the <svg> itself counts: its <text> report odd scroll widths.
  const boxes = [output, ...output.querySelectorAll('*')].filter(el => el.tagName === 'svg' || !el.closest('svg'));
  return boxes
    .filter(el => el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).display !== 'inline'
                  || el.getBoundingClientRect().right > right)
    .map(el => ({i, el: el.tagName + '.' + el.className, scroll: el.scrollWidth, client: el.clientWidth,
                 right: el.getBoundingClientRect().right, limit: right}));
})
"""


def _check(page, selector: str) -> None:
    report = page.locator(f"{selector} .msdebug-profile")
    from playwright.sync_api import expect

    expect(report).to_contain_text(re.compile(r"Top \d+ ops by total time"))
    expect(report).to_contain_text(LONGEST)  # whole, not cut
    too_wide = page.evaluate(_TOO_WIDE, selector)
    assert too_wide == [], f"wider than the notebook at {WIDTH} px: {too_wide}"


def test_deeply_nested_scope_names_fit_jupyterlab_and_the_exported_notebook_at_1280_px(lab):
    from playwright.sync_api import expect

    with chromium(width=WIDTH, height=1400) as page:
        write_notebook(lab.root / "nested.ipynb", CELLS)
        cells = open_notebook(page, lab, "nested.ipynb", cells=len(CELLS))
        for index in range(len(CELLS)):
            run_cell(page, cells, index)
        _check(page, ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output")

        # The notebook as the person saved it, exported to HTML (the outputs are the ones above).
        page.keyboard.press("Control+s")
        expect(page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty")).to_have_count(0)
        result = subprocess.run(
            [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(lab.root / "nested.ipynb")],
            capture_output=True, text=True, timeout=600, env=kernel_env(), cwd=lab.root,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        page.goto((lab.root / "nested.html").as_uri())
        _check(page, ".jp-OutputArea-output")
