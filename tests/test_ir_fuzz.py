"""The .ir parser on arbitrary input: a parsed file that agrees with its own text, or
DumpFormatError, never anything else.

"Agrees with its text": the file's size and line count are the input's, every graph and
node points at a line of the input that is that graph's or node's line, the counts a
view shows (``node_count``, ``op_counts``) add up to the nodes listed, and every lazily
parsed detail of every node can be read.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from msdebug.dumps import DumpFormatError, IrFile, parse_ir, read_ir

# Real lines, so the fuzzer reaches deep into graphs and nodes, not only the "no IR" exit.
_SAMPLE = next((Path(__file__).parent / "data/rdr_mode2/rank_0/rdr").glob("PIPELINE.12_optimize.*.ir"))
REAL_LINES = _SAMPLE.read_text(encoding="utf-8").splitlines()
SHAPES = [
    "subgraph @g(%para1_x) {",
    "}",
    "  Return(%0)",
    "# IR entry: @g",
    "# Total subgraphs: 2",
    "Total number of nodes: 9",
    "%para1_x: <Tensor[Float32], (1)>",
    "# Attrs:",
    "k: v",
    "  %0(a) = call @g(%1)",
    "  %1() = %0[@FuncUnion(@a, @b)]()",
    "      : (<x>) -> (<y>)",
    "      # In file /p.py:1~2, 3~4/code/",
    "      # In file :/",
    "      # Scope: (",
    "subgraph @(",
    "  %2(b) = ",
    "  %3(c) = (x)",
    "  %4(d) = a\x1cb(%0)",
    "  %5(e) = [x]",
    "  %6(f) = \tOp(%0)",
    "      : (<x>) -> (<Tensor[Float32], (N, -1)>)",
    "      : (<Ref[Tensor[Int32]], ()>)",
]
line = st.one_of(st.sampled_from(REAL_LINES), st.sampled_from(SHAPES), st.text(max_size=80))


def check(ir: IrFile, data: bytes) -> None:
    """Assert that ``ir`` agrees with the bytes it was parsed from, touching everything a view reads."""
    lines = [raw.decode("utf-8", "replace") for raw in data.split(b"\n")]
    if data.endswith(b"\n"):
        lines.pop()
    assert (ir.size, ir.lines) == (len(data), len(lines))
    assert ir.node_count == sum(len(graph.nodes) for graph in ir.graphs) == sum(ir.op_counts().values())
    previous = 0
    for graph in ir.graphs:
        assert previous < graph.lineno <= ir.lines, f"@{graph.name} at line {graph.lineno} of {ir.lines}"
        assert lines[graph.lineno - 1].startswith("subgraph @")
        assert Counter(node.op for node in graph.nodes) == graph.op_counts
        assert graph.source is None or graph.source.line >= 0
        for node in graph.nodes:
            assert graph.lineno < node.lineno <= ir.lines, f"{node!r} outside @{graph.name} .. line {ir.lines}"
            assert lines[node.lineno - 1] == f"  {node.id}({node.name}) = {node.text}", node
            assert node.graph == graph.name
            # The lazily parsed details: each is read from the node's own lines.
            assert node.callee in node.text and node.scope in node.block
            assert all(ref[:1] in ("%", "@") for ref in node.inputs)
            assert node.input_types in node.abstract and node.output_dtype in node.output_type
            assert node.output_shape is None or all(isinstance(size, int) for size in node.output_shape)
            assert node.source is None or node.source in node.sources
            assert node.signature().startswith(f"{node.op} ") and node.matches(node.name.lower())
            previous = node.lineno
        previous = max(previous, graph.lineno)


def parse_or_format_error(data: bytes) -> IrFile | None:
    """``parse_ir(data)``, or None on DumpFormatError (the one error it may raise)."""
    try:
        return parse_ir(data)
    except DumpFormatError:
        return None


@settings(max_examples=300)
@given(st.lists(line, max_size=60), st.booleans())
@example(["subgraph @g() {", "  %0(a) = Op()", "subgraph @h() {", "}"], True)  # @g has no "}"
def test_structured_garbage(lines, final_newline):
    text = "\n".join(lines) + ("\n" if final_newline else "")
    try:
        ir = parse_ir(text)
    except DumpFormatError:
        return
    check(ir, text.encode("utf-8", "surrogatepass"))


@settings(max_examples=300)
@given(st.binary(max_size=2000))
def test_raw_bytes(data):
    ir = parse_or_format_error(data)
    if ir is not None:
        check(ir, data)


@settings(max_examples=100)
@given(st.integers(min_value=0, max_value=len(_SAMPLE.read_bytes())))
def test_real_file_cut_anywhere(cut):
    data = _SAMPLE.read_bytes()[:cut]
    try:
        ir = parse_ir(data)
    except DumpFormatError as error:
        assert "empty file" in str(error) or "cut short" in str(error) or "not a MindSpore IR dump" in str(error)
        return
    check(ir, data)
    assert all(graph.closed for graph in ir.graphs)


def test_every_fixture_agrees_with_its_text():
    """The invariants hold on real dumps too, read from disk in chunks as well as from memory."""
    files = sorted((Path(__file__).parent / "data").rglob("*.ir"))
    assert len(files) > 100
    for path in files:
        data = path.read_bytes()
        check(read_ir(path), data)
        check(parse_ir(data), data)


# Lines that make runs of empty subgraphs, which the scan takes in bulk, as arrays.
RUNS = ["subgraph @e() {", "subgraph @p parent: [subgraph @q](%para1_x) {", "}", "}x", "", "", "# In file /p.py:1/c/"]


def _everything(data: bytes, bulk: bool, chunk: int) -> list | str:
    """What a reader can learn from ``data`` read in ``chunk``-byte pieces; the error, if any."""
    from msdebug.dumps.ir import _scan

    pieces = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    try:
        ir = _scan(pieces, "x", lambda start, end: data[start:end], bulk)
    except DumpFormatError as error:
        return str(error)
    fields = ("name", "params", "parent", "lineno", "location", "returns", "closed", "start", "end", "node_count")
    head = [ir.entry, ir.total_subgraphs, ir.params, ir.attrs, ir.lines, ir.size, ir.node_count, ir.op_counts()]
    graphs = [[getattr(graph, name) for name in fields] + [[n.signature() for n in graph.nodes]] for graph in ir.graphs]
    return [head, graphs, [(node.graph, node.lineno) for node in ir.nodes()], list(ir.graphs.counts())]


@settings(max_examples=300)
@given(st.lists(st.one_of(st.sampled_from(RUNS), line), max_size=60), st.booleans(), st.integers(1, 80))
@example(["# In file /p.py:1/c/", "subgraph @e() {", "}", "subgraph @e() {", "", "}"], True, 80)
@example(["subgraph @g() {", "  %0(a) = Op()", "subgraph @e() {", "}", "}"], False, 7)  # @g has no "}"
def test_runs_of_empty_subgraphs_read_in_bulk_as_line_by_line(lines, final_newline, chunk):
    """The bulk step gives every graph, line, offset and error the line-by-line scan gives,
    in one piece and cut into chunks anywhere."""
    data = ("\n".join(lines) + ("\n" if final_newline else "")).encode("utf-8", "surrogatepass")
    for size in (chunk, len(data) + 1):
        assert _everything(data, True, size) == _everything(data, False, size)
