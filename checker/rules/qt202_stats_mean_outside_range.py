"""The recorded mean lies outside [min, max] or is not finite.

## What it checks
When `mean` is recorded it is finite, and when `min` and `max` are recorded
too, `min <= mean <= max` (with a relative slack of 1e-6 of the range's
magnitude, for means accumulated in float32).

## Why
A mean outside the observed range is impossible; it shows statistics from
different runs or tensors were merged.

## Invalid example
`statistics { tensor { min: 0 max: 1 mean: 1.5 } }`.

## Valid example
`statistics { tensor { min: 0 max: 1 mean: 0.4 } }`.

## Fix
Recompute the statistics from one calibration run.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import fmt, statistics_entries

RELATIVE_SLACK = 1e-6


@rule("QT202", "stats-mean-outside-range", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl in ctx.statistics_declarations():
        for stats, path, label in statistics_entries(decl):
            mean = stats.mean
            if mean is None:
                continue
            where = decl_location(decl, *path, "mean")
            if not math.isfinite(mean):
                yield Finding(where, f"{label}: mean {mean!r} must be finite")
                continue
            lo, hi = stats.min, stats.max
            if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
                continue  # QT201
            slack = RELATIVE_SLACK * max(abs(lo), abs(hi), 1e-30)
            if not lo - slack <= mean <= hi + slack:
                yield Finding(where, f"{label}: mean {fmt(mean)} must lie in [min, max] = [{fmt(lo)}, {fmt(hi)}]")
