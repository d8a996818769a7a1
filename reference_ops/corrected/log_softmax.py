"""LogSoftmax before opset 13: (x - max) - log(sum(exp(x - max))) over each row of the input coerced to 2-D at
``axis`` (``_coerced``); onnx.reference's from opset 13 on."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._coerced import Coerced


class LogSoftmax(Coerced):
    def rows(self, x: np.ndarray) -> np.ndarray:
        shifted = x - x.max(axis=1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))

    def stock_run(self, x: Any, axis: Any = None, **_: Any) -> tuple:
        return self.stock()._run(x)  # onnx.reference's LogSoftmax reads its axis from the node itself
