"""What AMD Quark's ExtendedQuantizeLinear and ExtendedDequantizeLinear share: how the scale and zero point lie
over the data, and which storage types the library computes.

Its library (``quark/onnx/operators/custom_ops``, PrepareForQDQ) takes one scale and one zero point for the whole
tensor when the scale holds one value, else one per slice along ``axis``, whose default is 0, not ONNX's 1 (the
library applies a per-channel axis to weights). The three inputs are required, the scale float32.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Corrected, Refused

QUARK_DOMAIN = "com.amd.quark"
# the storage types the library's CPU kernel computes by one formula; float16's result depends on how the library
# was built (with USE_NATIVE_OP_CAST it is a plain Cast that ignores the scale), so it is refused
INTEGER_STORAGE = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32))
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


class QuarkOp(Corrected):
    op_domain = QUARK_DOMAIN


def integer_attribute(name: str, value: Any) -> int:
    """``value`` of the integer attribute ``name``; Refused when the node gives another type (the library reads
    the attribute as an integer and fails otherwise)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise Refused(f"attribute {name} = {value} ({type(value).__name__}): the library reads an integer")
    return int(value)


def parameters(x: Any, scale: Any, zero_point: Any, axis: int | None) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    """(scale, zero point, storage dtype), the parameters shaped to broadcast against ``x``."""
    if zero_point is None:
        raise Refused("the zero point input is missing: the library requires all three inputs")
    scale, zero_point = np.asarray(scale), np.asarray(zero_point)
    if scale.dtype != np.float32:
        raise Refused(f"scale of {scale.dtype}: the library computes float32 scales only")
    storage = zero_point.dtype
    if storage not in INTEGER_STORAGE and storage != BFLOAT16:
        raise Refused(f"storage {storage}: the library computes 8-, 16- and 32-bit integers and bfloat16 by one "
                      "formula (float16 only through a Cast chosen when it is built)")
    shape = np.shape(x)
    if scale.size == 1 and scale.ndim <= 1:
        if zero_point.size != 1 or zero_point.ndim > 1:
            raise Refused(f"a single scale with a zero point of shape {list(zero_point.shape)}")
        return scale.reshape(()), zero_point.reshape(()), storage
    rank = len(shape)
    axis = 0 if axis is None else integer_attribute("axis", axis)
    if not -rank <= axis < rank:
        raise Refused(f"axis {axis} outside a tensor of rank {rank}")
    axis %= rank
    if scale.ndim != 1 or scale.shape[0] != shape[axis] or zero_point.shape != scale.shape:
        raise Refused(f"scale of shape {list(scale.shape)} and zero point of shape {list(zero_point.shape)} for axis "
                      f"{axis} of a tensor of shape {list(shape)}: the library takes one of each per slice")
    along = [1] * rank
    along[axis] = shape[axis]
    return scale.reshape(along), zero_point.reshape(along), storage
