"""A quantized bias is not stored as int32.

## What it checks
The bias (input 2) of Conv, ConvTranspose and Gemm, when quantized, has
storage type INT32.

Under a profile with `bias_shift` (`vitis-ai-dpu`), a bias of any integer
storage passes when each of its scales is the accumulator scale of its
channel times an exact power of two: that target shifts the stored bias into
the accumulator's units. A constant bias whose stored values are all its zero
point adds 0 whatever its storage, and passes (QT404 still asks that zero
point to be 0).

## Why
The bias is added to the int32 accumulator of `sum (x - zx) * (w - zw)`, in
the accumulator's units (scale = input scale x weight scale). A narrower
bias either cannot hold those values or must be rescaled by the kernel,
which TFLite, ONNX QLinearConv and TOSA kernels do not do (they all take an
int32 bias). AMD's DPU does, by a shift: its native bias is 8-bit with a
power-of-two scale, as AMD Quark's XINT8 preset writes it.

## Invalid example
Conv bias `b: int8:float32<0.0001:0>`.

## Valid example
Conv bias `b: int32:float32<0.0004:0>` (input scale 0.02 x weight scale 0.02).

## Fix
Quantize the bias to int32 with scale = input scale x weight scale and zero
point 0, or leave it float.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.bias import added_by_shift, adds_nothing, bias_uses
from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


@rule("QT403", "bias-storage-not-int32", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for use in bias_uses(ctx):
        if use.qtype.storage != "int32" and not added_by_shift(ctx, use) and not adds_nothing(ctx, use):
            yield Finding(
                use.ref.location("input", 2),
                f"bias {use.bias!r} is {use.qtype}; a quantized bias of {use.ref.op_type} must be stored as int32 "
                "(it is added to the int32 accumulator)",
            )
