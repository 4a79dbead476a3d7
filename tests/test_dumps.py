"""Reading dumps: the .ir parser, RDR trees and save_graphs directories, on real fixtures.

The fixtures in tests/data were made with real MindSpore (RDR with 2.7.0, save_graphs with
2.10) by tests/data/make_fixtures.py; their source locations point into that script, named
relative to the repository root, so nothing here depends on where the fixtures were made.
"""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import msdebug
from msdebug.dumps import DumpError, DumpFormatError, parse_ir, read_ir
from msdebug.dumps import rdr as rdr_reader
from msdebug.dumps.cells import cell_code
from msdebug.dumps.graphs import read_graphs_dir

from helpers import kernel_env, text_of

DATA = Path(__file__).parent / "data"
MODE2 = DATA / "rdr_mode2"
MODE1 = DATA / "rdr_mode1"
GRAPHS = DATA / "graphs_l2"
SCRIPT = "tests/data/make_fixtures.py"  # the dumps name it relative to the repository root (make_fixtures rewrites it)


def one(directory: Path, pattern: str) -> Path:
    (path,) = directory.glob(pattern)
    return path


def read_only_copy(source: Path, target: Path) -> Path:
    """A copy with MindSpore's permissions: files 0400, directories 0700."""
    shutil.copytree(source, target)
    for path in sorted(target.rglob("*"), reverse=True):
        path.chmod(0o700 if path.is_dir() else 0o400)
    return target


@pytest.fixture
def rdr_tree(tmp_path):
    tree = read_only_copy(MODE2, tmp_path / "rdr")
    yield tree
    for path in tree.rglob("*"):  # MindSpore's 0400 files: make them deletable again
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


# --------------------------------------------------------------------------- .ir parser


def test_kernel_graph_ir_of_the_failure_run():
    ir = read_ir(one(MODE1 / "rank_0/rdr", "SESSION.graph_build.0.*_0012.ir"))
    assert (ir.entry, ir.total_subgraphs, ir.total_nodes, ir.total_cnodes) == ("kernel_graph0", 1, 12, 4)
    assert ir.lines == 49 and ir.node_count == 3
    assert [name for name, _ in ir.params] == ["%para1_table", "%para2_index"]
    gather, add, make_tuple = ir.nodes()
    assert (gather.id, gather.name, gather.op, gather.lineno) == ("%0", "CNode_10", "PrimFunc_Gather", 22)
    assert gather.scope == "Default/Gather-op0"
    assert gather.inputs == ["%para1_table", "%para2_index"]
    assert (gather.output_dtype, gather.output_shape) == ("Float32", (1, 3))
    assert gather.input_types.startswith("(<Tensor[Float32], (4, 3)>, <Tensor[Int32], (1)>")
    sources = gather.sources
    assert [str(s) for s in sources[:2]] == [f"{SCRIPT}:84~85", f"{SCRIPT}:85"]
    assert sources[1].columns == (19, 29)
    assert sources[1].code == "            return ops.gather(table, index, 0) + 1"
    assert sources[2].installed and sources[2].columns is None  # "gen_ops_def.py:8878~8944/def gather(...)/"
    assert str(gather.source) == f"{SCRIPT}:85"  # the innermost line outside installed packages
    assert add.inputs == ["%0"] and make_tuple.op == "MakeTuple" and make_tuple.source is None
    assert ir.graphs[0].returns == "Return(%2)"


def test_pipeline_stage_with_utf8_names_branches_and_calls():
    ir = read_ir(one(MODE2 / "rank_0/rdr", "PIPELINE.12_optimize.*.ir"))
    assert ir.entry == "32_1___main____network__locals__Net_construct_648"
    assert [(g.name, g.node_count) for g in ir.graphs] == [
        ("32_1___main____network__locals__Net_construct_648", 14),
        ("33_4_✓__main____network__locals__Net_construct_640", 2),
        ("34_15_✗__main____network__locals__Net_construct_643", 2),
    ]
    assert ir.params[0][0] == "%para1_фx"
    assert ir.total_nodes == 51 and ir.total_cnodes == ir.node_count + len(ir.graphs)
    assert ir.op_counts()["Partial"] == 2 and ir.op_counts()["call"] == 1
    nodes = ir.graphs[0].nodes
    partial = nodes[8]
    assert partial.inputs == ["@33_4_✓__main____network__locals__Net_construct_640", "%3", "%7"]
    call = nodes[11]
    assert (call.op, call.callee) == ("call", "%10")
    assert call.inputs[0] == "%10" and "@FuncUnion" not in call.inputs
    assert nodes[1].scope == "Default/dense-Dense"  # front-end files write "# Scope:"
    assert str(ir.graphs[0].source) == f"{SCRIPT}:55~61"


def test_saved_graph_ir_and_nested_graphs():
    ir = read_ir(one(GRAPHS, "01_type_inference_*.ir"))
    assert ir.total_subgraphs == len(ir.graphs) == 31
    nested = ir.graph("21_↓tensor_bool_23")
    assert nested.parent == "19_tensor_bool_21"
    assert ir.graph("@3_↓__main____network__locals__Net_construct_86").params == "%para4_фy"
    jit = read_ir(one(GRAPHS, "24_execute_*.ir"))
    assert jit.attrs["jit_level"] == "O0"  # after a "jit config { ... }" block
    matmul = jit.find(op="PrimFunc_MatMul")[0]
    # 2.10 appends "<~~This line of code can be shared..." to a snippet: not part of the code
    assert [s.code for s in matmul.sources][2] == "            y = self.dense(фx)"


def test_every_fixture_ir_file_parses_and_counts_agree():
    files = sorted(DATA.rglob("*.ir"))
    assert len(files) == 28 + 25 + 25 + 11 + 58 + 8 + 34  # RDR mode 2, mode 1, then graphs_l2 by family
    for path in files:
        ir = read_ir(path)
        text = path.read_text(encoding="utf-8")
        assert ir.lines == len(text.splitlines()), path
        assert ir.node_count == sum(len(g.nodes) for g in ir.graphs) == text.count("\n  %"), path
        if ir.total_cnodes is not None:
            assert ir.total_cnodes == ir.node_count + len(ir.graphs), path
        lines = text.splitlines()
        for node in ir.nodes():
            assert lines[node.lineno - 1].startswith(f"  {node.id}("), (path, node)


def test_unknown_lines_are_skipped():
    text = (
        "# IR entry: @g\nsomething new in 2.11\n\nsubgraph @g() {\n  %0(a) = Foo(%para1_x)\n  ?? odd\n  Return(%0)\n}\n"
    )
    ir = parse_ir(text)
    assert [n.op for n in ir.nodes()] == ["Foo"] and ir.graphs[0].returns == "Return(%0)"


def test_cut_short_and_binary_files_name_the_file(tmp_path):
    source = one(MODE2 / "rank_0/rdr", "SESSION.graph_build.0.*.ir")
    cut = tmp_path / "cut.ir"
    cut.write_bytes(source.read_bytes()[:2500])
    with pytest.raises(DumpFormatError, match=r"cut\.ir: cut short: subgraph @kernel_graph0 opened at line 22"):
        read_ir(cut)
    garbage = tmp_path / "garbage.ir"
    garbage.write_bytes(bytes(range(256)) * 40)
    with pytest.raises(DumpFormatError, match=r"garbage\.ir: binary data"):
        read_ir(garbage)
    empty = tmp_path / "empty.ir"
    empty.write_bytes(b"")
    with pytest.raises(DumpFormatError, match=r"empty\.ir: empty file"):
        read_ir(empty)
    prose = tmp_path / "notes.ir"
    prose.write_text("just some notes\nnothing else\n")
    with pytest.raises(DumpFormatError, match=r"notes\.ir: not a MindSpore IR dump \(no IR line in its 2 lines\)"):
        read_ir(prose)
    with pytest.raises(DumpError, match="missing.ir: cannot read it"):
        read_ir(tmp_path / "missing.ir")


def test_exec_order_and_memory_cut_short_or_garbage(tmp_path):
    order = one(MODE2 / "rank_0/rdr", "SESSION.graph_exec_order.0.*.txt")
    lines = order.read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "order.txt").write_text("".join(lines[:-5]), encoding="utf-8")
    with pytest.raises(DumpFormatError, match=r"order\.txt: cut short: it lists 3 of the 4 kernels"):
        rdr_reader.read_exec_order(tmp_path / "order.txt")
    memory = one(MODE2 / "rank_0/rdr", "RUNTIME_FRAMEWORK.mem_address_list.*.txt")
    (tmp_path / "memory.txt").write_text("".join(memory.read_text().splitlines(keepends=True)[:4]))
    with pytest.raises(DumpFormatError, match=r"memory\.txt: cut short: Default/dense-Dense/MatMul-op0 lacks 2"):
        rdr_reader.read_memory(tmp_path / "memory.txt")
    (tmp_path / "junk.txt").write_bytes(b"\x00\x01\x02junk")
    for reader in (rdr_reader.read_exec_order, rdr_reader.read_memory, rdr_reader.read_stream_order):
        with pytest.raises(DumpFormatError, match=r"junk\.txt: binary data"):
            reader(tmp_path / "junk.txt")
    (tmp_path / "stream.json").write_text('[{"index": 0,\n "node_name": }]')
    with pytest.raises(DumpFormatError, match=r"stream\.json: line 2 column 15"):
        rdr_reader.read_stream_order(tmp_path / "stream.json")


# --------------------------------------------------------------------------- RDR tree


def test_rdr_tree_of_a_mode2_run_read_only(rdr_tree):
    assert stat.S_IMODE(next(rdr_tree.rglob("*.ir")).stat().st_mode) == 0o400
    for where in (rdr_tree, rdr_tree / "rank_0", rdr_tree / "rank_0/rdr"):
        tree = rdr_reader.find_rdr(where)
        assert [r.rank for r in tree.ranks] == [0]
    rank = rdr_reader.find_rdr(rdr_tree).rank(0)
    kinds = {kind: len(rank.of_kind(kind)) for kind in rdr_reader.KINDS}
    assert kinds == {
        "pipeline": 24,
        "graph": 4,
        "graph_pb": 4,
        "exec_order": 4,
        "memory": 1,
        "string": 0,
        "stream": 0,
        "other": 0,
    }
    stages = rank.stages()
    assert [f.stage for f in stages[:3]] == [(0, "bootstrap"), (1, "type_inference"), (2, "auto_monad")]
    assert stages[-1].stage == (23, "execute")
    assert stages[19].name == "19_distribtued_split"  # MindSpore's own spelling
    counters = [f.counter for f in stages]
    assert counters != sorted(counters)  # the dump counter is not pipeline order
    build = rank.find("graph_build.0")
    assert (build.module, build.graph_id, build.ext, len(build.timestamp)) == ("SESSION", 0, "ir", 14)
    assert rank.graph_ids() == [0, 1, 2, 3]
    with pytest.raises(DumpError, match="Did you mean 'optimize'"):
        rank.find("optimise")


def test_exec_order_and_memory_of_a_mode2_run():
    rank = rdr_reader.find_rdr(MODE2).rank()
    order = rdr_reader.read_exec_order(rank.find("graph_exec_order.0", kinds=("exec_order",)).path)
    assert order.declared == 4
    assert [(e.index, e.name, e.op) for e in order.entries] == [
        (0, "x", "PrimFunc_MatMul"),
        (1, "x", "PrimFunc_BiasAdd"),
        (2, "CNode_65", "PrimFunc_ReduceSum"),
        (3, "CNode_66", "PrimFunc_Greater"),
    ]
    assert order.entries[0].inputs == ("param_фx", "CNode_63", "ValueNode<BoolImm> false", "ValueNode<BoolImm> true")
    assert order.entries[3].inputs[1] == "ValueNode<Tensor> Tensor(shape=[], dtype=Float32, value=0)"
    assert (order.entries[0].stream, order.entries[0].graph_id) == (4294967295, 0)
    memory = rdr_reader.read_memory(rank.of_kind("memory")[0].path)
    assert [(k.name, k.total) for k in memory.largest_first()] == [
        ("Default/dense-Dense/MatMul-op0", 46),
        ("Expand/_Muls/Mul-op0", 20),
        ("Expand/_SumExt/ReduceSum-op0", 14),
        ("Default/Greater-op0", 9),
    ]
    assert memory.totals == (68, 0, 21)
    reduce_sum = next(k for k in memory.kernels if k.name.startswith("Expand/_SumExt"))
    assert reduce_sum.inputs[1] == rdr_reader.Address("0", 0)  # "&0 #0": an empty input


def test_text_records_and_stream_orders(tmp_path):
    # CPU runs write neither (SOMAS records and stream orders come from GPU/Ascend): files in
    # the formats of MindSpore's StringRecorder and StreamExecOrderRecorder.
    rdr = tmp_path / "rank_3" / "rdr"
    rdr.mkdir(parents=True)
    (rdr / "OPTIMIZER.gpu_somas_offline_log.1.20260101000000.txt").write_text("total 1024\nblock 0 512\n")
    (rdr / "SESSION.stream_exec_order.1.20260101000000.json").write_text(
        json.dumps(
            [
                {
                    "index": 0,
                    "node_name": "Default/MatMul-op0",
                    "logic_id": 0,
                    "stream_id": 1,
                    "node_info": "...",
                    "event_id": 0,
                    "label_id": "1,2",
                }
            ],
            indent=2,
        )
    )
    rank = rdr_reader.find_rdr(tmp_path).rank(3)
    (record,) = rank.of_kind("string")
    assert (record.module, record.name, record.graph_id) == ("OPTIMIZER", "gpu_somas_offline_log.1", 1)
    assert rdr_reader.read_string(record.path) == "total 1024\nblock 0 512"
    (stream,) = rank.of_kind("stream")
    assert rdr_reader.read_stream_order(stream.path)[0]["label_id"] == "1,2"
    assert "text record (SOMAS)" in repr(msdebug.open_dump(tmp_path))


def test_mode1_failure_run_exported_the_failing_graph():
    explorer = msdebug.open_dump(MODE1)
    summary = explorer.summary()
    assert summary.kind == "rdr" and summary.files == 27
    order = explorer.exec_order()
    assert [(r.op, r.fullname, r.ir_line) for r in order.rows] == [
        ("PrimFunc_Gather", "Default/Gather-op0", 22),
        ("PrimFunc_Add", "Default/Add-op0", 31),
    ]
    assert order.rows[0].code == "return ops.gather(table, index, 0) + 1"
    with pytest.raises(DumpError, match="no memory address list"):
        explorer.memory()


def test_pb_files_read_with_mindsporess_own_proto():
    pb = msdebug.open_dump(MODE2).pb("graph_build.0")
    assert pb.graph == "kernel_graph0" and len(pb.nodes) == 9
    assert ("2", "MatMul", "Default/dense-Dense/MatMul-op0") in pb.nodes
    assert "MatMul" in repr(pb) and "kernel_graph0" in pb._repr_html_()
    saved = msdebug.open_dump(GRAPHS).pb("ms_output_after_opt_0")
    assert saved.graph and dict(saved.op_counts)["MatMul"] == 1


# --------------------------------------------------------------------------- save_graphs directory


def test_saved_graphs_directory_by_family():
    listing = read_graphs_dir(GRAPHS)
    families = {}
    for f in listing.files:
        families[f.family] = families.get(f.family, 0) + 1
    assert families == {"stage": 25, "opt_pass": 11, "backend": 58, "kernel_graph": 8, "verbose": 34, "pb": 13}
    stages = [f.stem for f in listing.family("stage")]
    assert stages[0] == "00_bootstrap" and stages[13] == "13_optimize" and stages[-1] == "24_execute"
    assert listing.find("optimize").relative == "13_optimize_0068.ir"
    assert [f.graph_id for f in listing.family("kernel_graph")] == [0, 0, 1, 1, 2, 2, 3, 3]
    dot = read_graphs_dir(DATA / "graphs_l3_dot").files
    assert [(f.family, f.relative) for f in dot] == [("dot", "00_bootstrap_0001.dot")]


def test_explorer_summary_graph_and_diff_of_saved_graphs():
    explorer = msdebug.open_dump(GRAPHS)
    text = repr(explorer)
    assert text.splitlines()[0] == f"saved IR graphs {GRAPHS}: 149 files, 1.5 MB"
    assert text.index("00_bootstrap") < text.index("13_optimize") < text.index("24_execute")
    view = explorer.graph("24_execute", search="dense")
    assert view.matched == 6 and view.total_nodes == 18  # %0 loads dense.weight, in scope Default
    assert {row.op for row in view.rows} == {"Load", "PrimFunc_MatMul", "PrimFunc_BiasAdd", "MakeTuple", "UpdateState"}
    only = explorer.graph("24_execute", op="PrimFunc_ReLU")
    assert [row.graph for row in only.rows] == ["33_4_✓__main____network__locals__Net_construct_141"]
    with pytest.raises(DumpError, match="Did you mean 'PrimFunc_ReLU'"):
        explorer.graph("24_execute", op="PrimFunc_Relu")
    diff = explorer.diff("hwopt_d_before_optimization_without_backend_graph_0", "hwopt_common_final_graph_0")
    assert diff.counts == {"appeared": 1, "vanished": 1, "changed": 2}
    assert ("PrimFunc_SumExt", 1, 0) in diff.op_changes and ("PrimFunc_ReduceSum", 0, 1) in diff.op_changes
    bounded = explorer.diff("12_pipeline_split", "13_optimize", limit=5)
    assert "showing 5 of 56 differences" in repr(bounded) and "showing 5 of 56 differences" in bounded._repr_html_()


def test_explorer_rdr_summary_exec_order_memory_graph(rdr_tree):
    explorer = msdebug.open_dump(rdr_tree)
    text = repr(explorer)
    assert "rank 0" in text and "24 stages" in text
    assert text.index("PIPELINE.00_bootstrap") < text.index("PIPELINE.12_optimize") < text.index("PIPELINE.23_execute")
    order = explorer.exec_order(graph=0)
    first = order.rows[0]
    assert (first.op, first.fullname, first.ir_line, first.memory) == (
        "PrimFunc_MatMul",
        "Default/dense-Dense/MatMul-op0",
        26,
        46,
    )
    assert (first.source, first.code) == (f"{SCRIPT}:56", "y = self.dense(фx)")
    assert "IR line 26" in repr(order) and "y = self.dense(фx)" in order._repr_html_()
    memory = explorer.memory()
    assert memory.rows[0].name == "Default/dense-Dense/MatMul-op0" and memory.totals == (68, 0, 21)
    assert "total 89 B" in repr(memory)
    graph = explorer.graph("graph_build.0", limit=3)
    assert "showing 3 of 9 nodes" in repr(graph) and "showing 3 of 9 nodes" in graph._repr_html_()
    with pytest.raises(DumpError, match="no execution order of graph 7"):
        explorer.exec_order(graph=7)


def test_single_ir_file_and_paths_that_are_not_dumps(tmp_path):
    explorer = msdebug.open_dump(one(GRAPHS, "13_optimize_*.ir"))
    assert explorer.kind == "ir" and "entry graph @32_1___main" in repr(explorer)
    assert explorer.graph(op="Switch").matched == 1
    with pytest.raises(DumpError, match="no such file or directory"):
        msdebug.open_dump(tmp_path / "nothing")
    (tmp_path / "readme.txt").write_text("hello")
    with pytest.raises(DumpError, match="neither an RDR tree"):
        msdebug.open_dump(tmp_path)


# --------------------------------------------------------------------------- untrusted content

SCRIPT_TAG = "<script>document.title=1</script>"
IMG = '"><img src=x onerror=alert`1`>'


def hostile_tree(root: Path) -> Path:
    rdr = root / "rank_0" / "rdr"
    rdr.mkdir(parents=True)
    ir = (
        f"# IR entry: @g{IMG}\n# Total subgraphs: 1\n\n"
        f"subgraph @g{IMG}() {{\n"
        f"  %0({SCRIPT_TAG}) = Prim{IMG}(%para1_x{SCRIPT_TAG})\n"
        f"      : (<Tensor[Float32], (1)>) -> (<{SCRIPT_TAG}>)\n"
        f"      # Fullname with scope: (Default/{SCRIPT_TAG}-op0)\n"
        f"      # In file /x/{IMG}.py:3, 1~2/    {SCRIPT_TAG}/\n"
        f"  Return(%0)\n}}\n"
    )
    (rdr / f"PIPELINE.00_{IMG}.20260101000000_0001.ir").write_text(ir)
    (rdr / "SESSION.graph_build.0.20260101000000_0002.ir").write_text(ir)
    (rdr / "SESSION.graph_exec_order.0.20260101000000.txt").write_text(
        "================== execution order ==================\nexecution_order size: 1\n0:\n"
        f"\t@g:{SCRIPT_TAG}{{[0]: ValueNode<Primitive> Prim{IMG}}}\n\t0\n\t0\n"
        "================== execution order ==================\n"
    )
    (rdr / "RUNTIME_FRAMEWORK.mem_address_list.20260101000000.txt").write_text(
        f"Default/{SCRIPT_TAG}-op0\nkernel_inputs 1\n&0x1 #4\nkernel_workspaces 0\nkernel_outputs 0\n\n"
    )
    (rdr / f"{IMG}.txt").write_text("not an RDR name")
    return root


def test_hostile_names_and_ir_text_render_inert(tmp_path):
    explorer = msdebug.open_dump(hostile_tree(tmp_path / "evil"))
    pages = [
        explorer._repr_html_(),
        explorer.graph("graph_build.0")._repr_html_(),
        explorer.graph(f"PIPELINE.00_{IMG}")._repr_html_(),
        explorer.exec_order()._repr_html_(),
        explorer.memory()._repr_html_(),
        explorer.diff("graph_build.0", f"00_{IMG}")._repr_html_(),
    ]
    for page in pages:
        assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;document.title=1&lt;/script&gt;" in pages[1]
    assert "&quot;&gt;&lt;img src=x onerror=alert`1`&gt;" in pages[0]
    graph = explorer.graph("graph_build.0")
    assert graph.rows[0].name == SCRIPT_TAG and graph.rows[0].code == SCRIPT_TAG
    assert SCRIPT_TAG in repr(explorer.graph("graph_build.0"))  # text output shows it as it is


# --------------------------------------------------------------------------- notebook cells


def test_source_lines_in_a_cell_show_the_cells_code(tmp_path):
    import linecache

    cell = tmp_path / "ipykernel_4242" / "1234567.py"
    cell.parent.mkdir()
    cell.write_text("import mindspore\ny = net(x)  # the cell's line\n")
    assert cell_code(str(cell), 2) == "y = net(x)  # the cell's line"
    gone = "/tmp/ipykernel_4242/999.py"  # the kernel's file is gone; IPython's linecache has it
    linecache.cache[gone] = (10, None, ["a = 1\n", "b = relu(a)\n"], gone)
    try:
        assert cell_code(gone, 2) == "b = relu(a)"
    finally:
        linecache.cache.pop(gone, None)
    assert cell_code("/usr/lib/python3/x.py", 1) is None
    text = (
        "# IR entry: @g\n\nsubgraph @g() {\n  %0(y) = PrimFunc_ReLU(%para1_x)\n"
        f"      # In file {cell}:2, 4~14/y = net(x)/\n  Return(%0)\n}}\n"
    )
    (tmp_path / "g.ir").write_text(text)
    row = msdebug.open_dump(tmp_path / "g.ir").graph().rows[0]
    assert row.in_cell and row.code == "y = net(x)  # the cell's line"


def test_a_notebook_cell_line_is_named_one_way_by_every_answer(tmp_path):
    """``%%msnan`` and ``%%msdiff`` (``source_text``), ``%%mswatch`` (``place``) and the
    explorer's rows name a line of a cell alike: ``cell [N], line L`` once this process knows
    which ``In [N]`` ran it, ``notebook cell, line L`` before (a cell run before msdebug was
    loaded), the line as typed (IPython drops a cell's leading blank lines before it compiles)."""
    from msdebug.dumps import cells
    from msdebug.dumps.nan import source_text
    from msdebug.views import explorer as explorer_view

    cell = tmp_path / "ipykernel_4242" / "7654321.py"
    cell.parent.mkdir()
    cell.write_text("\n\nimport mindspore\ny = net(x)  # the cell's line\n")
    path = str(cell)
    text = f"# IR entry: @g\n\nsubgraph @g() {{\n  %0(y) = PrimFunc_ReLU(%para1_x)\n      # In file {path}:2, 4~14/y = net(x)/\n  Return(%0)\n}}\n"
    (tmp_path / "g.ir").write_text(text)
    cells.remember_blank(path, 2)  # compiled line 2 is line 4 as typed

    def labels():
        row = msdebug.open_dump(tmp_path / "g.ir").graph().rows[0]
        return {cells.place(path, 2), source_text(path, 2, "")[2], explorer_view._row_source(row)}

    try:
        assert labels() == {"notebook cell, line 4"}
        cells.remember(path, 14)
        assert labels() == {"cell [14], line 4"}
    finally:
        cells._numbers.pop(path, None)
        cells._blank.pop(path, None)


# --------------------------------------------------------------------------- CLI


def msdebug_command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "msdebug", *args], capture_output=True, text=True, timeout=180, env=kernel_env()
    )


def test_cli_dump_every_rank_of_a_multi_rank_tree(tmp_path):
    root = tmp_path / "cluster"
    for rank in (0, 1):
        shutil.copytree(MODE2 / "rank_0", root / f"rank_{rank}")
    result = msdebug_command("dump", str(root), "--exec-order", "--memory")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.splitlines()[0].startswith(f"RDR tree {root}: 74 files, ")
    assert out.splitlines()[0].endswith(" kB, 2 ranks")
    assert "rank 0 (" in out and "rank 1 (" in out
    assert out.count("execution order of graph 0") == 2 and "rank 1: memory per kernel" in out


def test_cli_dump_graph_and_errors():
    result = msdebug_command("dump", str(GRAPHS), "--graph", "24_execute", "--op", "PrimFunc_MatMul")
    assert result.returncode == 0, result.stderr
    assert "1 nodes (op PrimFunc_MatMul)" in result.stdout and "y = self.dense(фx)" in result.stdout
    missing = msdebug_command("dump", str(MODE1), "--memory")
    assert missing.returncode == 2 and missing.stderr.strip() == (
        "msdebug dump: rank 0 has no memory address list (RDR writes one in mode 2)"
    )
    nothing = msdebug_command("dump", "/no/such/dump")
    assert nothing.returncode == 2 and nothing.stderr == "msdebug dump: /no/such/dump: no such file or directory\n"


@pytest.mark.kernel
def test_in_a_kernel_ir_source_lines_show_the_cell(kernel):
    status, _ = kernel.run("%load_ext msdebug\n%msgraphs on --level 1 --path graphs")
    assert status == "ok"
    status, _ = kernel.run(
        "import numpy as np, mindspore as ms\nfrom mindspore import nn\n\n"
        "class Scale(nn.Cell):\n    def construct(self, x):\n        return ops_in_cell(x)\n\n"
        "def ops_in_cell(x):\n    return x * 3  # the line the IR points at\n\n"
        "ms.set_context(mode=ms.GRAPH_MODE)\nScale()(ms.Tensor(np.ones(2, np.float32))).asnumpy()"
    )
    assert status == "ok"
    status, outputs = kernel.run(
        "view = msdebug_view = __import__('msdebug').open_dump('graphs').graph('24_execute', search='the line')\n"
        "print([(r.source, r.in_cell, r.code) for r in view.rows])\nview"
    )
    assert status == "ok"
    printed = text_of(outputs)
    assert "True, 'return x * 3  # the line the IR points at')" in printed
    assert "/ipykernel_" in printed
    html = next(o["data"]["text/html"] for o in outputs if o["type"] == "execute_result")
    assert "notebook cell" in html and "return x * 3  # the line the IR points at" in html
