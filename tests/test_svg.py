"""The picture helpers: well-formed SVG, escaped labels, bounded size whatever they are given."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from msdebug.views.svg import GraphBox, bar_chart, graph_drawing, histogram, line_chart, sparkline

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = '"><script>alert(1)</script><img src=x onerror=alert(2)>&amp;'


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == NS + "svg"
    assert "max-width:100%" in root.get("style")
    assert not list(root.iter(NS + "style"))
    assert not list(root.iter(NS + "script")) and not list(root.iter("script"))
    return root


def texts(root: ET.Element) -> list[str]:
    return ["".join(node.itertext()) for node in root.iter() if node.tag in (NS + "text", NS + "title")]


def every_picture(label: str) -> list[str]:
    return [
        line_chart(
            {label: [1.0, 2.0, 3.0], "b": [3, 2, 1]}, title=label, x_label=label, y_label=label, marks=[(1, label)]
        ),
        bar_chart([label, "ok"], [1.0, 2.0], title=label, unit=label),
        histogram([1, 2, 3], [0.0, 1.0, 2.0, 3.0], title=label),
        sparkline([1, 2, 3], title=label),
        graph_drawing(
            [GraphBox("%1", label, sub=label, op=label, scope=f"Default/{label}/x", tip=label), GraphBox("%2", "b")],
            [("%1", "%2")],
            title=label,
        ),
    ]


def test_hostile_labels_are_escaped_in_every_picture():
    for svg in every_picture(HOSTILE):
        root = parse(svg)
        assert "<script>" not in svg and "<img" not in svg
        assert "&lt;script&gt;" in svg
        # The escaped text reads back as the label (clipped labels keep their start).
        assert any(text.startswith('"><script>') for text in texts(root)), svg


@settings(max_examples=60)
@given(st.text(max_size=60))
def test_any_label_gives_well_formed_svg(label):
    for svg in every_picture(label):
        parse(svg)


@settings(max_examples=60)
@given(
    st.lists(
        st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32), st.integers(-(10**9), 10**9)), max_size=300
    ),
)
def test_any_numbers_give_well_formed_pictures(values):
    parse(line_chart({"v": values}, marks=[(0, "start"), (len(values) + 5, "outside")]))
    parse(sparkline(values))
    parse(bar_chart([str(i) for i in range(len(values))], values))


def test_a_million_points_stay_a_small_picture():
    values = np.sin(np.arange(1_000_000) / 1000.0)
    values[123_456] = np.nan
    values[500_000] = 50.0  # a spike survives the bucketing
    svg = line_chart({"loss": values, "lr": np.full(1_000_000, 0.5)}, width=480)
    root = parse(svg)
    assert len(svg) < 60_000
    assert "50" in texts(root)  # the y axis reaches the spike
    ticks = [line for line in root.iter(NS + "line") if line.get("stroke") == "#cf222e"]
    assert len(ticks) == 1  # one non-finite value, one red tick
    assert len(sparkline(values)) < 12_000


def test_sizes_are_bounded_whatever_is_asked():
    root = parse(line_chart({"a": [1, 2]}, width=10**9, height=-5))
    assert int(root.get("width")) <= 4000 and int(root.get("height")) >= 60
    many = {f"s{i}": [i, i + 1] for i in range(50)}
    root = parse(line_chart(many, title="fifty"))
    assert len(list(root.iter(NS + "polyline"))) == 8
    assert "+42 more" in texts(root)


def test_bar_chart_caps_rows_and_handles_negative_and_missing_values():
    svg = bar_chart([f"stage {i}" for i in range(100)], list(range(100)), unit="nodes", title="nodes per stage")
    root = parse(svg)
    assert len(list(root.iter(NS + "rect"))) == 40
    assert "60 more not shown" in texts(root)
    assert "39 nodes" in texts(root)
    root = parse(bar_chart(["up", "down", "bad"], [2.0, -1.0, math.nan]))
    widths = [float(r.get("width")) for r in root.iter(NS + "rect")]
    assert len(widths) == 2 and widths[0] == pytest.approx(2 * widths[1], rel=0.05)
    assert "nan" in texts(root)


def test_long_labels_are_shortened_with_the_full_text_in_the_tooltip():
    name = "Default/network-WithLossCell/_backbone-Net/dense-Dense/MatMul-op0"
    root = parse(bar_chart([name], [3.0]))
    shown = [t for t in texts(root) if t.startswith("Default/")]
    assert any(t.endswith("…") and len(t) <= 28 for t in shown)
    assert any(t.startswith(name) for t in shown)  # the <title>


def test_histogram_merges_bins_and_checks_edges():
    counts = list(range(1000))
    root = parse(histogram(counts, list(range(1001))))
    assert len(list(root.iter(NS + "rect"))) <= 120
    assert "0" in texts(root) and "1000" in texts(root)
    with pytest.raises(ValueError, match="one more edge than counts"):
        histogram([1, 2], [0.0, 1.0])


def test_line_chart_marks_and_gaps():
    root = parse(line_chart({"loss": [1.0, 0.5, math.inf, 0.3, 0.2]}, marks=[(2, "first inf")]))
    assert len(list(root.iter(NS + "polyline"))) == 2  # the inf breaks the line
    assert "first inf" in texts(root)


def chain(count: int, scope=lambda i: "") -> list[GraphBox]:
    return [GraphBox(f"%{i}", f"Op{i % 7}", sub=f"%{i}", op=f"Op{i % 7}", scope=scope(i)) for i in range(count)]


def test_graph_drawing_boxes_edges_and_scopes():
    boxes = chain(6, lambda i: "Default/dense-Dense" if i < 3 else ("Default/relu-ReLU" if i < 5 else ""))
    edges = [(f"%{i}", f"%{i + 1}") for i in range(5)] + [("%para1", "%0")]
    root = parse(graph_drawing(boxes, edges, title="graph_build"))
    nodes = [g for g in root.iter(NS + "g") if g.get("class") == "msdebug-node"]
    assert [g.get("data-node") for g in nodes] == [f"%{i}" for i in range(6)]
    scopes = [g for g in root.iter(NS + "g") if g.get("class") == "msdebug-scope"]
    assert sorted(g.find(NS + "title").text for g in scopes) == ["Default/dense-Dense", "Default/relu-ReLU"]
    assert len(list(root.iter(NS + "path"))) == 2 * 5  # a curve and an arrow head per edge between boxes
    # A chain is drawn top to bottom: each box lower than the one feeding it.
    tops = [float(g.find(NS + "rect").get("y")) for g in nodes]
    assert tops == sorted(tops) and len(set(tops)) == 6


def test_graph_drawing_survives_cycles_duplicates_and_self_loops():
    boxes = chain(4) + [GraphBox("%0", "again")]
    edges = [("%0", "%1"), ("%1", "%2"), ("%2", "%0"), ("%3", "%3"), ("%2", "%3"), ("%2", "%3")]
    root = parse(graph_drawing(boxes, edges))
    assert len([g for g in root.iter(NS + "g") if g.get("class") == "msdebug-node"]) == 4
    assert len(list(root.iter(NS + "path"))) == 2 * 4


def test_a_big_graph_is_summarised_and_bounded():
    boxes = chain(5000, lambda i: f"Default/block{i // 20}")
    edges = [(f"%{i}", f"%{i + 1}") for i in range(4999)] + [(f"%{i}", f"%{i + 2}") for i in range(0, 4998, 3)]
    svg = graph_drawing(boxes, edges, max_nodes=200)
    root = parse(svg)
    assert len([g for g in root.iter(NS + "g") if g.get("class") == "msdebug-node"]) == 200
    assert any(t.startswith("showing 200 of 5000 nodes; 2 edges to nodes not drawn") for t in texts(root))
    assert len(svg) < 250_000
    assert int(root.get("height")) <= 200 * 62 + 80  # a chain: one layer per box, no more


def test_wide_layers_pack_scopes_side_by_side_without_overlap():
    boxes = [GraphBox(f"%{i}", "Add", op="Add", scope=f"Default/s{i % 3}") for i in range(12)]
    edges = [(f"%{i}", f"%{i + 3}") for i in range(9)]
    root = parse(graph_drawing(boxes, edges))
    frames = [
        tuple(float(g.find(NS + "rect").get(k)) for k in ("x", "y", "width", "height"))
        for g in root.iter(NS + "g")
        if g.get("class") == "msdebug-scope"
    ]
    assert len(frames) == 3
    for i, (x, y, w, h) in enumerate(frames):
        for x2, y2, w2, h2 in frames[i + 1 :]:
            assert x + w <= x2 or x2 + w2 <= x or y + h <= y2 or y2 + h2 <= y


@pytest.mark.parametrize("values", [[-1.6e308], [1e308, -1e308, 0.0], [1e307, -1e307], [1.7e308, 1.7e308]])
def test_values_near_the_float_end_stay_in_the_picture(values):
    """``high - low`` overflows there: no coordinate may come out as inf or nan."""
    for svg in (line_chart({"v": values}), sparkline(values)):
        root = parse(svg)
        for node in root.iter():
            for name in ("cx", "cy", "points", "y", "y1", "y2"):
                assert "inf" not in node.get(name, "") and "nan" not in node.get(name, ""), (svg, name)
