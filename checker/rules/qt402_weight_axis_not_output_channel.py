"""Per-axis weights of Conv / ConvTranspose / MatMul / Gemm are not along the output channels.

## What it checks
When the weight input (input 1) of Conv, ConvTranspose, MatMul or Gemm has
a per-axis type, its axis is the one that indexes output channels: Conv
`W[M, C/group, k...]` axis 0; ConvTranspose `W[C, M/group, k...]` axis 1
(with `group = 1`); MatMul `B[..., K, N]` the last axis; Gemm `B[K, N]`
axis 1, or axis 0 with `transB = 1`. Blocked weights (for example along K
for weight-only int4) are not restricted.

## Why
An integer kernel accumulates `sum_k (x - zx) * (w - zw)` and rescales once
per output. That works when each output channel has one weight scale; a
scale that varies along the reduction (input channels, K) cannot be factored
out of the sum (TFLite: weights per-axis on dim 0 for CONV_2D; StableHLO
convolution C29, dot_general C16).

## Invalid example
Conv weight `[4, 3, 3, 3]` per-axis on axis 1 (input channels).

## Valid example
The same weight per-axis on axis 0 (output channels).

## Fix
Requantize the weight per output channel (axis 0 for Conv), or per-tensor.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import WEIGHTED_OPS, Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.weights import output_channel_axis


@rule("QT402", "weight-axis-not-output-channel", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for ref in ctx.nodes_of(*WEIGHTED_OPS):
        if len(ref.inputs) < 2:
            continue
        weight = ref.inputs[1]
        qt = ctx.qtype(ref.scope, weight)
        if qt is None or qt.granularity != "per-axis":
            continue
        shape = ctx.shape(ref.scope, weight)
        wanted = output_channel_axis(ref, None if shape is None else len(shape))
        if wanted is None:
            yield Finding(
                ref.location("input", 1),
                f"weight {weight!r} is per-axis on axis {qt.axis}, but this {ref.op_type} has no single output-"
                "channel axis in its weight (ConvTranspose with group > 1, or a 1-D MatMul operand); use a "
                "per-tensor type",
            )
        elif qt.axis != wanted:
            yield Finding(
                ref.location("input", 1),
                f"weight {weight!r} is per-axis on axis {qt.axis}, but {ref.op_type} output channels run along "
                f"axis {wanted} of its weight; per-axis weights must be per output channel",
            )
