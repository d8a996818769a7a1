"""The recorded standard deviation is negative, not finite, or larger than the range allows.

## What it checks
When `std` is recorded: it is finite and `>= 0`, and when `min` and `max` are
recorded, `std <= (max - min) / 2` (with a relative slack of 1e-6).

## Why
For values inside `[min, max]` the population standard deviation is at most
half the range (reached when half the values sit at each end). A larger one
cannot come from the recorded range.

## Invalid example
`statistics { tensor { min: 0 max: 1 std: 0.9 } }`; `std: -0.1`.

## Valid example
`statistics { tensor { min: 0 max: 1 std: 0.5 } }`.

## Fix
Record the population standard deviation of the same values min and max
were taken from.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import fmt, statistics_entries

RELATIVE_SLACK = 1e-6


@rule("QT203", "stats-std-invalid", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl in ctx.statistics_declarations():
        for stats, path, label in statistics_entries(decl):
            std = stats.std
            if std is None:
                continue
            where = decl_location(decl, *path, "std")
            if not math.isfinite(std) or std < 0:
                yield Finding(where, f"{label}: std {std!r} must be finite and >= 0")
                continue
            lo, hi = stats.min, stats.max
            if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
                continue
            bound = (hi - lo) / 2
            if std > bound * (1 + RELATIVE_SLACK) + 1e-30:
                yield Finding(
                    where,
                    f"{label}: std {fmt(std)} must be <= (max - min) / 2 = {fmt(bound)} for values in "
                    f"[{fmt(lo)}, {fmt(hi)}]",
                )
