"""Streaming statistics of one tensor: min, max, mean, std, count and a histogram.

Nothing of a sample is kept after it is counted: the moments merge by Chan's
parallel formula (Welford's update, one batch at a time). The histogram
counts each value into a bin of a lattice anchored at 0, ``[j·w, (j+1)·w)``
with ``w`` a power of two, keeping at most ``bins`` bins from the one holding
the minimum. When the range grows past them, ``w`` doubles (as often as
needed): the bins of width ``2w`` are unions of two whole bins of width
``w``, so no count is split or interpolated. ``w`` is the smallest power of
two whose bins from the minimum's to the maximum's number at most ``bins``
(a maximum on an edge closes the bin below it), so more than half of them
(at least ``bins // 2 + 1``) lie inside ``[min, max]``. The
recorded histogram is those bins with the outer edges moved in to the
observed minimum and maximum, where no value lies beyond: its edges are
exactly ``[min, max]`` and every count is exactly the number of values in its
bin (the last bin closed). (Anchoring at the first sample instead, and never
trimming, left most bins empty beyond the maximum; onnxruntime's
HistogramCollector keeps the bin width and adds bins, so its memory grows
with the data's range.) A constant (a weight, counted once) gets numpy's
histogram over its ``[min, max]`` in ``min(bins, values)`` equal bins.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from onnx_qtypes.proto.statistics import Statistics

BINS = 2048
CHANNEL_BINS = 64  # per channel of a constant (a weight): enough to estimate each channel's error, small next to it


class Moments:
    """Count, min, max, mean and M2 (sum of squared deviations), per channel (shape ``[C]``) or scalar (``[1]``)."""

    def __init__(self, channels: int) -> None:
        self.count = 0
        self.min = np.full(channels, np.inf)
        self.max = np.full(channels, -np.inf)
        self.mean = np.zeros(channels)
        self.m2 = np.zeros(channels)

    def add(self, x: np.ndarray) -> None:
        """Merge ``x`` of shape ``[C, n]`` (n values per channel)."""
        n = x.shape[1]
        if n == 0:
            return
        self.min = np.minimum(self.min, x.min(axis=1))
        self.max = np.maximum(self.max, x.max(axis=1))
        mean = x.mean(axis=1)
        m2 = ((x - mean[:, None]) ** 2).sum(axis=1)
        total = self.count + n
        delta = mean - self.mean
        self.mean = self.mean + delta * (n / total)
        self.m2 = self.m2 + m2 + delta**2 * (self.count * n / total)
        self.count = total

    def statistics(self, index: int) -> Statistics:
        return Statistics(min=float(self.min[index]), max=float(self.max[index]), mean=float(self.mean[index]),
                          std=math.sqrt(max(float(self.m2[index]) / self.count, 0.0)), count=self.count)


class Histogram:
    """Counts on a power-of-two lattice, at most ``bins`` of them, exact at the observed ``[min, max]``."""

    def __init__(self, bins: int = BINS) -> None:
        self.bins = bins
        self.total = 0
        self.min, self.max = math.inf, -math.inf
        self.level: int | None = None  # bins are [j·2**level, (j+1)·2**level); None: one value so far
        self.origin = 0  # the lattice index j of _counts[0], the minimum's bin
        self._counts: np.ndarray | None = None
        self._fixed: tuple[np.ndarray, float, float] | None = None  # a constant's (counts, min, max)

    def add(self, x: np.ndarray) -> None:
        if self._fixed is not None:
            raise ValueError("a constant's histogram is made once")
        x = np.asarray(x, dtype=np.float64).reshape(-1)
        if x.size == 0:
            return
        lo, hi = min(self.min, float(x.min())), max(self.max, float(x.max()))
        if lo == hi:  # one value so far: no width to choose yet
            self.min, self.max, self.total = lo, hi, self.total + x.size
            return
        if self.level is None:
            self.level, self.origin = _level(lo, hi, self.bins), 0
            self._counts = np.zeros(self.bins + 1, dtype=np.int64)  # + the maximum's bin when it is on an edge
            if self.total:  # the values seen so far, all equal to self.min
                self.origin = _index(self.min, self.level)
                self._counts[0] = self.total
        level = self.level
        while not _fits(lo, hi, level, self.bins):
            level += 1
        self._place(level, _index(lo, level))
        index = np.floor(x / 2.0**self.level).astype(np.int64)
        index -= self.origin
        self._counts += np.bincount(index, minlength=self.bins + 1)
        self.min, self.max, self.total = lo, hi, self.total + x.size

    def _place(self, level: int, origin: int) -> None:
        """Re-bin to ``level`` (merging 2**k whole bins into one) with the minimum's bin ``origin`` first."""
        if level == self.level and origin == self.origin:
            return
        used = np.flatnonzero(self._counts)
        index = ((self.origin + used) >> (level - self.level)) - origin  # floor(j / 2**k): whole bins merge
        counts = np.zeros(self.bins + 1, dtype=np.int64)
        np.add.at(counts, index, self._counts[used])
        self._counts, self.level, self.origin = counts, level, origin

    @classmethod
    def of_constant(cls, values: np.ndarray, bins: int = BINS) -> Histogram:
        """numpy's histogram of ``values`` over their [min, max] in min(bins, values) equal bins."""
        h = cls(bins)
        values = np.asarray(values, dtype=np.float64).reshape(-1)
        if values.size:
            h._fixed = _equal_bins(values, bins)
            h.min, h.max, h.total = float(values.min()), float(values.max()), int(values.size)
        return h

    @property
    def counts(self) -> np.ndarray:
        return self._histogram()[0]

    @property
    def edges(self) -> np.ndarray:
        return self._histogram()[1]

    def _histogram(self) -> tuple[np.ndarray, np.ndarray]:
        """(counts, edges): the bins from the minimum's to the maximum's, outer edges at min and max."""
        if self._fixed is not None:
            counts, lo, hi = self._fixed
            return counts.astype(np.int64), _equal_edges(lo, hi, counts.size)
        if self.total == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        if self.level is None:  # a single value: one bin from it to the next float
            return np.array([self.total], dtype=np.int64), np.array([self.min, np.nextafter(self.min, np.inf)])
        width = 2.0**self.level
        top = _index(self.max, self.level)
        if top * width == self.max and top > self.origin:  # the maximum on a lattice edge: close the bin below
            top -= 1
        n = top - self.origin + 1
        counts = self._counts[:n].copy()
        counts[-1] += int(self._counts[n:].sum())
        edges = (self.origin + np.arange(n + 1, dtype=np.float64)) * width
        edges[0], edges[-1] = self.min, self.max
        return counts, edges

    def statistics_fields(self) -> dict:
        counts, edges = self._histogram()
        return {"histogram_edges": tuple(edges.tolist()), "histogram_counts": tuple(counts.tolist())}


def _index(value: float, level: int) -> int:
    return math.floor(value / 2.0**level)


def _fits(lo: float, hi: float, level: int, bins: int) -> bool:
    """Whether the bins from lo's up to hi (a bin starting at hi is not needed: the last bin is closed) are at
    most ``bins``."""
    return math.ceil(hi / 2.0**level) - _index(lo, level) <= bins


def _level(lo: float, hi: float, bins: int) -> int:
    """The smallest level whose lattice puts [lo, hi] in at most ``bins`` bins, and no finer than the float
    spacing of the largest magnitude (so that every index stays below 2**54)."""
    spacing = math.frexp(max(abs(lo), abs(hi)))[1] - 53
    level = max(math.frexp((hi - lo) / bins)[1] - 1, spacing, -1074)  # 2.0**-1074: the smallest float
    while not _fits(lo, hi, level, bins):
        level += 1
    return level


class NonFinite(ValueError):
    """A tensor took NaN or an infinity: no range holds it, so it has no statistics and no quantized type."""


def non_finite(x: np.ndarray) -> str | None:
    """What is not finite in ``x`` ("3 -inf values", "1 NaN value and 2 +inf values"), or None when all is."""
    if not x.size or np.all(np.isfinite(x)):
        return None
    counts = ((int(np.count_nonzero(np.isnan(x))), "NaN"), (int(np.count_nonzero(x == -np.inf)), "-inf"),
              (int(np.count_nonzero(x == np.inf)), "+inf"))
    return " and ".join(f"{n} {what} value{'s' if n > 1 else ''}" for n, what in counts if n)


class TensorAccumulator:
    """Everything calibration keeps of one tensor: whole-tensor moments and histogram, per-channel moments, and
    for a constant (added once, ``channel_bins`` > 0) a histogram per channel. An activation gets none: C
    histograms per tensor would make memory grow with the channel count of every activation."""

    def __init__(self, axis: int | None, bins: int = BINS, channel_bins: int = 0) -> None:
        self.axis = axis
        self.whole = Moments(1)
        self.channels: Moments | None = None
        self.histogram = Histogram(bins)
        self.channel_bins = channel_bins
        self.channel_histograms: list[tuple[np.ndarray, float, float]] = []  # a constant's, per channel
        self.varying = False  # the axis changed length between samples: no per-slice statistics

    def add(self, value: np.ndarray) -> None:
        x = np.asarray(value, dtype=np.float64)
        if (found := non_finite(x)) is not None:
            raise NonFinite(f"holds {found}")
        self.whole.add(x.reshape(1, -1))
        if self.channel_bins:  # a constant: its exact histogram, once
            self.histogram = Histogram.of_constant(x, self.histogram.bins)
        else:
            self.histogram.add(x)
        if self.axis is not None and x.ndim > self.axis and not self.varying:
            per = np.moveaxis(x, self.axis, 0).reshape(x.shape[self.axis], -1)
            if self.channels is None:
                self.channels = Moments(per.shape[0])
            if self.channels.mean.size != per.shape[0]:  # axis 1 is no channel axis here (a sequence length):
                self.channels, self.varying = None, True  # per-slice statistics would cover some samples only
                return
            self.channels.add(per)
            if self.channel_bins:
                if self.channels.count != per.shape[1]:
                    raise ValueError("per-channel histograms are for a constant, added once")
                self.channel_histograms = [_equal_bins(row, self.channel_bins) for row in per]

    def channel_statistics(self, index: int) -> Statistics:
        stats = self.channels.statistics(index)
        if not self.channel_histograms:
            return stats
        counts, lo, hi = self.channel_histograms[index]
        return dataclasses.replace(stats, histogram_edges=tuple(_equal_edges(lo, hi, counts.size).tolist()),
                                   histogram_counts=tuple(counts.tolist()))

    @property
    def count(self) -> int:
        return self.whole.count


def _equal_bins(values: np.ndarray, bins: int) -> tuple[np.ndarray, float, float]:
    """(counts, min, max): numpy's histogram of ``values`` in min(bins, values) equal bins over [min, max]. The
    edges are not kept (``_equal_edges`` makes numpy's again) and the counts take the smallest unsigned type:
    a model's weights are thousands of constants."""
    lo, hi = float(values.min()), float(values.max())
    if lo == hi:
        counts = np.array([values.size])
    else:
        counts = np.histogram(values, bins=min(bins, values.size), range=(lo, hi))[0]
    return counts.astype(np.min_scalar_type(values.size)), lo, hi


def _equal_edges(lo: float, hi: float, bins: int) -> np.ndarray:
    """The edges np.histogram uses for ``bins`` equal bins over [lo, hi]; one value: one bin from it to the next
    float, so that the edges still increase."""
    if lo == hi:
        return np.array([lo, np.nextafter(lo, np.inf)])
    return np.linspace(lo, hi, bins + 1)
