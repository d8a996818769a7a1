"""A quantized bias does not have the weights' granularity.

## What it checks
A quantized bias of Conv, ConvTranspose or Gemm is per-tensor when the
weight is per-tensor, and per-axis along its last axis (the output channels)
with one scale per weight scale when the weight is per-axis. Blocked biases
are not allowed.

## Why
The bias scale is the product of the input scale and the weight scale of
each output channel (QT405): per-axis weights give one accumulator unit per
channel, so the bias needs one scale per channel, and a per-axis bias with
per-tensor weights has units the accumulator does not have.

## Invalid example
Per-axis weights with 4 scales and a per-tensor bias.

## Valid example
Per-axis weights with 4 scales and a bias per-axis on axis 0 with 4 scales.

## Fix
Requantize the bias per output channel with the weights' scales.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.bias import bias_uses
from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


@rule("QT406", "bias-granularity-mismatch", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for use in bias_uses(ctx):
        b, w = use.qtype, use.w
        if w is None or w.is_dynamic or b.is_dynamic:
            continue
        if b.block_size is not None:
            yield Finding(use.ref.location("input", 2),
                          f"bias {use.bias!r} is blocked ({b}); a bias is per-tensor or per output channel")
        elif w.axis is None and b.axis is not None:
            yield Finding(use.ref.location("input", 2),
                          f"bias {use.bias!r} is {b.granularity} ({len(b.scale)} scales) but weight "
                          f"{use.ref.inputs[1]!r} is per-tensor; the bias must be per-tensor too")
        elif w.axis is not None and w.block_size is None:
            shape = ctx.shape(use.ref.scope, use.bias)
            last = None if shape is None else len(shape) - 1
            if b.axis is None or len(b.scale) != len(w.scale) or (last is not None and b.axis != last):
                yield Finding(
                    use.ref.location("input", 2),
                    f"bias {use.bias!r} is {b.granularity} with {len(b.scale)} scale(s), but weight "
                    f"{use.ref.inputs[1]!r} is per-axis with {len(w.scale)}; the bias needs one scale per "
                    "output channel, per-axis along its last axis",
                )
