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


def parameters(lo: np.ndarray | float, hi: np.ndarray | float, storage: Storage, axis: int | None = None) -> QType:
    """The static type for range(s) [lo, hi]: per tensor (scalars) or per slice along ``axis`` (vectors)."""
    lo, hi = np.atleast_1d(np.asarray(lo, np.float64)), np.atleast_1d(np.asarray(hi, np.float64))
    if axis is None:
        return dynamic_parameters(np.array([lo[0], hi[0]]), storage.qtype())
    per = dynamic_parameters(np.stack([lo, hi], axis=1), storage.qtype(axis=0))  # [C, 2]: slices along axis 0
    return per.replace(axis=axis)


def round_trip(storage: Storage):
    """(lo, hi) -> the quantize-dequantize function of that range's per-tensor parameters."""

    def for_range(lo: float, hi: float):
        qt = parameters(lo, hi, storage)
        return lambda x: dequantize(quantize(x, qt), qt).astype(np.float64)

    return for_range
