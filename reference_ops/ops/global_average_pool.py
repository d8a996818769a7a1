"""GlobalAveragePool: exact integer sum of (x - zp_x) over the spatial dims, then one
fixed-point multiply by s_x / (count * s_y). Per-tensor or per-channel types."""

from __future__ import annotations

import math

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext
from onnx_qtypes.reference_ops.ops._pooling import per_channel_only
from onnx_qtypes.reference_ops.ops._requant import offsets, output, scales


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    source, out = ctx.input_type(0), ctx.output_type(0)
    per_channel_only(source, out)
    shape = ctx.shape(0)
    channels = (1, shape[1]) + (1,) * (len(shape) - 2)
    return {"average": np.asarray(scales(source, channels) / (math.prod(shape[2:]) * scales(out, channels)))}


def run(ctx: KernelContext) -> tuple:
    multiplier = plan(ctx)["average"]
    q, source = ctx.typed_input(0)
    sums = offsets(q, source).sum(axis=tuple(range(2, q.ndim)), keepdims=True)
    return (output([(sums, multiplier)], ctx.output_type(0), sums.shape),)
