"""Pad: the input requantized to the output type, then padded on the storage integers;
the constant is the output type's quantization of the real pad value
(quantized or float constant_value input, default 0, i.e. the zero point).
Per-tensor types, opset >= 11."""

from __future__ import annotations

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported
from onnx_qtypes.reference_ops.ops._requant import convert_type
from onnx_qtypes.reference_ops.quant import dequantize, quantize


def _constant(ctx: KernelContext) -> float:
    value = ctx.value(2)
    if value is None or np.size(value) == 0:
        return 0.0
    qtype = ctx.input_qtypes[2]
    real = dequantize(np.asarray(value), qtype) if qtype is not None else np.asarray(value, np.float64)
    return float(np.asarray(real).reshape(-1)[0])


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    source, out = ctx.input_type(0), ctx.output_type(0)
    if ctx.opset < 11:
        raise Unsupported("Pad before opset 11 (attribute pads)")
    if source.axis is not None or out.axis is not None:
        raise Unsupported("Pad needs per-tensor types")
    ratio = source.scale[0] / out.scale[0]
    constant = quantize(np.asarray(_constant(ctx)), out).astype(np.int64)
    return {"pad_value": constant} if ratio == 1 else {"rescale": np.asarray(ratio), "pad_value": constant}


def run(ctx: KernelContext) -> tuple:
    constants = plan(ctx)
    q, source = ctx.typed_input(0)
    out = ctx.output_type(0)
    converted = convert_type(q, source, out).astype(np.int64)
    axes = ctx.value(3)  # (only from opset 18: Pad-11 / Pad-13 take three inputs, and refuse a fourth)
    operands = (converted, ctx.value(1), np.asarray(constants["pad_value"], np.int64))
    padded = ctx.reference(*operands, *(() if axes is None else (axes,)))[0]
    return (np.asarray(padded).astype(out.storage_type.np_dtype),)
