"""Names in text keep what tells them apart: scope names are shortened in the middle (head and
tail stay) to 100 columns in ``repr`` and to the terminal's width in the ``msdebug`` command;
op types are never cut; HTML keeps every name whole and lets it break at ``/``.

The real profile is a LeNet-like net with five levels of nested cells (tests/nested_net.py).
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys

import nested_net
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import msdebug
from msdebug.views._text import ELLIPSIS, MIN_FIT, Column, fit_table, shorten, text_width

from helpers import kernel_env

# Any text, and scope names: levels of a few characters joined by "/".
NAMES = st.one_of(
    st.text(alphabet=st.sampled_from("abcXYZ-_/0123456789"), max_size=200),
    st.lists(st.text(alphabet="abcXYZ-_0123456789", max_size=16), max_size=12).map("/".join),
)
LONG = "Gradients/Default/network-WithLossCell/_backbone-LeNetish/fc2-Dense/Grad_MatMul/MatMul-op2"


# --------------------------------------------------------------------------- shorten


@given(NAMES, st.integers(min_value=0, max_value=220))
def test_a_shortened_name_is_never_longer_than_the_width(text, width):
    assert len(shorten(text, width)) <= width or len(text) <= width


@given(NAMES, st.integers(min_value=0, max_value=220))
def test_a_name_that_fits_comes_back_as_it_is_and_shortening_twice_changes_nothing(text, width):
    once = shorten(text, width)
    if len(text) <= width:
        assert once == text
    assert shorten(once, width) == once


@given(NAMES, st.integers(min_value=4, max_value=220))
@example(LONG, 50)
def test_a_shortened_name_keeps_its_head_and_the_larger_part_of_its_tail(text, width):
    short = shorten(text, width)
    if len(text) <= width:
        return
    assert len(short) == width and short.count(ELLIPSIS) == 1
    head, tail = short.split(ELLIPSIS)
    assert text.startswith(head) and text.endswith(tail)
    room = width - 1
    assert len(head) >= room // 3
    assert len(tail) >= room // 2 - 1


@given(st.integers(min_value=10, max_value=120), st.text(alphabet="0123456789", min_size=1, max_size=3))
def test_names_that_differ_only_in_their_tail_stay_apart(width, tail):
    base = "Gradients/Default/network-WithLossCell/_backbone-LeNetish/fc2-Dense/Grad_MatMul/MatMul-op"
    width = max(width, 2 * len(tail) + 6)
    names = {shorten(base + tail, width), shorten(base + tail + "9", width), shorten(base + "x" + tail, width)}
    assert len(names) == 3


def test_a_cut_next_to_a_slash_moves_to_it():
    name = "Gradients/Default/network-WithLossCell/_backbone-LeNetish/fc2-Dense/Grad_MatMul/MatMul-op2"
    assert shorten(name, 50) == "Gradients/Default…fc2-Dense/Grad_MatMul/MatMul-op2"


# --------------------------------------------------------------------------- tables

OP_TYPES = st.text(alphabet=st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefgh"), min_size=1, max_size=50)


@given(
    st.lists(st.tuples(NAMES, OP_TYPES, st.integers(0, 10**9)), min_size=1, max_size=8),
    st.integers(min_value=40, max_value=200),
)
def test_a_table_fits_the_width_by_shortening_only_the_name_column(rows, width):
    columns = (Column("op", 20, fit=True), Column("type", 12), Column("count", 8, right=True))
    lines = fit_table(columns, rows, width)
    assert len(lines) == len(rows) + 1
    type_width = max(12, *(len(t) for _, t, _ in rows))
    count_width = max(8, *(len(str(c)) for _, _, c in rows))
    name_width = len(lines[0]) - type_width - count_width - 2
    assert name_width >= min(MIN_FIT, max(20, *(len(n) for n, _, _ in rows)))
    for line, (name, op_type, count) in zip(lines[1:], rows, strict=True):
        # The op type and the count are whole, in their columns; only the name gives way, in its middle.
        assert line[name_width + 1 : name_width + 1 + type_width].rstrip() == op_type
        assert line[-count_width:].lstrip() == str(count)
        assert line[:name_width].rstrip() == shorten(name, name_width)
        if type_width + count_width + 2 + MIN_FIT <= width:
            assert len(line) <= width, (line, width)


def test_the_width_is_100_in_repr_and_what_the_command_sets_inside_text_width():
    rows = [("a/" * 80 + "MatMul-op0", 3)]
    columns = (Column("op", 10, fit=True), Column("count", 5, right=True))
    assert max(map(len, fit_table(columns, rows))) == 100
    with text_width(80):
        assert max(map(len, fit_table(columns, rows))) == 80
    assert max(map(len, fit_table(columns, rows))) == 100


# --------------------------------------------------------------------------- a real profile


@pytest.fixture(scope="module")
def nested_profile(tmp_path_factory):
    """A real GRAPH-mode profile of tests/nested_net.py (5 levels of nested cells)."""
    out = tmp_path_factory.mktemp("nested") / "out"
    # Before the per-test temporary directory: anything MindSpore writes goes here, not into the checkout.
    with contextlib.chdir(out.parent), msdebug.context(mode="graph"):
        with msdebug.profile(steps="1:3", output=out) as prof:
            nested_net.train_nested(4)
    return prof.report


def _cli(*args: str, columns: int) -> str:
    env = {**kernel_env(), "COLUMNS": str(columns)}
    result = subprocess.run(
        [sys.executable, "-m", "msdebug", *args], capture_output=True, text=True, timeout=180, env=env
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _table(text: str, header: str) -> list[str]:
    lines = text.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith(header))
    end = next((index for index in range(start, len(lines)) if not lines[index].strip()), len(lines))
    return lines[start:end]


def test_the_command_at_80_columns_shows_op_types_whole_and_tells_every_op_apart(nested_profile):
    ops = nested_profile.ops()
    tails = [row.full_name for row in ops if re.search(r"/Grad_MatMul/MatMul-op\d$", row.full_name)]
    assert len(tails) >= 3 and all(len(name) > 80 for name in tails)  # the net gives what the test needs
    text = _cli("profile", str(nested_profile.path), "--top", str(len(ops)), columns=80)
    types = _table(text, "op type")
    assert "SparseSoftmaxCrossEntropyWithLogits " in "\n".join(types)
    assert {line.split()[0] for line in types[1:]} == {row.op_type for row in nested_profile.op_types()}
    table = _table(text, "op (full scope name)")
    assert all(len(line) <= 80 for line in table), table
    shown = [line.split()[0] for line in table[1:]]
    assert len(shown) == len(ops) and len(set(shown)) == len(ops), shown
    for name in tails:  # each keeps its head and its distinguishing tail
        assert any(s.startswith("Gradients/Default") and s.endswith(name[-len("MatMul-op0") :]) for s in shown)


def test_repr_fits_100_columns_and_html_keeps_every_name_whole(nested_profile):
    table = _table(repr(nested_profile), "op (full scope name)")
    assert all(len(line) <= 100 for line in table) and any(ELLIPSIS in line for line in table)
    html = nested_profile._repr_html_()
    for row in nested_profile.ops()[: nested_profile.top]:
        assert row.full_name.replace("/", "/<wbr>") in html


def test_the_data_dump_and_rdr_text_tables_keep_the_tail_of_long_kernel_names():
    from types import SimpleNamespace as Row

    from msdebug.views.datadump import text_exec
    from msdebug.views.explorer import text_memory

    names = [LONG[:-1] + str(digit) for digit in range(4)]
    view = Row(nonfinite_only=False, where="rank 0", matched=4, total=4, rows=[
        Row(index=i, name=name, op_type="MatMul", inputs_finite=True, outputs=[], code="") for i, name in enumerate(names)
    ])  # fmt: skip
    memory = Row(file="memory.txt", totals=(1, 2, 3), total=4, rows=[
        Row(name=name, inputs=10, workspaces=0, outputs=20, total=30, count=(1, 0, 1)) for name in names
    ])  # fmt: skip
    for text, tail in ((text_exec(view), " (MatMul)"), (text_memory(memory), "")):
        lines = [line for line in text.splitlines() if "MatMul-op" in line]
        assert len(lines) == 4 and all(len(line) <= 100 for line in lines), text
        assert all(f"MatMul-op{digit}{tail}" in line for digit, line in enumerate(lines)), text
