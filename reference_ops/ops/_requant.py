"""Shared requantization steps: zero-point offsets and fixed-point output."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.reference_ops import fixed_point
from onnx_qtypes.reference_ops.quant import broadcast_parameters, storage_range, to_storage


def offsets(q: np.ndarray, qtype: QType) -> np.ndarray:
    """``q - zero_point`` (int64), the integer a real value is ``scale`` times."""
    _, zero_point = broadcast_parameters(qtype, q.shape)
    return q.astype(np.int64) - zero_point


def scales(qtype: QType, shape: Sequence[int]) -> np.ndarray:
    """The scale of every element, as an array broadcastable to ``shape``."""
    return broadcast_parameters(qtype, shape)[0]


def output(terms: Sequence[tuple[np.ndarray, np.ndarray | float]], out: QType, shape: Sequence[int]) -> np.ndarray:
    """Storage of ``zero_point + round(sum(term * real_multiplier))`` in type ``out``.

    Multipliers are real (>= 0) and become 31-bit fixed-point multipliers;
    the sum is rounded once, half to even.
    """
    _, zero_point = broadcast_parameters(out, shape)
    lo, hi = storage_range(out)
    values = fixed_point.rescale(terms, zero_point, lo, hi)
    return to_storage(np.broadcast_to(values, tuple(shape)), out)


def convert(q: np.ndarray, in_scale: np.ndarray | float, in_zero_point: np.ndarray | int, out: QType) -> np.ndarray:
    """Storage ``q`` with per-element parameters (in_scale, in_zero_point), requantized to ``out``.

    Where the scales are equal this is an exact integer shift of the zero
    point, otherwise one fixed-point multiply.
    """
    out_scale, out_zero_point = broadcast_parameters(out, q.shape)
    lo, hi = storage_range(out)
    shift = q.astype(np.int64) - in_zero_point
    if np.array_equal(np.broadcast_to(in_scale, q.shape), np.broadcast_to(out_scale, q.shape)):
        return to_storage(np.clip(shift + out_zero_point, lo, hi), out)
    return to_storage(fixed_point.rescale([(shift, np.asarray(in_scale) / out_scale)], out_zero_point, lo, hi), out)


def convert_type(q: np.ndarray, source: QType, out: QType) -> np.ndarray:
    """Storage ``q`` of type ``source`` requantized to ``out`` (element-wise)."""
    scale, zero_point = broadcast_parameters(source, q.shape)
    return convert(q, scale, zero_point, out)
