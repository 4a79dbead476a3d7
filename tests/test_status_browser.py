"""The status-bar item in a real JupyterLab, driven through Debian's Chromium (see lab.py).

JupyterLab runs with the labextension of the msdebug under test: the one built into the
source tree (``pip install -e .`` builds it there), else the installed one (a wheel). The
screenshots are test artifacts in the test's temporary directory; ``MSDEBUG_UPDATE_SCREENSHOTS=1``
copies them to docs/screenshots/ (README shows them).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from helpers import labextension_missing
from lab import browser_marks, chromium, open_notebook, run_cell, wait_for_kernel, write_notebook

pytestmark = [*browser_marks, pytest.mark.skipif(bool(labextension_missing()), reason=labextension_missing() or "")]

ITEM = "#jp-main-statusbar .msdebug-StatusItem"
GREYED = re.compile(r"\bmsdebug-mod-greyed\b")


def keep(screenshot: Path) -> None:
    if os.environ.get("MSDEBUG_UPDATE_SCREENSHOTS") == "1":
        docs = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
        docs.mkdir(parents=True, exist_ok=True)
        shutil.copy(screenshot, docs / screenshot.name)


CELLS = [
    "%load_ext msdebug",
    "import mindspore",
    'print("mode is", mindspore.get_context("mode"))',
    "%mscontext mode=pynative",
    "mindspore.set_context(mode=mindspore.GRAPH_MODE)",
]


def test_the_status_item_follows_and_steers_the_kernel(lab, tmp_path):
    from playwright.sync_api import expect

    write_notebook(lab.root / "status.ipynb", CELLS, warm=False)  # MindSpore "not imported" first
    write_notebook(lab.root / "other.ipynb", ["1 + 1"])
    with chromium(width=1280, height=720) as page:
        cells = open_notebook(page, lab, "status.ipynb", cells=5)
        item = page.locator(ITEM)
        # A kernel without msdebug: greyed out, and says how to get it.
        expect(item).to_have_text("MindSpore: msdebug not loaded")
        expect(item).to_have_class(GREYED)

        run_cell(page, cells, 0)
        expect(item).to_contain_text("not imported · print capture off")
        expect(item).to_have_class(GREYED)

        run_cell(page, cells, 1)
        expect(item).to_have_text("MindSpore 2.10 · PYNATIVE · CPU:0 · sync off · print capture off")
        expect(item).not_to_have_class(GREYED)
        shot = tmp_path / "status-item.png"
        page.locator("#jp-main-statusbar").screenshot(path=str(shot))
        keep(shot)

        item.click()
        menu = page.locator(".lm-Menu.msdebug-Menu")
        expect(menu).to_be_visible()
        expect(menu.locator(".lm-Menu-itemLabel")).to_have_text(
            [
                "Switch to GRAPH mode",
                "Turn synchronous execution on",
                "Turn print capture on",
                "Open the settings panel in the notebook",
                "Copy a first cell for a fresh kernel",
            ]
        )
        box = menu.bounding_box()
        shot = tmp_path / "status-menu.png"
        page.screenshot(path=str(shot), clip={"x": 0, "y": box["y"] - 10, "width": 1280, "height": 720 - box["y"] + 10})
        keep(shot)
        menu.locator(".lm-Menu-item", has_text="Switch to GRAPH mode").click()
        expect(item).to_contain_text("MindSpore 2.10 · GRAPH · CPU:0")
        output = run_cell(page, cells, 2)
        expect(output).to_have_text("mode is 0")  # the kernel's mode changed, not only the label

        run_cell(page, cells, 3)
        expect(item).to_contain_text(" · PYNATIVE · ")
        run_cell(page, cells, 4)  # behind msdebug's back: shown by the end of the cell
        expect(item).to_contain_text(" · GRAPH · ")

        # The menu opens the settings panel in a new cell below, and runs it.
        item.click()
        menu.locator(".lm-Menu-item", has_text="Open the settings panel").click()
        expect(cells).to_have_count(6)
        expect(cells.nth(5).locator(".widget-toggle-button", has_text="GRAPH")).to_be_visible()

        # Another notebook, whose kernel has no msdebug: the item follows it, and comes back.
        page.locator(".jp-DirListing-item", has_text="other.ipynb").dblclick()
        wait_for_kernel(page, lab, "other.ipynb")
        expect(item).to_have_text("MindSpore: msdebug not loaded")
        page.locator(".lm-TabBar-tab", has_text="status.ipynb").click()
        expect(item).to_contain_text("MindSpore 2.10 · GRAPH · CPU:0")
        cells = page.locator(".jp-NotebookPanel:visible .jp-Cell")
        cells.nth(0).click()  # command mode in this notebook, for the restart below

        # Restart the kernel (command mode: 0 0, then the dialog): the item clears.
        page.keyboard.press("Escape")
        page.keyboard.press("0")
        page.keyboard.press("0")
        page.locator(".jp-Dialog .jp-mod-accept").click()
        expect(item).to_have_text("MindSpore: msdebug not loaded")
        expect(item).to_have_class(GREYED)
        # The restarted kernel is up: a shutdown in the middle of its restart fails.
        wait_for_kernel(page, lab, "status.ipynb")


def test_the_status_item_shows_the_ranks_of_msrun_and_the_busy_ones(lab):
    from playwright.sync_api import expect

    release = lab.root / "release"
    write_notebook(
        lab.root / "ranks.ipynb",
        [
            "%load_ext msdebug",
            "%msrun start -n 1",
            # The rank stays busy until the test lets it go: an event, not a duration.
            f"%%msrun\nimport os, time\nwhile not os.path.exists({str(release)!r}):\n    time.sleep(0.02)",
            "%msrun stop",
        ],
        warm=False,  # the kernel's MindSpore is not imported: only the ranks' is
    )
    with chromium(width=1280, height=720) as page:
        cells = open_notebook(page, lab, "ranks.ipynb", cells=4)
        item = page.locator(ITEM)
        run_cell(page, cells, 0)
        expect(item).to_have_text("MindSpore 2.10 not imported · print capture off")
        run_cell(page, cells, 1)
        expect(item).to_have_text("MindSpore 2.10 not imported · print capture off · msrun: 1 rank")
        run_cell(page, cells, 2)
        expect(item).to_have_text("MindSpore 2.10 not imported · print capture off · msrun: 1 rank (busy: 0)")
        expect(item).to_have_attribute("title", re.compile("msrun: rank 0 busy"))
        release.touch()
        expect(item).to_have_text("MindSpore 2.10 not imported · print capture off · msrun: 1 rank")
        run_cell(page, cells, 3)
        expect(item).to_have_text("MindSpore 2.10 not imported · print capture off")
