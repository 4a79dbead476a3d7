"""The %%msnan answer in a real JupyterLab, photographed for the README (see lab.py).

``MSDEBUG_UPDATE_SCREENSHOTS=1`` copies the picture to docs/screenshots/msnan.png; otherwise it
stays in the test's temporary directory and the checkout is left as it was.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from lab import browser_marks, chromium, open_notebook, run_cell, write_notebook

pytestmark = browser_marks

SCREENSHOT = Path(__file__).resolve().parent.parent / "docs" / "screenshots" / "msnan.png"

NET = """\
import numpy as np, mindspore as ms
from mindspore import nn, ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Dense(4, 8, weight_init='ones', bias_init='zeros')
        self.relu = nn.ReLU()
        self.fc2 = nn.Dense(8, 1, weight_init='ones', bias_init='zeros')

    def construct(self, x):
        h = self.fc1(x)
        s = ops.sqrt(h - 2)
        return self.fc2(self.relu(s))


net, loss_fn = Net(), nn.MSELoss()
x = ms.Tensor(np.array([[1, 1, 1, 1], [0.1, 0.1, 0.1, 0.1]], np.float32))
y = ms.Tensor(np.zeros((2, 1), np.float32))
"""


def test_msnan_answer_in_jupyterlab(lab, tmp_path):
    from playwright.sync_api import expect

    write_notebook(
        lab.root / "nan.ipynb",
        [
            "%load_ext msdebug\nimport msdebug\nprint(msdebug.__file__)",
            NET,
            "%%msnan\nloss = loss_fn(net(x), y)\nloss",
        ],
    )
    shot = tmp_path / "msnan.png"
    with chromium(width=1100, height=1400) as page:
        cells = open_notebook(page, lab, "nan.ipynb", cells=3)
        for index in (0, 1):
            run_cell(page, cells, index)
            expect(cells.nth(index).locator(".jp-InputArea-prompt")).to_contain_text(f"[{index + 1}]")
        output = run_cell(page, cells, 2)
        expect(output.first).to_contain_text("First non-finite value: NaN at Default/Sqrt-op0 (Sqrt), output 0")
        expect(output.first).to_contain_text("cell [2], line 14: s = ops.sqrt(h - 2)")
        expect(output.first).to_contain_text("ReLU): masked it: its output is finite")
        expect(output.nth(1)).to_contain_text("Tensor(shape=[], dtype=Float32, value= 64)")
        expect(cells.nth(2).locator(".jp-InputArea-prompt")).to_contain_text("[3]")
        cells.nth(2).screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")
    if os.environ.get("MSDEBUG_UPDATE_SCREENSHOTS") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)
