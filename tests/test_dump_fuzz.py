"""The data-dump readers on arbitrary input: the dump tree, ``mapping.csv``, ``.npy`` headers and
the execution-order files give their result or one :class:`MsDebugError` line, never anything
else; the ``msdebug`` command then exits 0, 1 (``--nan`` found one) or 2 with one line, never a
traceback. The matcher gives the same answer as its plain quadratic definition."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from msdebug.dumps import datadump
from msdebug.dumps.datadump import DumpOp, TensorFile, open_tensor, read_data_dump
from msdebug.dumps.explorer import open_dump
from msdebug.dumps.nan import scan_dump
from msdebug.errors import MsDebugError

ROOT = Path(__file__).resolve().parent.parent
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --------------------------------------------------------------------------- the matcher's definition


def reference_match(order: list[str] | None, tensors: list[TensorFile]):
    """The matcher as its docstring defines it, without any index: each pass, each file (by
    timestamp) goes to the first op of its key, in execution order, that lacks its slot."""
    if order is None:
        named = dict.fromkeys((t.flat_name, t.op_type) for t in tensors)
        ops = [DumpOp(i, name, op_type) for i, (name, op_type) in enumerate(named)]
    else:
        ops = [DumpOp(i, name, datadump._op_type(name)) for i, name in enumerate(order)]
    keys = (
        lambda op_type, flat: (op_type, flat),
        lambda op_type, flat: ("", flat),
        lambda op_type, flat: (op_type, re.sub(r"-op\d+$", "", flat)),
    )
    left = tensors
    for key in keys:
        still = []
        for t in left:
            for op in ops:
                slots = op.inputs if t.io == "input" else op.outputs
                if key(op.op_type, op.name.replace("/", "_")) == key(t.op_type, t.flat_name) and all(
                    have.slot != t.slot for have in slots
                ):
                    slots.append(t)
                    break
            else:
                still.append(t)
        left = still
    for op in ops:
        op.inputs.sort(key=lambda t: t.slot)
        op.outputs.sort(key=lambda t: t.slot)
    return ops, left


# Names that collide on purpose: "/" and "_" flatten alike, -opN counters differ, types differ.
SCOPES = ["Default", "Default/net", "Default_net", "Grad"]
LEAVES = ["Mul-op1", "Mul-op2", "Mul-op7", "Add-op1", "Mul", "MatMul-op3"]
op_name = st.builds(lambda s, leaf: f"{s}/{leaf}", st.sampled_from(SCOPES), st.sampled_from(LEAVES))


@st.composite
def match_case(draw):
    order = draw(st.none() | st.lists(op_name, max_size=12))
    count = draw(st.integers(0, 25))
    tensors = []
    for i in range(count):
        name = draw(op_name)
        op_type = draw(st.sampled_from(["Mul", "Add", "MatMul", datadump._op_type(name)]))
        io_ = draw(st.sampled_from(["input", "output"]))
        slot = draw(st.integers(0, 2))
        tensors.append(TensorFile(Path(f"{i}.npy"), op_type, name.replace("/", "_"), i, io_, slot, "Float32", 4))
    return order, tensors


def _shape(result):
    ops, unmatched = result
    return [(op.index, op.name, op.op_type, op.inputs, op.outputs) for op in ops], unmatched


@settings(max_examples=300, deadline=None)
@given(match_case())
@example((["Default/Mul-op1", "Default/Mul-op2"], []))
def test_matching_agrees_with_its_quadratic_definition(case):
    order, tensors = case
    assert _shape(datadump._match(order, list(tensors))) == _shape(reference_match(order, list(tensors)))
