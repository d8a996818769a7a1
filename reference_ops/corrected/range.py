"""Range: onnx.reference's, after checking the number of elements, max(ceil((limit - start) / delta), 0)
(_budget); a delta of 0 is refused (ONNX's count divides by it)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected import _budget
from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused


class Range(Corrected):
    def _run(self, start: Any, limit: Any, delta: Any, **attributes: Any) -> tuple:
        s, l, d = (np.asarray(v).reshape(-1)[0].item() if np.size(v) else None for v in (start, limit, delta))
        if s is None or l is None or d is None:
            raise Refused("Range takes scalar start, limit and delta")
        if d == 0 or not all(math.isfinite(float(v)) for v in (s, l, d)):
            raise Refused(f"Range with start {s}, limit {l}, delta {d}: the number of elements is not defined")
        _budget.require_fits("Range", [max(math.ceil((l - s) / d), 0)], np.asarray(start).dtype)
        return self.stock_run(start, limit, delta, **attributes)
