"""AMD Quark's ExtendedQuantizeLinear (domain com.amd.quark), as its library's CPU kernel computes it.

Integer storage: round(x / scale) half to even (``nearbyint``) plus the zero point, saturated to the storage
range, as ONNX's QuantizeLinear. bfloat16 storage: x / scale + zero point in float32, rounded to bfloat16 to
nearest even (no saturation: bfloat16 holds float32's range). x / scale not finite into integer storage is refused:
the library casts it to an integer, which C++ leaves undefined.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Refused
from onnx_qtypes.reference_ops.producer_ops._quark_layout import BFLOAT16, QuarkOp, parameters


class ExtendedQuantizeLinear(QuarkOp):
    def _run(self, x: Any, y_scale: Any, y_zero_point: Any = None, axis: int | None = None) -> tuple:
        x = np.asarray(x)
        if x.dtype != np.float32:
            raise Refused(f"input of {x.dtype}: the library quantizes float32")
        scale, zero_point, storage = parameters(x, y_scale, y_zero_point, axis)
        with np.errstate(all="ignore"):
            scaled = x / scale  # float32, as the kernel divides
        if storage == BFLOAT16:
            return ((scaled + zero_point.astype(np.float32)).astype(BFLOAT16),)
        if not np.isfinite(scaled).all():
            raise Refused("x / scale is infinite or NaN into integer storage: the library casts it to an integer, "
                          "which C++ leaves undefined")
        info = np.iinfo(storage)
        values = np.rint(scaled).astype(np.int64) + zero_point.astype(np.int64)
        return (np.clip(values, info.min, info.max).astype(storage),)
