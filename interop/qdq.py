"""Write a QType back as QuantizeLinear / DequantizeLinear nodes and their parameter tensors.

The inverse of ``parameters.read_parameters``: scales are stored in the
expressed type, zero points in the storage type, shaped scalar (per-tensor),
1-D (per-axis) or like the tensor with the axis divided into blocks
(blocked, QuantizeLinear-21 layout). A scale that the expressed type cannot
hold exactly is refused: rounding it would change what the model computes.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from onnx import NodeProto, TensorProto, helper, numpy_helper

from onnx_qtypes.interop.errors import LowerError
from onnx_qtypes.proto.parameter_layout import parameter_shape
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.schema import Schema


def stored_scales(qtype: QType, tensor: str) -> np.ndarray:
    """The type's scales in its expressed type, as a Q/DQ node stores them; LowerError when one is not exactly
    representable there (no QDQ node can say it)."""
    scale = np.asarray(qtype.scale, dtype=np.float64)
    stored = scale.astype(qtype.expressed_type.np_dtype)
    if not np.array_equal(stored.astype(np.float64), scale):
        bad = int(np.flatnonzero(stored.astype(np.float64) != scale)[0])
        raise LowerError(
            f"tensor {tensor!r}: scale {float(scale[bad])!r} is not exactly representable in {qtype.expressed} "
            f"(nearest {float(stored[bad])!r}); QuantizeLinear/DequantizeLinear store scales in the expressed type, "
            "so round the scale in the type first"
        )
    return stored


def parameter_arrays(qtype: QType, shape: tuple[int | None, ...] | None, tensor: str) -> tuple[np.ndarray, np.ndarray]:
    """(scale, zero point) arrays as Q/DQ inputs for a tensor of ``shape``."""
    stored = stored_scales(qtype, tensor)
    zero_point = np.asarray(qtype.zero_point, dtype=np.int64).astype(qtype.storage_type.np_dtype)
    if qtype.axis is None:
        return stored.reshape(()), zero_point.reshape(())
    if qtype.block_size is None:
        return stored, zero_point
    target = None if shape is None else parameter_shape(qtype, shape)
    if target is None or any(d is None for d in target):
        raise LowerError(f"tensor {tensor!r}: a blocked type needs the tensor's full static shape to lay out its scales")
    return stored.reshape(target), zero_point.reshape(target)


def microscaling(qtype: QType) -> bool:
    """An OCP MX type: float storage, blocked, SYMMETRIC_POW2_SCALE, every scale 2^k with -127 <= k <= 127. Its
    scales are written as FLOAT8E8M0 (exponent + 127 in one byte), the layout MX kernels read (types.md#microscaling)."""
    if not (qtype.storage_type.is_float and qtype.block_size is not None and qtype.scale
            and qtype.schema is Schema.SYMMETRIC_POW2_SCALE):
        return False
    mantissa, exponent = np.frexp(np.asarray(qtype.scale, dtype=np.float64))
    return bool(np.all(mantissa == 0.5) and np.all((exponent - 1 >= -127) & (exponent - 1 <= 127)))


def parameter_tensors(
    qtype: QType, shape: tuple[int | None, ...] | None, tensor: str, scale_name: str, zero_point_name: str
) -> tuple[TensorProto, TensorProto | None]:
    """Initializers for the parameters; no zero point for int32 with all zeros (DequantizeLinear's rule); E8M0
    scales for a microscaling type."""
    scale, zero_point = parameter_arrays(qtype, shape, tensor)
    zp = numpy_helper.from_array(zero_point, zero_point_name)
    if qtype.storage == "int32" and not np.any(zero_point):
        zp = None
    if microscaling(qtype):
        # powers of two 2^-127 .. 2^127 (microscaling checked it): ml_dtypes' E8M0 holds each exactly
        return numpy_helper.from_array(scale.astype(np.float64).astype(ml_dtypes.float8_e8m0fnu), scale_name), zp
    return numpy_helper.from_array(scale, scale_name), zp


def _attributes(qtype: QType) -> dict[str, int]:
    attrs: dict[str, int] = {}
    if qtype.axis is not None:
        attrs["axis"] = qtype.axis
    if qtype.block_size is not None:
        attrs["block_size"] = qtype.block_size
    return attrs


def quantize_node(x: str, y: str, scale: str, zero_point: str | None, qtype: QType, name: str) -> NodeProto:
    inputs = [x, scale] + ([zero_point] if zero_point else [])
    attrs = _attributes(qtype)
    if zero_point is None:
        attrs["output_dtype"] = qtype.storage_type.data_type
    return helper.make_node("QuantizeLinear", inputs, [y], name=name, **attrs)


def dequantize_node(x: str, y: str, scale: str, zero_point: str | None, qtype: QType, name: str) -> NodeProto:
    inputs = [x, scale] + ([zero_point] if zero_point else [])
    attrs = _attributes(qtype)
    if microscaling(qtype):  # E8M0 scales: the float output's type is not the scale's, so it is named
        attrs["output_dtype"] = qtype.expressed_type.data_type
    return helper.make_node("DequantizeLinear", inputs, [y], name=name, **attrs)
