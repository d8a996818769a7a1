"""AMD Quark's ExtendedDequantizeLinear (domain com.amd.quark), as its library's CPU kernel computes it:
(x - zero point) * scale in float32, the difference taken exactly for integer storage (int64) and in float32 for
bfloat16, whose NaN reads as float32's quiet NaN (onnxruntime's BFloat16::ToFloat); float16 storage is cast back,
the scale and zero point unread (the CPU library's build casts: ``_quark_layout``).

Not ``quant.dequantize``, the project's one dequantize formula: the library rounds the difference to float32 before it
multiplies, which differs from the exact product for int32 / uint32 differences beyond 2^24; run reproduces the
library's bytes."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Refused
from onnx_qtypes.reference_ops.producer_ops._quark_layout import (BFLOAT16, FLOAT16, QuarkOp, float16_widen, operands,
                                                                  parameters)


class ExtendedDequantizeLinear(QuarkOp):
    def _run(self, *inputs: Any, axis: Any = None) -> tuple:
        x, x_scale, x_zero_point = operands("ExtendedDequantizeLinear", inputs, 3)
        x = np.asarray(x)
        scale, zero_point, storage = parameters(x, x_scale, x_zero_point, axis)
        if x.dtype != storage:
            raise Refused(f"input of {x.dtype} with a zero point of {storage}")
        if storage == FLOAT16:  # the CPU library's Cast back, scale and zero point unread
            return (float16_widen(x),)
        if storage == BFLOAT16:
            wide = x.astype(np.float32)
            difference = np.where(np.isnan(wide), np.float32(np.nan), wide) - zero_point.astype(np.float32)
        else:
            difference = (x.astype(np.int64) - zero_point.astype(np.int64)).astype(np.float32)
        with np.errstate(all="ignore"):
            return ((difference * scale).astype(np.float32),)
