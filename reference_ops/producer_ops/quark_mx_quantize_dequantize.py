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
float16 input is computed in float32, both ways cast as onnxruntime's Cast does (a NaN made quiet).
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Refused
from onnx_qtypes.reference_ops.producer_ops._quark_layout import (QuarkOp, along_axis, block_size_attribute,
                                                                  c_int_attribute, float32_exponents,
                                                                  integer_attribute, operands, per_block,
                                                                  text_attribute)
from onnx_qtypes.reference_ops.producer_ops._quark_rounding import ROUNDINGS, std_round

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


class MXQuantizeDequantize(QuarkOp):
    def _run(self, *inputs: Any, axis: Any = 1, block_size: Any = 32, element_dtype: Any = "int8",
             rounding_mode: Any = 0, scale_dtype: Any = "e8m0") -> tuple:
        (x,) = operands("MXQuantizeDequantize", inputs, 1)
        x = np.asarray(x)
        axis = integer_attribute("axis", axis)
        rounding_mode = integer_attribute("rounding_mode", rounding_mode)
        element, scale_name = text_attribute(element_dtype), text_attribute(scale_dtype)

        def blocks(rows: np.ndarray) -> np.ndarray:  # (more than one value: only then does the library look further)
            if element not in ELEMENT_TYPES:
                raise Refused(f"element_dtype {element!r}: the library knows {', '.join(ELEMENT_TYPES)}")
            if scale_name != "e8m0":
                raise Refused(f"scale_dtype {scale_name!r}: the library ignores it and computes e8m0 shared scales")
            return _quantize_dequantize(rows, block_size_attribute(block_size), element,
                                        c_int_attribute("rounding_mode", rounding_mode))

        return (along_axis(x, axis, blocks),)


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
    exponents = float32_exponents(blocks)
    finite = exponents != 0xFF
    shared = per_block(np.where(finite, exponents, 0), np.arange(0, length, block_size), np.maximum) - 127 - emax
    scale = np.ldexp(np.float32(1), shared).astype(np.float32)
    with np.errstate(all="ignore"):
        scaled = blocks / scale
        if kind is not None:  # a value rounding to zero is +0, as the library builds it from its magnitude
            values = np.clip(scaled, -largest, largest).astype(kind).astype(np.float32)
            values[values == 0] = 0
        else:
            step = np.float32(2.0**-INT8_FRACTION_BITS)
            # (a rounding_mode of no name: std::round, as the MX kernel's switch falls to it)
            rounded = ROUNDINGS.get(rounding_mode, std_round)(scaled.astype(np.float64) / step)
            values = (np.clip(rounded, INT8.min, INT8.max) * step).astype(np.float32)
        return np.where(finite, scale * values, blocks)
