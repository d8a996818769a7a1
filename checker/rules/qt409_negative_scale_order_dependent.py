"""A tensor with negative scales feeds an operator that is not indifferent to their sign.

## What it checks
A tensor whose type has a negative scale is read only by Conv,
ConvTranspose, Gemm, MatMul (any input), DequantizeLinear, or a data-movement
operator that does not select by order (Reshape, Transpose, Gather, Slice,
Concat, ...; not MaxPool, GlobalMaxPool, ReduceMax or ReduceMin).

## Why
Where the scale is negative, the larger stored integer is the smaller real
value (proposal/spec/types.md#negative-scales). The definition (dequantize,
apply the operator, quantize) still holds, but every integer kernel of an
order-dependent operator takes the stored order for the real one: MaxPool,
ReduceMax and ArgMax pick the largest integer, Relu and Clip clamp at
integer bounds, comparisons compare integers, Sort and TopK sort them. Those
kernels would compute the wrong answer, and vendors keep them: negative
scales are admitted where no such operator reads them. Linear operators are
indifferent: they sum products, and the sign comes out of the sum in the
per-channel factor that multiplies the accumulator.

## Invalid example
A per-axis int8 weight with scales `[0.02, -0.5]` read by MaxPool or Relu.

## Valid example
The same weight read by MatMul or Conv (NNCF's int8 / int4 symmetric weight
compression), or by a Transpose that feeds MatMul.

## Fix
Requantize the tensor with positive scales (symmetric over
`[-storage_max, storage_max]`, one step of range less in the channels that
used `storage_min`), or dequantize it to float before the order-dependent
operator.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.negative_scales import negative_channels, negative_tensors, sign_indifferent
from onnx_qtypes.checker.registry import rule


@rule("QT409", "negative-scale-order-dependent", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for scope, name, qtype in negative_tensors(ctx):
        for ref, index in ctx.consumers.get((scope, name), ()):
            if not sign_indifferent(ref):
                yield Finding(
                    ref.location("input", index),
                    f"tensor {name!r} has negative scales ({negative_channels(qtype)}), where a larger stored "
                    f"integer is a smaller real, and {ref.op_type} is not indifferent to that order; negative "
                    "scales may feed Conv, ConvTranspose, Gemm, MatMul, DequantizeLinear and data movement other "
                    "than MaxPool, GlobalMaxPool, ReduceMax and ReduceMin",
                )
