"""A quantized bias has a non-zero zero point.

## What it checks
Every zero point of a quantized bias of Conv, ConvTranspose or Gemm is 0.

## Why
The accumulator's zero is real 0 (`sum (x - zx) * (w - zw)` has no offset),
so the bias added to it must be in the same units with no offset (TFLite
spec: bias "(scale, zero_point) = (input0_scale * input1_scale[...], 0)";
ONNX QLinearConv: "zero_point = 0").

## Invalid example
Conv bias `b: int32:float32<0.0004:5>`.

## Valid example
Conv bias `b: int32:float32<0.0004:0>`.

## Fix
Requantize the bias with zero point 0.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.bias import bias_uses
from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.parameter_values import any_nonzero


@rule("QT404", "bias-zero-point-not-zero", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for use in bias_uses(ctx):
        if not any_nonzero(use.qtype.zero_point):  # nearly every bias: no array built
            continue
        bad = np.flatnonzero(np.asarray(use.qtype.zero_point, np.int64))  # every zero point at once
        i = int(bad[0])
        yield Finding(
            use.ref.location("input", 2),
            f"bias {use.bias!r} has zero_point[{i}] = {use.qtype.zero_point[i]}"
            + (f" ({len(bad) - 1} more non-zero)" if len(bad) > 1 else "")
            + "; a bias is added to the accumulator and must have zero point 0",
        )
