"""Every tutorial in a real JupyterLab at 1280 px, driven through Debian's Chromium (see lab.py).

For each notebook in notebooks/, every code cell is run as a person runs them all (Run > Run All
Cells), then:
no output scrolls sideways (``scrollWidth <= clientWidth`` for every output), and the browser
console shows no error. In tutorial 04 the explorer is clicked through: a kernel of the
execution order opens its IR node, "show in its graph" opens that node in its graph, a click on
a stage opens the stage's graph.

Screenshots go to the test's temporary directory; with ``MSDEBUG_UPDATE_SCREENSHOTS=1`` also to
``docs/screenshots`` (the ones README shows).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from lab import browser_marks, chromium, on, open_notebook, run_all_cells

pytestmark = browser_marks

REPO = Path(__file__).resolve().parents[1]
TUTORIALS = sorted(path.name for path in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WIDTH = 1280

# Console lines that are JupyterLab's own and say nothing about msdebug's outputs.
BENIGN = (
    re.compile(r"Failed to load resource: the server responded with a status of 404"),
    re.compile(r"Connection lost, reconnecting"),
)


@pytest.fixture
def tutorials(lab):
    """``lab`` with copies of notebooks/ and tests/data/ (the tutorials read ../tests/data)."""
    shutil.copytree(REPO / "notebooks", lab.root / "notebooks")
    shutil.copytree(REPO / "tests" / "data", lab.root / "tests" / "data")
    return lab


def _shots(tmp_path: Path) -> list[Path]:
    places = [tmp_path]
    if os.environ.get("MSDEBUG_UPDATE_SCREENSHOTS") == "1":
        places.append(REPO / "docs" / "screenshots")
        places[-1].mkdir(parents=True, exist_ok=True)
    return places


def _shoot(locator, tmp_path: Path, name: str, height: int = 760) -> None:
    """A picture of the top of ``locator`` (the notebook scrolls inside its panel, so only what
    is on screen can be photographed)."""
    locator.evaluate("element => element.scrollIntoView({block: 'start'})")
    page = locator.page
    box = locator.bounding_box()
    visible = min(box["height"], height, page.viewport_size["height"] - box["y"])
    first, *others = _shots(tmp_path)
    clip = {"x": box["x"], "y": box["y"], "width": box["width"], "height": visible}
    page.screenshot(path=str(first / name), clip=clip)
    for place in others:
        shutil.copy(first / name, place / name)


def _run_every_code_cell(page, notebook: str, lab) -> tuple:
    from playwright.sync_api import expect

    count = len(nbformat.read(REPO / "notebooks" / notebook, as_version=4).cells)
    cells = open_notebook(page, lab, f"notebooks/{notebook}", cells=count)
    code = page.locator(".jp-NotebookPanel:visible .jp-CodeCell")
    run_all_cells(page)
    for index in range(code.count()):
        # "[*]:" while it runs, "[N]:" once done (the cells that show mistakes are tagged
        # raises-exception, so JupyterLab runs on after them as nbval does).
        expect(code.nth(index).locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]:"))
    return cells, code


# An output is too wide when it, or a box inside it that scrolls or clips (JupyterLab's own
# scrolling areas, msdebug's HTML widgets), holds more than it shows.
_OVERFLOW = """
() => {
  const wide = el => el.scrollWidth > el.clientWidth + 1;
  const boxes = el => [el, ...Array.from(el.querySelectorAll('*')).filter(inner => {
    const x = getComputedStyle(inner).overflowX;
    return x === 'auto' || x === 'scroll' || (x === 'hidden' && inner.closest('.widget-html'));
  })];
  const panel = '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output';
  return Array.from(document.querySelectorAll(panel)).flatMap((el, i) =>
    boxes(el).filter(wide).map(box => ({i, box: box.className || box.tagName, scroll: box.scrollWidth,
                                        client: box.clientWidth, text: (el.innerText || '').slice(0, 80)})));
}
"""


# Every output shown has rendered (a widget's area holds its view once its model has arrived), and
# the outputs' widgets and widths have stayed the same for 10 frames in a row.
_SETTLED = """
() => {
  const shown = '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output:not(.lm-mod-hidden)';
  const outputs = Array.from(document.querySelectorAll(shown));
  const rendered = outputs.every(el => el.dataset.mimeType || el.querySelector('.jupyter-widgets'));
  const shape = outputs.map(el => el.querySelectorAll('.jupyter-widgets').length + ':' + el.scrollWidth).join();
  const same = rendered && shape === window.__msdebugShape;
  window.__msdebugShape = shape;
  window.__msdebugFrames = same ? (window.__msdebugFrames || 0) + 1 : 0;
  return window.__msdebugFrames >= 10;
}
"""


@pytest.mark.parametrize("notebook", TUTORIALS)
def test_tutorial_fits_the_notebook_without_console_errors(tutorials, tmp_path, notebook):
    from playwright.sync_api import expect

    errors: list[str] = []
    with chromium(width=WIDTH, height=900) as page:
        on(page, "console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        on(page, "pageerror", lambda error: errors.append(f"page error: {error}"))
        _, code = _run_every_code_cell(page, notebook, tutorials)
        expect(
            page.locator(".jp-NotebookPanel:visible .jp-Notebook-ExecutionIndicator[data-status='idle']")
        ).to_have_count(1)
        outputs = page.locator(".jp-NotebookPanel:visible .jp-OutputArea-output")
        assert outputs.count() > 0
        # Widgets lay out after their models arrive: measure once every output has settled.
        page.wait_for_function(_SETTLED, polling="raf")
        overflowing = page.evaluate(_OVERFLOW)
        if notebook.startswith("04_"):
            _click_through_the_explorer(page, code, tmp_path)
            overflowing += page.evaluate(_OVERFLOW)
        if notebook.startswith("07_"):
            _walk_the_diff(page, code, tmp_path)
            overflowing += page.evaluate(_OVERFLOW)
        if notebook.startswith("08_"):
            _look_at_each_rank(page, code, tmp_path)
            overflowing += page.evaluate(_OVERFLOW)
        if notebook.startswith("03_"):
            binary = code.filter(has_text="binary = msdebug.read_print_file").locator(".jp-OutputArea-output")
            binary.scroll_into_view_if_needed()
            _shoot(binary, tmp_path, "print_log_scalars.png")
    assert overflowing == [], f"{notebook}: outputs wider than the notebook at {WIDTH} px: {overflowing}"
    real = [e for e in errors if not any(pattern.search(e) for pattern in BENIGN)]
    assert real == [], f"{notebook}: browser console errors: {real}"


def _walk_the_diff(page, code, tmp_path: Path) -> None:
    """The --against cell's answer with its walker: the differing ops listed, the first one's
    tensors side by side with a histogram of each side."""
    from playwright.sync_api import expect

    answer = code.filter(has_text="%%msdiff --against before").locator(".jp-OutputArea-output")
    walker = answer.locator(".msdebug-diff-walker").first
    expect(walker.locator("select option").first).to_contain_text("Default/Mul-op0 (Mul)")
    expect(walker.locator(".msdebug-diff-op svg").first).to_be_visible()  # the histograms
    _shoot(walker, tmp_path, "msdiff.png", height=900)


def _look_at_each_rank(page, code, tmp_path: Path) -> None:
    """JupyterLab shows a tab per rank: the AllReduce's answer on rank 1, then the report of the
    cell whose rank raised, under its tabs."""
    from playwright.sync_api import expect

    answer = code.filter(has_text="total = ops.AllReduce()").locator(".jp-OutputArea-output")
    tabs = answer.locator(".lm-TabBar-tab")
    expect(tabs).to_have_text(["rank 0", "rank 1"])
    tabs.nth(1).click()
    expect(answer.locator(".widget-tab-contents .jp-OutputArea-output:visible")).to_have_text(
        "2 ranks, sum [3. 3. 3. 3.]"
    )
    failed = code.filter(has_text="has a bad batch")
    titles = failed.locator(".lm-TabBar-tab")
    expect(titles).to_have_text(["rank 0", "rank 1 · raised"])
    expect(failed).to_contain_text("msrun: rank 1 raised ValueError first")
    expect(failed.locator(".widget-tab-contents")).to_contain_text("rank 0 is fine")
    titles.nth(1).click()
    expect(failed.locator(".widget-tab-contents")).to_contain_text("ValueError: rank 1 has a bad batch")  # its own
    _shoot(failed.locator(".jp-Cell-outputArea"), tmp_path, "msrun.png", height=700)


def _click_through_the_explorer(page, code, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    explorer = code.filter(has_text="rdr = msdebug.open_dump('rdr_mode2')").locator(".msdebug-explorer")
    explorer.scroll_into_view_if_needed()
    expect(explorer).to_contain_text("nodes per pipeline stage")
    _shoot(explorer, tmp_path, "explorer_summary.png")

    explorer.locator(".lm-TabBar-tab", has_text="Execution order").click()
    kernels = explorer.locator("select").first
    expect(kernels.locator("option")).to_have_count(4)
    kernels.select_option(index=2)  # the third kernel: ReduceSum
    detail = explorer.locator(".msdebug-node-detail")
    expect(detail).to_contain_text("PrimFunc_ReduceSum")
    expect(detail).to_contain_text("at line 47 of")
    expect(detail).to_contain_text("Float32 ()")
    _shoot(explorer, tmp_path, "explorer_exec_order.png")

    explorer.locator("button", has_text="show in its graph").click()
    graph_pane = explorer.locator(".lm-TabBar-tab.lm-mod-current", has_text="Graphs")
    expect(graph_pane).to_have_count(1)
    expect(explorer).to_contain_text("1 nodes (matching 'Expand/_SumExt/ReduceSum-op0')")

    search = explorer.locator("input[type=text]:visible")
    search.fill("")
    search.press("Enter")
    explorer.locator("select:visible").nth(0).select_option(index=0)  # the family: pipeline stages
    stages = explorer.locator("select:visible").nth(1)
    expect(stages.locator("option")).to_have_count(24)
    stages.select_option(index=12)  # PIPELINE.12_optimize
    expect(explorer).to_contain_text("PIPELINE.12_optimize.")
    expect(explorer.locator("svg.msdebug-graph")).to_have_count(1)
    _shoot(explorer, tmp_path, "explorer_graph.png")
