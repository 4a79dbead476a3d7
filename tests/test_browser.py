"""The panel in a real JupyterLab, driven through Debian's Chromium with Playwright (see lab.py)."""

from __future__ import annotations

import re
import time

import pytest

from helpers import labextension_missing
from lab import browser_marks, chromium, open_notebook, run_cell, write_notebook

pytestmark = browser_marks


CELLS = [
    "%load_ext msdebug\n%mscontext --panel",
    'import mindspore\nprint("mode is", mindspore.get_context("mode"))',
    "%mscontext device=GPU:0",
]


def test_clicking_graph_in_the_panel_sets_graph_mode(lab, tmp_path):
    from playwright.sync_api import expect

    write_notebook(lab.root / "panel.ipynb", CELLS)
    started = time.monotonic()
    screenshot = tmp_path / "panel.png"
    with chromium() as page:
        cells = open_notebook(page, lab, "panel.ipynb", cells=3)
        panel = run_cell(page, cells, 0)
        graph = cells.nth(0).locator(".widget-toggle-button", has_text="GRAPH")
        expect(graph).to_be_visible()
        expect(panel).to_contain_text("PYNATIVE · CPU:0 · sync off")
        graph.click()
        # The kernel answers with the refreshed panel: the summary line follows.
        expect(panel).to_contain_text("GRAPH · CPU:0 · sync off")
        expect(graph).to_have_class(re.compile(r"mod-active"))

        output = run_cell(page, cells, 1)
        expect(output).to_contain_text("mode is")
        printed = output.inner_text()
        # The notebook scrolls inside its own panel: photograph the panel's output itself.
        panel.screenshot(path=str(screenshot))
        assert printed.strip() == "mode is 0"

        if why := labextension_missing():
            pytest.skip(f"the panel passed; {why}")
        # A long one-line UsageError breaks between words (msdebug's labextension style), not
        # mid-word as JupyterLab's `word-break: break-all` for outputs would, and fits the width.
        error = run_cell(page, cells, 2).locator("pre")
        expect(error).to_contain_text("UsageError: device: GPU is not available")
        style = error.evaluate(
            "e => [getComputedStyle(e).wordBreak, e.scrollWidth <= e.clientWidth, e.getClientRects().length]"
        )
        assert style[:2] == ["normal", True], style
        lines = error.evaluate(
            "e => { const r = document.createRange(); r.selectNodeContents(e);"
            " return [...r.getClientRects()].map(b => Math.round(b.top)).filter((t, i, a) => a.indexOf(t) === i).length; }"
        )
        assert lines > 1  # the ~190-character line does wrap at 1280 px

    print(f"screenshot: {screenshot} (browser test took {time.monotonic() - started:.1f} s)")
