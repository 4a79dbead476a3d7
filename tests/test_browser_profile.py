"""A ``%%msprofile`` report in a real JupyterLab (Chromium through Playwright, see lab.py),
photographed for the README.

``MSDEBUG_UPDATE_SCREENSHOTS=1`` copies the picture to docs/screenshots/profile_report.png;
otherwise it stays in the test's temporary directory and the checkout is left as it was.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from lab import browser_marks, chromium, open_notebook, run_cell, write_notebook

pytestmark = browser_marks

SCREENSHOT = Path(__file__).resolve().parents[1] / "docs" / "screenshots" / "profile_report.png"

SETUP = """\
%load_ext msdebug
import mindspore as ms, numpy as np, msdebug
from mindspore import nn
ms.set_context(mode=ms.GRAPH_MODE)
net = nn.SequentialCell([nn.Dense(256, 512), nn.ReLU(), nn.Dense(512, 512), nn.ReLU(), nn.Dense(512, 10)])
x = ms.Tensor(np.ones((64, 256), np.float32))"""

PROFILED = """\
%%msprofile --steps 0:8 --timeline --top 6
for step in range(10):
    net(x).asnumpy()
    msdebug.step()"""


def test_the_profile_report_renders_in_jupyterlab(lab, tmp_path):
    from playwright.sync_api import expect

    with chromium(width=1100, height=1400) as page:
        write_notebook(lab.root / "profile.ipynb", [SETUP, PROFILED])
        cells = open_notebook(page, lab, "profile.ipynb", cells=2)
        run_cell(page, cells, 0)
        output = run_cell(page, cells, 1)
        report = cells.nth(1).locator(".msdebug-profile")
        expect(report).to_contain_text("Top 6 ops by total time")
        expect(report).to_contain_text("8 step(s) recorded")
        expect(report).to_contain_text("trace_view.json")
        expect(report.locator("svg")).to_have_count(1)
        # MindSpore's progress bar and log lines stay out of the cell; msdebug's one note may be there.
        text = output.all_inner_texts()
        assert not any("Parsing" in part or "[WARNING]" in part for part in text), text
        shot = tmp_path / "profile_report.png"
        report.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")
    if os.environ.get("MSDEBUG_UPDATE_SCREENSHOTS") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)
