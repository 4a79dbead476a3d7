"""The interactive explorer on a real level-3 save_graphs directory (600+ files).

Time from ``msdebug.open_dump(path)`` to everything a notebook gets for the first render
(the text/plain and text/html forms IPython computes, and the widget with its first pane),
then per click: open a stage's graph, filter it by op, search it, open the Diff pane, change
the diff, open a ``.dot`` file. Also the size of the HTML the widget holds (what it sends to
the browser), which must stay bounded whatever the dump. Baseline, in the same run: listing
the directory with ``os.walk``. The directory is made by a real ``MS_DEV_SAVE_GRAPHS=3`` run of
a tiny network (see ``bench_graphs_dir.py``) in a temporary directory.

Goals: every first render (the cold one included) under 0.5 s, every click's median under
0.2 s, the widget's HTML under 1,000,000 characters after the clicks. The script exits 1
when it misses one.

    python benchmarks/bench_explorer.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_graphs_dir import listing, make_dump  # noqa: E402
from goals import verdict  # noqa: E402

import msdebug  # noqa: E402
from msdebug.ipython.explorer import ExplorerWidget  # noqa: E402

GOAL_FIRST_S = 0.5
GOAL_CLICK_S = 0.2
GOAL_HTML_CHARS = 1_000_000


def first_render(path: Path) -> tuple[float, ExplorerWidget, int]:
    start = time.perf_counter()
    explorer = msdebug.open_dump(path)
    text, html = repr(explorer), explorer._repr_html_()  # what IPython formats next to the widget
    widget = ExplorerWidget(explorer)
    widget.widget._repr_mimebundle_()
    return time.perf_counter() - start, widget, len(text) + len(html)


def clicks(widget: ExplorerWidget) -> dict[str, float]:
    """Each click as a person makes it, timed from the value change to the new HTML."""
    steps = {
        "open the Graphs pane": lambda: setattr(widget.tabs, "selected_index", widget._index("Graphs")),
        "click a stage (13_optimize)": lambda: setattr(widget.stage_list, "value", "13_optimize"),
        "filter by op": lambda: setattr(widget.op, "value", "PrimFunc_MatMul"),
        "search": lambda: setattr(widget.search, "value", "dense"),
        "click another stage (24_execute)": lambda: setattr(widget.stage_list, "value", "24_execute"),
        "open the Diff pane": lambda: setattr(widget.tabs, "selected_index", widget._index("Diff")),
        "change the diff": lambda: setattr(widget.before, "value", "01_type_inference"),
        "open the .dot pane": lambda: setattr(widget.tabs, "selected_index", widget._index(".dot files")),
        "click a .dot file": lambda: setattr(widget.dot_list, "value", widget.dot_list.options[13][1]),
    }
    out = {}
    for name, click in steps.items():
        start = time.perf_counter()
        click()
        out[name] = time.perf_counter() - start
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="msdebug-bench-explorer-") as scratch:
        make_dump(Path(scratch))
        path = Path(scratch) / "graphs"
        files = listing(path)
        assert files >= 600, files
        list_times, first_times, per_click, sizes, static = [], [], [], [], 0
        for _ in range(args.runs):  # interleaved, warm file-system cache for all
            start = time.perf_counter()
            listing(path)
            list_times.append(time.perf_counter() - start)
            first_s, widget, static = first_render(path)
            first_times.append(first_s)
            per_click.append(clicks(widget))
            assert "PrimFunc_MatMul" in widget.graph_view.value or "dense" in widget.graph_view.value
            sizes.append(widget.html_size())
    list_s, first_s = statistics.median(list_times), statistics.median(first_times)
    click_s = {name: statistics.median(run[name] for run in per_click) for name in per_click[0]}
    slowest = max(click_s.values())
    result = {
        "files": files,
        "listing_ms": round(list_s * 1e3, 2),
        "first_render_ms": round(first_s * 1e3, 1),
        "first_render_cold_ms": round(first_times[0] * 1e3, 1),
        "first_render_ratio_to_listing": round(first_s / list_s, 1),
        "clicks_ms": {name: round(s * 1e3, 1) for name, s in click_s.items()},
        "slowest_click_ms": round(slowest * 1e3, 1),
        "widget_html_chars": max(sizes),
        "static_text_and_html_chars": static,
    }
    print(f"{files} files; listing (os.walk) {list_s * 1e3:.2f} ms")
    print(
        f"first render (open_dump + text + HTML + widget)  {first_s * 1e3:7.1f} ms  (goal < {GOAL_FIRST_S * 1e3:.0f} ms)"
    )
    for name, s in click_s.items():
        print(f"  {name:<34} {s * 1e3:7.1f} ms")
    print(f"slowest click {slowest * 1e3:.1f} ms (goal < {GOAL_CLICK_S * 1e3:.0f} ms)")
    print(f"widget HTML after the clicks {max(sizes)} characters; static text + HTML {static} characters")
    print(json.dumps(result))
    cold, html = max(first_times), max(sizes)
    return verdict(
        {
            f"every first render under {GOAL_FIRST_S * 1e3:.0f} ms (slowest {cold * 1e3:.1f} ms)": cold < GOAL_FIRST_S,
            f"every click under {GOAL_CLICK_S * 1e3:.0f} ms (slowest {slowest * 1e3:.1f} ms)": slowest < GOAL_CLICK_S,
            f"widget HTML under {GOAL_HTML_CHARS:,} characters ({html:,})": html < GOAL_HTML_CHARS,
        }
    )


if __name__ == "__main__":
    sys.exit(main())
