"""The report's clipped fraction, MSE and SQNR, estimated from calibration's histogram, against quantizing the
real samples themselves.

Each case streams samples into the accumulator calibration uses (the range grows from sample to sample), chooses
the range with a calibration method, takes the statistics calibration records, and compares the report's
estimates (``tensor_error``, what `show --format html` prints) with the truth computed from every sample value:
quantize, dequantize, and count.

Stated bounds (why each holds):

- clipped: the estimate spreads each bin's count evenly, so it can differ from the truth only in the two bins
  that hold a clipping threshold (``lo - scale/2`` and ``hi + scale/2``); |estimate - truth| <= the share of
  values in those bins. With a minmax range the histogram ends at the observed extremes, inside the thresholds,
  so both are 0.
- power E[x²]: each bin's true sum of x² lies between count·min(x²) and count·max(x²) over the bin, and so does
  the estimate: |estimate - truth| <= sum over bins of count·(max(x²) - min(x²)) / total.
- MSE = clipping part + rounding part. Clipping part (values beyond the range, error (x - hi)² or (lo - x)²):
  bounded per bin as the power is. Rounding part: the estimate takes scale²/12 per value, the mean of a
  uniform rounding error; for n values whose position within a step is spread evenly (a density that changes
  little within one step) the truth's relative standard deviation is sqrt(1/80 - 1/144)·12/sqrt(n) =
  0.894/sqrt(n), so the bound is 5 of those plus 1 % for the density's change within a step.
- SQNR: the interval 10·log10(power / MSE) takes over those bounds.

A point mass on a representable value (a Relu output's zeros, quantized exactly) has no rounding error, while
the estimate counts scale²/12 for each of its values too: there the MSE estimate is high by exactly that, and
the SQNR estimate low; never optimistic.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from onnx_qtypes.calibration.calibrate import statistics_of
from onnx_qtypes.calibration.parameters import Storage, parameters, round_trip
from onnx_qtypes.calibration.ranges import choose_range
from onnx_qtypes.calibration.running import TensorAccumulator
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.reference_ops.quant import dequantize, quantize
from onnx_qtypes.report.range_error import ranges, tensor_error

SAMPLES, VALUES = 40, 4096  # 163,840 values per tensor


def _normal(rng, i):
    return rng.normal(0.3, 1.0 + 0.05 * i, VALUES)


def _laplace(rng, i):  # heavy tails: percentile and entropy clip them
    return rng.laplace(0.0, 1.0, VALUES)


def _relu(rng, i):  # a Relu output: half its values are exactly 0, on a bin edge
    return np.maximum(rng.normal(0.0, 2.0, VALUES), 0.0)


def _narrow_first(rng, i):  # the reported case: a first sample far narrower than the rest
    return rng.uniform(-5.7, -5.2, VALUES) if i == 0 else np.clip(rng.normal(0.0, 1.5, VALUES), -5.7, 5.1)


DATA = {"normal": _normal, "laplace": _laplace, "relu": _relu, "narrow-first": _narrow_first}
STORAGE = {"uint8 asymmetric": Storage("uint8", Schema.ASYMMETRIC), "int8 symmetric": Storage("int8", Schema.SYMMETRIC)}


def _calibrated(data: str, method: str, storage: Storage):
    rng = np.random.default_rng(sorted(DATA).index(data))
    acc, values = TensorAccumulator(axis=None), []
    for i in range(SAMPLES):
        x = DATA[data](rng, i).astype(np.float32).astype(np.float64)
        acc.add(x.reshape(1, -1))
        values.append(x)
    lo, hi = choose_range(acc, method, symmetric=storage.schema.symmetric, levels=storage.levels,
                          round_trip=round_trip(storage), percentile=99.9)
    qtype = parameters(lo, hi, storage)
    return qtype, statistics_of(acc, method), np.concatenate(values)


def _bin_spread(edges: np.ndarray, counts: np.ndarray, f) -> float:
    """sum over bins of count · (max - min of f over the bin), f monotone on each side of its minimum."""
    a, b = edges[:-1], edges[1:]
    fa, fb = f(a), f(b)
    low = np.where((a < f.at) & (f.at < b), f(np.full_like(a, f.at)), np.minimum(fa, fb))
    return float(np.sum(counts * (np.maximum(fa, fb) - low)))


class _Square:
    at = 0.0

    def __call__(self, x):
        return x * x


class _Beyond:
    """(x - hi)² above hi and (lo - x)² below lo, 0 between: the clipping error."""

    def __init__(self, lo: float, hi: float) -> None:
        self.lo, self.hi, self.at = lo, hi, (lo + hi) / 2

    def __call__(self, x):
        return np.where(x > self.hi, (x - self.hi) ** 2, np.where(x < self.lo, (self.lo - x) ** 2, 0.0))


@pytest.mark.parametrize("storage", sorted(STORAGE))
@pytest.mark.parametrize("method", ["minmax", "percentile", "entropy", "mse"])
@pytest.mark.parametrize("data", sorted(DATA))
def test_estimates_match_quantizing_the_samples_within_the_stated_bounds(data, method, storage):
    qtype, statistics, x = _calibrated(data, method, STORAGE[storage])
    estimate, how = tensor_error(qtype, statistics)
    assert estimate is not None and how == "whole-tensor histogram"
    edges = np.asarray(statistics.tensor.histogram_edges)
    counts = np.asarray(statistics.tensor.histogram_counts, np.float64)
    assert (edges[0], edges[-1]) == (x.min(), x.max()) and counts.sum() == x.size

    step = abs(qtype.scale[0])
    (lo, hi), = ranges(qtype)
    error = dequantize(quantize(x, qtype), qtype).astype(np.float64) - x
    clipped = np.mean((x < lo - step / 2) | (x > hi + step / 2))
    # clipped: only the two bins holding a threshold can differ
    straddling = sum(counts[i] for t in (lo - step / 2, hi + step / 2)
                     if edges[0] < t < edges[-1] for i in [np.searchsorted(edges, t) - 1])
    assert abs(estimate.clipped - clipped) <= straddling / x.size + 1e-12
    if method == "minmax":  # the histogram ends at the extremes, inside the range: nothing is clipped
        assert estimate.clipped == clipped == 0.0

    # power: within the per-bin spread of x²
    assert abs(estimate.power - np.mean(x * x)) <= _bin_spread(edges, counts, _Square()) / x.size + 1e-12

    # MSE: clipping part bounded per bin; rounding part statistically, plus the bins holding lo or hi (the
    # estimate splits them between rounding and clipping by spreading their count evenly)
    beyond = (x < lo) | (x > hi)
    # a point mass on a representable value (a Relu output's zeros) has no rounding error: the estimate
    # counts scale²/12 for it too, so there it overstates the MSE by exactly that much
    exact = np.count_nonzero(x == 0.0) if data == "relu" else 0
    spread = x.size - np.count_nonzero(beyond) - exact
    round_true = np.sum(error[~beyond] ** 2) / x.size
    round_estimate = spread * step * step / 12 / x.size
    holding = sum(counts[i] for t in (lo, hi) if edges[0] < t < edges[-1] for i in [np.searchsorted(edges, t) - 1])
    clip_bound = _bin_spread(edges, counts, _Beyond(lo, hi)) / x.size + holding * step * step / 12 / x.size
    round_bound = round_estimate * (5 * 0.894 / math.sqrt(spread) + 0.01)
    assert abs(round_true - round_estimate) <= round_bound
    mse = np.mean(error**2)
    overstated = exact * step * step / 12 / x.size
    assert abs(estimate.mse - overstated - mse) <= clip_bound + round_bound + 1e-15
    assert mse <= estimate.mse + clip_bound + round_bound  # never optimistic

    # SQNR: between what the bounds on power and MSE allow
    power, power_bound = np.mean(x * x), _bin_spread(edges, counts, _Square()) / x.size
    bound = clip_bound + round_bound
    low = 10 * math.log10((power - power_bound) / (mse + overstated + bound))
    high = 10 * math.log10((power + power_bound) / max(mse + overstated - bound, 1e-300))
    assert low - 1e-9 <= estimate.sqnr_db <= high + 1e-9
    assert estimate.sqnr_db <= 10 * math.log10((power + power_bound) / max(mse - bound, 1e-300))  # never optimistic
