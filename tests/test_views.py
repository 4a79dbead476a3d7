"""Rendering: escaped HTML, deterministic output, readable text."""

from __future__ import annotations

import re

import msdebug
from msdebug import settings


def test_values_from_mindspore_are_escaped_in_every_view(restored_context, tmp_path):
    hostile = tmp_path / '"><img src=x onerror=alert(1)><script>alert(2)</script>'
    report = msdebug.set(save_graphs_path=str(hostile))
    table = msdebug.table()._repr_html_()
    help_html = msdebug.describe("save_graphs_path")._repr_html_()
    for html in (report._repr_html_(), table, help_html):
        assert "<script>" not in html and "<img" not in html
        assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html
        assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in html


def test_html_is_deterministic_and_has_no_ids(restored_context):
    msdebug.set(mode="graph")
    first, second = msdebug.table()._repr_html_(), msdebug.table()._repr_html_()
    assert first == second
    assert not re.search(r"\bid=", first)
    assert first.count("<details") == len(settings.state().groups())


def test_changed_table_lists_only_changes(restored_context):
    msdebug.set(mode="graph", max_call_depth=2000)
    state = msdebug.table(changed=True)
    assert [row.key.name for row in state.rows] == ["mode", "max_call_depth"]
    text = repr(state)
    assert "* mode" in text and "* max_call_depth" in text
    assert "2000" in text and "1000" in text


def test_keys_that_do_nothing_on_this_device_are_marked(restored_context):
    text = repr(msdebug.table())
    [line] = [line for line in text.splitlines() if line.split()[:1] == ["enable_graph_kernel"]]
    assert "GPU, Ascend (inert here)" in line
    assert 'class="ms-inert"' in msdebug.table()._repr_html_()


def test_key_help_has_every_field(restored_context):
    text = repr(msdebug.describe("pynative_synchronize"))
    for field in ("allowed", "current", "default", "platforms", "status", "set with", "note"):
        assert re.search(rf"^  {field}\s", text, re.M), field
    assert "deprecated since MindSpore 2.5; use mindspore.runtime.launch_blocking()" in text
    assert "msdebug.set(pynative_synchronize=True)" in text


def test_help_for_a_key_removed_from_this_version(restored_context):
    text = repr(msdebug.describe("enable_dump"))
    assert "status      removed in MindSpore 2.5; use a dump configuration file named by" in text
    assert "not available in the installed MindSpore" in text
    assert "current" not in text
