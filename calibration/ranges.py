"""Calibration methods: the real range [lo, hi] to quantize a tensor over, from its accumulated statistics.

- ``minmax``: the observed extremes.
- ``percentile``: the range holding ``percentile`` % of the values: for a
  symmetric schema the percentile of |x| (range ``[-t, t]``), otherwise the
  two tails of (100 - p) / 2 % each (onnxruntime's Percentile calibrator
  with its ``symmetric`` option off; by default it takes |x| for every tensor).
- ``entropy``: TensorRT's KL-divergence threshold, the one onnxruntime's
  Entropy calibrator follows: over the histogram of |x|, the threshold ``t``
  whose clipped distribution, merged into as many bins as ``[0, t]`` gets
  levels (all of them for an asymmetric type of non-negative values, half for
  values of both signs or a symmetric type), loses the least information
  (KL(P||Q)).
  The range is ``[-t, t]`` cut to the observed extremes, so a tensor with no
  negative values keeps its whole storage range for positive ones. A
  threshold whose round trip has more squared error over the histogram than
  the observed range's is not a candidate: on few samples KL(P||Q) rewards
  clipping a light tail by chance (measured in
  benchmarks/bench_calibration_accuracy.py), and clipping that loses even by
  the tensor's own error is never what the method is for.
- ``mse``: the range whose quantize-dequantize round trip, with the
  parameters the schema gives for it, has the least squared error over the
  histogram (a grid search of ranges shrunk from the observed extremes).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from onnx_qtypes.calibration.running import Histogram, TensorAccumulator
from onnx_qtypes.proto.statistics import CLIPPING_METHODS

METHODS = ("minmax", *CLIPPING_METHODS)
DEFAULT_PERCENTILE = 99.999
MSE_STEPS = 100
ENTROPY_VALUES_PER_BIN = 16

# (lo, hi) -> a quantize-dequantize of an array with that range's parameters
RoundTrip = Callable[[float, float], Callable[[np.ndarray], np.ndarray]]


def choose_range(acc: TensorAccumulator, method: str, *, symmetric: bool, levels: int,
                 round_trip: RoundTrip | None = None, percentile: float = DEFAULT_PERCENTILE) -> tuple[float, float]:
    """The whole-tensor range ``method`` picks; ``levels`` is the storage range's size (256 for int8)."""
    lo, hi = float(acc.whole.min[0]), float(acc.whole.max[0])
    if method == "minmax" or lo == hi:
        return lo, hi
    hist = acc.histogram
    if method == "percentile":  # cut to the observed extremes: the outer bins reach past them
        if symmetric:
            counts, edges = absolute(hist)
            t = quantile(counts, edges, percentile / 100.0)
            return max(lo, -t), min(hi, t)
        tail = (100.0 - percentile) / 200.0
        return max(lo, quantile(hist.counts, hist.edges, tail)), min(hi, quantile(hist.counts, hist.edges, 1.0 - tail))
    if method == "entropy":
        # the levels the range [0, t] gets: all of them for an asymmetric type of non-negative values (a Relu
        # output), half for values of both signs (or a symmetric type, whose range is [-t, t])
        target = max(levels if (lo >= 0 and not symmetric) else levels // 2, 1)
        counts, edges = absolute(hist, kl_bins(acc.count, target, hist.bins))
        if round_trip is None:
            raise ValueError("entropy needs the schema's round trip")
        full = round_trip_error(hist, round_trip, lo, hi)

        def no_worse(t: float) -> bool:
            return round_trip_error(hist, round_trip, max(lo, -t), min(hi, t)) <= full

        t = kl_threshold(counts, edges, target, admissible=no_worse)
        return max(lo, -t), min(hi, t)
    if method == "mse":
        if round_trip is None:
            raise ValueError("mse needs the schema's round trip")
        return mse_range(hist, lo, hi, round_trip)
    raise ValueError(f"unknown calibration method {method!r}; expected one of {', '.join(METHODS)}")


def kl_bins(count: int, target: int, most: int) -> int:
    """Bins of the |x| histogram the KL search runs on: about ENTROPY_VALUES_PER_BIN values per bin, at least
    ``target`` (then the only candidate is the whole range) and at most ``most``. On a sparse histogram the KL
    divergence rewards clipping by chance; TensorRT and onnxruntime leave the bin count fixed."""
    bins = target
    while bins * 2 <= min(most, count // ENTROPY_VALUES_PER_BIN):
        bins *= 2
    return bins


def absolute(hist: Histogram, bins: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The histogram of |x| over [0, max |edge|] in ``bins`` bins (each old bin counted at its centre)."""
    edges = hist.edges
    centres = np.abs((edges[:-1] + edges[1:]) / 2)
    top = float(max(abs(edges[0]), abs(edges[-1])))
    counts, new_edges = np.histogram(centres, bins=bins or hist.bins, range=(0.0, top), weights=hist.counts)
    return counts, new_edges


def quantile(counts: np.ndarray, edges: np.ndarray, q: float) -> float:
    """The value below which a fraction ``q`` of the counts lies (linear within a bin)."""
    cdf = np.cumsum(counts, dtype=np.float64)
    target = q * cdf[-1]
    i = int(np.searchsorted(cdf, target, side="left"))
    i = min(i, counts.size - 1)
    before = cdf[i - 1] if i else 0.0
    inside = counts[i]
    frac = (target - before) / inside if inside else 1.0
    return float(edges[i] + frac * (edges[i + 1] - edges[i]))


def kl_threshold(counts: np.ndarray, edges: np.ndarray, target_bins: int,
                 admissible: Callable[[float], bool] | None = None) -> float:
    """TensorRT's entropy calibration: the |x| threshold minimising KL(P || Q) among the ``admissible`` ones
    (the whole range always is)."""
    counts = counts.astype(np.float64)
    n = counts.size
    if n <= target_bins:
        return float(edges[-1])
    scored = []
    for i in range(target_bins, n + 1):
        p = counts[:i].copy()
        p[-1] += counts[i:].sum()  # P: the clipped tail counted at the threshold; Q: what the levels keep
        src = counts[:i]
        group = (np.arange(i) * target_bins) // i
        nonzero = src != 0
        sums = np.bincount(group, weights=src, minlength=target_bins)
        members = np.bincount(group, weights=nonzero, minlength=target_bins)
        q = np.where(nonzero, sums[group] / np.maximum(members[group], 1), 0.0)
        scored.append((_kl(p, q), -i))  # ties go to the wider threshold
    for _, minus_i in sorted(scored):
        t = float(edges[-minus_i])
        if -minus_i == n or admissible is None or admissible(t):
            return t
    return float(edges[-1])


def _kl(p: np.ndarray, q: np.ndarray) -> float:
    ps, qs = p.sum(), q.sum()
    if ps == 0 or qs == 0:
        return np.inf
    p, q = p / ps, q / qs
    mask = p > 0
    if np.any(q[mask] == 0):  # smooth as the reference implementations do: a tiny mass where Q has none
        q = np.where(q == 0, 1e-4 / q.size, q)
        q = q / q.sum()
    return float(np.sum(p[mask] * np.log(p[mask] / q[mask])))


def round_trip_error(hist: Histogram, round_trip: RoundTrip, lo: float, hi: float) -> float:
    """The histogram-weighted squared error of the round trip with range [lo, hi]'s parameters."""
    centres, weights = _populated(hist)
    return float(np.sum(weights * (centres - round_trip(lo, hi)(centres)) ** 2))


def _populated(hist: Histogram) -> tuple[np.ndarray, np.ndarray]:
    edges = hist.edges
    centres = (edges[:-1] + edges[1:]) / 2
    weights = hist.counts.astype(np.float64)
    keep = weights > 0
    return centres[keep], weights[keep]


def mse_range(hist: Histogram, lo: float, hi: float, round_trip: RoundTrip) -> tuple[float, float]:
    """The shrunk range [a·lo, a·hi], a in (0, 1], with the least histogram-weighted round-trip error."""
    best, best_err = (lo, hi), np.inf
    for a in np.linspace(1.0, 1.0 / MSE_STEPS, MSE_STEPS):
        cand = (lo * a, hi * a)
        err = round_trip_error(hist, round_trip, *cand)
        if err < best_err:
            best, best_err = cand, err
    return best
