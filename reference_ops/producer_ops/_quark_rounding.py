"""The three roundings of AMD Quark's custom-op library (its rounding_mode_enum: 0 half away from zero, 1 a negative
tie upward, 2 half to even), written as its CPU kernels compute them, for float64 arrays that hold float32 values
(the kernels round floats: float32 values are exact in float64, and so are these steps on them)."""

from __future__ import annotations

import numpy as np


def std_round(v: np.ndarray) -> np.ndarray:
    """Half away from zero, as std::round (a zero keeps its sign)."""
    return np.trunc(v + np.copysign(0.5, v))


def dpu_round(v: np.ndarray) -> np.ndarray:
    """A negative tie upward (std::ceil), every other value as std::round: the library's dpu_round."""
    return np.where((v < 0) & (v - np.floor(v) == 0.5), np.ceil(v), std_round(v))


def py3_round(v: np.ndarray) -> np.ndarray:
    """Half to even, written as the library's py3_round: from the floor, so -0.3 gives +0 and -0 stays -0."""
    floor = np.floor(v)
    fraction = v - floor
    up = (fraction > 0.5) | ((fraction == 0.5) & (np.fmod(floor, 2) != 0))
    return np.where(up, floor + 1, floor)


ROUNDINGS = {0: std_round, 1: dpu_round, 2: py3_round}
