"""reference_ops.fixed_point: multipliers, shifts and the three roundings,
checked against exact rational arithmetic and the published formulas of
gemmlowp (fixedpoint.h SaturatingRoundingDoublingHighMul, RoundingDivideByPOT),
TFLite (MultiplyByQuantizedMultiplier) and TOSA (RESCALE)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnx_qtypes.reference_ops import fixed_point as fp

SETTINGS = settings(max_examples=80, deadline=None)


def round_fraction(value: Fraction, rounding: str) -> int:
    floor = math.floor(value)
    rest = value - floor
    half = Fraction(1, 2)
    if rest > half:
        return floor + 1
    if rest < half:
        return floor
    return {"half_even": floor + (floor % 2), "half_up": floor + 1, "half_away": floor + (1 if value > 0 else 0)}[rounding]


@pytest.mark.parametrize(
    ("real", "expected"),
    [(0.5, (1 << 30, 31)), (1.0, (1 << 30, 30)), (0.75, (3 << 29, 31)), (0.25, (1 << 30, 32)), (3.0, (3 << 29, 29)),
     (0.0, (0, 0))],
)
def test_quantize_multiplier_hand_cases(real, expected):
    assert fp.quantize_multiplier(real) == expected


@SETTINGS
@given(st.floats(2.0**-30, 2.0**20, allow_nan=False))
def test_quantize_multiplier_is_the_nearest_31_bit_mantissa(real):
    multiplier, shift = fp.quantize_multiplier(real)
    assert (1 << 30) <= multiplier < (1 << 31)
    error = abs(Fraction(multiplier, 1) / Fraction(2) ** shift - Fraction(real))
    assert error <= Fraction(1, 2) / Fraction(2) ** shift  # half a unit of the last multiplier bit


def test_tiny_multipliers_stop_at_shift_62():
    multiplier, shift = fp.quantize_multiplier(2.0**-40)
    assert shift == 62 and multiplier == 1 << 22
    assert fp.quantize_multiplier(2.0**-100) == (0, 62)


def test_invalid_multipliers_are_refused():
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite and >= 0"):
            fp.quantize_multiplier(bad)


def test_tflite_and_tosa_conventions():
    multiplier, shift = fp.quantize_multiplier(0.0123)
    assert fp.to_tflite(multiplier, shift) == (multiplier, 31 - shift)
    assert fp.to_tosa(multiplier, shift) == (multiplier, shift)
    with pytest.raises(ValueError, match="2 <= shift <= 62"):
        fp.to_tosa(*fp.quantize_multiplier(2.0**30))  # shift 0: TOSA cannot express it


@SETTINGS
@given(st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=30), st.integers(0, 40),
       st.sampled_from(["half_even", "half_up", "half_away"]))
def test_rounding_shift_right_rounds_the_exact_quotient(values, shift, rounding):
    got = fp.rounding_shift_right(np.array(values, np.int64), shift, rounding).tolist()
    assert got == [round_fraction(Fraction(v, 2**shift), rounding) for v in values]


def test_rounding_shift_right_ties_by_mode():
    x = np.array([-6, -2, 2, 6])  # / 4 = -1.5, -0.5, 0.5, 1.5
    assert fp.rounding_shift_right(x, 2, "half_even").tolist() == [-2, 0, 0, 2]
    assert fp.rounding_shift_right(x, 2, "half_up").tolist() == [-1, 0, 1, 2]
    assert fp.rounding_shift_right(x, 2, "half_away").tolist() == [-2, -1, 1, 2]
    assert fp.rounding_shift_right(x, -3).tolist() == [-48, -16, 16, 48]  # negative shift: exact left shift


def gemmlowp_reference(x: int, multiplier: int, shift: int) -> int:
    """TFLite's double rounding, from gemmlowp's fixedpoint.h: SRDHM = floor((a*b + 2**30) / 2**31),
    then RoundingDivideByPOT with ties away from zero."""
    tflite_shift = 31 - shift
    a = x * 2 ** max(tflite_shift, 0)
    high = (a * multiplier + 2**30) // 2**31
    return round_fraction(Fraction(high, 2 ** max(-tflite_shift, 0)), "half_away")


@SETTINGS
@given(st.lists(st.integers(-(2**24), 2**24), min_size=1, max_size=30), st.floats(2.0**-20, 0.999))
def test_gemmlowp_mode_matches_the_double_rounding_formula(values, real):
    multiplier, shift = fp.quantize_multiplier(real)
    got = fp.multiply_by_quantized_multiplier(np.array(values), multiplier, shift, "gemmlowp").tolist()
    assert got == [gemmlowp_reference(v, multiplier, shift) for v in values]


def test_double_rounding_differs_from_single_rounding():
    multiplier, shift = fp.quantize_multiplier(0.25)
    # 1 * 0.25: gemmlowp rounds 0.5 up at 2**31, then 0.5 away from zero -> 1; single rounding -> 0
    assert fp.multiply_by_quantized_multiplier(np.array([1]), multiplier, shift, "gemmlowp").tolist() == [1]
    assert fp.multiply_by_quantized_multiplier(np.array([1]), multiplier, shift, "half_even").tolist() == [0]


@st.composite
def terms(draw):
    count = draw(st.integers(1, 3))
    size = draw(st.integers(1, 8))
    big = draw(st.booleans())
    bound = 2**45 if big else 2**20
    out = []
    for _ in range(count):
        xs = draw(st.lists(st.integers(-bound, bound), min_size=size, max_size=size))
        real = draw(st.floats(2.0**-24, 4.0))
        out.append((np.array(xs, np.int64), *fp.quantize_multiplier(real)))
    return out


@SETTINGS
@given(terms(), st.integers(-50, 50), st.sampled_from(["half_even", "half_up"]))
def test_requantize_rounds_the_exact_sum_once(term_list, zero_point, rounding):
    got = fp.requantize(term_list, zero_point, None, None, rounding).tolist()
    size = len(term_list[0][0])
    want = []
    for i in range(size):
        total = sum(Fraction(int(x[i]) * m, 2**s) for x, m, s in term_list)
        want.append(round_fraction(total, rounding) + zero_point)
    assert got == want


def test_requantize_clamps_to_the_storage_range():
    m, s = fp.quantize_multiplier(1.0)
    assert fp.requantize([(np.array([-500, 0, 500]), m, s)], 3, -128, 127).tolist() == [-128, 3, 127]


def test_rescale_takes_real_multipliers_per_element():
    x = np.array([[10, 10], [10, 10]])
    out = fp.rescale([(x, np.array([0.5, 0.25]))], 0, None, None)
    assert out.tolist() == [[5, 2], [5, 2]]  # 2.5 ties to even


def test_unknown_rounding_is_refused():
    with pytest.raises(ValueError, match="unknown rounding"):
        fp.rounding_shift_right(np.array([1]), 1, "stochastic")
    with pytest.raises(ValueError, match="single term"):
        fp.requantize([(np.array([1]), 1 << 30, 31)] * 2, 0, None, None, "gemmlowp")


@SETTINGS
@given(st.lists(st.tuples(st.integers(-(2**40), 2**40), st.integers(1, 10**6), st.integers(-20, 40)), min_size=1, max_size=20),
       st.sampled_from(["half_even", "half_up"]))
def test_rounding_divide_rounds_the_exact_quotient(rows, rounding):
    numerator, denominator, shift = (np.array(column, np.int64) for column in zip(*rows))
    got = fp.rounding_divide(numerator, denominator, shift, rounding).tolist()
    assert got == [round_fraction(Fraction(n, d) / Fraction(2) ** s, rounding) for n, d, s in rows]
