"""Relu: the input requantized to the output type (an integer shift when the scales are
equal), then floored at the output zero point, which is real 0."""

from __future__ import annotations

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext
from onnx_qtypes.reference_ops.ops._requant import convert_type, scales
from onnx_qtypes.reference_ops.quant import broadcast_parameters, to_storage


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    shape = ctx.shape(0)
    ratio = np.asarray(scales(ctx.input_type(0), shape) / scales(ctx.output_type(0), shape))
    return {} if np.all(ratio == 1) else {"rescale": ratio}


def run(ctx: KernelContext) -> tuple:
    q, source = ctx.typed_input(0)
    out = ctx.output_type(0)
    converted = convert_type(q, source, out).astype(np.int64)
    _, zero_point = broadcast_parameters(out, q.shape)
    return (to_storage(np.maximum(converted, zero_point), out),)
