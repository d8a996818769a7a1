"""QuantizeLinear with a zero scale into integer storage: refused. ONNX defines saturate(round(x / 0) + zero point),
the storage range's end for x != 0 (onnxruntime's result); onnx.reference casts x / 0 = inf to int32 first and
returns its lowest value instead. Only a node no type covers gets here (a lift keeps one as written:
proposal/spec/interop.md#lift-untypeable-scales); a typed QuantizeLinear runs its type's quantize."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper

from onnx_qtypes.proto.storage_types import STORAGE_BY_DATA_TYPE
from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused


class QuantizeLinear(Corrected):
    def _run(self, x: Any, y_scale: Any, y_zero_point: Any = None, **attributes: Any) -> tuple:
        if np.any(np.asarray(y_scale) == 0) and not _float_storage(y_zero_point, attributes.get("output_dtype")):
            raise Refused("scale 0 into integer storage: x / 0 saturates to the storage range's end as ONNX "
                          "defines it, which onnx.reference does not compute")
        operands = (x, y_scale) if y_zero_point is None else (x, y_scale, y_zero_point)
        return self.stock().run(*operands)  # its own attributes, as its version has them (no later 'precision')


def _float_storage(zero_point: Any, output_dtype: int | None) -> bool:
    """Whether the node writes float storage (float8 / float4: x / 0 = inf rounds to the type's own value)."""
    data_type = output_dtype or 0  # no zero point: output_dtype, else uint8
    if zero_point is not None:
        data_type = helper.np_dtype_to_tensor_dtype(np.asarray(zero_point).dtype)
    storage = STORAGE_BY_DATA_TYPE.get(data_type)
    return storage is not None and storage.is_float
