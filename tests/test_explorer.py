"""The dump explorer as a person meets it: one-line mistakes, the widget's clicks, cells by name."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import msdebug
from msdebug.dumps.explorer import DotView
from msdebug.errors import DumpError, MsDebugError

from helpers import text_of

DATA = Path(__file__).parent / "data"
WIDGET = "application/vnd.jupyter.widget-view+json"
MODE2 = DATA / "rdr_mode2"
GRAPHS = DATA / "graphs_l2"


# --------------------------------------------------------------------------- one line per mistake

MISTAKES = [
    # (what the person typed, what the one line says)
    ("msdebug.open_dump(MODE2).graph('no_such_stage')", "no IR file of rank 0 is called 'no_such_stage'. It has 24 stages (PIPELINE.00_bootstrap, PIPELINE.01_type_inference, PIPELINE.02_auto_monad and 21 more) and kernel graphs SESSION.graph_build.0"),
    ("msdebug.open_dump(MODE2).graph('optimise')", "Did you mean 'optimize'?"),
    ("msdebug.open_dump(GRAPHS).graph('24_exeucte')", "no IR file in {GRAPHS} is called '24_exeucte'. Did you mean '24_execute'?"),
    ("msdebug.open_dump(GRAPHS).graph('nothing_like_it')", "It has 136 IR files, stages 00_bootstrap, 01_type_inference, 02_event_method, 03_auto_monad and 21 more."),
    ("msdebug.open_dump(GRAPHS).graph('24_execute', op='PrimFunc_Relu')", "has no 'PrimFunc_Relu' nodes. Did you mean 'PrimFunc_ReLU'?"),
    ("msdebug.open_dump(GRAPHS).dot('00_bootstrap')", "no .dot file in {GRAPHS} is called '00_bootstrap'. It has 0 .dot files."),
    ("msdebug.open_dump(GRAPHS).exec_order()", "execution orders are in RDR trees only"),
    ("msdebug.open_dump(MODE2).exec_order(graph=7)", "rank 0 has no execution order of graph 7; it has graphs 0, 1, 2, 3"),
    ("msdebug.open_dump(DATA / 'print')", "neither an RDR tree (rank_*/rdr/) nor a save_graphs directory; it has 4 files: all_dtypes.pb, expected.json, make_print_files.py, training.pb. Print files? msdebug.read_print_file("),
    ("msdebug.open_dump(DATA / 'print' / 'training.pb')", "open_dump reads an RDR tree, a save_graphs directory or one .ir file; for print files use msdebug.read_print_file("),
    ("msdebug.open_dump(EMPTY)", "neither an RDR tree (rank_*/rdr/) nor a save_graphs directory; it is empty"),
    ("msdebug.open_dump('/no/such/dump')", "/no/such/dump: no such file or directory"),
]  # fmt: skip


@pytest.mark.parametrize(("typed", "says"), MISTAKES, ids=[typed for typed, _ in MISTAKES])
def test_every_dump_mistake_is_one_line_in_ipython(ip, tmp_path, capsys, typed, says):
    (tmp_path / "empty").mkdir()
    ip.user_ns.update(msdebug=msdebug, MODE2=MODE2, GRAPHS=GRAPHS, DATA=DATA, EMPTY=tmp_path / "empty")
    result = ip.run_cell(typed)
    error = result.error_in_exec
    assert isinstance(error, MsDebugError), error
    shown = capsys.readouterr()
    text = shown.out + shown.err
    lines = [line for line in text.splitlines() if line.strip()]
    assert "Traceback" not in text and "msdebug/" not in text.replace(str(DATA), "DATA"), text
    assert lines[0].startswith(f"{type(error).__name__}: ")
    # Wrapped at word boundaries, never mid-word; joined again it is the message.
    assert all(len(line) <= 100 or " " not in line.strip() for line in lines), lines
    joined = " ".join(line.strip() for line in lines)
    assert says.format(GRAPHS=GRAPHS) in joined, joined


def test_an_error_from_inside_a_function_names_the_callers_not_msdebug(ip, capsys):
    ip.user_ns.update(msdebug=msdebug, GRAPHS=GRAPHS)
    ip.run_cell("def look(name):\n    return msdebug.open_dump(GRAPHS).graph(name)\n")
    result = ip.run_cell("look('24_exeucte')")
    assert isinstance(result.error_in_exec, DumpError)
    text = capsys.readouterr().out
    assert "Traceback" not in text and "explorer.py" not in text
    assert "(from look(), line 2: return msdebug.open_dump(GRAPHS).graph(name))" in text


def test_magics_still_turn_dump_errors_into_usage_errors(ip, capsys):
    ip.run_line_magic("load_ext", "msdebug")
    ip.run_cell("%msrdr on --mode 7")
    text = capsys.readouterr()
    assert "UsageError" in text.out + text.err and "Traceback" not in text.out + text.err


# --------------------------------------------------------------------------- what a dump opens to


def test_one_ir_file_opens_as_its_graph():
    explorer = msdebug.open_dump(GRAPHS / "24_execute_0278.ir")
    text, html = repr(explorer), explorer._repr_html_()
    assert "entry graph @32_1___main" in text and "PrimFunc_MatMul" in text
    assert (
        'class="msdebug-graph"' in html and 'data-node="32_1___main____network__locals__Net_construct_138:%1"' in html
    )


def test_dot_files_are_drawn_by_name():
    explorer = msdebug.open_dump(DATA / "graphs_l3_dot")
    view = explorer.graph("00_bootstrap")
    assert isinstance(view, DotView) and view == explorer.dot("00_bootstrap_0001.dot")
    assert len(view.nodes) == 9 and len(view.edges) == 7
    html = view._repr_html_()
    assert html.count('class="msdebug-node"') == 9 and "Return" in html and "no Graphviz needed" in html
    assert "CNode(CNode_5)" in repr(view)


def test_print_directory_is_not_called_saved_ir():
    listing = msdebug.dumps.graphs.read_graphs_dir(DATA / "print")
    assert {f.family for f in listing.files} == {"other"}


def test_summary_charts_nodes_per_stage_and_marks_optimize():
    explorer = msdebug.open_dump(GRAPHS)
    stages = explorer.stage_nodes()
    counts = dict(stages.stages)
    assert (counts["12_pipeline_split"], counts["13_optimize"]) == (60, 18)
    html = explorer._repr_html_()
    assert "13_optimize 60→18" in html and html.count("<svg") == 1
    assert "13_optimize" in repr(stages) and "60" in repr(stages)


def test_views_fit_the_output_width_and_name_files_once():
    explorer = msdebug.open_dump(MODE2)
    order = explorer.exec_order()._repr_html_()
    ir_name = Path(explorer.exec_order().ir_file).name
    assert ir_name.startswith("SESSION.graph_build.0.") and ir_name.endswith(".ir")
    assert order.count(ir_name) == 1  # named once above the table, not on every row
    for html in (
        order,
        explorer.graph("graph_build.0")._repr_html_(),
        explorer.diff("11_pipeline_split", "12_optimize")._repr_html_(),
    ):
        for table in re.findall(r"<table[^>]*>", html):
            assert "table-layout:fixed" in table and "width:100%" in table
    diff = explorer.diff("11_pipeline_split", "12_optimize")._repr_html_()
    assert "before / after" in diff


# --------------------------------------------------------------------------- the widget


@pytest.fixture
def widget():
    from msdebug.ipython.explorer import ExplorerWidget

    return ExplorerWidget(msdebug.open_dump(MODE2))


def test_the_widget_has_the_panes_of_an_rdr_tree(widget):
    assert [title for title, _, _ in widget._panes] == ["Summary", "Execution order", "Graphs", "Diff", "Memory"]
    assert "nodes per pipeline stage" in widget.summary.value and "<svg" in widget.summary.value


def test_clicking_a_kernel_shows_its_ir_node_and_opens_it_in_its_graph(widget):
    widget.tabs.selected_index = 1
    assert widget.kernels.options[2][0].startswith("  2  PrimFunc_ReduceSum")
    widget.kernels.value = 2  # a click on the third row
    detail = widget.node_detail.value
    assert "PrimFunc_ReduceSum" in detail and "at line 47 of" in detail and "Float32 ()" in detail
    widget.show_in_graph.click()
    assert widget.tabs.selected_index == widget._index("Graphs")
    assert (widget.stage_list.value, widget.search.value) == ("SESSION.graph_build.0", "Expand/_SumExt/ReduceSum-op0")
    assert "1 nodes (matching" in widget.graph_view.value and "PrimFunc_ReduceSum" in widget.graph_view.value


def test_clicking_a_stage_opens_its_graph_with_search_and_op_filter(widget):
    widget.tabs.selected_index = widget._index("Graphs")
    assert widget.family.value == "pipeline stages"
    labels = [label for label, _ in widget.stage_list.options]
    assert labels[12] == "PIPELINE.12_optimize  (18 nodes)"
    widget.stage_list.value = "PIPELINE.12_optimize"
    assert "12_optimize" in widget.graph_view.value and "18 nodes" in widget.graph_view.value
    assert ("Switch (1)", "Switch") in widget.op.options
    widget.op.value = "Switch"
    assert "1 nodes (op Switch)" in widget.graph_view.value
    widget.op.value = ""
    widget.search.value = "no node has this"
    assert "0 nodes (matching" in widget.graph_view.value
    widget.family.value = "kernel graphs"
    assert widget.stage_list.value == "SESSION.graph_build.0" and "kernel_graph0" in widget.graph_view.value


def test_the_diff_opens_on_the_stage_that_changed_most(widget):
    widget.tabs.selected_index = widget._index("Diff")
    assert (widget.before.value, widget.after.value) == ("PIPELINE.11_pipeline_split", "PIPELINE.12_optimize")
    assert "(60 nodes) → " in widget.diff_view.value and "(18 nodes)" in widget.diff_view.value
    widget.after.value = "PIPELINE.11_pipeline_split"
    assert all(f"0 {change}</span>" in widget.diff_view.value for change in ("appeared", "vanished", "changed"))


def test_a_mistake_in_the_widget_is_one_line_in_it(widget):
    widget.tabs.selected_index = widget._index("Graphs")
    widget.stage_list.value = "PIPELINE.12_optimize"
    widget.op.options = [("all ops", ""), ("NoSuchOp", "NoSuchOp")]
    widget.op.value = "NoSuchOp"
    assert widget.graph_view.value.startswith('<div style="color:#b00020')
    assert "has no &#x27;NoSuchOp&#x27; nodes" in widget.graph_view.value


def test_single_ir_file_and_save_graphs_directory_widgets(tmp_path):
    from msdebug.ipython.explorer import ExplorerWidget

    single = ExplorerWidget(msdebug.open_dump(GRAPHS / "24_execute_0278.ir"))
    assert [title for title, _, _ in single._panes] == ["Graph"]
    assert "PrimFunc_MatMul" in single.graph_view.value
    shutil.copytree(GRAPHS, tmp_path / "graphs")
    shutil.copy(DATA / "graphs_l3_dot" / "00_bootstrap_0001.dot", tmp_path / "graphs")
    saved = ExplorerWidget(msdebug.open_dump(tmp_path / "graphs"))
    assert [title for title, _, _ in saved._panes] == ["Summary", "Graphs", "Diff", ".dot files"]
    saved.tabs.selected_index = 3
    assert "00_bootstrap_0001.dot" in saved.dot_view.value
    saved.tabs.selected_index = 1
    families = [label for label, _ in saved.family.options]
    assert families[0] == "pipeline stages (25)" and "backend passes (hwopt_*) (58)" in families
    assert saved.html_size() < 200_000


def test_in_a_terminal_an_explorer_displays_as_text_and_html(ip):
    data, _ = ip.display_formatter.format(msdebug.open_dump(MODE2), include=("text/plain", "text/html", WIDGET))
    assert WIDGET not in data  # no kernel, no widget
    assert data["text/plain"].startswith("RDR tree ")


# --------------------------------------------------------------------------- in a real kernel


@pytest.mark.kernel
def test_in_a_kernel_the_explorer_is_a_widget_cells_have_names_and_mistakes_one_line(kernel):
    status, _ = kernel.run("%load_ext msdebug\n%msgraphs on --level 1 --path graphs")
    assert status == "ok"
    status, _ = kernel.run(
        "import numpy as np, mindspore as ms\nfrom mindspore import nn\n\n"
        "class Scale(nn.Cell):\n    def construct(self, x):\n        return ops_in_cell(x)\n\n"
        "def ops_in_cell(x):\n    return x * 3  # the line the IR points at\n\n"
        "ms.set_context(mode=ms.GRAPH_MODE)\nScale()(ms.Tensor(np.ones(2, np.float32))).asnumpy()"
    )
    assert status == "ok"
    status, outputs = kernel.run("import msdebug\ngraphs = msdebug.open_dump('graphs')\ngraphs")
    assert status == "ok"
    [result] = [o for o in outputs if o["type"] == "execute_result"]
    assert set(result["data"]) == {"text/plain", "text/html", "application/vnd.jupyter.widget-view+json"}
    assert result["data"]["text/plain"].startswith("saved IR graphs ")
    status, outputs = kernel.run("graphs.graph('24_execute', search='the line')")
    html = next(o["data"]["text/html"] for o in outputs if o["type"] == "execute_result")
    assert "cell [2], line 9" in html and "return x * 3  # the line the IR points at" in html
    assert "/ipykernel_" not in re.sub(r'title="[^"]*"', "", html)  # the temp path only on hover
    status, outputs = kernel.run("graphs.graph('24_exeucte')")
    assert status == "error"
    [error] = [o for o in outputs if o["type"] == "error"]
    assert error["traceback"] == [
        f"DumpError: no IR file in {kernel.cwd}/graphs is called '24_exeucte'. Did you mean '24_execute'?"
    ] or (len(error["traceback"]) <= 3 and "Did you mean '24_execute'?" in " ".join(error["traceback"]))
    assert text_of(outputs) == ""


def test_a_tree_of_several_ranks_is_explored_one_rank_at_a_time(tmp_path):
    from msdebug.ipython.explorer import ExplorerWidget

    for rank in (0, 3):
        shutil.copytree(MODE2 / "rank_0", tmp_path / "cluster" / f"rank_{rank}")
    widget = ExplorerWidget(msdebug.open_dump(tmp_path / "cluster"))
    assert widget.rank_choice.options == (("rank 0", 0), ("rank 3", 3))
    widget.rank_choice.value = 3
    assert widget.rank == 3 and widget.widget.children == (widget.rank_choice, widget.tabs)
    widget.tabs.selected_index = widget._index("Execution order")
    widget.kernels.value = 1
    assert "PrimFunc_BiasAdd" in widget.node_detail.value and "rank 3" in widget.summary.value
