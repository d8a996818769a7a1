"""Recorded statistics have min > max, or a min / max that is not finite.

## What it checks
In the whole-tensor statistics and in every per-slice entry: when both are
recorded, `min <= max`; each recorded `min` and `max` is finite.

## Why
Statistics are what parameters are chosen from and what a reviewer compares
them against (QT208). An inverted or NaN range cannot have been observed; it
means the calibration tool mixed up fields or never saw data.

## Invalid example
`statistics { tensor { min: 2.5 max: -2.4 } }`; `min: nan`.

## Valid example
`statistics { tensor { min: -2.4 max: 2.5 } }`; a constant tensor may have
`min == max`.

## Fix
Re-run calibration, or drop the fields that were never observed (an absent
field means unknown).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import fmt, statistics_entries


@rule("QT201", "stats-min-max-invalid", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl in ctx.statistics_declarations():
        for stats, path, label in statistics_entries(decl):
            bad = [n for n in ("min", "max") if getattr(stats, n) is not None and not math.isfinite(getattr(stats, n))]
            if bad:
                yield Finding(decl_location(decl, *path, bad[0]), f"{label}: {bad[0]} {getattr(stats, bad[0])!r} must be finite")
            elif stats.min is not None and stats.max is not None and stats.min > stats.max:
                yield Finding(
                    decl_location(decl, *path, "min"),
                    f"{label}: min {fmt(stats.min)} must be <= max {fmt(stats.max)}",
                )
