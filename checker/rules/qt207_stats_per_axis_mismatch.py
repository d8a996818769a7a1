"""Per-slice statistics lack an axis, or do not have one entry per slice.

## What it checks
When `per_axis` statistics are recorded: `axis` is present, `0 <= axis <
rank`, and there is one entry per slice: `len(per_axis) = dim(axis)` (when
the dimension is known).

## Why
Per-channel parameters are chosen from per-channel statistics; entry `i`
must describe slice `i`. Without an axis, or with the wrong number of
entries, the statistics cannot be matched to the slices.

## Invalid example
A `[4, 3, 3, 3]` weight whose statistics have `axis: 0` and 3 `per_axis`
entries; `per_axis` entries without `axis`.

## Valid example
`axis: 0` with 4 `per_axis` entries.

## Fix
Record the axis the statistics were collected along and one entry per slice.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


@rule("QT207", "stats-per-axis-mismatch", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl in ctx.statistics_declarations():
        stats = decl.statistics
        if not stats.per_axis:
            continue
        if stats.axis is None:
            yield Finding(
                decl_location(decl, "statistics", "per_axis"),
                f"{len(stats.per_axis)} per-axis entries need an axis; set statistics.axis",
            )
            continue
        shape = decl.shape if decl.shape is not None else ctx.shape(decl.scope, decl.name)
        if shape is None:
            continue
        if not 0 <= stats.axis < len(shape):
            yield Finding(
                decl_location(decl, "statistics", "axis"),
                f"statistics axis {stats.axis} is outside [0, {len(shape)}) for a rank-{len(shape)} tensor",
            )
        elif shape[stats.axis] is not None and shape[stats.axis] != len(stats.per_axis):
            yield Finding(
                decl_location(decl, "statistics", "per_axis"),
                f"axis {stats.axis} of shape {list(shape)} has {shape[stats.axis]} slices, "
                f"found {len(stats.per_axis)} per-axis entries",
            )
