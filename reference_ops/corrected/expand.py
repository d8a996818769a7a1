"""Expand: onnx.reference's, after checking the size of the broadcast result (_budget)."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected import _budget
from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused


class Expand(Corrected):
    def _run(self, data: Any, shape: Any, **attributes: Any) -> tuple:
        data, dims = np.asarray(data), [int(d) for d in np.asarray(shape).reshape(-1)]
        try:
            out = np.broadcast_shapes(data.shape, tuple(max(d, 0) for d in dims))
        except ValueError:
            raise Refused(f"Expand: shape {dims} does not broadcast with the input's {list(data.shape)}") from None
        if any(d < 0 for d in dims):
            raise Refused(f"Expand: shape {dims} holds a negative size")
        _budget.require_fits("Expand", out, data.dtype)
        return self.stock_run(data, shape, **attributes)
