"""Fixed-point requantization: integer multipliers, shifts and rounding shifts.

A real multiplier ``r > 0`` is represented as ``multiplier * 2**-shift`` with
``multiplier`` in ``[2**30, 2**31)`` (31 significant bits, a Q0.31 mantissa in
[0.5, 1)) and ``shift`` a right shift, so ``x * r`` becomes one integer
product and one rounding right shift. Conventions elsewhere:

- TFLite ``QuantizeMultiplier`` returns the same multiplier with a *left*
  shift exponent: ``tflite_shift = 31 - shift`` (``to_tflite``).
- TOSA ``RESCALE`` uses this right-shift convention directly, restricted to
  ``2 <= shift <= 62`` (``to_tosa``).

Rounding of the final shift (``rounding=``):

- ``"half_even"`` (default, used by the integer kernels): round to nearest,
  ties to even, the same tie rule as the definition's quantize. The only
  difference from the definition is then the 31-bit approximation of ``r``.
- ``"half_up"``: ``(x + 2**(shift-1)) >> shift``, ties toward +inf; TFLite's
  single-rounding path and TOSA ``double_round=false``.
- ``"gemmlowp"``: TFLite's default double rounding
  (SaturatingRoundingDoublingHighMul, ties toward +inf at 2**31, then
  RoundingDivideByPOT, ties away from zero); single terms only.

Everything here is exact integer arithmetic: int64 when the operands are
small enough, Python integers otherwise.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from onnx_qtypes.proto.errors import QTypesError

__all__ = [
    "MULTIPLIER_BITS",
    "ROUNDINGS",
    "MultiplierError",
    "multiply_by_quantized_multiplier",
    "quantize_multiplier",
    "quantize_multipliers",
    "requantize",
    "rescale",
    "rounding_divide",
    "rounding_shift_right",
    "to_tflite",
    "to_tosa",
]

MULTIPLIER_BITS = 31
MAX_SHIFT = 62  # TOSA's limit; also keeps every int64 shift well defined
ROUNDINGS = ("half_even", "half_up", "gemmlowp")
_INT64_SAFE = 1 << 62


class MultiplierError(QTypesError, ValueError):
    """A real multiplier or shift that has no fixed-point form (negative, infinite, NaN, out of a format's range).
    A ValueError too, as it always was."""


def quantize_multiplier(real: float, bits: int = MULTIPLIER_BITS) -> tuple[int, int]:
    """(multiplier, shift) with ``real ~= multiplier * 2**-shift``.

    ``multiplier`` lies in ``[2**(bits-1), 2**bits)`` (nearest, ties to even);
    ``real == 0`` gives (0, 0). A shift above 62 is brought down to 62 by
    rounding the multiplier, which loses significant bits only for reals
    below about 2**-31. Raises ValueError for negative or non-finite reals.
    """
    multipliers, shifts = quantize_multipliers(np.asarray([real], dtype=np.float64), bits)
    return int(multipliers[0]), int(shifts[0])


def quantize_multipliers(reals: np.ndarray, bits: int = MULTIPLIER_BITS) -> tuple[np.ndarray, np.ndarray]:
    """Element-wise ``quantize_multiplier``: (int64 multipliers, int64 shifts)."""
    with np.errstate(over="ignore"):  # a real beyond float64 is infinite: refused below
        reals = np.asarray(reals, dtype=np.float64)
    if not np.all(np.isfinite(reals)) or np.any(reals < 0):
        bad = reals[~np.isfinite(reals) | (reals < 0)].reshape(-1)[0]
        raise MultiplierError(f"a fixed-point multiplier must be finite and >= 0, got {float(bad)!r}")
    mantissa, exponent = np.frexp(reals)  # reals = mantissa * 2**exponent, mantissa in [0.5, 1)
    multiplier = np.rint(np.ldexp(mantissa, bits)).astype(np.int64)  # exact scaling, then ties to even
    carry = multiplier == (1 << bits)
    multiplier = np.where(carry, multiplier >> 1, multiplier)
    exponent = exponent + carry
    shift = (bits - exponent).astype(np.int64)
    excess = np.maximum(shift - MAX_SHIFT, 0)
    if np.any(excess):
        multiplier = rounding_shift_right(multiplier, np.minimum(excess, 63))
        shift = shift - excess
    zero = reals == 0
    return np.where(zero, 0, multiplier).astype(np.int64), np.where(zero, 0, shift).astype(np.int64)


def to_tflite(multiplier: int, shift: int) -> tuple[int, int]:
    """TFLite's (quantized_multiplier, shift): the exponent is a left shift, ``31 - shift``."""
    return multiplier, MULTIPLIER_BITS - shift


def to_tosa(multiplier: int, shift: int) -> tuple[int, int]:
    """TOSA RESCALE's (multiplier, shift) for ``scale32``; raises ValueError outside 2 <= shift <= 62."""
    if not 2 <= shift <= MAX_SHIFT:
        raise MultiplierError(f"TOSA RESCALE needs 2 <= shift <= 62, got {shift}")
    return multiplier, shift


def _max_abs(x: np.ndarray) -> int:
    x = np.asarray(x)
    return max(abs(int(x.min())), abs(int(x.max()))) if x.size else 0


def _exact(values: np.ndarray) -> np.ndarray:
    """int64 values as Python integers, for arithmetic that may leave int64."""
    return np.asarray(values).astype(object)


def rounding_shift_right(x: np.ndarray, shift: np.ndarray | int, rounding: str = "half_even") -> np.ndarray:
    """``x * 2**-shift`` rounded to an integer (``shift <= 0`` shifts left exactly).

    ``rounding`` is "half_even", "half_up" or "half_away" (gemmlowp's
    RoundingDivideByPOT). Works on int64 or Python-int (object) arrays.
    """
    if rounding not in ("half_even", "half_up", "half_away"):
        raise ValueError(f"unknown rounding {rounding!r}; use half_even, half_up or half_away")
    x = np.asarray(x)
    if x.dtype != object:
        x = x.astype(np.int64, copy=False)
    shift = np.asarray(shift, dtype=np.int64)
    if shift.size and shift.min() > 0:
        return _round_right(x, shift if x.dtype != object else shift.astype(object), rounding)
    right = np.maximum(shift, 0)
    left = np.maximum(-shift, 0)
    if x.dtype != object and left.size and (_max_abs(x) << int(left.max())) >= _INT64_SAFE:
        x = _exact(x)  # a left shift beyond int64 (a multiplier above 2**31): Python integers, exact
    if x.dtype == object:
        right, left = right.astype(object), left.astype(object)
    rounded = _round_right(x, np.maximum(right, 1), rounding)
    return np.where(left > 0, x << left, np.where(right > 0, rounded, x))


def _round_right(x: np.ndarray, shift: np.ndarray, rounding: str) -> np.ndarray:
    """Rounding right shift by ``shift >= 1``: floor((x + bias) / 2**shift) with a tie-dependent bias."""
    half = _pow2(shift - 1) if x.dtype == object else np.left_shift(1, shift - 1)
    if rounding == "half_up":
        return (x + half) >> shift
    if rounding == "half_even":  # ties go up only from an odd floor
        return (x + (half - 1) + ((x >> shift) & 1)) >> shift
    return (x + half - (x < 0)) >> shift  # half_away: ties go up for x >= 0, down below


def _pow2(exponent: np.ndarray) -> np.ndarray:
    flat = [1 << int(e) for e in np.asarray(exponent).reshape(-1)]
    return np.asarray(flat, dtype=object).reshape(np.shape(exponent))


def multiply_by_quantized_multiplier(
    x: np.ndarray, multiplier: np.ndarray | int, shift: np.ndarray | int, rounding: str = "half_even"
) -> np.ndarray:
    """``round(x * multiplier * 2**-shift)`` for integer ``x``, in the given rounding.

    "gemmlowp" reproduces TFLite's MultiplyByQuantizedMultiplier on int32
    inputs (double rounding); "half_even" / "half_up" round once.
    """
    x = np.asarray(x)
    multiplier = np.asarray(multiplier, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    if rounding == "gemmlowp":
        return _gemmlowp(x.astype(np.int64), multiplier, shift)
    return requantize([(x, multiplier, shift)], 0, None, None, rounding)


def _gemmlowp(x: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    tflite_shift = MULTIPLIER_BITS - shift
    left = np.maximum(tflite_shift, 0)
    right = np.maximum(-tflite_shift, 0)
    if np.any(right > 31):
        raise MultiplierError("gemmlowp rounding supports right shifts up to 31 (TFLite shift >= -31)")
    a = _exact(x) * _pow2(left)
    product = a * _exact(multiplier)
    # SaturatingRoundingDoublingHighMul: add a nudge, then divide by 2**31 truncating toward zero.
    nudge = np.where(product >= 0, 1 << 30, 1 - (1 << 30)).astype(object)
    total = product + nudge
    high = np.where(total >= 0, total >> 31, -((-total) >> 31))
    return rounding_shift_right(high, right, "half_away").astype(np.int64)


def requantize(
    terms: Sequence[tuple[np.ndarray, np.ndarray | int, np.ndarray | int]],
    zero_point: np.ndarray | int,
    lo: int | None,
    hi: int | None,
    rounding: str = "half_even",
) -> np.ndarray:
    """``clamp(zero_point + round(sum_i x_i * multiplier_i * 2**-shift_i), lo, hi)`` as int64.

    The terms are aligned to the largest shift and summed exactly before the
    single rounding shift, so the result rounds the exact fixed-point sum.
    """
    if rounding == "gemmlowp":
        if len(terms) != 1:
            raise ValueError("gemmlowp rounding applies to a single term")
        x, m, s = terms[0]
        out = _gemmlowp(np.asarray(x).astype(np.int64), np.asarray(m, np.int64), np.asarray(s, np.int64))
    else:
        arrays = [(np.asarray(x), np.asarray(m, np.int64), np.asarray(s, np.int64)) for x, m, s in terms]
        common = functools.reduce(np.maximum, [s for _, _, s in arrays])
        aligns = [common - s for _, _, s in arrays]  # >= 0: each term moves to the common shift
        bound = sum(_max_abs(x) * _max_abs(m) << _max_abs(a) for (x, m, _), a in zip(arrays, aligns))
        if bound < _INT64_SAFE and all(x.dtype != object for x, _, _ in arrays):
            total = sum(_aligned(x.astype(np.int64, copy=False) * m, a) for (x, m, _), a in zip(arrays, aligns))
        else:  # beyond int64: Python integers, still exact
            total = sum(_exact(x) * _exact(m) * _pow2(a) for (x, m, _), a in zip(arrays, aligns))
        out = rounding_shift_right(np.asarray(total), common, rounding)
    out = out + (_exact(np.asarray(zero_point, np.int64)) if out.dtype == object else np.asarray(zero_point, np.int64))
    if lo is not None or hi is not None:
        out = np.clip(out, lo, hi)
    return np.asarray(out).astype(np.int64)


def _aligned(product: np.ndarray, align: np.ndarray) -> np.ndarray:
    return product if not np.any(align) else product << align


def rescale(
    terms: Sequence[tuple[np.ndarray, np.ndarray | float]],
    zero_point: np.ndarray | int,
    lo: int | None,
    hi: int | None,
    rounding: str = "half_even",
) -> np.ndarray:
    """``requantize`` with real multipliers (>= 0), converted by ``quantize_multipliers``."""
    fixed = []
    for x, real in terms:
        multiplier, shift = _cached_multipliers(np.asarray(real, dtype=np.float64))
        fixed.append((x, multiplier, shift))
    return requantize(fixed, zero_point, lo, hi, rounding)


def _cached_multipliers(reals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if reals.size <= 1:
        return quantize_multipliers(reals)
    unique, inverse = np.unique(reals, return_inverse=True)
    multipliers, shifts = quantize_multipliers(unique)
    return multipliers[inverse].reshape(reals.shape), shifts[inverse].reshape(reals.shape)


def exact_multiplier(multiplier: int, shift: int) -> float:
    """The real value ``multiplier * 2**-shift`` (exact in float64 for 31-bit multipliers)."""
    return math.ldexp(multiplier, -shift)


def rounding_divide(
    numerator: np.ndarray, denominator: np.ndarray, shift: np.ndarray | int = 0, rounding: str = "half_even"
) -> np.ndarray:
    """``round(numerator / (denominator * 2**shift))`` for integers, ``denominator > 0``.

    ``shift`` may be an array (broadcast); "half_even" or "half_up" ties;
    exact (Python integers when int64 would overflow).
    """
    numerator = np.asarray(numerator)
    denominator = np.asarray(denominator)
    shift = np.asarray(shift, dtype=np.int64)
    left, right = np.maximum(-shift, 0), np.maximum(shift, 0)
    wide = (_max_abs(numerator) << _max_abs(left)) >= _INT64_SAFE or (_max_abs(denominator) << (_max_abs(right) + 1)) >= _INT64_SAFE
    if wide or numerator.dtype == object or denominator.dtype == object:
        numerator = _exact(numerator) * _pow2(np.broadcast_to(left, np.broadcast_shapes(left.shape, numerator.shape)))
        denominator = _exact(denominator) * _pow2(np.broadcast_to(right, np.broadcast_shapes(right.shape, denominator.shape)))
    else:
        numerator = np.left_shift(numerator.astype(np.int64), left)
        denominator = np.left_shift(denominator.astype(np.int64), right)
    quotient = numerator // denominator
    twice = 2 * (numerator - quotient * denominator)
    if rounding == "half_even":
        up = (twice > denominator) | ((twice == denominator) & ((quotient & 1) == 1))
    elif rounding == "half_up":
        up = twice >= denominator
    else:
        raise ValueError(f"unknown rounding {rounding!r}; use half_even or half_up")
    return np.asarray(quotient + np.where(up, 1, 0)).astype(np.int64)
