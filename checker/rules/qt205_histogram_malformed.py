"""A histogram's edges or counts are malformed.

## What it checks
When a histogram is recorded:
- there is one count per bin: `len(histogram_counts) = len(histogram_edges) - 1`
  (so at least 2 edges);
- edges are finite and strictly increasing (bins `[e0, e1), ..., [e(N-1), eN]`);
- every count is `>= 0`.

## Why
Entropy and percentile calibration read the histogram; a count without its
bin, or bins that overlap, give a different answer in every tool.

## Invalid example
`histogram_edges: [0, 1, 1, 2] histogram_counts: [3, 4, 5]` (empty bin
`[1, 1)`); 4 edges with 4 counts.

## Valid example
`histogram_edges: [-2.5, -1.25, 0, 1.25, 2.5] histogram_counts: [20, 75, 77, 20]`.

## Fix
Write N + 1 strictly increasing edges for N counts.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import fmt, statistics_entries
from onnx_qtypes.proto.statistics import Statistics


def malformed_histogram(stats: Statistics) -> tuple[str, str] | None:
    """(field, why) of the first malformed part of ``stats``' histogram; None when it is well formed or absent."""
    edges, counts = stats.histogram_edges, stats.histogram_counts
    if not edges and not counts:
        return None
    if len(counts) != len(edges) - 1:
        return "histogram_counts", (
            f"{len(edges)} edges give {max(len(edges) - 1, 0)} bins, found {len(counts)} counts; "
            "write N + 1 edges for N counts"
        )
    for i, edge in enumerate(edges):
        if not math.isfinite(edge):
            return f"histogram_edges/{i}", f"edge {i} is {edge!r}; edges must be finite"
        if i and edge <= edges[i - 1]:
            return f"histogram_edges/{i}", (
                f"edges must be strictly increasing, found {fmt(edges[i - 1])} then {fmt(edge)} at edge {i}"
            )
    for i, count in enumerate(counts):
        if count < 0:
            return f"histogram_counts/{i}", f"count of bin {i} is {count}; counts must be >= 0"
    return None


@rule("QT205", "histogram-malformed", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl in ctx.statistics_declarations():
        for stats, path, label in statistics_entries(decl):
            if found := malformed_histogram(stats):
                field, message = found
                yield Finding(decl_location(decl, *path, *field.split("/")), f"{label}: {message}")
