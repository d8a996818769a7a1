"""Streaming statistics of one tensor: min, max, mean, std, count and a histogram.

Nothing of a sample is kept after it is counted: the moments merge by Chan's
parallel formula (Welford's update, one batch at a time), the histogram has a
fixed number of bins whose range grows as new values arrive. The growth is
exact: the bin width only ever doubles (2**k), and the new edges are chosen
on the old ones' lattice, so each new bin is the sum of 2**k whole old bins —
no count is split or interpolated. (onnxruntime's HistogramCollector keeps the
bin width and adds bins instead, so its memory grows with the data's range.)
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
    """A histogram of ``BINS`` bins over ``[lo, lo + bins * width)``, growing exactly by doubling the width."""

    def __init__(self, bins: int = BINS) -> None:
        self.bins = bins
        self.counts = np.zeros(bins, dtype=np.int64)
        self.lo = 0.0
        self.width = 0.0  # 0: nothing counted yet

    @property
    def edges(self) -> np.ndarray:
        return self.lo + self.width * np.arange(self.bins + 1)

    def add(self, x: np.ndarray) -> None:
        if x.size == 0:
            return
        lo, hi = float(x.min()), float(x.max())
        if self.width == 0.0:
            span = hi - lo
            self.width = span / self.bins if span > 0 else max(abs(lo), 1.0) * 2.0**-20
            self.lo = lo if span > 0 else lo - self.width * (self.bins // 2)
        else:
            self._grow(lo, hi)
        index = np.floor((x.reshape(-1) - self.lo) / self.width).astype(np.int64)
        np.clip(index, 0, self.bins - 1, out=index)  # the top edge belongs to the last bin
        self.counts += np.bincount(index, minlength=self.bins)

    def _grow(self, lo: float, hi: float) -> None:
        """Widen until [lo, hi] fits, merging groups of 2**k old bins into one."""
        top = self.lo + self.width * self.bins
        if lo >= self.lo and hi <= top:
            return
        k = 0
        while True:
            k += 1
            wide = self.width * 2**k
            shift = max(0, math.ceil((self.lo - lo) / wide))  # new bins added below the old range
            if self.lo - shift * wide + self.bins * wide >= hi and shift + self.bins // 2**k <= self.bins:
                break
        group = 2**k
        merged = self.counts.reshape(-1, group).sum(axis=1) if group <= self.bins else self.counts.sum(keepdims=True)
        counts = np.zeros(self.bins, dtype=np.int64)
        counts[shift:shift + merged.size] = merged
        self.counts, self.lo, self.width = counts, self.lo - shift * wide, wide

    def statistics_fields(self) -> dict:
        return {"histogram_edges": tuple(self.edges.tolist()), "histogram_counts": tuple(self.counts.tolist())}


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
        self.channel_histograms: list[tuple[np.ndarray, np.ndarray]] = []
        self.varying = False  # the axis changed length between samples: no per-slice statistics

    def add(self, value: np.ndarray) -> None:
        x = np.asarray(value, dtype=np.float64)
        if x.size and not np.all(np.isfinite(x)):
            raise ValueError("holds NaN or infinity; calibration needs finite values")
        self.whole.add(x.reshape(1, -1))
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
                self.channel_histograms = [_exact_histogram(row, self.channel_bins) for row in per]

    def channel_statistics(self, index: int) -> Statistics:
        stats = self.channels.statistics(index)
        if not self.channel_histograms:
            return stats
        counts, edges = self.channel_histograms[index]
        return dataclasses.replace(stats, histogram_edges=tuple(edges.tolist()),
                                   histogram_counts=tuple(int(c) for c in counts))

    @property
    def count(self) -> int:
        return self.whole.count


def _exact_histogram(values: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """(counts, edges) of ``values`` in at most ``bins`` bins over [min, max] (a constant slice: one unit-wide bin)."""
    lo, hi = float(values.min()), float(values.max())
    if lo == hi:
        return np.histogram(values, bins=1, range=(lo - 0.5, hi + 0.5))
    return np.histogram(values, bins=min(bins, values.size), range=(lo, hi))
