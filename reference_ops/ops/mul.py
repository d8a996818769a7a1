"""Mul: y = zp_y + round((a - zp_a)(b - zp_b) * s_a * s_b / s_y), exact integer product, broadcast."""

from __future__ import annotations

import numpy as np

from onnx_qtypes.reference_ops.ops._elementwise import operand_scales
from onnx_qtypes.reference_ops.ops._kernel import KernelContext
from onnx_qtypes.reference_ops.ops._matmul import max_abs
from onnx_qtypes.reference_ops.ops._requant import offsets, output


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    s_a, s_b, s_y, _ = operand_scales(ctx)
    return {"product": np.asarray(s_a * s_b / s_y)}


def run(ctx: KernelContext) -> tuple:
    multiplier = plan(ctx)["product"]
    (a, a_t), (b, b_t) = ctx.typed_input(0), ctx.typed_input(1)
    da, db = offsets(a, a_t), offsets(b, b_t)
    if max_abs(da) * max_abs(db) >= 1 << 62:  # int32 storage: leave int64 for Python integers
        da, db = da.astype(object), db.astype(object)
    product = da * db
    return (output([(product, multiplier)], ctx.output_type(0), product.shape),)
