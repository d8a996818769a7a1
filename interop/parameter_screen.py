"""The QuantizeLinear / DequantizeLinear nodes whose parameters read_parameters would accept without a word, read in
bulk.

A QDQ file holds thousands of Q / DQ nodes, nearly all of one plain form: a float scale and an integer zero point,
each an initializer with its values in ``raw_data``, per-tensor or per-axis, at most an ``axis`` attribute. For
those, ``screen`` reads every scale and every zero point in one numpy step per data type and judges them all at
once; a node passes only when each test ``parameters.read_parameters`` makes (zero point count and type, axis in
range, one scale per slice, every scale finite and non-zero) is decided and passed, and it then gets the QType
read_parameters gives it. Every other node (a problem, a form the lift leaves, anything the screen does not decide)
is left to ``recognise_node``, so that read_parameters alone says what is wrong and where.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from onnx import AttributeProto, TensorProto

from onnx_qtypes.interop.graph import QDQ_OPS, GraphIndex
from onnx_qtypes.proto.parameter_tensors import REFERENCE_THRESHOLD
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.storage_types import EXPRESSED_BY_DATA_TYPE, STORAGE_BY_DATA_TYPE, byte_dtype

_FLOAT = EXPRESSED_BY_DATA_TYPE[TensorProto.FLOAT]
# integer storage types a zero point may hold (float8 / float4 storage and markers: left to read_parameters)
_INTEGER_STORAGE = frozenset(d for d, s in STORAGE_BY_DATA_TYPE.items() if not s.is_float and byte_dtype(d) is not None)


class Screened(NamedTuple):
    """A Q / DQ node the screen passed: the integer tensor it writes or reads, and that tensor's QType."""

    quantize: bool
    data: str
    qtype: QType


class _Values(NamedTuple):
    values: list  # Python floats (scales) or ints (zero points)
    ndim: int
    data_type: int


def screen(ix: GraphIndex, domains: frozenset[str]) -> dict[int, Screened]:
    """Node index -> what read_parameters reads for each Q / DQ node of ``ix`` (in ``domains``) in plain form."""
    candidates = []
    scale_names: dict[str, None] = {}
    zero_point_names: dict[str, None] = {}
    node_inputs, node_outputs, node_domains = ix.node_inputs, ix.node_outputs, ix.domains  # (the index read them)
    for i, op_type in enumerate(ix.op_types):
        if op_type not in QDQ_OPS or node_domains[i] not in domains:
            continue
        inputs = node_inputs[i]
        if len(inputs) != 3 or not all(inputs):
            continue
        output = node_outputs[i][0] if node_outputs[i] else ""
        axis = 1  # the operators' default
        attributes = ix.nodes[i].attribute
        if attributes:  # the only attribute of the plain form: an integer axis
            if len(attributes) != 1 or attributes[0].name != "axis" or attributes[0].type != AttributeProto.INT:
                continue
            axis = attributes[0].i
        if not output:
            continue
        quantize = op_type == "QuantizeLinear"
        candidates.append((i, quantize, output if quantize else inputs[0], inputs[1], inputs[2], axis))
        scale_names[inputs[1]] = None
        zero_point_names[inputs[2]] = None
    if not candidates:
        return {}
    scales = _read(ix, scale_names, frozenset({TensorProto.FLOAT}), finite_nonzero=True)
    zero_points = _read(ix, zero_point_names, _INTEGER_STORAGE, finite_nonzero=False)
    found: dict[int, Screened] = {}
    made: dict[tuple, QType] = {}  # a QuantizeLinear and its DequantizeLinear: one QType, as read_parameters' memo
    for i, quantize, data, scale, zero_point, axis in candidates:
        s, z = scales.get(scale), zero_points.get(zero_point)
        if s is None or z is None or len(s.values) != len(z.values):
            continue
        storage = z.data_type
        # (a QuantizeLinear's output declared nowhere is of its zero point's type: no inference of the node to ask)
        data_type = None if quantize and not ix.declares(data) else ix.elem_type(data)
        if data_type and data_type != storage:
            continue
        if len(s.values) == 1 and s.ndim <= 1:
            axis_ = None
        elif s.ndim == 1 and len(s.values) <= REFERENCE_THRESHOLD:  # (more: parameters by reference)
            axis_ = _axis(ix.shape(data), axis, len(s.values))
            if axis_ is None:
                continue
        else:
            continue
        key = (scale, zero_point, axis_)
        qtype = made.get(key)
        if qtype is None:
            qtype = made[key] = QType.from_values(STORAGE_BY_DATA_TYPE[storage], s.values, z.values, axis_, None,
                                                  _FLOAT, Schema.ASYMMETRIC)
        found[i] = Screened(quantize, data, qtype)
    return found


def _axis(shape: tuple[int | None, ...] | None, axis: int, count: int) -> int | None:
    """The normalized axis of a per-axis scale of ``count`` values, None when read_parameters would not accept it."""
    if shape is None:
        return axis if axis >= 0 else None
    rank = len(shape)
    if not -rank <= axis < rank:
        return None
    normalized = axis % rank
    return normalized if shape[normalized] is None or shape[normalized] == count else None


def _read(ix: GraphIndex, names: dict[str, None], data_types: frozenset[int], *, finite_nonzero: bool
          ) -> dict[str, _Values]:
    """The values of each named initializer of one of ``data_types`` held plainly in ``raw_data`` (as
    ``encoding.tensor_array`` reads it), at most a few per tensor; with ``finite_nonzero``, only those whose every
    value is finite and non-zero."""
    initializers, inputs = ix.initializers, ix.input_set
    itemsizes = {data_type: byte_dtype(data_type).itemsize for data_type in data_types}
    by_type: dict[int, list[tuple[str, bytes, int]]] = {}
    for name in names:
        tensor = initializers.get(name)
        if tensor is None or name in inputs:
            continue
        data_type = tensor.data_type
        itemsize = itemsizes.get(data_type)
        if itemsize is None:
            continue
        dims = tensor.dims[:]
        raw = tensor.raw_data
        if (len(dims) > 1 or not raw or tensor.data_location == TensorProto.EXTERNAL or tensor.HasField("segment")
                or tensor.int32_data):  # (int32_data besides raw_data: a zero point read_parameters judges there)
            continue
        count = dims[0] if dims else 1
        if count > REFERENCE_THRESHOLD or len(raw) != count * itemsize:
            continue
        by_type.setdefault(data_type, []).append((name, raw, len(dims)))
    found: dict[str, _Values] = {}
    for data_type, tensors in by_type.items():
        dtype = byte_dtype(data_type)
        array = np.frombuffer(b"".join(raw for _, raw, _ in tensors), dtype=dtype)
        ends = np.cumsum([len(raw) // dtype.itemsize for _, raw, _ in tensors]).tolist()
        if finite_nonzero:
            wide = array.astype(np.float64)
            bad = ~(np.isfinite(wide) & (wide != 0))
            flagged = set(np.searchsorted(ends, np.flatnonzero(bad), side="right").tolist())
            values = wide.tolist()
        else:
            flagged = set()
            values = array.astype(np.int64).tolist()
        start = 0
        for k, ((name, _, ndim), end) in enumerate(zip(tensors, ends)):
            if k not in flagged:
                found[name] = _Values(values[start:end], ndim, data_type)
            start = end
    return found


__all__ = ["Screened", "screen"]
