"""The statistics ``%%mswatch`` computes on the host (``msdebug.backend.watch.packed_rows``),
against numpy tensor by tensor, on generated tensors: any count and size (empty ones too), NaN,
Inf, zeros, float32 and float64, a copy before the step for the change, ranges, and the buffer
cut into pieces anywhere (the sums, extremes and counts of the pieces added up), on threads or
not. Pure numpy: no MindSpore here."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from msdebug.backend import watch as backend
from msdebug.dumps.watch import STATS, Needs

_VALUES = st.one_of(
    st.floats(-1e6, 1e6, width=32),
    st.sampled_from([0.0, -0.0, np.nan, np.inf, -np.inf, 1e-30]),
)


@st.composite
def tensors(draw):
    count = draw(st.integers(1, 6))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    arrays = [np.array(draw(st.lists(_VALUES, max_size=40)), dtype=dtype) for _ in range(count)]
    befores = [np.array(draw(st.lists(st.floats(-1e3, 1e3, width=32), min_size=len(a), max_size=len(a))), dtype)
               for a in arrays]  # fmt: skip
    return arrays, befores


def reference(a, before, ranges):
    """One tensor's row as the backend's docstring defines it, in float64, value by value."""
    a64 = a.astype(np.float64)
    if a.size == 0:
        return np.full(len(STATS) + len(ranges) + 3, np.nan)
    finite = np.isfinite(a64)
    kept = a64[~np.isnan(a64)]
    row = [kept.max() if kept.size else np.nan, kept.min() if kept.size else np.nan, a64.mean(),
           np.abs(a64).mean(), np.sqrt((a64 * a64).sum()), (a64 == 0).mean(), float((~finite).sum())]  # fmt: skip
    row += [((a64 >= low) & (a64 <= high)).mean() for low, high in ranges]
    b64 = before.astype(np.float64)
    row += [np.abs(a64 - b64).mean(), np.abs(b64).mean(), (b64 == 0).mean()]
    return np.array(row)


@given(tensors(), st.integers(1, 50), st.booleans(), st.integers(0, 6))
def test_packed_rows_are_numpys_per_tensor_however_the_buffer_is_cut(monkeypatch_module, drawn, block, threads,
                                                                    copied):  # fmt: skip
    """``copied``: how many of the first tensors have a copy (the weights of a step laid before
    its gradients); the others' change is NaN."""
    arrays, befores = drawn
    copied = min(copied, len(arrays))
    ranges = ((-1.0, 1.0), (0.0, np.inf))
    needs = Needs(update=True, ranges=ranges)
    monkeypatch_module.setattr(backend, "_BLOCK", block)  # pieces of `block` values: cuts inside tensors
    monkeypatch_module.setattr(backend, "_THREADED", 1 if threads else 1 << 40)
    sizes = np.array([a.size for a in arrays])
    flat = np.concatenate(arrays)
    got = backend.packed_rows(flat, sizes, needs, np.concatenate(befores[:copied] or [np.zeros(0, flat.dtype)]))
    assert got.shape == (len(arrays), len(STATS) + len(ranges) + 3)
    for i, (row, a, before) in enumerate(zip(got, arrays, befores, strict=True)):
        with np.errstate(invalid="ignore"):  # Inf - Inf in the reference too
            expected = reference(a, before, ranges)
        if i >= copied:
            expected[-3:] = np.nan
        exact = [0, 1, 5, 6, 7, 8]  # extremes, the zero share, NaN/Inf, the shares in ranges: counted, not summed
        np.testing.assert_array_equal(row[exact], expected[exact])
        np.testing.assert_allclose(row, expected, rtol=2e-5, atol=1e-6, equal_nan=True)


def test_an_empty_tensor_has_a_row_of_nan_and_without_a_copy_the_change_is_nan():
    needs = Needs(update=True)
    rows = backend.packed_rows(np.array([1.0, 2.0, 3.0], np.float32), np.array([2, 0, 1]), needs)
    assert rows[0][:3].tolist() == [2.0, 1.0, 1.5] and np.isnan(rows[1]).all() and rows[2][2] == 3.0
    assert np.isnan(rows[:, len(STATS) :]).all()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch
