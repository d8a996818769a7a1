"""AMD Quark's ExtendedQuantizeLinear (domain com.amd.quark), as its library's CPU kernel computes it.

Integer storage: round(x / scale) half to even (``nearbyint``) plus the zero point, saturated to the storage
range, as ONNX's QuantizeLinear. bfloat16 storage: x / scale + zero point in float32, rounded to bfloat16 to
nearest even (no saturation: bfloat16 holds float32's range), any NaN written as onnxruntime's one bfloat16 NaN.
float16 storage: x cast to float16 after clipping to its largest magnitude, a NaN made quiet, the scale and zero
point unread (the CPU library's build casts: ``_quark_layout``).
Into integer storage, an x / scale that is not finite or not below 2^63 in magnitude is refused: the library casts
it to int64, which C++ leaves undefined.

Not ``quant.quantize``, the project's one quantize formula: that divides exactly (float64), as the definition does,
while the library divides in float32 and so is one step off it on near ties (proposal/spec/semantics.md
#quantize-precision allows a runtime that); run reproduces the library's bytes. The rounding is quant's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Refused
from onnx_qtypes.reference_ops.producer_ops._quark_layout import (BFLOAT16, BFLOAT16_NAN_BITS, FLOAT16, QuarkOp,
                                                                  float16_cast, operands, parameters)
from onnx_qtypes.reference_ops.quant import round_half_to_even

FLOAT16_MAX = float(np.finfo(np.float16).max)


class ExtendedQuantizeLinear(QuarkOp):
    def _run(self, *inputs: Any, axis: Any = None) -> tuple:
        x, y_scale, y_zero_point = operands("ExtendedQuantizeLinear", inputs, 3)
        x = np.asarray(x)
        if x.dtype != np.float32:
            raise Refused(f"input of {x.dtype}: the library quantizes float32")
        scale, zero_point, storage = parameters(x, y_scale, y_zero_point, axis)
        if storage == FLOAT16:  # the CPU library's Cast: clipped to float16's range, scale and zero point unread
            return (float16_cast(np.clip(x, -FLOAT16_MAX, FLOAT16_MAX)),)
        with np.errstate(all="ignore"):
            scaled = x / scale  # float32, as the kernel divides
        if storage == BFLOAT16:
            stored = (scaled + zero_point.astype(np.float32)).astype(BFLOAT16)
            return (np.where(np.isnan(stored), np.uint16(BFLOAT16_NAN_BITS).view(BFLOAT16), stored),)
        steps = round_half_to_even(scaled)  # (a float32 under 2^63 is at most 2^63 - 2^39: adding a 32-bit zero
        if not (np.abs(steps) < 2.0**63).all():  # point cannot overflow int64; NaN fails the test too)
            raise Refused("x / scale is infinite, NaN or beyond 2^63 into integer storage: the library casts it to "
                          "int64, which C++ leaves undefined")
        info = np.iinfo(storage)
        values = steps.astype(np.int64) + zero_point.astype(np.int64)
        return (np.clip(values, info.min, info.max).astype(storage),)

