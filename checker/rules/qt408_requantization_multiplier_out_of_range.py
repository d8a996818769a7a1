"""The requantization multiplier of a Conv / ConvTranspose / MatMul / Gemm is out of fixed-point range.

## What it checks
For a node whose input, weight and output have static per-tensor input and
output types, each output channel's requantization multiplier
`M = x_scale * w_scale[c] / y_scale` is represented the way integer kernels
do (`reference_ops/fixed_point.py`: a 31-bit multiplier and a right shift,
`M ~= m * 2^-shift`), and the shift must lie in `[2, 62]` — TOSA RESCALE's
range, and the range in which TFLite's single-rounding path keeps every bit.
That is `2^-32 <= |M| < 2^29`: a negative weight scale makes `M` negative,
and its sign is QT411's concern, its magnitude this rule's.

## Why
Outside that range the parameters cannot be what the producer meant: below
`2^-32` every int32 accumulator rounds to the output zero point (the op
outputs a constant), above `2^29` a single accumulator unit moves the output
by hundreds of millions of steps (the op saturates). Such models are valid
under the semantics but compute nothing useful, and fixed-point targets
reject them. This is a warning.

## Invalid example
A Conv with input scale 0.02, weight scale 0.01 and output scale 1e12
(`M = 2e-16`).

## Valid example
The same Conv with output scale 0.05 (`M = 0.004`, shift 38).

## Fix
Recalibrate the output (its scale is usually the culprit), or the weights.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.weights import Weighted, weighted
from onnx_qtypes.checker.walk import fmt
from onnx_qtypes.reference_ops.fixed_point import MULTIPLIER_BITS, quantize_multipliers

SHIFT_RANGE = (2, 62)  # TOSA RESCALE (scale32)
SAFE = (2.0**-31, 2.0**28)  # one binade inside the limits, clear of the multiplier's rounding carry


def _per_tensor_around(use: Weighted) -> bool:
    """Static per-tensor input and output around a weight that is not blocked: one multiplier per channel."""
    ref, x, w, y = use
    if len(ref.inputs) < 2 or not ref.outputs or x is None or w is None or y is None:
        return False
    if x.is_dynamic or w.is_dynamic or y.is_dynamic:
        return False
    return x.axis is None and y.axis is None and w.block_size is None


def _screen(uses: list[Weighted]) -> list[Weighted]:
    """The uses whose multipliers may leave the safe range, every channel of every use in a few vector operations.

    A use passes when all its scales are finite and > 0 (else QT101's) and x_scale * w_scale / y_scale stays
    inside SAFE (narrowed a little, so that a value near a limit gets the exact test).
    """
    if not uses:
        return []
    counts = [len(u.w.scale) for u in uses]
    # magnitudes: a negative scale's sign is a negation of the accumulator, QT411's business
    weight = np.abs(np.fromiter(itertools.chain.from_iterable(u.w.scale for u in uses), np.float64, sum(counts)))
    x = np.abs(np.fromiter((u.x.scale[0] for u in uses), np.float64, len(uses)))
    y = np.abs(np.fromiter((u.y.scale[0] for u in uses), np.float64, len(uses)))
    owner = np.repeat(np.arange(len(uses)), counts)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        starts = np.cumsum([0] + counts[:-1])
        low, high = np.minimum.reduceat(weight, starts), np.maximum.reduceat(weight, starts)
        positive = (0.0 < weight) & (weight < math.inf)
        valid = (0.0 < x) & (x < math.inf) & (0.0 < y) & (y < math.inf) & ~np.isin(np.arange(len(uses)), owner[~positive])
        safe = (SAFE[0] * (1 + 1e-9) < x * low / y) & (x * high / y < SAFE[1] * (1 - 1e-9))
    return [uses[i] for i in np.flatnonzero(valid & ~safe)]


@rule("QT408", "requantization-multiplier-out-of-range", "warning")
def check(ctx: Context) -> Iterator[Finding]:
    for ref, x, w, y in _screen([u for u in weighted(ctx) if _per_tensor_around(u)]):
        x_scale, w_scales, y_scale = abs(x.scale[0]), np.abs(np.asarray(w.scale, dtype=np.float64)), abs(y.scale[0])
        if not (0.0 < x_scale < math.inf and 0.0 < y_scale < math.inf and np.all((0.0 < w_scales) & (w_scales < math.inf))):
            continue  # QT101
        reals = x_scale * w_scales / y_scale
        if SAFE[0] < reals.min() and reals.max() < SAFE[1]:
            continue  # well inside the range: no need for the exact fixed-point form
        multipliers, shifts = quantize_multipliers(reals)
        # quantize_multipliers caps the shift at 62 by shrinking the multiplier: a short multiplier means "too small"
        clipped = multipliers < (1 << (MULTIPLIER_BITS - 1))
        bad = np.flatnonzero((shifts < SHIFT_RANGE[0]) | (shifts > SHIFT_RANGE[1]) | clipped)
        if bad.size:
            c = int(bad[0])
            channel = f" (channel {c}; {bad.size} of {len(reals)} channels)" if len(reals) > 1 else ""
            yield Finding(
                ref.location(),
                f"requantization multiplier x_scale * w_scale / y_scale = {fmt(reals[c])}{channel} is outside "
                f"2^-32 <= M < 2^29: as a 31-bit fixed-point multiplier it becomes {int(multipliers[c])} * "
                f"2^{-int(shifts[c])}, and integer kernels need a shift in [{SHIFT_RANGE[0]}, {SHIFT_RANGE[1]}] with "
                "all 31 bits",
            )
