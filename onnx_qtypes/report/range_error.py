"""What a histogram says about a chosen range: the clipped fraction and the expected quantization error.

A histogram's values are taken to be spread evenly within each bin. For the representable range
[lo, hi] (dequantize(qmin) and dequantize(qmax), as QT208 takes it):

- clipped fraction: the share of the histogram's mass more than half a step outside [lo, hi] (values
  within half a step still round into range; QT208's ``clipped_fraction``, which counts it);
- mean squared error (MSE): rounding error inside the range, scale²/12 per value (the error of rounding
  to the nearest step, spread evenly over ±scale/2), plus the clipping error outside it, (x − hi)² above
  and (lo − x)² below, integrated over each bin;
- SQNR: 10·log10(E[x²] / MSE) in dB, E[x²] from the same histogram.

How close these are to quantizing the values themselves is tested in tests/test_report_estimates.py, with the
bounds stated there: the clipped fraction is off by at most the share of values in the two bins holding a
clipping threshold (none with a minmax range: calibration's histograms end at the observed extremes), E[x²]
and the clipping error by at most each bin's spread, and the rounding error is scale²/12 per value for values
spread within a step; a point mass on a representable value (a Relu output's zeros) has none, so there the
MSE is overstated and the SQNR understated, never the reverse.

A tensor read only by Relu (``relu_only``) whose range reaches down to 0 has no clipping or error below
the range: those values saturate to a real <= 0 that the Relu makes 0, as it makes the value itself (the
checker's QT208 exempts them the same way, and calibration chooses such ranges on purpose).

A per-axis type with one histogram per channel (statistics ``per_axis``, as many as scales) gets each
channel's numbers, combined weighted by the channels' value counts. Other cases have no estimate.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from onnx_qtypes.checker.rules.qt205_histogram_malformed import malformed_histogram
from onnx_qtypes.checker.rules.qt208_range_clips_statistics import clipped_fraction, representable_ranges
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.statistics import Statistics, TensorStatistics
from onnx_qtypes.proto.validity import codebook_problem, offset_problem


@dataclasses.dataclass(frozen=True)
class Histogram:
    edges: tuple[float, ...]
    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.counts)


@dataclasses.dataclass(frozen=True)
class RangeError:
    """Estimates for one tensor (or channel); ``power`` is E[x²]."""

    clipped: float
    mse: float
    power: float
    total: int

    @property
    def sqnr_db(self) -> float | None:
        if not self.power > 0 or not math.isfinite(self.power) or not math.isfinite(self.mse):
            return None  # no signal, or a histogram whose E[x²] or error float64 cannot hold
        return math.inf if self.mse <= 0 else 10 * math.log10(self.power / self.mse)


def histogram_problem(stats: Statistics | None) -> str | None:
    """Why ``stats`` has no usable histogram (None when it has one): QT205's reasons, or none recorded, or empty."""
    if stats is None or not (stats.histogram_edges or stats.histogram_counts):
        return "no histogram recorded"
    if not _well_formed(stats):  # QT205's judgement, and its words, for the few the screen does not pass
        malformed = malformed_histogram(stats)
        if malformed is not None:
            return malformed[1]
    if sum(stats.histogram_counts) == 0:
        return "every bin is empty"
    return None


def _well_formed(stats: Statistics) -> bool:
    """A screen in numpy that passes only histograms QT205's ``malformed_histogram`` passes (counts one per
    bin, edges finite and strictly increasing, counts >= 0), a thousand times faster than its loop over 2048
    bins; a histogram it does not pass goes to QT205's function, which decides and says why."""
    edges, counts = np.asarray(stats.histogram_edges, np.float64), np.asarray(stats.histogram_counts)
    return (counts.size == edges.size - 1 and bool(np.all(np.isfinite(edges))) and bool(np.all(edges[1:] > edges[:-1]))
            and bool(np.all(counts >= 0)))


def histogram(stats: Statistics | None) -> Histogram | None:
    return Histogram(stats.histogram_edges, stats.histogram_counts) if histogram_problem(stats) is None else None


def displayed_histogram(statistics: TensorStatistics | None) -> tuple[Histogram | None, str]:
    """The histogram to draw and where it comes from: the whole tensor's, else the per-axis histograms
    summed when they share their edges."""
    if statistics is None:
        return None, "no statistics"
    whole = histogram(statistics.tensor)
    if whole is not None:
        return whole, "whole tensor"
    parts = [histogram(s) for s in statistics.per_axis]
    if parts and all(p is not None for p in parts) and len({p.edges for p in parts}) == 1:
        counts = tuple(sum(c) for c in zip(*(p.counts for p in parts)))
        return Histogram(parts[0].edges, counts), f"sum of {len(parts)} per-axis histograms"
    return None, histogram_problem(statistics.tensor)


def ranges(qtype: QType) -> list[tuple[float, float]] | None:
    """Each scale's representable real range, dequantize(qmin) to dequantize(qmax) low end first (QT208's);
    None without one (dynamic, or parameters QT1xx rejects)."""
    if qtype.is_dynamic or qtype.storage_min is None or qtype.storage_max is None:
        return None
    if len(qtype.zero_point) != len(qtype.scale) or not all(math.isfinite(s) and s != 0 for s in qtype.scale):
        return None  # a negative scale is valid (NNCF's per-channel weights, QT101)
    if codebook_problem(qtype.codebook, qtype.storage_type, qtype.storage_min, qtype.storage_max, qtype.zero_point) \
            or offset_problem(qtype.offset, len(qtype.scale)):
        return None  # QT141's, QT140's
    return [(lo, hi) for lo, hi in representable_ranges(qtype).tolist()]


def range_error(h: Histogram, lo: float, hi: float, step: float, relu_only: bool = False) -> RangeError:
    """Clipped fraction, MSE and E[x²] of histogram ``h`` quantized to [lo, hi] in steps of ``step``
    (a scale: its magnitude). Edges near the float64 limit give an infinite MSE or E[x²], not an exception."""
    step = abs(step)
    floor_free = relu_only and lo <= 0  # below the range: the reading Relu gives 0 either way
    clipped = clipped_fraction(h.edges, h.counts, -math.inf if floor_free else lo - step / 2, hi + step / 2)
    edges, counts = np.asarray(h.edges, np.float64), np.asarray(h.counts, np.float64)
    a, b = edges[:-1], edges[1:]
    with np.errstate(over="ignore", invalid="ignore"):
        above = _beyond(np.maximum(a, hi), np.maximum(b, hi), hi)  # ∫ (x − hi)² dx over the bin's part above hi
        below = 0.0 if floor_free else _beyond(np.minimum(a, lo), np.minimum(b, lo), lo)
        inside = np.maximum(0.0, np.minimum(b, hi) - np.maximum(a, lo))
        squared = np.sum(counts * (above + below + inside * (step * step / 12)) / (b - a))
        power = np.sum(counts * (a * a + a * b + b * b) / 3)  # (b³ − a³) / (3 (b − a)): the bin's E[x²]
    total = h.total
    return RangeError(clipped, float(squared / total), float(power / total), total)


def _beyond(u: np.ndarray, v: np.ndarray, at: float) -> np.ndarray:
    """∫ (x − at)² dx over [u, v] (0 when v <= u)."""
    return np.where(v > u, ((v - at) ** 3 - (u - at) ** 3) / 3, 0.0)


def tensor_error(qtype: QType, statistics: TensorStatistics | None, relu_only: bool = False
                 ) -> tuple[RangeError | None, str]:
    """The tensor's estimate and how it was made (or why there is none)."""
    spans = ranges(qtype)
    if spans is None:
        return None, "no representable range (dynamic, or invalid parameters)"
    if statistics is None:
        return None, "no statistics"
    if len(spans) == 1:
        h = histogram(statistics.tensor)
        if h is None:
            return None, f"histogram: {histogram_problem(statistics.tensor)}"
        return range_error(h, *spans[0], qtype.scale[0], relu_only), "whole-tensor histogram"
    if qtype.block_size is not None:
        return None, "blocked type: one range per block, histograms are per tensor or per axis"
    per_axis = [histogram(s) for s in statistics.per_axis]
    if len(per_axis) != len(spans) or any(h is None for h in per_axis):
        usable = sum(h is not None for h in per_axis)
        return None, f"per-axis type needs {len(spans)} per-axis histograms (statistics has {usable} usable)"
    return combine([range_error(h, lo, hi, s, relu_only) for h, (lo, hi), s in zip(per_axis, spans, qtype.scale)]), \
        f"{len(spans)} per-axis histograms, weighted by count"


def combine(parts: Sequence[RangeError]) -> RangeError:
    total = sum(p.total for p in parts)
    mean = lambda field: sum(getattr(p, field) * p.total for p in parts) / total  # noqa: E731
    return RangeError(mean("clipped"), mean("mse"), mean("power"), total)
