"""The histogram's counts do not add up to the recorded count.

## What it checks
When both `count` and `histogram_counts` are recorded,
`sum(histogram_counts) = count`.

## Why
Every observed value falls in exactly one bin (the last bin is closed), so
the counts must account for every value. A mismatch means the histogram was
taken over different data, or values outside the edges were dropped — and
then the clipping estimate of QT208 is wrong.

## Invalid example
`count: 192 histogram_counts: [20, 75, 77, 19]` (sum 191).

## Valid example
`count: 192 histogram_counts: [20, 75, 77, 20]`.

## Fix
Extend the edges to cover [min, max] and count every value.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import statistics_entries


@rule("QT206", "histogram-count-mismatch", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl in ctx.statistics_declarations():
        for stats, path, label in statistics_entries(decl):
            if stats.count is None or not stats.histogram_counts:
                continue
            total = sum(stats.histogram_counts)
            if total != stats.count:
                yield Finding(
                    decl_location(decl, *path, "histogram_counts"),
                    f"{label}: histogram counts sum to {total}, but count is {stats.count}; they must be equal",
                )
