"""MaxPool: onnx.reference's MaxPool on the storage integers (max commutes with the
increasing map to real values), then requantized to the output type. Per-tensor
or per-channel types; the Indices output comes from the same run."""

from __future__ import annotations

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext
from onnx_qtypes.reference_ops.ops._pooling import per_channel_only
from onnx_qtypes.reference_ops.ops._requant import convert, scales
from onnx_qtypes.reference_ops.quant import broadcast_parameters


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    source, out = ctx.input_type(0), ctx.output_type(0)
    per_channel_only(source, out)
    channels = (1, ctx.shape(0)[1])
    ratio = np.asarray(scales(source, channels) / scales(out, channels))
    return {} if np.all(ratio == 1) else {"rescale": ratio}


def run(ctx: KernelContext) -> tuple:
    plan(ctx)
    q, source = ctx.typed_input(0)
    out = ctx.output_type(0)
    results = ctx.reference(q.astype(np.float64))  # integers are exact in float64
    pooled = np.rint(results[0]).astype(np.int64)
    scale, zero_point = broadcast_parameters(source, (1, q.shape[1]) + (1,) * (q.ndim - 2))
    return (convert(pooled, scale, zero_point, out), *results[1:])
