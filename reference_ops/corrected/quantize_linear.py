"""QuantizeLinear as onnx.reference computes it, except where it casts to int32 first (``np.rint(x / scale)
.astype(int32)``, then adds the zero point in int32): a quotient that is infinite, NaN or beyond int32 became
int32's lowest value, and that plus a negative zero point wrapped around. Into integer storage:

- a zero scale is refused. ONNX defines saturate(round(x / 0) + zero point), the storage range's end for
  x != 0 (onnxruntime's result), and 0 / 0 not at all;
- an infinite or huge quotient saturates to the storage range's end on its side, as ONNX defines it (+inf into
  int8: 127, where onnx.reference gave -128; onnxruntime gives 127);
- a NaN quotient (NaN in, or inf / inf) is the storage's lowest value, as onnxruntime's unoptimized path gives it
  (ONNX leaves it undefined; onnx.reference gave the lowest or, with a negative zero point, the highest).

Only a node no type covers gets here (a lift keeps one as written: proposal/spec/interop.md#lift-untypeable-scales);
a typed QuantizeLinear runs its type's quantize."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto, helper

from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.storage_types import STORAGE_BY_DATA_TYPE
from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused, refuse_axis_out_of_range
from onnx_qtypes.reference_ops.quant import parameter_index, round_half_to_even, saturated


class QuantizeLinear(Corrected):
    def _run(self, x: Any, y_scale: Any, y_zero_point: Any = None, **attributes: Any) -> tuple:
        refuse_axis_out_of_range(self.onnx_node, x, y_scale, attributes.get("axis"))
        storage = _storage(y_zero_point, attributes.get("output_dtype"))
        integer = storage is not None and not storage.is_float  # float8 / float4 round to their own values
        if np.any(np.asarray(y_scale) == 0) and integer:
            raise Refused("scale 0 into integer storage: x / 0 saturates to the storage range's end as ONNX "
                          "defines it, which onnx.reference does not compute")
        operands = (x, y_scale) if y_zero_point is None else (x, y_scale, y_zero_point)
        stored = self.stock().run(*operands)  # its own attributes, as its version has them (no later 'precision')
        if not integer:
            return stored
        axis, block_size = attributes.get("axis", 1), attributes.get("block_size") or 0
        precision = attributes.get("precision")
        scale = _broadcast(np.asarray(y_scale), np.shape(x), axis, block_size, storage)
        wide = helper.tensor_dtype_to_np_dtype(precision) if precision else None
        with np.errstate(all="ignore"):  # the division onnx.reference makes, rounded as it rounds
            rounded = round_half_to_even(np.asarray(x, wide) / scale.astype(wide) if wide else np.asarray(x) / scale)
        # beyond int32 once the zero point (at most 2^16 in any storage) is added: where the cast goes wrong
        outside = ~np.isfinite(rounded) | (np.abs(rounded.astype(np.float64)) >= 2.0**31 - 2**16)
        if not outside.any():
            return stored
        # there a zero point moves no step past a storage end: saturated from the steps alone, NaN to the lowest
        ends = saturated(rounded.astype(np.float64), 0, storage.min, storage.max, nan=storage.min)
        return (np.where(outside, ends, stored[0]).astype(stored[0].dtype),)


def _broadcast(scale: np.ndarray, shape: tuple[int, ...], axis: int, block_size: int, storage: Any) -> np.ndarray:
    """``scale`` broadcastable to ``shape``, in its own dtype, laid out as a type lays out its parameters
    (``quant.parameter_index``: one value, per axis, or in blocks, the last cut to fit). The type holds the node's
    scales as they are, valid or not: the stock run has accepted their layout already."""
    per_tensor = scale.size == 1 and not block_size
    layout = QType(storage.name, scale.reshape(-1).astype(np.float64), [0] * scale.size,
                   axis=None if per_tensor else axis % len(shape), block_size=block_size or None, validate=False)
    return scale.reshape(-1)[parameter_index(layout, shape)]


def _storage(zero_point: Any, output_dtype: int | None) -> Any:
    """The StorageType the node writes: its zero point's type, else ``output_dtype``, else uint8 (None: a type no
    storage has)."""
    data_type = output_dtype or TensorProto.UINT8
    if zero_point is not None:
        data_type = helper.np_dtype_to_tensor_dtype(np.asarray(zero_point).dtype)
    return STORAGE_BY_DATA_TYPE.get(data_type)
