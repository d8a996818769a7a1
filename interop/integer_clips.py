"""Clip and widening Cast on the integers between QuantizeLinear and DequantizeLinear (QCDQ), read as a type.

Brevitas (``export_onnx_qcdq``) and PyTorch exporters narrow a type's range with a Clip on the stored integers::

    q = QuantizeLinear(x, s, z);  c = Clip(q, lo, hi);  y = DequantizeLinear(c, s, z)

and write a constant weight as ``DequantizeLinear(Clip(w_int, lo, hi), s, z)``. ``Clip(clamp(round(x / s) + z,
qmin, qmax), lo, hi)`` is ``clamp(round(x / s) + z, lo, hi)`` whenever [lo, hi] lies inside [qmin, qmax]: the
quantization of a type whose storage range is [lo, hi]. So, before recognition, each such Clip is removed (its
output name kept on what it read; a constant weight is clipped once), and the tensor's storage range is recorded
for the lift to narrow its type.

A Cast from one integer type to a wider one between them (``QuantizeLinear -> Cast(int32) -> DequantizeLinear``
with an int32 zero point) changes no value: the DequantizeLinear then reads the narrower integers with its zero
point in their type, when that zero point fits it.

Only exact cases are rewritten: constant scalar integer bounds of the integer's type inside its range, the Clip /
Cast read by DequantizeLinear nodes alone (never a graph output), a QuantizeLinear read by the Clip / Cast alone.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from onnx import ModelProto, NodeProto, TensorProto, numpy_helper

from onnx_qtypes.interop.graph import STANDARD_DOMAINS, GraphIndex, Names, attributes, int_attribute, replace_nodes
from onnx_qtypes.proto.storage_types import STORAGE_BY_DATA_TYPE

INTEGERS = {TensorProto.INT8: np.int8, TensorProto.UINT8: np.uint8, TensorProto.INT16: np.int16,
            TensorProto.UINT16: np.uint16, TensorProto.INT32: np.int32}


def _standard(node: NodeProto, op_type: str) -> bool:
    return node.op_type == op_type and node.domain in STANDARD_DOMAINS


def _only_dequantized(ix: GraphIndex, name: str) -> bool:
    readers = ix.consumers.get(name, [])
    return bool(readers) and name not in ix.output_set and name not in ix.outer_refs and all(
        _standard(ix.nodes[c], "DequantizeLinear") and j == 0 for c, j in readers)


def _source(ix: GraphIndex, name: str) -> tuple[int | None, int | None]:
    """(QuantizeLinear index or None, integer data type) of what the Clip / Cast reads; (None, None) when neither a
    QuantizeLinear read by it alone nor an integer constant."""
    p = ix.producer.get(name)
    if p is not None and _standard(ix.nodes[p], "QuantizeLinear") and len(ix.consumers.get(name, [])) == 1 \
            and name not in ix.output_set and name not in ix.outer_refs:
        zp = ix.nodes[p].input[2] if len(ix.nodes[p].input) > 2 and ix.nodes[p].input[2] else None
        return p, (ix.constant_dtype(zp) if zp else TensorProto.UINT8)
    if ix.is_constant(name):
        return None, ix.constant_dtype(name)
    return None, None


@dataclasses.dataclass
class Narrowed:
    ranges: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)  # integer tensor -> storage range
    notes: list[str] = dataclasses.field(default_factory=list)
    unread: set[str] = dataclasses.field(default_factory=set)  # what the removed nodes read (bounds, old constants)


def narrow_integer_clips(model: ModelProto) -> Narrowed:
    """Rewrite, in place, every exact Clip / widening Cast on stored integers."""
    graph = model.graph
    out = Narrowed()
    if not any(_standard(n, "Clip") or _standard(n, "Cast") for n in graph.node):
        return out
    ix = GraphIndex(graph)
    names = Names(ix.all_names())
    made: dict[tuple[str, int], TensorProto] = {}
    ranges: dict[str, tuple[int, int]] = {}
    drop: set[int] = set()
    rename: dict[str, str] = {}  # a Quantizelinear's output -> the Clip / Cast output name it takes
    constants = []
    zero_points: dict[int, TensorProto] = {}  # DequantizeLinear index -> zero point in the narrower type
    clips = casts = 0
    for i, node in enumerate(ix.nodes):
        if not (_standard(node, "Clip") or _standard(node, "Cast")) or not node.input or not node.input[0] \
                or len(node.output) != 1 or not node.output[0] or not _only_dequantized(ix, node.output[0]):
            continue
        q, dtype = _source(ix, node.input[0])
        if dtype not in INTEGERS:
            continue
        if node.op_type == "Clip":
            bounds = _bounds(ix, node, dtype)
            if bounds is None:
                continue
            ranges[node.output[0]] = bounds
            clips += 1
        else:
            new = _zero_points_in(ix, node, dtype, names, made)
            if new is None:
                continue
            zero_points.update(new)
            casts += 1
        drop.add(i)
        if q is not None:
            rename[node.input[0]] = node.output[0]
        else:
            values = ix.constant(node.input[0])
            assert values is not None
            if node.op_type == "Clip":
                values = np.clip(values, *ranges[node.output[0]])
            constants.append(numpy_helper.from_array(np.asarray(values, INTEGERS[dtype]), node.output[0]))
    if not drop:
        return out
    nodes = []
    for i, node in enumerate(ix.nodes):
        if i in drop:
            continue
        for k, name in enumerate(node.output):
            node.output[k] = rename.get(name, name)
        if i in zero_points:
            while len(node.input) < 3:
                node.input.append("")
            node.input[2] = zero_points[i].name
        nodes.append(node)
    replace_nodes(graph, nodes)
    graph.initializer.extend([*constants, *made.values()])
    out.ranges = ranges
    out.unread = {name for i in drop for name in ix.nodes[i].input if name} | {
        ix.nodes[c].input[2] for c in zero_points if len(ix.nodes[c].input) > 2}
    if clips:
        out.notes.append(f"{clips} Clip node(s) on stored integers read as the storage range of their tensor's type")
    if casts:
        out.notes.append(f"{casts} widening Cast node(s) on stored integers removed (they change no value)")
    return out


def _bounds(ix: GraphIndex, node: NodeProto, dtype: int) -> tuple[int, int] | None:
    """Clip's constant [lo, hi] when it lies inside the integer type's range (opset 11+: inputs; older: attributes)."""
    st = STORAGE_BY_DATA_TYPE[dtype]
    values = []
    for k, default in ((1, st.min), (2, st.max)):
        name = node.input[k] if len(node.input) > k and node.input[k] else None
        if name is None:
            attr = attributes(node).get("min" if k == 1 else "max")
            values.append(default if attr is None else attr)
            continue
        if ix.constant_dtype(name) != dtype or (v := ix.constant(name)) is None or v.size != 1:
            return None
        values.append(int(v.reshape(-1)[0]))
    lo, hi = values
    if not (isinstance(lo, (int, np.integer)) and isinstance(hi, (int, np.integer)) and st.min <= lo <= hi <= st.max):
        return None
    return int(lo), int(hi)


def _zero_points_in(ix: GraphIndex, node: NodeProto, dtype: int, names: Names,
                    made: dict[tuple[str, int], TensorProto]) -> dict[int, TensorProto] | None:
    """For a widening integer Cast: each reading DequantizeLinear's zero point in the narrower type, or None."""
    to = int_attribute(node, "to")
    if to not in INTEGERS or np.iinfo(INTEGERS[to]).min > np.iinfo(INTEGERS[dtype]).min \
            or np.iinfo(INTEGERS[to]).max < np.iinfo(INTEGERS[dtype]).max:
        return None
    info = np.iinfo(INTEGERS[dtype])
    found = {}
    for c, _ in ix.consumers[node.output[0]]:
        dq = ix.nodes[c]
        zp = dq.input[2] if len(dq.input) > 2 and dq.input[2] else None
        values = ix.constant(zp) if zp else np.zeros((), INTEGERS[to])
        if values is None or values.min(initial=0) < info.min or values.max(initial=0) > info.max:
            return None
        key = (zp or "", dtype)
        if key not in made:
            made[key] = numpy_helper.from_array(values.astype(INTEGERS[dtype]),
                                                names.fresh(f"{zp or node.output[0]}_{info.dtype}"))
        found[c] = made[key]
    return found


__all__ = ["Narrowed", "narrow_integer_clips"]
