"""Lift ConvInteger and MatMulInteger with static zero points to the unmodified Conv and MatMul on typed tensors.

``y = MatMulInteger(a, b, a_zero_point, b_zero_point)`` is the int32 sum of (a - a_zp) * (b - b_zp): quantization
put into an operator. With types it is the float operator on typed operands: ``a`` typed with scale 1 and zero
point a_zp, ``b`` with scale 1 and zero point b_zp (one per output channel / column when the node has one per
channel), and ``y`` int32 with scale 1 and zero point 0. The typed MatMul dequantizes its operands to the integer
differences, multiplies and sums them exactly, and quantizes the sum with scale 1: the same integers, where
MatMulInteger's int32 accumulation does not wrap (QT407 warns where it might). ConvInteger is Conv in the same way,
with the same attributes.

A node is lifted only when its meaning stays exact:

- the zero points are constants (absent: 0), a_zp one value, b_zp one value or one per output channel;
- every other reader of ``a`` and ``b`` is a node lifted here with the same zero point (a tensor also read as
  plain integers would change meaning), and neither is read inside a subgraph;
- ``y`` is read only by Cast to a float type (a float Cast of a scale-1 int32 type gives the same floats) or is a
  graph output (a typed graph output returns its storage: the same int32).

``dynamic`` (onnxruntime's quantize_dynamic pattern) runs first; what it lifted is not touched here. A node left
as it was is named, with the reason, in ``left``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from onnx import ModelProto, NodeProto, TensorProto

from onnx_qtypes.interop.graph import (FLOAT_TYPES, STANDARD_DOMAINS, GraphIndex, infer, int_attribute,
                                      node_with_attributes, replace_nodes)
from onnx_qtypes.proto.qtype import QType

FLOAT_OP = {"MatMulInteger": "MatMul", "ConvInteger": "Conv"}
STORAGE = {TensorProto.INT8: "int8", TensorProto.UINT8: "uint8"}
ACCUMULATOR = QType("int32", 1.0, 0)


@dataclasses.dataclass
class IntegerLift:
    types: dict[str, QType] = dataclasses.field(default_factory=dict)
    parameters: set[str] = dataclasses.field(default_factory=set)  # zero-point tensors the lifted nodes read
    lifted: int = 0
    left: list[tuple[int, str]] = dataclasses.field(default_factory=list)  # (node index, why) of nodes left


class _Left(Exception):
    """Why one integer node stays as it was."""


def _input(node: NodeProto, k: int) -> str:
    return node.input[k] if len(node.input) > k else ""


def _zero_points(ix: GraphIndex, node: NodeProto, k: int, operand: str) -> np.ndarray:
    """The zero points of input ``k`` (2: a, 3: b) as int64, one value per entry; zeros when absent."""
    name = _input(node, k)
    if not name:
        return np.zeros(1, np.int64)
    values = ix.constant(name)
    if values is None:
        raise _Left(f"zero point {name!r} of {operand} is not a constant (a graph input, or computed at run time)")
    if ix.constant_dtype(name) != ix.elem_type(_input(node, k - 2)):
        raise _Left(f"zero point {name!r} is not of {operand}'s type")
    if values.ndim > 1:
        raise _Left(f"zero point {name!r} has shape {list(values.shape)} (one value, or one per channel, is typed)")
    return values.astype(np.int64).reshape(-1)


def _operand_type(ix: GraphIndex, node: NodeProto, k: int, channels_axis: int | None) -> QType:
    operand = "A" if k == 0 else "B"
    data = _input(node, k)
    storage = STORAGE.get(ix.elem_type(data) or 0)
    if storage is None:
        raise _Left(f"input {data!r} is not int8 or uint8 (or its type is unknown)")
    zps = _zero_points(ix, node, k + 2, operand)
    if zps.size == 1:
        return QType(storage, 1.0, int(zps[0]))
    if channels_axis is None:
        raise _Left(f"{operand}'s zero point has {zps.size} values (a per-row zero point of A has no quantized type)")
    shape = ix.shape(data)
    if shape is None or len(shape) < 2:
        raise _Left(f"{operand} has {zps.size} zero points but its rank is unknown or below 2")
    axis = channels_axis % len(shape)
    if shape[axis] is not None and shape[axis] != zps.size:
        raise _Left(f"{operand} has {zps.size} zero points but {shape[axis]} channels on axis {axis}")
    return QType(storage, [1.0] * zps.size, zps.tolist(), axis=axis)


def _result_readers_fine(ix: GraphIndex, y: str) -> str | None:
    """None when every reader of ``y`` reads its int32 values as a typed scale-1 tensor gives them, else why not."""
    if y in ix.outer_refs:
        return f"its result {y!r} is read inside a subgraph"
    for c, _ in ix.consumers.get(y, []):
        reader = ix.nodes[c]
        if not (reader.op_type == "Cast" and reader.domain in STANDARD_DOMAINS
                and int_attribute(reader, "to") in FLOAT_TYPES):
            return f"its int32 result {y!r} is read by {ix.label(c)} as plain integers"
    return None


def lift_integer_ops(model: ModelProto, skip: set[str] = frozenset()) -> IntegerLift:
    """Rewrite, in place, every ConvInteger / MatMulInteger of the main graph that has an exact typed form.

    ``skip``: tensors another step already typed (the dynamic lift's); a node reading one is not considered.
    """
    found = IntegerLift()
    graph = model.graph
    if not any(n.op_type in FLOAT_OP and n.domain in STANDARD_DOMAINS for n in graph.node):
        return found
    ix = GraphIndex(graph, infer(model))
    planned: dict[int, tuple[QType, QType]] = {}
    for i, node in enumerate(ix.nodes):
        if node.op_type not in FLOAT_OP or node.domain not in STANDARD_DOMAINS:
            continue
        if len(node.input) < 2 or not node.input[0] or not node.input[1] or len(node.output) != 1 or not node.output[0]:
            found.left.append((i, "an input or its output is missing"))
            continue
        if node.input[0] in skip or node.input[1] in skip:
            continue
        try:
            a = _operand_type(ix, node, 0, None)
            b = _operand_type(ix, node, 1, 0 if node.op_type == "ConvInteger" else -1)
            why = _result_readers_fine(ix, node.output[0])
            if why:
                raise _Left(why)
        except _Left as exc:
            found.left.append((i, str(exc)))
            continue
        planned[i] = (a, b)
    planned = _consistent(ix, planned, found)
    if not planned:
        return found
    nodes = []
    for i, node in enumerate(ix.nodes):
        if i not in planned:
            nodes.append(node)
            continue
        a, b = planned[i]
        nodes.append(node_with_attributes(FLOAT_OP[node.op_type], list(node.input[:2]), [node.output[0]], node,
                                          name=node.name))
        found.types.update({node.input[0]: a, node.input[1]: b, node.output[0]: ACCUMULATOR})
        found.parameters.update(n for n in node.input[2:4] if n)
        found.lifted += 1
    replace_nodes(graph, nodes)
    return found


def _consistent(ix: GraphIndex, planned: dict[int, tuple[QType, QType]], found: IntegerLift) -> dict[int, tuple[QType, QType]]:
    """Drop every plan whose operand another node reads otherwise (or at another zero point), until none is left."""
    while True:
        meaning: dict[str, set[QType]] = {}
        for i, (a, b) in planned.items():
            node = ix.nodes[i]
            meaning.setdefault(node.input[0], set()).add(a)
            meaning.setdefault(node.input[1], set()).add(b)
        bad: dict[str, str] = {}
        for name, kinds in meaning.items():
            others = [c for c, _ in ix.consumers.get(name, []) if c not in planned]
            if len(kinds) > 1:
                bad[name] = f"{name!r} is read with different zero points by different integer nodes"
            elif others:
                bad[name] = f"{name!r} is also read by {ix.label(others[0])} as plain integers"
            elif name in ix.outer_refs:
                bad[name] = f"{name!r} is read inside a subgraph"
        if not bad:
            return planned
        for i in [i for i in planned if any(n in bad for n in ix.nodes[i].input[:2])]:
            name = next(n for n in ix.nodes[i].input[:2] if n in bad)
            found.left.append((i, bad[name]))
            del planned[i]


__all__ = ["IntegerLift", "lift_integer_ops"]
