"""GlobalAveragePool: exact integer sum of (x - zp_x) over the spatial dims, times s_x / s_y
as a fixed-point multiplier, divided exactly by the element count (one rounding, half
to even). Per-tensor or per-channel types."""

from __future__ import annotations

import math

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext
from onnx_qtypes.reference_ops.ops._pooling import average, per_channel_only
from onnx_qtypes.reference_ops.ops._requant import offsets, scales


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    source, out = ctx.input_type(0), ctx.output_type(0)
    per_channel_only(source, out)
    shape = ctx.shape(0)
    channels = (1, shape[1]) + (1,) * (len(shape) - 2)
    return {"rescale": np.asarray(scales(source, channels) / scales(out, channels)),
            "count": np.asarray(math.prod(shape[2:]))}


def run(ctx: KernelContext) -> tuple:
    constants = plan(ctx)
    q, source = ctx.typed_input(0)
    sums = offsets(q, source).sum(axis=tuple(range(2, q.ndim)), keepdims=True)
    return (average(sums, constants["count"], constants["rescale"], ctx.output_type(0)),)
