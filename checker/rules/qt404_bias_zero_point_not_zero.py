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

import itertools
from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.bias import BiasUse, bias_uses
from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


def _screen(uses: list[BiasUse]) -> list[BiasUse]:
    """The uses with a non-zero zero point, every zero point listed in a type read in one vector step (a type
    whose zero points are not a tuple, held by reference, goes through as it is)."""
    listed = [type(u.qtype.zero_point) is tuple for u in uses]
    counts = [len(u.qtype.zero_point) if is_listed else 0 for u, is_listed in zip(uses, listed)]
    values = np.fromiter(itertools.chain.from_iterable(u.qtype.zero_point for u, is_listed in zip(uses, listed)
                                                       if is_listed), np.int64, sum(counts))
    nonzero = np.bincount(np.repeat(np.arange(len(uses)), counts)[values != 0], minlength=len(uses)) > 0
    return [u for u, is_listed, flagged in zip(uses, listed, nonzero.tolist()) if flagged or not is_listed]


@rule("QT404", "bias-zero-point-not-zero", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for use in _screen(bias_uses(ctx)):
        bad = np.flatnonzero(np.asarray(use.qtype.zero_point, np.int64))  # every zero point at once
        if len(bad):
            i = int(bad[0])
            yield Finding(
                use.ref.location("input", 2),
                f"bias {use.bias!r} has zero_point[{i}] = {use.qtype.zero_point[i]}"
                + (f" ({len(bad) - 1} more non-zero)" if len(bad) > 1 else "")
                + "; a bias is added to the accumulator and must have zero point 0",
            )
