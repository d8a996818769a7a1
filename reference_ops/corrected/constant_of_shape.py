"""ConstantOfShape: onnx.reference's, after checking the size the data asks for (_budget)."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected import _budget
from onnx_qtypes.reference_ops.corrected._base import Corrected


class ConstantOfShape(Corrected):
    def _run(self, shape: Any, **attributes: Any) -> tuple:
        value = attributes.get("value")
        dtype = np.asarray(value).dtype if value is not None else np.float32
        _budget.require_fits("ConstantOfShape", np.asarray(shape).reshape(-1), dtype)
        return self.stock_run(shape, **attributes)
