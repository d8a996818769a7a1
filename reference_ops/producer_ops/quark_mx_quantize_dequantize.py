"""AMD Quark's MXQuantizeDequantize (domain com.amd.quark): an OCP microscaling (MX) quantize-dequantize whose
block scales are computed from the data at run time, as its library's CPU kernel computes it.

Blocks of ``block_size`` values run along ``axis`` (a rank-1 tensor: along its only axis; the last block may be
short: the library pads it with zeros, which change no scale). A block's shared scale is 2^(e - emax): e is the largest
unbiased exponent field of its finite float32 values (a subnormal or zero counts as -127), emax the element type's
largest exponent. Each value is divided by it and rounded into the element type:
- a float element type (fp8_e5m2, fp8_e4m3, fp6_e3m2, fp6_e2m3, fp4_e2m1): to nearest even, saturated to its
  largest magnitude;
- int8: a fixed point of 6 fractional bits, rounded as ``rounding_mode`` says (0: half away from zero, 1: a
  negative tie upward, else half away from zero, 2: half to even), saturated to [-128, 127].
It is then multiplied back. Infinities and NaN pass through; a tensor of one value passes through unchanged;
float16 input is computed in float32 and rounded back.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Refused
from onnx_qtypes.reference_ops.producer_ops._quark_layout import QuarkOp, integer_attribute, operands

# the library's float element types; each one's largest magnitude and exponent (its emax) are ml_dtypes' figures
FLOAT_ELEMENTS: dict[str, Any] = {
    "fp8_e5m2": ml_dtypes.float8_e5m2,
    "fp8_e4m3": ml_dtypes.float8_e4m3fn,
    "fp6_e3m2": ml_dtypes.float6_e3m2fn,
    "fp6_e2m3": ml_dtypes.float6_e2m3fn,
    "fp4_e2m1": ml_dtypes.float4_e2m1fn,
}
ELEMENT_TYPES = (*FLOAT_ELEMENTS, "int8")  # int8: a fixed point whose largest value is under 2 (emax 0)
INT8_FRACTION_BITS = 6
INT8 = np.iinfo(np.int8)
BLOCK_SIZE_MAX = 2**31 - 1  # the library passes block_size on as a C int


def _std_round(v: np.ndarray) -> np.ndarray:
    """Half away from zero, as std::round (a zero keeps its sign)."""
    return np.trunc(v + np.copysign(0.5, v))


def _dpu_round(v: np.ndarray) -> np.ndarray:
    """A negative tie upward (std::ceil), every other value as std::round: the library's dpu_round."""
    return np.where((v < 0) & (v - np.floor(v) == 0.5), np.ceil(v), _std_round(v))


def _py3_round(v: np.ndarray) -> np.ndarray:
    """Half to even, written as the library's py3_round: from the floor, so -0.3 gives +0 and -0 stays -0."""
    floor = np.floor(v)
    fraction = v - floor
    up = (fraction > 0.5) | ((fraction == 0.5) & (np.fmod(floor, 2) != 0))
    return np.where(up, floor + 1, floor)


_ROUNDINGS = {0: _std_round, 1: _dpu_round, 2: _py3_round}  # rounding_mode; any other: std::round


class MXQuantizeDequantize(QuarkOp):
    def _run(self, *inputs: Any, axis: Any = 1, block_size: Any = 32, element_dtype: Any = "int8",
             rounding_mode: Any = 0, scale_dtype: Any = "e8m0") -> tuple:
        (x,) = operands("MXQuantizeDequantize", inputs, 1)
        x = np.asarray(x)
        axis, block_size = integer_attribute("axis", axis), integer_attribute("block_size", block_size)
        rounding_mode = integer_attribute("rounding_mode", rounding_mode)
        element, scale_name = _text(element_dtype), _text(scale_dtype)
        if element not in ELEMENT_TYPES:
            raise Refused(f"element_dtype {element!r}: the library knows {', '.join(ELEMENT_TYPES)}")
        if scale_name != "e8m0":
            raise Refused(f"scale_dtype {scale_name!r}: the library ignores it and computes e8m0 shared scales")
        if x.dtype not in (np.float32, np.float16):
            raise Refused(f"input of {x.dtype}: the library computes float32 and float16")
        if not 1 <= block_size <= BLOCK_SIZE_MAX:
            raise Refused(f"block_size {block_size}: the library takes 1 to 2^31 - 1 values per block (a C int)")
        if x.size == 1:
            return (x.copy(),)
        rank = x.ndim
        if rank > 1 and not -rank <= axis < rank:
            raise Refused(f"axis {axis} outside a tensor of rank {rank}")
        along = 0 if rank == 1 else axis % rank
        moved = np.swapaxes(x.astype(np.float32), along, -1)
        out = _quantize_dequantize(moved, block_size, element, rounding_mode)
        return (np.swapaxes(out, along, -1).astype(x.dtype),)


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _quantize_dequantize(rows: np.ndarray, block_size: int, element: str, rounding_mode: int) -> np.ndarray:
    """``rows`` (float32, blocks along the last axis, the last one of a row possibly short) quantized with each
    block's shared scale and dequantized. A short block is not padded: its zeros would not change the scale."""
    kind = FLOAT_ELEMENTS.get(element)
    largest = float(ml_dtypes.finfo(kind).max) if kind is not None else 0.0
    emax = int(np.frexp(largest)[1]) - 1 if kind is not None else 0  # (448 = 1.75 * 2^8: emax 8)
    blocks = np.ascontiguousarray(rows)
    length = blocks.shape[-1]
    if length == 0:
        return blocks
    exponents = ((blocks.view(np.uint32) >> 23) & 0xFF).astype(np.int32)
    finite = exponents != 0xFF
    starts = np.arange(0, length, block_size)
    shared = np.maximum.reduceat(np.where(finite, exponents, 0), starts, axis=-1) - 127 - emax
    widths = np.diff(np.append(starts, length))
    scale = np.repeat(np.ldexp(np.float32(1), shared).astype(np.float32), widths, axis=-1)
    with np.errstate(all="ignore"):
        scaled = blocks / scale
        if kind is not None:  # a value rounding to zero is +0, as the library builds it from its magnitude
            values = np.clip(scaled, -largest, largest).astype(kind).astype(np.float32)
            values[values == 0] = 0
        else:
            step = np.float32(2.0**-INT8_FRACTION_BITS)
            rounded = _ROUNDINGS.get(rounding_mode, _std_round)(scaled.astype(np.float64) / step)
            values = (np.clip(rounded, INT8.min, INT8.max) * step).astype(np.float32)
        return np.where(finite, scale * values, blocks)
