"""DequantizeLinear with a quantized input (a boundary op): its operands must equal the
input type's parameters; the result is the definition's dequantize, in the
scale's (or output_dtype's) float type: the exit from the integer domain."""

from __future__ import annotations

import numpy as np
import onnx

from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported
from onnx_qtypes.reference_ops.ops.quantize_linear import bound_type
from onnx_qtypes.reference_ops.quant import dequantize


def run(ctx: KernelContext) -> tuple:
    if ctx.output_qtypes and ctx.output_qtypes[0] is not None:
        raise Unsupported("a quantized DequantizeLinear output")
    q, source = ctx.typed_input(0)
    bound_type(ctx, source, q.shape, ctx.node.input[0])
    output_dtype = int(ctx.attr("output_dtype", 0))
    dtype = onnx.helper.tensor_dtype_to_np_dtype(output_dtype) if output_dtype else np.asarray(ctx.value(1)).dtype
    return (dequantize(q, source).astype(dtype),)
