"""Softmax, LogSoftmax and Hardmax before opset 13 work on the input coerced to 2-D at ``axis`` (default 1): rows
of shape[:axis] elements each hold shape[axis:] values, normalized together. onnx.reference implements only the
opset-13 meaning (along the one axis, default -1) and applies it at every opset, with the newest schema's default
axis (-1) when the node gives none."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused

FLATTENING_UNTIL = 13  # the opset at which these operators stopped flattening


class Coerced(Corrected):
    """One of the three, run on ``rows`` (2-D, the operator along axis 1) before opset 13; stock from 13 on."""

    def rows(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _run(self, x: Any, axis: Any = None, **_: Any) -> tuple:
        if self.opset >= FLATTENING_UNTIL:
            return self.stock_run(x, axis=axis)
        x = np.asarray(x)
        given = any(a.name == "axis" for a in self.onnx_node.attribute)  # else ``axis`` is opset 13's default
        k = int(axis) if given else 1
        rank, op = x.ndim, self.onnx_node.op_type
        lowest = -rank if self.opset >= 11 else 0  # negative axes came with opset 11
        if not lowest <= k < rank:
            raise Refused(f"{op}-{self.opset} axis {k} is outside [{lowest}, {rank - 1}] for an input of rank {rank}")
        if x.size == 0:
            return (x,)
        k %= rank
        y = self.rows(x.reshape(math.prod(x.shape[:k]), -1))
        return (y.reshape(x.shape).astype(x.dtype, copy=False),)
