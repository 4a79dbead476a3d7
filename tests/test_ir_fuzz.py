"""The .ir parser on arbitrary input: a parsed file or DumpFormatError, never anything else."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from msdebug.dumps import DumpFormatError, IrFile, parse_ir

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
]
line = st.one_of(st.sampled_from(REAL_LINES), st.sampled_from(SHAPES), st.text(max_size=80))


def exercise(ir: IrFile) -> None:
    """Touch everything a view reads, including the lazily parsed node details."""
    seen = [ir.op_counts()]
    for graph in ir.graphs:
        seen.append(graph.source)
        for node in graph.nodes:
            seen += [node.op, node.callee, node.inputs, node.scope, node.output_dtype, node.output_shape]
            seen += [node.input_types, node.sources, node.source, node.signature(), node.matches("x")]
    assert len(seen) >= 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(line, max_size=60), st.booleans())
def test_structured_garbage(lines, final_newline):
    text = "\n".join(lines) + ("\n" if final_newline else "")
    try:
        ir = parse_ir(text)
    except DumpFormatError:
        return
    exercise(ir)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000))
def test_raw_bytes(data):
    try:
        ir = parse_ir(data)
    except DumpFormatError:
        return
    exercise(ir)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=0, max_value=len(_SAMPLE.read_bytes())))
def test_real_file_cut_anywhere(cut):
    data = _SAMPLE.read_bytes()[:cut]
    try:
        ir = parse_ir(data)
    except DumpFormatError as error:
        assert "empty file" in str(error) or "cut short" in str(error) or "not a MindSpore IR dump" in str(error)
        return
    exercise(ir)
    assert all(graph.closed for graph in ir.graphs)
