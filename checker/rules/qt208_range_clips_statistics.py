"""The type's representable range does not cover the recorded [min, max]: values will clip.

## What it checks
For a static, well-formed type with recorded statistics, the representable
range `[dequantize(storage_min), dequantize(storage_max)]` — widened by half
a step at each end, since values there still round into range — covers the
recorded `[min, max]`. Per-tensor types are compared with the whole-tensor
statistics; per-axis types with per-axis statistics along the same axis,
slice by slice. When a histogram is recorded, the message estimates the
fraction of observed values that would clip (bins partly outside the range
count in proportion). The representable range always contains real 0 when
QT103 holds (the zero point is an in-range integer). A tensor read only by
Relu is not reported for values below its range: they saturate to a real
value <= 0, which the Relu turns into 0 as it would the value itself (a
calibrator gives such a tensor the Relu output's range on purpose).

## Why
Parameters are normally chosen to cover the calibrated range; a range that
does not cover it saturates real data. Sometimes that is deliberate
(percentile, entropy or mse calibration clips outliers), hence a warning, with the
clipped fraction so the engineer can judge, and with the method when the
statistics record one that clips by design.

## Invalid example
`int8:float32<scale 0.01, zero_point 0>` (range about [-1.28, 1.27]) with
statistics `min: -2.4 max: 2.5`.

## Valid example
`int8:float32<scale 0.02, zero_point 0>` (range [-2.56, 2.54]) with the same
statistics.

## Fix
Recompute scale and zero point from the statistics (min/max calibration), or
accept the clipping if it was chosen on purpose.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from onnx_qtypes.checker.context import Context, decl_location, derived, storage_of
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import fmt
from onnx_qtypes.proto.relu_readers import read_only_by_relu
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.statistics import Statistics, clipping_method
from onnx_qtypes.proto.validity import range_problem
from onnx_qtypes.reference_ops.quant import dequantize


def _well_formed(qt: QType) -> bool:
    storage = storage_of(qt)
    if storage is None or qt.is_dynamic or range_problem(storage, qt.storage_min, qt.storage_max):
        return False
    if len(qt.zero_point) != len(qt.scale) or qt.block_size is not None:
        return False
    scales, zero_points = np.asarray(qt.scale, np.float64), np.asarray(qt.zero_point, np.int64)
    with np.errstate(invalid="ignore"):  # scale_problem's and zero_point_problem's tests, every pair at once
        valid = np.isfinite(scales) & (scales != 0) & (zero_points >= qt.storage_min) & (zero_points <= qt.storage_max)
    return bool(valid.all())


def representable_ranges(qt: QType) -> np.ndarray:
    """Each parameter pair's real range [dequantize(storage_min), dequantize(storage_max)], low end first:
    shape [pairs, 2] (one pair per scale: per tensor, per slice or per block). The report draws these."""
    pairs = len(qt.scale)
    bounds = np.tile(np.array([qt.storage_min, qt.storage_max], dtype=np.int64), (pairs, 1))
    per_row = derived(qt, axis=0 if pairs > 1 else None, block_size=None)
    return np.sort(dequantize(bounds, per_row), axis=1)  # a negative scale maps storage_max to the lower end


def _ranges(qt: QType) -> np.ndarray:
    """Representable real range per parameter pair, widened by half a step: shape [pairs, 2]."""
    half = np.abs(np.asarray(qt.scale))[:, None] / 2
    return representable_ranges(qt) + np.hstack([-half, half])


def clipped_fraction(edges: Sequence[float], counts: Sequence[float], lo: float, hi: float) -> float | None:
    """The share of a histogram's values outside [lo, hi] (already widened by half a step), values spread evenly
    within each bin; None for a histogram without a usable shape. The report's estimate uses this too."""
    edges, counts = np.asarray(edges, np.float64), np.asarray(counts, dtype=np.float64)
    if len(edges) < 2 or len(counts) != len(edges) - 1 or counts.sum() <= 0 or not np.all(np.diff(edges) > 0):
        return None
    width = np.diff(edges)
    below = np.clip(lo - edges[:-1], 0, width) / width
    above = np.clip(edges[1:] - hi, 0, width) / width
    return float((counts * np.minimum(below + above, 1.0)).sum() / counts.sum())


def _message(label: str, stats: Statistics, lo: float, hi: float, scale: float, zero_point: int, qt: QType,
             method: str | None = None) -> str:
    text = (
        f"{label} [min, max] = [{fmt(stats.min)}, {fmt(stats.max)}] exceed the representable range "
        f"[{fmt(lo + scale / 2)}, {fmt(hi - scale / 2)}] (scale {fmt(scale)}, zero point {zero_point}, "
        f"storage [{qt.storage_min}, {qt.storage_max}])"
    )
    fraction = clipped_fraction(stats.histogram_edges, stats.histogram_counts, lo, hi)
    if fraction is not None:
        total = sum(stats.histogram_counts)
        text += f"; the histogram puts about {fraction:.2%} of {total} observed values outside it"
    if clipping_method(method):
        return text + f"; the statistics record calibration method {method!r}, which clips outliers on purpose"
    return text + "; widen the parameters unless clipping is intended"


@rule("QT208", "range-clips-statistics", "warning")
def check(ctx: Context) -> Iterator[Finding]:
    for decl in ctx.statistics_declarations():
        qt, stats = decl.qtype, decl.statistics
        if qt is None or not _well_formed(qt):
            continue
        if qt.axis is None:
            pairs = [(stats.tensor, ("statistics", "tensor"), "tensor statistics", 0)]
        elif stats.axis == qt.axis and len(stats.per_axis) == len(qt.scale):
            pairs = [(s, ("statistics", "per_axis", i), f"slice {i} statistics", i) for i, s in enumerate(stats.per_axis)]
        else:
            continue
        ranges = _ranges(qt)
        relu_only = (decl.scope, decl.name) in ctx.memo("relu_readers", lambda: read_only_by_relu(ctx.model))
        for entry, path, label, i in pairs:
            if entry is None or entry.min is None or entry.max is None or not entry.min <= entry.max:
                continue
            lo, hi = ranges[i]
            if relu_only and lo <= 0:  # below the range saturates to a real <= 0, which the Relu makes 0 anyway
                lo = min(lo, entry.min)
            if entry.min < lo or entry.max > hi:
                message = _message(label, entry, lo, hi, qt.scale[i], qt.zero_point[i], qt, stats.method)
                yield Finding(decl_location(decl, *path), message)
