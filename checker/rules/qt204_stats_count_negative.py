"""The recorded value count is negative.

## What it checks
When `count` is recorded, `count >= 0`.

## Why
`count` is the number of values the statistics summarize; a negative count
is a sign or overflow error in the tool that wrote it.

## Invalid example
`statistics { tensor { count: -5 } }`.

## Valid example
`statistics { tensor { count: 192 } }`.

## Fix
Record the number of observed values (an int64), or leave it out.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import statistics_entries


@rule("QT204", "stats-count-negative", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl in ctx.statistics_declarations():
        for stats, path, label in statistics_entries(decl):
            if stats.count is not None and stats.count < 0:
                yield Finding(decl_location(decl, *path, "count"), f"{label}: count {stats.count} must be >= 0")
