"""Softmax before opset 13: exp(x - max) / sum over each row of the input coerced to 2-D at ``axis``
(``_coerced``); onnx.reference's from opset 13 on."""

from __future__ import annotations

import numpy as np

from onnx_qtypes.reference_ops.corrected._coerced import Coerced


class Softmax(Coerced):
    def rows(self, x: np.ndarray) -> np.ndarray:
        y = np.exp(x - x.max(axis=1, keepdims=True))
        return y / y.sum(axis=1, keepdims=True)
