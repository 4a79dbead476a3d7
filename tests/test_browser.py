"""The panel in a real JupyterLab, driven through Debian's Chromium with Playwright (see lab.py)."""

from __future__ import annotations

import re
import time

import pytest

from lab import browser_marks, chromium, jupyterlab, open_notebook, run_cell, write_notebook

pytestmark = browser_marks


@pytest.fixture
def lab(tmp_path):
    """JupyterLab serving one notebook: load msdebug and show the panel; print the mode."""
    with jupyterlab(tmp_path) as lab:
        cells = [
            "%load_ext msdebug\n%mscontext --panel",
            'import mindspore\nprint("mode is", mindspore.get_context("mode"))',
        ]
        write_notebook(lab.root / "panel.ipynb", cells)
        yield lab


def test_clicking_graph_in_the_panel_sets_graph_mode(lab, tmp_path):
    from playwright.sync_api import expect

    started = time.monotonic()
    screenshot = tmp_path / "panel.png"
    with chromium() as page:
        cells = open_notebook(page, lab, "panel.ipynb", cells=2)
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
    print(f"screenshot: {screenshot} (browser test took {time.monotonic() - started:.1f} s)")
    assert printed.strip() == "mode is 0"
