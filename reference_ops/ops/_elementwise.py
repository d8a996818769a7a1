"""Binary element-wise kernels: terms of the zero-point offsets, broadcast."""

from __future__ import annotations

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext
from onnx_qtypes.reference_ops.ops._requant import offsets, output, scales


def operand_scales(ctx: KernelContext) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...]]:
    """(s_a, s_b, s_y, output shape) of a broadcasting binary node, each broadcastable to the output."""
    a_t, b_t, y_t = ctx.input_type(0), ctx.input_type(1), ctx.output_type(0)
    a_shape, b_shape = ctx.shape(0), ctx.shape(1)
    shape = tuple(np.broadcast_shapes(a_shape, b_shape))
    return scales(a_t, a_shape), scales(b_t, b_shape), scales(y_t, shape), shape


def linear_plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    """Add / Sub: one multiplier per operand, s / s_y."""
    s_a, s_b, s_y, _ = operand_scales(ctx)
    return {"a": np.asarray(s_a / s_y), "b": np.asarray(s_b / s_y)}


def linear_run(ctx: KernelContext, sign: int) -> tuple:
    """zp_y + round((a - zp_a) s_a / s_y + sign (b - zp_b) s_b / s_y); the sign goes on the integer term."""
    multipliers = linear_plan(ctx)
    (a, a_t), (b, b_t) = ctx.typed_input(0), ctx.typed_input(1)
    shape = np.broadcast_shapes(a.shape, b.shape)
    terms = [(offsets(a, a_t), multipliers["a"]), (sign * offsets(b, b_t), multipliers["b"])]
    return (output(terms, ctx.output_type(0), shape),)
