"""Tile: onnx.reference's, after checking the size of the result (_budget)."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected import _budget
from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused


class Tile(Corrected):
    def _run(self, data: Any, repeats: Any, **attributes: Any) -> tuple:
        data, times = np.asarray(data), [int(r) for r in np.asarray(repeats).reshape(-1)]
        if len(times) != data.ndim or any(r < 0 for r in times):
            raise Refused(f"Tile: repeats {times} must be {data.ndim} values >= 0, one per input axis")
        _budget.require_fits("Tile", [d * r for d, r in zip(data.shape, times)], data.dtype)
        return self.stock_run(data, repeats, **attributes)
