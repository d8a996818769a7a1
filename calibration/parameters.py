"""Scale and zero point for a chosen real range, by the schema's formulas.

The formulas are the ones a dynamic type uses at run time
(``reference_ops.quant.dynamic_parameters``): calibration is the static case
of the same choice, made once from the calibrated range instead of per run.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.storage_types import EXPRESSED_TYPES
from onnx_qtypes.reference_ops.quant import dequantize, dynamic_parameters, quantize


@dataclasses.dataclass(frozen=True)
class Storage:
    """What a role is stored as: storage type, schema and (possibly narrowed) storage range."""

    type: str
    schema: Schema = Schema.ASYMMETRIC
    min: int | None = None
    max: int | None = None

    def qtype(self, axis: int | None = None) -> QType:
        return QType(self.type, schema=self.schema, storage_min=self.min, storage_max=self.max, axis=axis)

    @property
    def levels(self) -> int:
        qt = self.qtype()
        return int(qt.storage_max) - int(qt.storage_min) + 1


SMALLEST_NORMAL = EXPRESSED_TYPES["float32"].smallest_normal  # the scales calibrate writes are float32


def parameters(lo: np.ndarray | float, hi: np.ndarray | float, storage: Storage, axis: int | None = None) -> QType:
    """The static type for range(s) [lo, hi]: per tensor (scalars) or per slice along ``axis`` (vectors).

    A range so narrow that its scale would be below float32's smallest normal number (a trained model's dead
    channel: weights of 1e-40) is taken as the all-zero range it nearly is, whose scale is normal: a subnormal
    scale is flushed to 0 by some hardware (QT102), and a bias scale, input scale times it, reaches 1e-43,
    where the int32 bias saturates and the channel loses its bias. onnxruntime's quantizer likewise gives such a
    range scale 1. Its values then quantize to 0, less than 1e-37 away."""
    lo, hi = np.atleast_1d(np.asarray(lo, np.float64)), np.atleast_1d(np.asarray(hi, np.float64))
    if axis is None:
        lo, hi = lo[:1], hi[:1]
    qtype = _from_ranges(lo, hi, storage, axis is not None)
    tiny = np.asarray(qtype.scale, np.float64) < SMALLEST_NORMAL
    if tiny.any():
        qtype = _from_ranges(np.where(tiny, 0.0, lo), np.where(tiny, 0.0, hi), storage, axis is not None)
    return qtype if axis is None else qtype.replace(axis=axis)


def _from_ranges(lo: np.ndarray, hi: np.ndarray, storage: Storage, per_axis: bool) -> QType:
    if not per_axis:
        return dynamic_parameters(np.array([lo[0], hi[0]]), storage.qtype())
    return dynamic_parameters(np.stack([lo, hi], axis=1), storage.qtype(axis=0))  # [C, 2]: slices along axis 0


def round_trip(storage: Storage):
    """(lo, hi) -> the quantize-dequantize function of that range's per-tensor parameters."""

    def for_range(lo: float, hi: float):
        qt = parameters(lo, hi, storage)
        return lambda x: dequantize(quantize(x, qt), qt).astype(np.float64)

    return for_range
