"""Quantization parameters given as operator operands (QuantizeLinear /
DequantizeLinear inputs and attributes), read as a QType.

The boundary ops of a typed model must use the parameters of the type on
their integer side; these helpers read the ONNX operand layout (scalar
scale = per-tensor, 1-D with ``axis`` = per-axis, rank-N with
``block_size`` = blocked) and compare it with a type element by element.
"""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np

from onnx_qtypes.proto.errors import QTypeError
from onnx_qtypes.proto.parameter_values import scales_as_stated
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.storage_types import EXPRESSED_TYPES, STORAGE_TYPES
from onnx_qtypes.reference_ops.quant import broadcast_parameters

__all__ = ["boundary_type", "operand_qtype", "same_parameters"]


def _expressed_name(dtype: np.dtype) -> str:
    for e in EXPRESSED_TYPES.values():
        if e.np_dtype == dtype:
            return e.name
    return "float32"


def operand_qtype(
    storage: str,
    scale: np.ndarray,
    zero_point: np.ndarray | None,
    shape: Sequence[int],
    axis: int = 1,
    block_size: int = 0,
) -> QType:
    """The QType that Q/DQ operands describe for a tensor of ``shape``.

    ``axis`` may be negative (ONNX normalizes it by the tensor's rank).
    Raises QTypeError when the operands do not form a valid type.
    """
    scale = np.asarray(scale)
    zps = np.zeros(scale.shape, np.int64) if zero_point is None else np.asarray(zero_point).astype(np.int64)
    expressed = _expressed_name(scale.dtype)
    if storage not in STORAGE_TYPES:
        raise QTypeError("storage", f"{storage} is not a storage integer type")
    if zero_point is not None and STORAGE_TYPES[storage].is_float and np.any(np.asarray(zero_point, np.float64)):
        raise QTypeError("zero_point", f"{storage} zero points must be 0, found a non-zero one")
    if scale.size == 1 and not block_size:
        return QType(storage, float(scale.reshape(-1)[0]), int(zps.reshape(-1)[0]), expressed=expressed)
    rank = len(shape)
    axis = axis + rank if axis < 0 else axis
    if block_size:
        return QType(storage, scale.reshape(-1), zps.reshape(-1), axis=axis, block_size=block_size, expressed=expressed)
    return QType(storage, scale.reshape(-1), zps.reshape(-1), axis=axis, expressed=expressed)


def same_parameters(a: QType, b: QType, shape: Sequence[int]) -> bool:
    """True when every element of a tensor of ``shape`` gets the same (scale, zero point) under both."""
    sa, za = broadcast_parameters(a, shape)
    sb, zb = broadcast_parameters(b, shape)
    full = tuple(shape)
    return bool(
        np.array_equal(np.broadcast_to(sa, full), np.broadcast_to(sb, full))
        and np.array_equal(np.broadcast_to(za, full), np.broadcast_to(zb, full))
    )


def boundary_type(
    declared: QType,
    scale: np.ndarray,
    zero_point: np.ndarray | None,
    shape: Sequence[int],
    axis: int = 1,
    block_size: int = 0,
    tensor: str | None = None,
) -> QType:
    """The static type a boundary Q/DQ op converts with.

    A static ``declared`` type must equal the operands element by element
    (QTypeError otherwise); a dynamic one takes the operands' parameters,
    which is how run-time parameters are bound to it.
    """
    scale_dtype, expressed = np.asarray(scale).dtype, declared.expressed_type.np_dtype
    if not declared.is_dynamic and scale_dtype not in (expressed, ml_dtypes.float8_e8m0fnu):  # (E8M0: MX blocks)
        raise QTypeError("scale", f"the op's scale is {scale_dtype}, but the type ({declared}) is expressed in "
                         f"{declared.expressed}; a boundary op's scale input has the expressed type", tensor)
    operands = operand_qtype(declared.storage, scale, zero_point, shape, axis=axis, block_size=block_size)
    if declared.is_dynamic:
        return declared.replace(scale=operands.scale, zero_point=operands.zero_point, axis=operands.axis,
                                block_size=operands.block_size)
    # the type's scales as the scale input's type states them (validity.md#qt307): a double scale no float32 holds
    # is the float32 nearest it in the node, and the tensor's values are still the type's
    stated = declared.replace(scale=scales_as_stated(declared.scale, scale_dtype, expressed), validate=False)
    if not same_parameters(stated, operands, shape):
        raise QTypeError(
            "scale",
            f"the op's scale / zero point operands ({operands}) differ from the type ({declared})"
            f"{_first_difference(operands, declared)}; a boundary op must use the parameters of the type it converts",
            tensor,
        )
    return declared


def _first_difference(a: QType, b: QType) -> str:
    """Exact values where the short forms of two types print alike (e.g. float32 0.02 vs double 0.02)."""
    if str(a) != str(b):
        return ""
    for field in ("scale", "zero_point"):
        for i, (x, y) in enumerate(zip(getattr(a, field), getattr(b, field))):
            if x != y:
                return f" at {field}[{i}]: {x!r} vs {y!r}"
    return ""
