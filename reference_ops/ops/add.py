"""Add: y = zp_y + round((a - zp_a) * s_a / s_y + (b - zp_b) * s_b / s_y), with broadcasting.

Any granularity (parameters are broadcast per element).
"""

from __future__ import annotations

import numpy as np

from onnx_qtypes.reference_ops.ops._elementwise import operand_scales
from onnx_qtypes.reference_ops.ops._kernel import KernelContext
from onnx_qtypes.reference_ops.ops._requant import offsets, output


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    s_a, s_b, s_y, _ = operand_scales(ctx)
    return {"a": np.asarray(s_a / s_y), "b": np.asarray(s_b / s_y)}


def run(ctx: KernelContext) -> tuple:
    multipliers = plan(ctx)
    (a, a_t), (b, b_t) = ctx.typed_input(0), ctx.typed_input(1)
    shape = np.broadcast_shapes(a.shape, b.shape)
    return (output([(offsets(a, a_t), multipliers["a"]), (offsets(b, b_t), multipliers["b"])], ctx.output_type(0), shape),)
