"""``%%mswatch``'s live table and report fit a notebook at 1280 px: rendered in Chromium (see
lab.py) inside a box as wide as JupyterLab's output area at that width, with long names that
have no space, 40 tensors and 7 sparklines each, nothing sticks out or scrolls sideways (the
check of test_browser_fit.py)."""

from __future__ import annotations

from test_browser_fit import _TOO_WIDE
from test_watch_view import Trip, _net, _trip

from msdebug.views import watch as view

from lab import _the_window, browser_marks

pytestmark = browser_marks

# JupyterLab's output area at a 1280 px window, the left sidebar collapsed (test_browser_fit's page).
OUTPUT_WIDTH = 1150


def _long_names(first_long: bool):
    history = _net([_trip(step=6)], stopped=True)
    long = "encoder/" * 12 + "attention_output_projection_weight_without_any_space_" * 4
    history.watched[3] = type(history.watched[3])(
        long, "act", (16, 64, 128, 3), scope=long, defined_at="cell [1], line 9"
    )
    history._stats[("act", long)] = history._stats.pop(("act", "encoder.layers.0.relu")) * 1e9
    history.trips.insert(
        0 if first_long else 1,
        Trip("acts:*:range(max_gt=1)", long, "act", 7, {"max": 1e9}, {"max_gt": 1.0}, f"acts {long}: max 1e9 > 1"),
    )
    history.first_trip = history.trips[0]
    return history


def test_the_live_table_and_the_report_fit_the_output_area_at_1280_px():
    page = _the_window().page.context.new_page()
    try:
        page.set_viewport_size({"width": 1280, "height": 1400})
        histories = (_long_names(True), _long_names(False))
        for html in [view.html_live(h) for h in histories] + [view.html_report(h) for h in histories]:
            page.set_content(f'<div class="jp-OutputArea-output" style="width:{OUTPUT_WIDTH}px">{html}</div>')
            too_wide = page.evaluate(_TOO_WIDE, ".jp-OutputArea-output")
            assert too_wide == [], f"wider than the output area at 1280 px: {too_wide}"
            # Every sparkline is drawn at a readable size, not squeezed to nothing.
            widths = page.evaluate("[...document.querySelectorAll('svg.msdebug-spark')].map(s => s.clientWidth)")
            assert len(widths) == 4 * 7 and min(widths) >= 60, widths
    finally:
        page.close()
