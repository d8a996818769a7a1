"""Clip: the input requantized to the output type, clamped to the quantized bounds.

With equal parameters this is exact: for storage q and bound v,
quantize(max(real(q), v)) = max(q, quantize(v)) because q is an integer.
Bounds come from inputs 1 and 2 (opset >= 11; quantized or float) or the
min / max attributes (older opsets).
"""

from __future__ import annotations

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext
from onnx_qtypes.reference_ops.ops._requant import convert_type, scales
from onnx_qtypes.reference_ops.quant import dequantize, quantize, to_storage


def _bound(ctx: KernelContext, index: int, attribute: str, default: float) -> float | np.ndarray:
    if ctx.opset < 11:
        return float(ctx.attr(attribute, default))
    value = ctx.value(index)
    if value is None:
        return default
    qtype = ctx.input_qtypes[index]
    return dequantize(np.asarray(value), qtype) if qtype is not None else np.asarray(value, np.float64)


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    shape = ctx.shape(0)
    out = ctx.output_type(0)
    ratio = np.asarray(scales(ctx.input_type(0), shape) / scales(out, shape))
    low = quantize(np.broadcast_to(_bound(ctx, 1, "min", -np.inf), shape), out).astype(np.int64)
    high = quantize(np.broadcast_to(_bound(ctx, 2, "max", np.inf), shape), out).astype(np.int64)
    bounds = {"low": low, "high": high}
    return bounds if np.all(ratio == 1) else {"rescale": ratio, **bounds}


def run(ctx: KernelContext) -> tuple:
    q, source = ctx.typed_input(0)
    out = ctx.output_type(0)
    constants = plan(ctx)
    converted = convert_type(q, source, out).astype(np.int64)
    return (to_storage(np.clip(converted, constants["low"], constants["high"]), out),)
