"""A quantized bias's scale is not input scale x weight scale.

## What it checks
For a Conv, ConvTranspose or Gemm whose input, weight and bias have static
types with matching granularity (QT406), every bias scale equals the input
scale times the weight scale of the same output channel, within a relative
tolerance of 1e-6: `|b - x*w| <= 1e-6 * min(|b|, |x*w|) + 2^-149`, the
product taken in double precision (so a negative weight scale needs a
negative bias scale). The 2^-149 is one float32 subnormal step: a product
tools take in float32 that lands below 2^-126 (a dead channel's weight scale,
as BatchNormalization folding leaves it) keeps fewer significant bits.
Only per-tensor inputs are compared. Under a profile with `bias_shift`
(`vitis-ai-dpu`), a bias scale that is that product times an exact power of
two passes: the target shifts the bias into the accumulator's units. A
constant bias whose stored values are all its zero point is 0 at any scale,
and passes (AMD Quark gives PyTorch's zero biases scale 1; QT404 still asks
that zero point to be 0).

## Why
The bias is added to the accumulator, whose unit is `x_scale * w_scale[c]`.
A bias in other units adds a wrong offset that no later rescaling can undo.
Exact equality fails on real files because tools multiply in float32; 1e-6
is TFLite's tolerance (`GetQuantizedConvolutionMultipler`), and onnxruntime's
quantizer lands within about 4e-8.

## Invalid example
Input `0.02`, weight `0.01`, bias scale `0.0003` (should be `0.0002`).

## Valid example
Bias scale `0.0002` (or the float32 product 0.00019999999494757503).

## Fix
Requantize the bias with `scale = x_scale * w_scale` (per output channel for
per-axis weights).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.bias import BiasUse, added_by_shift, adds_nothing, bias_uses
from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import fmt

RELATIVE_TOLERANCE = 1e-6
SUBNORMAL_STEP = 2.0**-149  # float32's spacing below 2^-126: a float32 product there is that coarse


def _compared(use: BiasUse) -> bool:
    """Whether the bias scales are compared channel by channel (other combinations are QT406's or dynamic)."""
    b, x, w = use.qtype, use.x, use.w
    if x is None or w is None or b.is_dynamic or x.is_dynamic or w.is_dynamic or x.axis is not None:
        return False
    return (b.axis is None) == (w.axis is None) and len(b.scale) == len(w.scale) and w.block_size is None


def _screen(uses: list[BiasUse]) -> list[BiasUse]:
    """The uses with a channel that may differ, all channels of all uses in a few vector operations."""
    if not uses:
        return []
    counts = [len(u.qtype.scale) for u in uses]
    total = sum(counts)
    bias = np.fromiter(itertools.chain.from_iterable(u.qtype.scale for u in uses), np.float64, total)
    weight = np.fromiter(itertools.chain.from_iterable(u.w.scale for u in uses), np.float64, total)
    product = np.repeat(np.fromiter((u.x.scale[0] for u in uses), np.float64, len(uses)), counts) * weight
    with np.errstate(over="ignore", invalid="ignore"):  # half the tolerance: channels near it get the exact test
        tolerance = RELATIVE_TOLERANCE / 2 * np.minimum(np.abs(bias), np.abs(product)) + SUBNORMAL_STEP / 2
        differ = ~_same_sign(bias, product) | (np.abs(bias - product) > tolerance)
    return [uses[i] for i in np.unique(np.repeat(np.arange(len(uses)), counts)[differ])]


def _same_sign(bias: np.ndarray, product: np.ndarray) -> np.ndarray:
    """Both non-zero with one sign: a negative weight scale (types.md#negative-scales) makes its bias scale negative."""
    return (bias != 0) & (np.sign(bias) == np.sign(product))


@rule("QT405", "bias-scale-mismatch", "error")
def check(ctx: Context) -> Iterator[Finding]:
    # the screen flags each use on its own scales, so it may run before the per-use exemptions: those then read
    # only the few uses it flags
    flagged = _screen([u for u in bias_uses(ctx) if _compared(u)])
    for use in [u for u in flagged if not added_by_shift(ctx, u) and not adds_nothing(ctx, u)]:
        b, x, w = use.qtype, use.x, use.w
        bias, product = np.asarray(b.scale, np.float64), x.scale[0] * np.asarray(w.scale, np.float64)
        with np.errstate(over="ignore", invalid="ignore"):  # the exact test, every channel in float64 as one
            bad = np.flatnonzero(~_same_sign(bias, product) | (np.abs(bias - product)
                                 > RELATIVE_TOLERANCE * np.minimum(np.abs(bias), np.abs(product)) + SUBNORMAL_STEP))
        if len(bad):
            c = int(bad[0])
            bs, product = b.scale[c], x.scale[0] * w.scale[c]
            channel = f"[{c}]" if b.axis is not None else ""
            more = f" ({len(bad) - 1} more channels differ)" if len(bad) > 1 else ""
            yield Finding(
                use.ref.location("input", 2),
                f"bias {use.bias!r} scale{channel} {fmt(bs)} must equal input scale {fmt(x.scale[0])} x weight "
                f"scale{channel} {fmt(w.scale[c])} = {fmt(product)} (relative tolerance 1e-6){more}",
            )
