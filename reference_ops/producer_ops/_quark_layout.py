"""What AMD Quark's ExtendedQuantizeLinear and ExtendedDequantizeLinear share: their inputs, how the scale and zero
point lie over the data (checked for float16 storage too, which then ignores them), and which storage types the
library computes.

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
INTEGER_STORAGE = tuple(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32))
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
# float16 storage: the CPU library is built with USE_NATIVE_OP_CAST (custom_op_qdq.h defines it), which casts,
# clipped to float16's range, and ignores the scale and the zero point
FLOAT16 = np.dtype(np.float16)
# the one NaN of onnxruntime's BFloat16 (kPositiveQNaNBits), which the library's bfloat16 quantize writes for any NaN
BFLOAT16_NAN_BITS = 0x7FC1


class QuarkOp(Corrected):
    op_domain = QUARK_DOMAIN


def operands(op_type: str, inputs: tuple, count: int) -> tuple:
    """``inputs`` when the node gives exactly ``count`` of them, none omitted; Refused otherwise (the library
    refuses the graph)."""
    if len(inputs) != count or any(i is None for i in inputs):
        given = ", ".join("omitted" if i is None else "one" for i in inputs) or "none"
        raise Refused(f"{op_type} takes {count} input(s), all given; the node gives {len(inputs)} ({given})")
    return inputs


def integer_attribute(name: str, value: Any) -> int:
    """``value`` of the integer attribute ``name``; Refused when the node gives another type (the library would
    not read it and take its default instead: refused as a node that says something the library ignores)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise Refused(f"attribute {name} = {value} ({type(value).__name__}) is not an integer: the library would "
                      "ignore it and take its default")
    return int(value)


def parameters(x: Any, scale: Any, zero_point: Any, axis: int | None) -> tuple[np.ndarray, np.ndarray, np.dtype]:
    """(scale, zero point, storage dtype), the parameters shaped to broadcast against ``x``."""
    scale, zero_point = np.asarray(scale), np.asarray(zero_point)
    if scale.dtype != np.float32:
        raise Refused(f"scale of {scale.dtype}: the library computes float32 scales only")
    storage = zero_point.dtype
    if storage not in INTEGER_STORAGE and storage not in (BFLOAT16, FLOAT16):
        raise Refused(f"storage {storage}: the library computes 8-, 16- and 32-bit integers, bfloat16 and float16")
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
