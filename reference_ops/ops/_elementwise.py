"""Binary element-wise kernels: terms of the zero-point offsets, broadcast."""

from __future__ import annotations

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext
from onnx_qtypes.reference_ops.ops._requant import scales


def operand_scales(ctx: KernelContext) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...]]:
    """(s_a, s_b, s_y, output shape) of a broadcasting binary node, each broadcastable to the output."""
    a_t, b_t, y_t = ctx.input_type(0), ctx.input_type(1), ctx.output_type(0)
    a_shape, b_shape = ctx.shape(0), ctx.shape(1)
    shape = tuple(np.broadcast_shapes(a_shape, b_shape))
    return scales(a_t, a_shape), scales(b_t, b_shape), scales(y_t, shape), shape
