"""Read QONNX / Brevitas quantization (``Quant`` / ``IntQuant`` of the ``qonnx.custom_op.general`` domain).

QONNX's ``Quant(x, scale, zero_point, bit_width)`` fake-quantizes: its float
output is (clamp(round(x / scale + zero_point), min, max) - zero_point) * scale,
min / max set by bit_width and the ``signed`` / ``narrow`` attributes (qonnx's
``min_int`` / ``max_int``: narrow raises a signed min by 1 and lowers an unsigned
max by 1). That output is exactly the real values of a tensor of a quantized
type whose storage range is [min, max]: every consumer of a typed tensor reads
its reals. So each Quant this module understands becomes QuantizeLinear (or,
for a constant input, the quantized constant) then DequantizeLinear, the
narrowed range declared in ``lower``'s metadata; ``lift`` then folds that QDQ
form like any other. A k-bit type is stored in int8 / uint8 (k <= 8) or int16
/ uint16 (k <= 16). What does not fit a quantized type is left as it was with
a warning naming the node and the reason.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from onnx import ModelProto, NodeProto, helper, numpy_helper

from onnx_qtypes.interop import metadata
from onnx_qtypes.interop.graph import (QONNX_DOMAINS, GraphIndex, Names, default_opset, infer,
                                      node_label, replace_nodes)
from onnx_qtypes.interop.opset import qdq_opset, raise_opset
from onnx_qtypes.interop.qdq import dequantize_node, quantize_node
from onnx_qtypes.proto.errors import QTypeError
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.storage_types import EXPRESSED_BY_DATA_TYPE, integer_range
from onnx_qtypes.reference_ops.quant import quantize

QUANT_OPS = ("Quant", "IntQuant")
OTHER_OPS = {  # QONNX quantizers no quantized type expresses, and why
    "BipolarQuant": "its values are {-scale, +scale}: no integer grid with a zero point holds them",
    "Trunc": "it drops low bits of an already quantized input (a floor to a coarser grid), not a quantization of reals",
    "FloatQuant": "it quantizes to a minifloat format, not to integers",
}
ROUND_HALF_EVEN = ("ROUND", "HALF_EVEN")  # qonnx maps both to numpy's round, half to even
MAX_BITS = 32  # int32 storage above 16 bits, signed only (Brevitas' Int32Bias quantizes biases at 32 bits)


@dataclasses.dataclass
class Rewritten:
    quant_nodes: int = 0
    notes: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)


def is_qonnx(node: NodeProto) -> bool:
    return node.domain in QONNX_DOMAINS


def rewrite(model: ModelProto) -> Rewritten:
    """Replace, in place, every QONNX Quant node that a quantized type expresses by its QDQ form."""
    out = Rewritten()
    if not any(is_qonnx(n) for n in model.graph.node):
        return out
    static = _static_graph_inputs(model)
    if static:
        out.notes.append(f"{static} QONNX parameter(s) that are also graph inputs read as the constants their "
                         "initializers hold (as qonnx's cleanup does)")
    ix, plan = _plan(model)
    needed = max((_opset_needed(q) for q in plan.values() if isinstance(q, QType)), default=0)
    have = default_opset(model) or 1
    try:  # raise the whole model: its other operators keep their meaning at the new version
        raised = raise_opset(model, needed)
    except ValueError as exc:  # refuse what needs the new version
        plan = {i: _Refused(str(exc)) if isinstance(q, QType) and _opset_needed(q) > have else q for i, q in plan.items()}
    else:
        if raised:
            out.notes.append(raised)
            ix, plan = _plan(model)
    names = Names(ix.all_names())
    nodes: list[NodeProto] = []
    for i, node in enumerate(ix.nodes):
        qtype = plan.get(i)
        if qtype is None:
            nodes.append(node)
        elif isinstance(qtype, QType):
            nodes.extend(_qdq(ix, node, qtype, names))
            out.quant_nodes += 1
        else:
            out.warnings.append(f"{node_label(node, i)}: QONNX {node.op_type} left as it was: {qtype}")
            nodes.append(node)
    fed_quant = {name for i in plan for name in ix.nodes[i].input}
    replace_nodes(model.graph, nodes)
    _tidy(model, ix, fed_quant)
    return out


def _static_graph_inputs(model: ModelProto) -> int:
    """Drop from the graph inputs, in place, the initializers that QONNX nodes read (torch.onnx's dynamo exporter
    lists every parameter as a graph input too); the number dropped. Their values are the initializers'."""
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    read = {name for n in graph.node if is_qonnx(n) for name in n.input}
    drop = [k for k, vi in enumerate(graph.input) if vi.name in initializers and vi.name in read]
    for k in reversed(drop):
        del graph.input[k]
    return len(drop)


def _plan(model: ModelProto) -> tuple[GraphIndex, dict[int, QType | Exception]]:
    """The graph's index, and node index -> the quantized type of each QONNX node's output, or why it has none."""
    ix = GraphIndex(model.graph, infer(_shape_stand_in(model)))
    plan: dict[int, QType | Exception] = {}
    for i, node in enumerate(ix.nodes):
        if not is_qonnx(node):
            continue
        if node.op_type not in QUANT_OPS:
            plan[i] = _Refused(OTHER_OPS.get(node.op_type, "it is not a QONNX quantizer this version reads"))
            continue
        try:
            plan[i] = _quant_type(ix, node)
        except _Refused as exc:
            plan[i] = exc
    return ix, plan


def _opset_needed(qtype: QType) -> int:
    """The first default-domain opset whose QuantizeLinear / DequantizeLinear write this type."""
    return qdq_opset(qtype.storage_type.bits, qtype.axis is not None)


class _Refused(Exception):
    """Why one Quant node has no quantized type."""


def _shape_stand_in(model: ModelProto) -> ModelProto:
    """A copy whose QONNX nodes are Identity (all keep their input's shape), for shape inference."""
    copy = ModelProto()
    copy.CopyFrom(model)
    for node in copy.graph.node:
        if is_qonnx(node):
            del node.input[1:], node.attribute[:]
            node.op_type, node.domain = "Identity", ""
    return copy


def _attribute(node: NodeProto, name: str, default=None):
    for attr in node.attribute:
        if attr.name == name:
            return helper.get_attribute_value(attr)
    return default


def _constant(ix: GraphIndex, node: NodeProto, position: int, what: str) -> np.ndarray:
    name = node.input[position] if len(node.input) > position else ""
    value = ix.constant(name) if name else None
    if value is None:
        raise _Refused(f"its {what} {name!r} is not a constant (a quantized type holds static parameters)")
    return value


def _quant_type(ix: GraphIndex, node: NodeProto) -> QType:
    """The quantized type whose reals are ``node``'s output, or _Refused saying why there is none."""
    mode = _attribute(node, "rounding_mode", b"ROUND")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode.upper() not in ROUND_HALF_EVEN:
        raise _Refused(f"rounding_mode {mode} (quantized types round half to even, qonnx's ROUND)")
    signed, narrow = _attribute(node, "signed"), _attribute(node, "narrow")
    if signed is None or narrow is None:
        raise _Refused("attributes signed and narrow are required (qonnx refuses the node without them)")
    x = node.input[0]
    expressed = EXPRESSED_BY_DATA_TYPE.get(ix.elem_type(x) or 0)
    if expressed is None:
        raise _Refused(f"input {x!r} is not float32, float16 or bfloat16 (or its type is unknown)")
    scale = _constant(ix, node, 1, "scale")
    zero_point = _constant(ix, node, 2, "zero point")
    bits = _constant(ix, node, 3, "bit width")
    if bits.size != 1 or not float(bits.flat[0]).is_integer() or not 2 <= bits.flat[0] <= MAX_BITS:
        raise _Refused(f"bit width {bits.tolist()} is not one integer from 2 to {MAX_BITS} (the widest storage is 32-bit)")
    if bits.flat[0] > 16 and not signed:
        raise _Refused(f"an unsigned {int(bits.flat[0])}-bit range needs uint32 storage, which no quantized type has")
    if not np.all(np.isfinite(zero_point)) or not np.array_equal(zero_point, np.round(zero_point)):
        raise _Refused(f"zero point {zero_point.tolist()} is not integer (a quantized type's zero point is a storage integer)")
    if scale.dtype != expressed.np_dtype:
        raise _Refused(f"scale is {scale.dtype}, input {x!r} is {expressed.np_dtype} (QuantizeLinear takes one type)")
    k, signed, narrow = int(bits.flat[0]), bool(signed), bool(narrow)
    lo, hi = integer_range(k, signed)
    lo, hi = (lo + narrow, hi) if signed else (lo, hi - narrow)  # qonnx's min_int / max_int
    storage = ("int" if signed else "uint") + ("8" if k <= 8 else "16" if k <= 16 else "32")
    axis = _axis(ix, x, scale, zero_point)
    count = max(scale.size, zero_point.size)  # one of the two may be a single value for every channel
    scales = np.broadcast_to(scale.astype(np.float64).reshape(-1), (count,)).tolist()
    zps = [int(z) for z in np.broadcast_to(zero_point.reshape(-1), (count,))]
    try:
        return QType(storage, scales, zps, axis=axis, expressed=expressed.name, storage_min=lo, storage_max=hi)
    except QTypeError as exc:
        raise _Refused(f"no quantized type has these parameters: {exc}") from None


def _axis(ix: GraphIndex, x: str, scale: np.ndarray, zero_point: np.ndarray) -> int | None:
    """The one axis along which scale (and zero point) vary, None for one pair; _Refused otherwise."""
    if scale.size == 1 and zero_point.size == 1:
        return None
    shape = ix.shape(x)
    if shape is None:
        raise _Refused(f"per-channel parameters on {x!r}, whose rank is unknown")
    varying = {len(shape) - p.ndim + a for p in (scale, zero_point) for a, n in enumerate(p.shape) if n != 1}
    fits = all(p.ndim <= len(shape) for p in (scale, zero_point))
    count = max(scale.size, zero_point.size)
    if not fits or len(varying) != 1 or {scale.size, zero_point.size} - {1, count}:
        raise _Refused(f"scale {list(scale.shape)} / zero point {list(zero_point.shape)} do not vary along one axis "
                       f"of {x!r} {list(shape)} (a quantized type is per-tensor or per-axis)")
    axis = varying.pop()
    if shape[axis] is not None and shape[axis] != count:
        raise _Refused(f"parameters have {count} entries, axis {axis} of {x!r} has {shape[axis]}")
    return axis


def _qdq(ix: GraphIndex, node: NodeProto, qtype: QType, names: Names) -> list[NodeProto]:
    """QuantizeLinear (or a quantized constant) then DequantizeLinear, writing the Quant node's output."""
    base = node.name or node.output[0]
    scale = numpy_helper.from_array(np.asarray(qtype.scale, qtype.expressed_type.np_dtype), names.fresh(f"{base}_scale"))
    zp = numpy_helper.from_array(np.asarray(qtype.zero_point, qtype.storage_type.np_dtype), names.fresh(f"{base}_zero_point"))
    if qtype.axis is None:
        scale.dims[:] = zp.dims[:] = []
    ix.graph.initializer.extend([scale, zp])
    q = names.fresh(f"{base}_quantized")
    made = []
    x = node.input[0]
    value = ix.constant(x)
    if value is not None:  # a weight: its storage integers, computed once
        ix.graph.initializer.append(numpy_helper.from_array(quantize(value, qtype, tensor=x), q))
    else:
        made.append(quantize_node(x, q, scale.name, zp.name, qtype, names.fresh(f"{base}_QuantizeLinear")))
    declared = ix.graph.value_info.add()  # the narrowed range, which QDQ nodes cannot say, as lower writes it
    shape = ix.shape(x)
    declared.CopyFrom(helper.make_tensor_value_info(q, qtype.storage_type.data_type, None if shape is None else list(shape)))
    metadata.write(declared, metadata.QTYPE_KEY, metadata.encode_qtype(qtype))
    made.append(dequantize_node(q, node.output[0], scale.name, zp.name, qtype, names.fresh(f"{base}_DequantizeLinear")))
    return made


def _tidy(model: ModelProto, ix: GraphIndex, fed_quant: set[str]) -> None:
    """Drop what fed QONNX nodes (parameters, float weights) and nothing reads now, and an unused QONNX import."""
    graph = model.graph
    read = {name for n in graph.node for name in n.input} | {o.name for o in graph.output} | ix.outer_refs
    for i in reversed(range(len(graph.initializer))):
        name = graph.initializer[i].name
        if name in fed_quant and name not in read and name not in ix.input_set:
            del graph.initializer[i]
    for i in reversed(range(len(graph.node))):
        node = graph.node[i]
        if node.op_type == "Constant" and node.output and node.output[0] in fed_quant and node.output[0] not in read:
            del graph.node[i]
    if not any(is_qonnx(n) for n in graph.node):
        for i in reversed([i for i, o in enumerate(model.opset_import) if o.domain in QONNX_DOMAINS]):
            del model.opset_import[i]
