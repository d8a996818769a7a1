"""AMD Quark's MXQuantizeDequantize (domain com.amd.quark): an OCP microscaling (MX) quantize-dequantize whose
block scales are computed from the data at run time, as its library's CPU kernel computes it.

Blocks of ``block_size`` values run along ``axis`` (a rank-1 tensor: along its only axis; the last block is
padded with zeros, which do not change its scale). A block's shared scale is 2^(e - emax): e is the largest
unbiased exponent field of its finite float32 values (a subnormal or zero counts as -127), emax the element type's
largest exponent. Each value is divided by it and rounded into the element type:
- a float element type (fp8_e5m2, fp8_e4m3, fp6_e3m2, fp6_e2m3, fp4_e2m1): to nearest even, saturated to its
  largest magnitude;
- int8: a fixed point of 6 fractional bits, rounded as ``rounding_mode`` says (0: half away from zero, 1: half
  up, 2: half to even), saturated to [-128, 127].
It is then multiplied back. Infinities and NaN pass through; a tensor of one value passes through unchanged;
float16 input is computed in float32 and rounded back.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Refused
from onnx_qtypes.reference_ops.producer_ops._quark_layout import QuarkOp, integer_attribute

# element type -> (numpy type of its values, or None for int8's fixed point; emax; largest magnitude)
ELEMENT_TYPES: dict[str, tuple[Any, int, float]] = {
    "fp8_e5m2": (ml_dtypes.float8_e5m2, 15, 57344.0),
    "fp8_e4m3": (ml_dtypes.float8_e4m3fn, 8, 448.0),
    "fp6_e3m2": (ml_dtypes.float6_e3m2fn, 4, 28.0),
    "fp6_e2m3": (ml_dtypes.float6_e2m3fn, 2, 7.5),
    "fp4_e2m1": (ml_dtypes.float4_e2m1fn, 2, 6.0),
    "int8": (None, 0, 127.0),
}
INT8_FRACTION_BITS = 6
_ROUNDINGS = {
    0: lambda v: np.trunc(v + np.copysign(0.5, v)),  # half away from zero (std::round)
    1: lambda v: np.floor(v + 0.5),  # half up
    2: np.rint,  # half to even
}


class MXQuantizeDequantize(QuarkOp):
    def _run(self, x: Any, axis: int = 1, block_size: int = 32, element_dtype: Any = "int8",
             rounding_mode: int = 0, scale_dtype: Any = "e8m0") -> tuple:
        x = np.asarray(x)
        axis, block_size = integer_attribute("axis", axis), integer_attribute("block_size", block_size)
        rounding_mode = integer_attribute("rounding_mode", rounding_mode)
        element, scale_name = _text(element_dtype), _text(scale_dtype)
        if element not in ELEMENT_TYPES:
            raise Refused(f"element_dtype {element!r}: the library knows {', '.join(ELEMENT_TYPES)}")
        if scale_name != "e8m0":
            raise Refused(f"scale_dtype {scale_name!r}: the library computes e8m0 shared scales only")
        if x.dtype not in (np.float32, np.float16):
            raise Refused(f"input of {x.dtype}: the library computes float32 and float16")
        if block_size < 1:
            raise Refused(f"block_size {block_size}: a block holds at least one value")
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
    kind, emax, largest = ELEMENT_TYPES[element]
    blocks = np.ascontiguousarray(rows)
    length = blocks.shape[-1]
    exponents = ((blocks.view(np.uint32) >> 23) & 0xFF).astype(np.int32)
    finite = exponents != 0xFF
    if length == 0:
        return blocks
    starts = np.arange(0, length, block_size)
    shared = np.maximum.reduceat(np.where(finite, exponents, 0), starts, axis=-1) - 127 - emax
    widths = np.diff(np.append(starts, length))
    scale = np.repeat(np.ldexp(np.float32(1), shared).astype(np.float32), widths, axis=-1)
    with np.errstate(all="ignore"):
        scaled = blocks / scale
        if kind is not None:
            values = np.clip(scaled, -largest, largest).astype(kind).astype(np.float32)
        else:
            step = np.float32(2.0**-INT8_FRACTION_BITS)
            rounded = _ROUNDINGS.get(rounding_mode, _ROUNDINGS[0])(scaled.astype(np.float64) / step)
            values = (np.clip(rounded, -128, 127) * step).astype(np.float32)
        return np.where(finite, scale * values, blocks)
