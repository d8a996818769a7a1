"""AveragePool: exact integer window sums of (x - zp_x), times s_x / s_y as a fixed-point
multiplier, divided exactly by the window's element count (with or without the
explicit padding, per count_include_pad) with one rounding, half to even."""

from __future__ import annotations

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext
from onnx_qtypes.reference_ops.ops._pooling import average, geometry, per_channel_only, window_counts, window_sums
from onnx_qtypes.reference_ops.ops._requant import offsets, scales


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    source, out = ctx.input_type(0), ctx.output_type(0)
    per_channel_only(source, out)
    shape = ctx.shape(0)
    counts = window_counts(geometry(ctx, shape), bool(int(ctx.attr("count_include_pad", 0))))
    channels = (1, shape[1]) + (1,) * (len(shape) - 2)
    return {"rescale": np.asarray(scales(source, channels) / scales(out, channels)), "count": counts}


def run(ctx: KernelContext) -> tuple:
    constants = plan(ctx)
    q, source = ctx.typed_input(0)
    sums = window_sums(offsets(q, source), geometry(ctx, q.shape))
    return (average(sums, constants["count"], constants["rescale"], ctx.output_type(0)),)
