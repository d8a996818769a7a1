"""QuantizeLinear with a quantized output (a boundary op): its operands must equal the
output type's parameters. From a float input it is the definition's quantize
itself (the conversion into the integer domain); from a quantized input it is
a fixed-point requantization."""

from __future__ import annotations

import numpy as np

from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.reference_ops.ops._kernel import KernelContext
from onnx_qtypes.reference_ops.ops._requant import convert_type
from onnx_qtypes.reference_ops.operands import boundary_type
from onnx_qtypes.reference_ops.quant import quantize


def bound_type(ctx: KernelContext, declared: QType, shape: tuple[int, ...], tensor: str) -> QType:
    zero_point = ctx.value(2)
    return boundary_type(declared, np.asarray(ctx.value(1)), None if zero_point is None else np.asarray(zero_point),
                         shape, axis=int(ctx.attr("axis", 1)), block_size=int(ctx.attr("block_size", 0)), tensor=tensor)


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    out = ctx.output_type(0)
    if ctx.input_qtypes[0] is None:
        return {}
    source = ctx.input_type(0)
    if source.axis is None and out.axis is None:
        return {"rescale": np.asarray(source.scale[0] / out.scale[0])}
    return {}


def run(ctx: KernelContext) -> tuple:
    declared = ctx.output_type(0)
    x = np.asarray(ctx.value(0))
    out = bound_type(ctx, declared, x.shape, ctx.node.output[0])
    if ctx.input_qtypes[0] is None:
        return (quantize(x.astype(np.float64), out),)
    q, source = ctx.typed_input(0)
    return (convert_type(q, source, out),)
