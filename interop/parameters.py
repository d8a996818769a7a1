"""Read the quantization parameters a node applies to one tensor, as a QType.

QuantizeLinear, DequantizeLinear and the QLinear* operators all carry the
same four facts as operator inputs and attributes: scale, zero point, axis
and block size. This module turns them into the QType the tensor gets, and
sorts what it cannot turn into two kinds:

- ``Unrecognized``: a pattern the extension does not type (parameters
  computed at run time, ...). The lift leaves the node as it
  was, with a warning.
- ``MalformedQDQError``: parameters that contradict the tensor they apply to
  (axis out of range, scale count not matching the axis, zero point shaped
  unlike the scale). onnxruntime refuses such a model at run time; the lift
  reports it instead of guessing.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from onnx_qtypes.interop.errors import MalformedQDQError
from onnx_qtypes.interop.graph import QDQ_OPS, GraphIndex
from onnx_qtypes.proto.encoding import stored_outside_type
from onnx_qtypes.proto.external import is_lazy
from onnx_qtypes.proto.parameter_layout import block_count
from onnx_qtypes.proto.parameter_references import lazy_values
from onnx_qtypes.proto.parameter_values import ParameterValues, any_nonzero
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.storage_types import EXPRESSED_BY_DATA_TYPE, STORAGE_BY_DATA_TYPE
from onnx_qtypes.proto.validity import node_axis_problem, scale_problem
from onnx_qtypes.proto.parameter_tensors import REFERENCE_THRESHOLD


_FEW = 64  # scales up to this many are checked as a Python list (per-tensor and per-channel parameters)


class Unrecognized(Exception):
    """A quantization pattern the lift leaves as it was (the message says why)."""


def _type_name(data_type: int | None) -> str:
    if data_type is None:
        return "unknown"
    try:
        return TensorProto.DataType.Name(data_type)
    except ValueError:
        return f"data type {data_type}"


def _shape_text(shape: tuple[int, ...] | tuple[int | None, ...]) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def read_parameters(
    ix: GraphIndex,
    node_index: int,
    data: str,
    scale: str,
    zero_point: str | None,
    *,
    axis: int | None,
    block_size: int = 0,
    storage: int | None = None,
    data_type: int | None = None,
    real_type: int | None = None,
) -> QType:
    """The QType node ``node_index`` gives tensor ``data`` (statistics not attached).

    ``axis`` is the node's axis attribute (None: the op has none, and a
    per-axis scale is invalid); ``storage`` is the storage type to assume
    when there is no zero point (QuantizeLinear's output_dtype, or the
    tensor's own element type); ``data_type`` is the integer tensor's own
    element type when known, which the storage type must equal; ``real_type`` is the float side's element
    type (QuantizeLinear's input, DequantizeLinear's output_dtype), the expressed type when the scale is
    FLOAT8E8M0 (a microscaling block scale, opset 24), which is not one.
    """
    scales = ix.constant(scale)
    scale_dtype = ix.constant_dtype(scale)  # (read once: the key and the reading both ask)
    if scales is not None:
        key = _key(ix, data, scale, scales, scale_dtype, zero_point, axis, block_size, storage, data_type, real_type)
        known = ix.memo.get(key)
        if known is not None:  # the same parameters read before (a QuantizeLinear's DequantizeLinear): one object
            return known
    where = _Where(ix, node_index, data)

    def at(rule: str, parameter: str | None) -> dict:
        """What a MalformedQDQError says besides its message: the rule it breaks, the node, the tensor and the
        input ("scale", "zero_point": the node's input of that name) or attribute at fault."""
        named = {"scale": scale, "zero_point": zero_point}.get(parameter or "", parameter)
        return {"rule": rule, "node": node_index, "tensor": data, "parameter": named}

    if scales is None:
        raise Unrecognized(
            f"{where}: scale {scale!r} is not a constant (a graph input, or computed at run time), "
            "so the tensor has no static type"
        )
    found: list[MalformedQDQError] = []  # independent problems: each is reported, not only the first
    try:
        qtype = _read(ix, where, at, found, data, scale, scales, scale_dtype, zero_point, axis, block_size, storage,
                      data_type, real_type)
    except Unrecognized:
        if found:  # what was already found malformed is reported, not hidden behind what the lift cannot type
            raise _joined(found) from None
        raise
    if found:
        raise _joined(found)
    assert qtype is not None
    ix.memo[key] = qtype
    return qtype


class _Where:
    """How a message names node ``node_index`` and tensor ``data``, formatted only when a message is made."""

    __slots__ = ("data", "ix", "node_index")

    def __init__(self, ix: GraphIndex, node_index: int, data: str) -> None:
        self.ix, self.node_index, self.data = ix, node_index, data

    def __str__(self) -> str:
        return f"{self.ix.label(self.node_index)}, tensor {self.data!r}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


def _key(ix: GraphIndex, data: str, scale: str, scales: np.ndarray, scale_dtype: int | None, zero_point: str | None,
         axis: int | None, block_size: int, storage: int | None, data_type: int | None, real_type: int | None) -> tuple:
    """What read_parameters' QType depends on. The tensor's shape and axis only count when the scale is not a
    single value, the tensor itself only when the type may name its parameter initializers (by reference),
    ``storage`` only without a zero point (the zero point's type is the storage then), ``real_type`` only for a
    FLOAT8E8M0 scale."""
    single = scales.size == 1 and scales.ndim <= 1 and not block_size
    return ("parameters", scale, zero_point, block_size, None if zero_point else storage, data_type,
            real_type if scale_dtype == TensorProto.FLOAT8E8M0 else None,
            None if single else (axis, ix.shape(data)),
            data if scales.size > REFERENCE_THRESHOLD else None)


def _joined(found: list[MalformedQDQError]) -> MalformedQDQError:
    """The first problem, carrying the others (``also``)."""
    first = found[0]
    first.also = found[1:]
    return first


def _read(ix: GraphIndex, where: str, at, found: list[MalformedQDQError], data: str, scale: str,
          scales: np.ndarray, scale_dtype: int | None, zero_point: str | None, axis: int | None, block_size: int,
          storage: int | None, data_type: int | None, real_type: int | None = None) -> QType | None:
    """read_parameters' work: raises Unrecognized, appends each independent MalformedQDQError to ``found``
    (a zero point outside its type; its type unlike the tensor's; a count or axis problem; a bad scale) and
    then returns None."""
    zero_points = None
    if zero_point:
        zero_points = ix.constant(zero_point)
        if zero_points is None:
            raise Unrecognized(f"{where}: zero point {zero_point!r} is not a constant (a graph input, or computed at run time)")
        storage = ix.constant_dtype(zero_point)
        wrapped = stored_outside_type(ix.constant_tensor(zero_point))
        if wrapped is not None:
            st = STORAGE_BY_DATA_TYPE[storage]
            found.append(MalformedQDQError(
                f"{where}: zero point {zero_point!r}[{wrapped[0]}] is stored as {wrapped[1]}, outside {st.name} "
                f"[{st.min}, {st.max}]; runtimes read it wrapped around, as "
                f"{int(np.asarray(wrapped[1]).astype(st.np_dtype))}", **at("QT103", zero_point)))
    float_storage = storage in STORAGE_BY_DATA_TYPE and STORAGE_BY_DATA_TYPE[storage].is_float
    if zero_points is not None and float_storage and (nonzero := np.flatnonzero(zero_points.astype(np.float64) != 0)).size:
        first = int(nonzero[0])  # NaN counts: int64 would read it, and 0.5, as 0
        found.append(MalformedQDQError(f"{where}: zero point {zero_point!r}[{first}] is "
                                       f"{zero_points.reshape(-1)[first]}; a float storage type's zero point is 0",
                                       **at("QT121", zero_point)))
    if storage not in STORAGE_BY_DATA_TYPE:
        raise Unrecognized(
            f"{where}: stored as {_type_name(storage)}, which is not an integer storage type of the extension"
        )
    if data_type and data_type != storage:  # e.g. an int8 weight read with a uint8 zero point: ORT refuses it
        found.append(MalformedQDQError(
            f"{where}: the tensor is {_type_name(data_type)} but its zero point {zero_point!r} is "
            f"{_type_name(storage)}; the zero point has the tensor's type",
            **at("QT305", zero_point),
        ))
    expressed = scale_dtype
    if expressed == TensorProto.FLOAT8E8M0 and real_type in EXPRESSED_BY_DATA_TYPE:  # 2^(e-127): held exactly
        expressed = real_type
    if expressed not in EXPRESSED_BY_DATA_TYPE:
        raise Unrecognized(f"{where}: scale {scale!r} is {_type_name(expressed)}, not float, float16 or bfloat16")
    try:
        axis_, granular = _granularity(where, scale, scales, zero_point, zero_points, ix.shape(data), axis,
                                       block_size, at)
    except MalformedQDQError as exc:  # a count or axis problem; the scale's values are still read
        found.append(exc)
        axis_ = granular = None
    flat = np.asarray(scales, dtype=np.float64).reshape(-1)
    listed = flat.tolist() if flat.size <= _FEW else None  # a few values: judged as Python floats, fewer numpy calls
    if listed is not None:
        bad = next((v for v in listed if not (v != 0 and math.isfinite(v))), None)  # scale_problem's test
    else:
        bad_at = np.flatnonzero(~(np.isfinite(flat) & (flat != 0)))  # scale_problem's test, in one vector step
        bad = float(flat[bad_at[0]]) if bad_at.size else None
    if bad is not None:  # onnxruntime divides by it; no type stands for it, so nothing can be lifted
        found.append(MalformedQDQError(f"{where}: scale {scale!r}: {scale_problem(bad)}", **at("QT101", scale)))
    if found:
        return None
    scale_tensor = zero_point_tensor = None
    if axis_ is not None and flat.size > REFERENCE_THRESHOLD:  # kept where they are: parameters by reference
        scale_tensor = _own_initializer(ix, scale, data)
        zero_point_tensor = _own_initializer(ix, zero_point, data) if zero_point else None
    # by reference: held as the initializer holds them (proto.parameter_values), not as Python numbers
    scale_values = _held(ix, scale, scales, float) if scale_tensor else listed if listed is not None else flat.tolist()
    del flat
    if zero_points is None:  # by reference, none is none; listed, one 0 per scale
        zp_values = [] if scale_tensor else [0] * len(scale_values)
    elif zero_point_tensor:
        zp_values = _held(ix, zero_point, zero_points, int)
    else:
        zp_values = zero_points.astype(np.int64).reshape(-1).tolist()
    schema = Schema.ASYMMETRIC
    if scale_dtype == TensorProto.FLOAT8E8M0 and not any_nonzero(zp_values):
        schema = Schema.SYMMETRIC_POW2_SCALE  # E8M0 holds only powers of two: microscaling says so
    # Unvalidated: the fields are the same either way (a zero point outside a narrowed range is typed as written,
    # and the checker reports it), and the values were judged above.
    return QType.from_values(STORAGE_BY_DATA_TYPE[storage], scale_values, zp_values, axis_, granular,
                             EXPRESSED_BY_DATA_TYPE[expressed], schema, scale_tensor, zero_point_tensor)


def _held(ix: GraphIndex, name: str, values: np.ndarray, kind: type) -> ParameterValues:
    """An own initializer's values for a type naming it: mapped from its file on each use when it was left there
    (proto.external), else the array read already."""
    tensor = ix.constant_tensor(name)
    if tensor is not None and is_lazy(tensor):
        return lazy_values(tensor, kind)
    return ParameterValues.of_array(values, kind)


def _granularity(where: str, scale: str, scales: np.ndarray, zero_point: str | None, zero_points: np.ndarray | None,
                 shape: tuple[int | None, ...] | None, axis: int | None, block_size: int,
                 at) -> tuple[int | None, int | None]:
    """The type's axis and block size; MalformedQDQError on the first count or axis problem."""
    if zero_points is not None and zero_points.size != scales.size:
        raise MalformedQDQError(
            f"{where}: zero point {zero_point!r} has {zero_points.size} value(s) but scale {scale!r} has "
            f"{scales.size}; give one zero point per scale",
            **at("QT107", zero_point),
        )
    if block_size:
        return _blocked(where, scales, zero_points, shape, axis, block_size, at), block_size
    if scales.size == 1 and scales.ndim <= 1:
        return None, None  # a one-element 1-D scale is per-tensor (onnxruntime reads it so)
    if scales.ndim == 1:
        return _per_axis(where, scales, shape, axis, at), None
    raise MalformedQDQError(
        f"{where}: scale {scale!r} has shape {_shape_text(scales.shape)} but no block_size; "
        "use a scalar (per-tensor) or 1-D (per-axis) scale, or set block_size",
        **at("QT107", scale),
    )


def _own_initializer(ix: GraphIndex, name: str, data: str) -> str | None:
    """``name`` when it is an initializer read only as the scale or zero point of QuantizeLinear /
    DequantizeLinear nodes of ``data``, so that the type may name it (QT118); None otherwise."""
    if name not in ix.initializers or name in ix.input_set:
        return None
    for c, j in ix.consumers.get(name, ()):
        node = ix.nodes[c]
        side = node.output[0] if node.op_type == "QuantizeLinear" else node.input[0]
        if node.op_type not in QDQ_OPS or j not in (1, 2) or side != data:
            return None
    return name


def _normalized_axis(where: str, axis: int, rank: int | None, at) -> int:
    if rank is None:
        if axis < 0:
            raise Unrecognized(f"{where}: axis {axis} is negative and the tensor's rank is unknown")
        return axis
    if (problem := node_axis_problem(axis, rank)) is not None:
        raise MalformedQDQError(f"{where}: {problem}", **at("QT108", "axis"))
    return axis % rank


def _per_axis(where: str, scales: np.ndarray, shape: tuple[int | None, ...] | None, axis: int | None, at) -> int:
    if axis is None:
        raise MalformedQDQError(f"{where}: {scales.size} scales but the operator takes a single (per-tensor) scale",
                                **at("QT107", "scale"))
    rank = None if shape is None else len(shape)
    normalized = _normalized_axis(where, axis, rank, at)
    if shape is not None and shape[normalized] is not None and shape[normalized] != scales.size:
        raise MalformedQDQError(
            f"{where}: {scales.size} scales along axis {axis}, but that axis of shape {_shape_text(shape)} "
            f"has {shape[normalized]} slices; give one scale per slice",
            **at("QT107", "scale"),
        )
    return normalized


def _blocked(
    where: str,
    scales: np.ndarray,
    zero_points: np.ndarray | None,
    shape: tuple[int | None, ...] | None,
    axis: int | None,
    block_size: int,
    at,
) -> int:
    if block_size < 0:
        raise MalformedQDQError(f"{where}: block_size {block_size} must be > 0", **at("QT110", "block_size"))
    rank = scales.ndim if shape is None else len(shape)
    if scales.ndim != rank:
        raise MalformedQDQError(
            f"{where}: blocked scale has rank {scales.ndim} but the tensor has rank {rank}; they must match",
            **at("QT107", "scale"),
        )
    normalized = _normalized_axis(where, 1 if axis is None else axis, rank, at)
    if zero_points is not None and zero_points.shape != scales.shape:
        raise MalformedQDQError(
            f"{where}: zero point shape {_shape_text(zero_points.shape)} differs from scale shape "
            f"{_shape_text(scales.shape)}",
            **at("QT107", "zero_point"),
        )
    if shape is not None:
        expected = tuple(
            (None if d is None else block_count(d, block_size)) if i == normalized else d for i, d in enumerate(shape)
        )
        if any(e is not None and e != s for e, s in zip(expected, scales.shape)):
            raise MalformedQDQError(
                f"{where}: blocked scale has shape {_shape_text(scales.shape)}, but blocks of {block_size} along "
                f"axis {normalized} of shape {_shape_text(shape)} need {_shape_text(expected)}",
                **at("QT107", "scale"),
            )
    return normalized
