"""Shape with start / end (opset 15+): axes are counted from the back when negative and then clamped to
[0, rank], so an end below -rank gives an empty shape. onnx.reference clamps neither: end = -3 on a rank-2
input reads as end -1 and gives [2] where ONNX gives []."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Corrected


class Shape(Corrected):
    def _run(self, data: Any, start: int | None = None, end: int | None = None, **_: Any) -> tuple:
        dims = np.shape(data)
        rank = len(dims)
        if self.opset < 15:
            start, end = None, None

        def clamp(axis: int | None, default: int) -> int:
            if axis is None:
                return default
            axis = int(axis)
            return min(max(axis + rank if axis < 0 else axis, 0), rank)

        lo, hi = clamp(start, 0), clamp(end, rank)
        return (np.array(dims[lo:hi] if lo < hi else (), dtype=np.int64),)
