"""How a Print log reads: its end is shown, a scalar takes one line, scalar series get a chart."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import msdebug
from msdebug.dumps.print import PrintLog
from msdebug.views.print import MAX_ITEMS, MAX_LINES, scalar_series


def test_a_long_captured_log_shows_its_last_line(ip):
    ip.run_cell(
        "%%msprint\n"
        "import mindspore as ms, numpy as np\n"
        "from mindspore import ops\n"
        "show = ops.Print()\n"
        "for step in range(150):\n"
        "    print(f'step {step}')\n"
        "    show('loss:', ms.Tensor(np.float32(1.0 / (step + 1))))\n"
        "print('the end, after the last step')\n"
    )
    log = msdebug.last_print()
    assert log.text.rstrip().endswith("the end, after the last step")
    html = log._repr_html_()
    assert "the end, after the last step" in html and "step 149" in html and "step 0" in html
    hidden = re.search(r"… (\d+) items hidden", html)
    assert hidden and int(hidden.group(1)) == 301 - MAX_ITEMS
    # "loss:" and its scalar read as one line, the value in bold.
    assert html.count('class="ms-scalar"') == MAX_ITEMS // 2
    assert "loss: <b>0.00671141</b>" in html
    # The loss gets a chart; the step counter is its x axis, not a chart of its own.
    chart = re.search(r'<div class="ms-print-chart".*?</svg>', html, re.S).group(0)
    svg = ET.fromstring(chart[chart.index("<svg") :])
    assert "loss (150 values)" in "".join(svg.itertext())
    assert html.count("<svg") == 1


def test_scalars_in_a_binary_print_file_take_one_line_each():
    log = msdebug.read_print_file(Path(__file__).parent / "data" / "print" / "training.pb")
    assert repr(log).splitlines()[1:] == ["step 0", "loss: 1.0", "step 1", "loss: 0.5", "step 2", "loss: 0.333333"]
    html = log._repr_html_()
    assert html.count('class="ms-scalar"') == 6 and "<details" not in html
    assert scalar_series(log.items) == {"loss": [1.0, 0.5, 0.3333333432674408]}


def test_series_come_from_short_lines_only():
    # A chart's line is short ("step 3 loss 0.25"). The pattern backtracks at each character,
    # so a 4 MB line of output (one C write) took a minute to render before it was skipped.
    text = "".join(f"step {i} loss {1.0 / (i + 1)}\n" for i in range(3)) + "y" * 4000 + " loss 9.0\n"
    assert scalar_series(PrintLog(text.encode()).items) == {"loss": [1.0, 0.5, 1 / 3]}


def test_text_logs_with_numbers_and_the_bounded_text_form():
    text = "".join(f"epoch 1 step {i}, loss is {2.0 / (i + 1):.4f}\n" for i in range(3 * MAX_LINES)) + "done\n"
    log = PrintLog(text.encode())
    series = scalar_series(log.items)
    # "step" counts and "epoch" stays 1: neither is worth a chart.
    assert list(series) == ["loss"] and len(series["loss"]) == 3 * MAX_LINES
    shown = repr(log)
    assert shown.endswith("done") and shown.startswith("epoch 1 step 0, loss is 2.0000")
    assert f"… {3 * MAX_LINES + 1 - MAX_LINES} lines hidden (all of them are in .text) …" in shown
    assert len(shown.splitlines()) == MAX_LINES + 1


def test_a_huge_line_is_whole_in_text_and_bounded_in_html():
    from msdebug.views.report import MAX_CHARS

    log = PrintLog(b"y" * (4 << 20) + b"\nlast line\n")
    assert repr(log) == "y" * (4 << 20) + "\nlast line"  # what was printed, as nbval compares it
    html = log._repr_html_()
    assert len(html) < MAX_CHARS + 2000 and html.count("last line") == 1
    assert (
        f"… {(4 << 20) + len(chr(10) + 'last line') - MAX_CHARS} characters before (all of them are in .text) …" in html
    )
