"""The tolerance the tutorials' stored numbers are compared with (tests/stored_numbers.py):
loose where float32 kernels differ between CPUs, exact everywhere else."""

from __future__ import annotations

import nbformat
from hypothesis import given
from hypothesis import strategies as st
from stored_numbers import _tolerate, agree

# Cell 5 of tutorial 07 as stored on one CPU and as computed on another (AVX-512 against AVX2).
STORED = (
    "  output 0: differs, max abs 0.001357, max rel 0.001, cosine 1, 0% within rtol=0.0001, atol=1e-06\n"
    "    after, input 0: Float32 4×16 max 1.17584, min -1.35724, mean -0.0686847, norm 3.8783\n"
    "    Default/fc3-Dense/MatMul-op0: max rel 0.00100062\n"
    '<svg><polyline points="48,110 94.9,110 470,18.1"/></svg>'
)
OTHER_CPU = (
    "  output 0: differs, max abs 0.001357, max rel 0.001, cosine 1, 0% within rtol=0.0001, atol=1e-06\n"
    "    after, input 0: Float32 4×16 max 1.17584, min -1.35724, mean -0.0686847, norm 3.87829\n"
    "    Default/fc3-Dense/MatMul-op0: max rel 0.00100132\n"
    '<svg><polyline points="48,110 94.9,110 470,18"/></svg>'
)


def test_the_last_digits_of_another_cpu_agree():
    assert agree(STORED, OTHER_CPU)


def test_a_number_off_by_more_than_one_percent_does_not():
    assert not agree(STORED, OTHER_CPU.replace("norm 3.87829", "norm 3.93"))
    assert not agree(STORED, OTHER_CPU.replace("max rel 0.00100132", "max rel 0.00102"))


def test_integers_names_and_words_are_exact():
    assert not agree(STORED, OTHER_CPU.replace("4×16", "4×17"))  # a shape
    assert not agree(STORED, OTHER_CPU.replace("MatMul-op0", "MatMul-op1"))  # an op's number
    assert not agree(STORED, OTHER_CPU.replace("differs", "agrees"))
    assert not agree(STORED, OTHER_CPU.replace("0% within", "1% within"))
    assert not agree("max abs inf", "max abs 1e+38")
    assert not agree("cell [5], line 23", "cell [5], line 24")


def test_the_pixel_tolerance_holds_inside_pictures_only():
    assert agree('<svg x="18"/></svg>', '<svg x="18.4"/></svg>')
    assert not agree('<svg x="18"/></svg>', '<svg x="18.6"/></svg>')
    assert not agree('x 18.0 <svg x="1"/></svg>', 'x 18.4 <svg x="1"/></svg>')  # 2% outside the picture


def test_a_sign_is_part_of_the_number():
    assert not agree("mean -0.0686847", "mean 0.0686847")


def _decimal(value: float) -> str:
    text = f"{value:.6g}"
    return text if any(c in text for c in ".e") else f"{value:.1f}"  # 99225 is read as an integer


@given(st.floats(-1e6, 1e6, allow_nan=False).filter(lambda x: abs(x) > 1e-30), st.floats(-0.009, 0.009))
def test_any_decimal_number_within_one_percent_agrees_and_beyond_two_does_not(value, change):
    stored = f"norm {_decimal(value)}, rank 3"
    assert agree(stored, f"norm {_decimal(value * (1 + change))}, rank 3")
    assert not agree(stored, f"norm {_decimal(value * 1.02)}, rank 3")
    assert not agree(stored, f"norm {_decimal(value * (1 + change))}, rank 4")


def test_an_output_that_agrees_is_handed_to_nbval_as_stored():
    def same(text):
        return text

    stored = [nbformat.v4.new_output("stream", name="stdout", text=STORED)]
    stored += [nbformat.v4.new_output("execute_result", data={"text/plain": STORED, "text/html": "<b>1.5</b>"})]
    new = [nbformat.v4.new_output("stream", name="stdout", text=OTHER_CPU)]
    new += [nbformat.v4.new_output("execute_result", data={"text/plain": OTHER_CPU, "text/html": "<b>2.5</b>"})]
    handed = _tolerate(new, stored, same)
    assert handed[0].text == STORED
    assert handed[1].data["text/plain"] == STORED
    assert handed[1].data["text/html"] == "<b>2.5</b>"  # a real difference stays for nbval to report
