"""LeakyRelu: two fixed-point multipliers, s_x / s_y for x >= 0 and |alpha| s_x / s_y below;
a negative alpha negates the integer term."""

from __future__ import annotations

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext
from onnx_qtypes.reference_ops.ops._requant import offsets, output, scales


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    shape = ctx.shape(0)
    ratio = np.asarray(scales(ctx.input_type(0), shape) / scales(ctx.output_type(0), shape))
    return {"positive": ratio, "negative": abs(float(ctx.attr("alpha", 0.01))) * ratio}


def run(ctx: KernelContext) -> tuple:
    multipliers = plan(ctx)
    q, source = ctx.typed_input(0)
    d = offsets(q, source)
    negative = d < 0
    sign = -1 if float(ctx.attr("alpha", 0.01)) < 0 else 1
    values = np.where(negative, sign * d, d)
    real = np.where(negative, multipliers["negative"], multipliers["positive"])
    return (output([(values, real)], ctx.output_type(0), q.shape),)
