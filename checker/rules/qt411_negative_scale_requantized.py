"""A weight with negative scales feeds a Conv / ConvTranspose / Gemm / MatMul whose output is quantized.

## What it checks
Conv, ConvTranspose, Gemm or MatMul whose quantized output has a static type
and whose input or weight has a negative scale.

## Why
The node is well defined and linear in the weight
(proposal/spec/types.md#negative-scales), but an integer kernel rescales its
accumulator by `M = x_scale * w_scale[c] / y_scale`, which is negative in
the channels whose weight scale is. Fixed-point rescalers take `M >= 0`
(TOSA RESCALE's multiplier, gemmlowp and TFLite's `QuantizeMultiplier`), so
such a kernel must negate those channels' accumulators first, an extra step
some integer hardware lacks. Weight-only compression (float output, as NNCF
writes it) has no requantization and is not affected. A warning: the model
is valid and portable to runtimes that dequantize.

## Invalid example
A Conv with input `int8<0.02>`, weight scales `[0.01, -0.01]` and output
`int8<0.05>`.

## Valid example
The same Conv with a float output (weight-only quantization), or with weight
scales `[0.01, 0.01]`.

## Fix
Requantize the weight with positive scales (its channels that used
`storage_min` lose one step of range), or leave the output in float.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.negative_scales import negative_channels
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.weights import weighted


@rule("QT411", "negative-scale-requantized", "warning")
def check(ctx: Context) -> Iterator[Finding]:
    for ref, x, w, y in weighted(ctx):
        if y is None or y.is_dynamic:
            continue
        for index, operand in ((1, w), (0, x)):
            if operand is not None and operand.has_negative_scale:
                yield Finding(
                    ref.location("input", index),
                    f"{'weight' if index else 'input'} {ref.inputs[index]!r} has negative scales "
                    f"({negative_channels(operand)}) and output {ref.outputs[0]!r} is quantized: the requantization "
                    "multiplier x_scale * w_scale / y_scale is negative there, which fixed-point rescalers "
                    "(multipliers >= 0) cannot apply without negating the accumulator",
                )
                break
