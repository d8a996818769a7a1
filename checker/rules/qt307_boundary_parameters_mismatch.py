"""A QuantizeLinear / DequantizeLinear uses parameters other than its quantized type's.

## What it checks
Inside a typed model, a QuantizeLinear whose output is quantized, or a
DequantizeLinear whose input is quantized, is a boundary between float and
quantized values. Its constant `scale` and `zero_point` inputs and its
`axis` / `block_size` attributes must state exactly the type's parameters:
- the same granularity (scalar scale for per-tensor, 1-D of `dim(axis)` for
  per-axis, the parameter shape for blocked), the same normalized `axis` and
  `block_size`;
- scales equal bitwise once the type's scales are cast to the scale input's
  type, which must be the expressed type (or FLOAT8E8M0, the microscaling
  block scale of opset 24, which must hold the type's powers of two exactly,
  with no rounding);
- zero points equal (an absent zero-point input means 0; QuantizeLinear
  without one produces `output_dtype`, by default uint8, which must be the
  storage type).
A dynamic type must not be produced or read with constant parameters.

## Why
The type is the tensor's only real-value representation. A boundary op that
quantizes with other parameters writes integers the type would read
differently: the QDQ failure the extension exists to rule out (measured: Q
with scale 0.02 followed by DQ with scale 0.5 returns values 25x too large,
and onnx.checker accepts it).

## Invalid example
`x_q = QuantizeLinear(x, 0.05, 0)` with `x_q: int8:float32<0.02:0>`.

## Valid example
`x_q = QuantizeLinear(x, 0.02, 0)` with the same type.

## Fix
Make the node's scale / zero-point initializers equal the type's parameters
(or change the type); `onnx-qtypes lower` writes them from the type.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from onnx import TensorProto, helper

from onnx_qtypes.checker.context import Context, NodeRef, storage_of
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.float_view import expressed_data_type
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.parameter_layout import parameter_shape
from onnx_qtypes.proto.parameter_values import any_nonzero, scales_as_stated
from onnx_qtypes.proto.qtype import QType

QUANTIZE, DEQUANTIZE = "QuantizeLinear", "DequantizeLinear"


def boundary_type(ctx: Context, ref: NodeRef) -> tuple[str, QType] | None:
    """(quantized tensor name, its type) of a Q/DQ boundary node."""
    if not ref.is_onnx or ref.op_type not in (QUANTIZE, DEQUANTIZE):
        return None
    names = ref.outputs if ref.op_type == QUANTIZE else ref.inputs
    if not names or not names[0]:
        return None
    qt = ctx.qtype(ref.scope, names[0])
    return None if qt is None else (names[0], qt)


def _input(ref: NodeRef, index: int) -> str | None:
    return ref.inputs[index] if len(ref.inputs) > index and ref.inputs[index] else None


def _granularity(ref: NodeRef, qt: QType, scale: np.ndarray, rank: int | None) -> str | None:
    axis = ref.attr("axis", 1)
    block = ref.attr("block_size", 0) or None
    if rank is not None and axis < 0:
        axis += rank
    if qt.axis is None:
        return None if scale.size == 1 and scale.ndim <= 1 else (
            f"scale has shape {list(scale.shape)} (per-axis), but the type is per-tensor; use a scalar scale")
    if scale.size == 1 and scale.ndim == 0:
        return f"scale is a scalar (per-tensor), but the type is {qt.granularity} on axis {qt.axis}"
    if axis != qt.axis:
        return f"attribute axis {ref.attr('axis', 1)} selects axis {axis}, but the type's axis is {qt.axis}"
    if block != qt.block_size:
        return f"attribute block_size is {block or 0}, but the type's block_size is {qt.block_size or 0}"
    return None


def _check(ctx: Context, ref: NodeRef, name: str, qt: QType) -> Iterator[Finding]:
    scale_name, zp_name = _input(ref, 1), _input(ref, 2)
    if qt.is_dynamic and (qt.scale_tensor or qt.zero_point_tensor):
        return  # parameters by reference that cannot be read: QT117's finding, not a dynamic type
    scale = ctx.constant_array(ref.scope, scale_name) if scale_name else None
    zero_point = ctx.constant_array(ref.scope, zp_name) if zp_name else None
    if qt.is_dynamic:
        if scale is not None:
            yield Finding(ref.location("input", 1), f"{name!r} has a dynamic type ({qt}), but the node uses a "
                          "constant scale; compute it at run time or give the type static parameters")
        return
    if scale is None:
        return  # QT308
    expressed = expressed_data_type(qt)
    scale_type = ctx.elem_type(ref.scope, scale_name)
    if scale_type is not None and scale_type not in (expressed, TensorProto.FLOAT8E8M0):  # E8M0: opset-24 block scales
        yield Finding(ref.location("input", 1), f"scale is {helper.tensor_dtype_to_string(scale_type)}, but "
                      f"{name!r} is expressed in {qt.expressed}; the scale input must have the expressed type")
        return
    rank = len(shape) if (shape := ctx.shape(ref.scope, name)) is not None else None
    if problem := _granularity(ref, qt, scale, rank):
        yield Finding(ref.location("input", 1) if "scale" in problem else ref.location(), problem)
        return
    blocked = qt.block_size is not None and qt.block_size > 0
    expected_shape = parameter_shape(qt, shape) if shape is not None and blocked else None
    if expected_shape is not None and None not in expected_shape and tuple(scale.shape) != expected_shape:
        yield Finding(ref.location("input", 1), f"blocked scale has shape {list(scale.shape)}, the type's "
                      f"parameter shape is {list(expected_shape)}")
        return
    # (expressed: float32 where the type's own is invalid, another rule's finding)
    want = scales_as_stated(qt.scale, scale.dtype, helper.tensor_dtype_to_np_dtype(expressed))
    have = scale.astype(np.float64).reshape(-1)
    same_tensor = scale_name == qt.scale_tensor  # the initializer the type names: equal by construction
    if not same_tensor and (have.shape != want.shape or not np.array_equal(have, want, equal_nan=True)):
        index = _first_difference(have, want)
        yield Finding(ref.location("input", 1), f"scale {_show(have, index)} differs from the type of {name!r} "
                      f"({qt}): the node must use the type's scales exactly")
    yield from _check_zero_point(ctx, ref, name, qt, zero_point, zp_name)


def _check_zero_point(ctx: Context, ref: NodeRef, name: str, qt: QType, zero_point, zp_name) -> Iterator[Finding]:  # noqa: ANN001
    storage = storage_of(qt)
    if zp_name is None:
        if ref.op_type == QUANTIZE and storage is not None:
            produced = ref.attr("output_dtype", 0) or TensorProto.UINT8
            if produced != storage.data_type:
                yield Finding(ref.location(), f"without a zero-point input QuantizeLinear produces "
                              f"{helper.tensor_dtype_to_string(produced)}, but {name!r} stores {qt.storage}; "
                              "add a zero-point input of the storage type or set output_dtype")
        if any_nonzero(qt.zero_point):
            yield Finding(ref.location(), f"the node has no zero-point input (meaning 0), but {name!r} has zero "
                          f"points {list(qt.zero_point)[:4]}")
        return
    if zero_point is None:
        return  # QT308
    want = np.asarray(qt.zero_point, dtype=np.int64)
    have = zero_point.astype(np.int64).reshape(-1)
    if have.shape != want.shape or not np.array_equal(have, want):
        index = _first_difference(have, want)
        yield Finding(ref.location("input", 2), f"zero point {_show(have, index)} differs from the type of "
                      f"{name!r} ({qt}): the node must use the type's zero points exactly")


def _first_difference(have: np.ndarray, want: np.ndarray) -> int | None:
    if have.shape != want.shape:
        return None
    return int(np.flatnonzero(have != want)[0])


def _show(values: np.ndarray, index: int | None) -> str:
    if index is None:
        return f"has {values.size} values"
    return f"[{index}] = {values[index]:.9g}" if values.size > 1 else f"{values[0]:.9g}"


@rule("QT307", "boundary-parameters-mismatch", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for ref in ctx.nodes_of(QUANTIZE, DEQUANTIZE):
        found = boundary_type(ctx, ref)
        if found is not None:
            yield from _check(ctx, ref, *found)
