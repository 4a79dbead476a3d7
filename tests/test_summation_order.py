"""Every statistic msdebug prints is the same whatever order the values are added in.

numpy and MindSpore add in the order of the CPU's vector unit (AVX2 and AVX-512 differ), so a
statistic that follows that order prints other digits on another CPU. Here each one is computed
from the values as given, reversed and shuffled, and the printed text must not change: the
means and norms are exact sums; min, max, max abs, max rel and the share within the tolerance
are exact by nature. The cosine is the one documented as approximate: it is summed in the
tensors' own precision by BLAS, as fast as the comparison must be, so the orders may differ by
the rounding of n float32 additions (n * 2**-24 of the product of the norms).
"""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from msdebug.dumps.datadump import tensor_stats
from msdebug.dumps.diff import Tolerance, array_stats, compare_arrays
from msdebug.dumps.print import PrintedTensor
from msdebug.views.diff import _num
from msdebug.views.print import tensor_summary

# Values that cancel, values far apart in size, infinities and NaN: where an order shows.
VALUES = st.one_of(
    st.floats(width=32, allow_nan=True, allow_infinity=True),
    st.sampled_from([float(np.float32(v)) for v in (1e30, -1e30, 1.0, -1.0, 3e-38, 16777216.0, 0.1, 2.0**-20)]),
)
ARRAYS = hnp.arrays(np.float32, st.integers(1, 200), elements=VALUES)


def _orders(size: int, seed: int) -> list[np.ndarray]:
    return [np.arange(size), np.arange(size)[::-1], np.random.default_rng(seed).permutation(size)]


def _stats_text(stats: dict) -> str:  # as the report's "statistics:" lines print them
    return ", ".join(f"{key.lower()} {_num(value)}" for key, value in stats.items())


@given(ARRAYS, st.integers(0, 2**32 - 1))
def test_max_min_mean_and_norm_of_a_compared_tensor(values, seed):
    texts = {_stats_text(array_stats(values[order])) for order in _orders(values.size, seed)}
    assert len(texts) == 1, texts


@given(ARRAYS, st.integers(0, 2**32 - 1))
def test_the_statistics_of_a_dumped_tensor(values, seed):
    def text(order):  # the first non-finite index follows the order by definition: left out
        return re.sub(r" \(first .*? at .*?\)", "", tensor_stats(values[order]).summary())

    texts = {text(order) for order in _orders(values.size, seed)}
    assert len(texts) == 1, texts


@given(ARRAYS, st.integers(0, 2**32 - 1))
def test_the_summary_of_a_printed_tensor(values, seed):
    def text(order):
        return tensor_summary(PrintedTensor(shape=values.shape, dtype="Float32", values=values[order]))

    texts = {text(order) for order in _orders(values.size, seed)}
    assert len(texts) == 1, texts


@given(st.integers(1, 200).flatmap(lambda n: st.tuples(*(hnp.arrays(np.float32, n, elements=VALUES),) * 2)),
       st.integers(0, 2**32 - 1))  # fmt: skip
def test_the_metrics_of_two_tensors(pair, seed):
    a, b = pair
    tolerance = Tolerance(rtol=1e-4, atol=1e-6)
    metrics = [compare_arrays(a[order], b[order], tolerance) for order in _orders(a.size, seed)]
    texts = {f"max abs {_num(m.max_abs)}, max rel {_num(m.max_rel)}, within {m.within} of {m.count}" for m in metrics}
    assert len(texts) == 1, texts
    cosines = [m.cosine for m in metrics if m.cosine is not None]
    # None where a partial sum overflows float32, which may depend on the order near 3e38
    if len(cosines) > 1:
        assert max(cosines) - min(cosines) <= 4 * a.size * 2.0**-24, cosines
