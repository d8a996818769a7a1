"""Lift onnxruntime's dynamic quantization (``quantize_dynamic``) into typed form.

``quantize_dynamic`` writes, for every MatMul / Gemm / Conv with a constant
weight (Gemm becomes MatMul + Add on a transposed weight)::

    x_q, x_scale, x_zp = DynamicQuantizeLinear(x)
    s   = Mul(x_scale, w_scale)
    acc = MatMulInteger(x_q, w_q, x_zp, w_zp)        # or ConvInteger, same attributes as Conv
    y   = Mul(Cast(acc, to=float), s)

That is the float operator on dequantized operands: ``acc`` is the exact
sum of (x_q - x_zp) * (w_q - w_zp), and the product of the two scales turns
it into reals. So the lift keeps the DynamicQuantizeLinear (its output typed
dynamic uint8 asymmetric: the parameters it computes are those of
semantics.md §3), types the weight with its constant parameters, and writes
the unmodified float operator ``y = MatMul(x_q, w_q)`` in place of the
integer operator and its Cast / Mul glue.

A match is taken only when every part is exactly that: the zero points are
the DynamicQuantizeLinear's and the weight's, the scale product is of the
same two scales, and no intermediate is read by anything else. A quantized
tensor also read by a node that is not lifted stays untouched (with every
match that reads it), so an integer is never read at two meanings.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from onnx import GraphProto, ModelProto, NodeProto, TensorProto, helper

from onnx_qtypes.interop.graph import (STANDARD_DOMAINS, GraphIndex, infer, int_attribute, node_with_attributes,
                                      replace_nodes)
from onnx_qtypes.proto.qtype import QType

INTEGER_OPS = {"MatMulInteger": "MatMul", "ConvInteger": "Conv"}
WEIGHT_STORAGE = {TensorProto.INT8: "int8", TensorProto.UINT8: "uint8"}
ACTIVATION = QType("uint8")  # DynamicQuantizeLinear: uint8, asymmetric, per tensor, float32, parameters at run time


@dataclasses.dataclass
class DynamicLift:
    types: dict[str, QType] = dataclasses.field(default_factory=dict)
    boundaries: set[str] = dataclasses.field(default_factory=set)  # outputs of the DynamicQuantizeLinear nodes kept
    parameters: set[str] = dataclasses.field(default_factory=set)  # weight scale / zero-point tensors no longer read
    lifted: int = 0  # integer operators replaced
    dequantize_removed: int = 0  # DequantizeLinear nodes reading a DynamicQuantizeLinear, now read through its type


@dataclasses.dataclass(frozen=True)
class _Match:
    integer: int  # node indices
    cast: int
    scaled: int
    product: int
    activation: str
    weight: str
    weight_type: QType
    parameters: tuple[str, ...]


def _output(node: NodeProto, k: int = 0) -> str:
    """Output ``k`` of ``node``, "" when the node has none there (a malformed node matches nothing)."""
    return node.output[k] if len(node.output) > k else ""


def _only_reader(ix: GraphIndex, name: str) -> int | None:
    if not name:
        return None
    readers = ix.consumers.get(name, [])
    if len(readers) != 1 or name in ix.output_set or name in ix.outer_refs:
        return None
    return readers[0][0]


def _weight_type(ix: GraphIndex, op: str, weight: str, scale: str, zero_point: str | None) -> QType | None:
    """The static type of a constant weight with constant scale / zero point, or None."""
    stored = ix.constant_tensor(weight)
    w_scale, w_zp = ix.constant(scale), (None if zero_point is None else ix.constant(zero_point))
    if stored is None or stored.data_type not in WEIGHT_STORAGE or w_scale is None or w_scale.dtype != np.float32:
        return None
    if zero_point is not None and (w_zp is None or w_zp.dtype != np.dtype(WEIGHT_STORAGE[stored.data_type])):
        return None
    scales = w_scale.reshape(-1)
    zero_points = np.zeros(1, np.int64) if w_zp is None else w_zp.reshape(-1).astype(np.int64)
    if zero_points.size == 1:
        zero_points = np.repeat(zero_points, scales.size)  # one zero point for every channel
    if zero_points.size != scales.size or scales.size == 0 or not np.all(scales > 0):
        return None
    axis = None
    if scales.size > 1:
        rank = len(stored.dims)
        axis = 0 if op == "ConvInteger" else rank - 1  # per output channel / per column of B
        if rank < 2 or stored.dims[axis] != scales.size:
            return None
    return QType(WEIGHT_STORAGE[stored.data_type], scales.astype(np.float64).tolist(), zero_points.tolist(), axis=axis,
                 expressed="float32")


def _match(ix: GraphIndex, i: int, node: NodeProto) -> _Match | None:
    if node.domain not in STANDARD_DOMAINS or node.op_type not in INTEGER_OPS or len(node.input) < 2:
        return None
    a, b = node.input[0], node.input[1]
    a_zp = node.input[2] if len(node.input) > 2 and node.input[2] else None
    b_zp = node.input[3] if len(node.input) > 3 and node.input[3] else None
    dql = _dynamic_source(ix, a, a_zp)
    if dql is None:
        return None
    c = _only_reader(ix, _output(node))
    if c is None:
        return None
    cast = ix.nodes[c]
    if cast.op_type != "Cast" or int_attribute(cast, "to") != TensorProto.FLOAT:
        return None
    m = _only_reader(ix, _output(cast))
    if m is None or ix.nodes[m].op_type != "Mul" or len(ix.nodes[m].input) != 2 or not _output(ix.nodes[m]):
        return None
    scaled = ix.nodes[m]
    product_name = scaled.input[1] if scaled.input[0] == cast.output[0] else scaled.input[0]
    k = ix.producer.get(product_name)
    if k is None or ix.nodes[k].op_type != "Mul" or not product_name or product_name in ix.output_set:
        return None
    factors = list(ix.nodes[k].input)
    if len(factors) != 2 or dql.output[1] not in factors:
        return None
    w_scale = factors[1] if factors[0] == dql.output[1] else factors[0]
    b_dql = _dynamic_source(ix, b, b_zp)
    if b_dql is not None:  # both operands quantized at run time (quantize_dynamic's MatMulConstBOnly=False, or a
        # Conv whose weight is a Constant node rather than an initializer, as paddle2onnx writes them)
        return _Match(i, c, m, k, a, b, ACTIVATION, ()) if w_scale == b_dql.output[1] else None
    qtype = _weight_type(ix, node.op_type, b, w_scale, b_zp)
    if qtype is None:
        return None
    return _Match(i, c, m, k, a, b, qtype, tuple(n for n in (w_scale, b_zp) if n))


def _dynamic_source(ix: GraphIndex, name: str, zero_point: str | None) -> NodeProto | None:
    """The DynamicQuantizeLinear writing ``name`` whose zero-point output is ``zero_point``, or None."""
    d = ix.producer.get(name)
    if d is None:
        return None
    dql = ix.nodes[d]
    if (dql.op_type != "DynamicQuantizeLinear" or dql.domain not in STANDARD_DOMAINS or len(dql.output) != 3
            or not dql.input or not all(dql.output)):
        return None
    if dql.output[0] != name or zero_point != dql.output[2] or ix.elem_type(dql.input[0]) not in (TensorProto.FLOAT, None):
        return None
    return dql


def _consistent(ix: GraphIndex, matches: list[_Match]) -> list[_Match]:
    """Drop every match whose quantized tensors something else reads as integers (until none is left to drop)."""
    while True:
        readers = {m.integer for m in matches}
        bad = {t for m in matches for t in (m.activation, m.weight)
               if t in ix.output_set or t in ix.outer_refs or any(c not in readers for c, _ in ix.consumers.get(t, []))}
        bad |= {m.weight for m in matches for o in matches if o.weight == m.weight and o.weight_type != m.weight_type}
        kept = [m for m in matches if m.activation not in bad and m.weight not in bad]
        if len(kept) == len(matches):
            return kept
        matches = kept


def lift_dynamic(model: ModelProto) -> DynamicLift:
    """Rewrite every dynamic-quantization pattern of the main graph in place; the types to declare."""
    found = DynamicLift()
    ops = {n.op_type for n in model.graph.node}
    if ops & set(INTEGER_OPS):  # each pass indexes and infers the whole graph: only when it has its ops
        _lift_integer_ops(model, found)
    if "DynamicQuantizeLinear" in ops:
        _lift_dequantized(model, found)
    return found


def _lift_integer_ops(model: ModelProto, found: DynamicLift) -> None:
    graph = model.graph
    ix = GraphIndex(graph, infer(model))
    matches = _consistent(ix, [m for i, n in enumerate(ix.nodes) if (m := _match(ix, i, n)) is not None])
    if not matches:
        return
    replaced: dict[int, NodeProto] = {}
    dropped: set[int] = set()
    products = {}
    for m in matches:
        node = ix.nodes[m.integer]
        out = ix.nodes[m.scaled].output[0]
        replaced[m.integer] = node_with_attributes(INTEGER_OPS[node.op_type], [m.activation, m.weight], [out], node,
                                                   name=node.name)
        dropped.update((m.cast, m.scaled))
        products.setdefault(m.product, set()).add(m.scaled)
        found.types[m.activation] = ACTIVATION
        found.types[m.weight] = m.weight_type
        found.boundaries.update(t for t in (m.activation, m.weight) if found.types[t] is ACTIVATION)
        found.parameters.update(m.parameters)
    for k, readers in products.items():  # the scale product goes when only lifted nodes read it
        if {c for c, _ in ix.consumers.get(ix.nodes[k].output[0], [])} <= readers:
            dropped.add(k)
    replace_nodes(graph, [replaced.get(i, n) for i, n in enumerate(ix.nodes) if i not in dropped])
    _declare_float_results(graph, ix, [ix.nodes[m.scaled].output[0] for m in matches])
    found.lifted += len(matches)


def _lift_dequantized(model: ModelProto, found: DynamicLift) -> None:
    """``y, s, z = DynamicQuantizeLinear(x)`` read only by ``DequantizeLinear(y, s, z)`` (what ``lower`` writes):
    ``y`` is typed dynamic and its readers read it directly; a DequantizeLinear writing a graph output stays. A ``y``
    that is a graph output is typed too (ONNX's own node tests: y, y_scale, y_zero_point all graph outputs): a dynamic
    graph output returns its storage, and the node still writes y_scale and y_zero_point."""
    graph = model.graph
    ix = GraphIndex(graph, infer(model))
    dropped: dict[int, str] = {}  # DequantizeLinear index -> the typed tensor its readers read instead
    for node in ix.nodes:
        if (node.op_type != "DynamicQuantizeLinear" or node.domain not in STANDARD_DOMAINS or len(node.output) != 3
                or not node.input or not all(node.output)):
            continue
        y = node.output[0]
        if y in found.types or y in ix.outer_refs or not (ix.consumers.get(y) or y in ix.output_set):
            continue
        readers = [c for c, _ in ix.consumers.get(y, [])]
        if not all(_dequantizes(ix.nodes[c], node) for c in readers):
            continue
        found.types[y] = ACTIVATION
        found.boundaries.add(y)
        dropped.update((c, y) for c in readers if ix.nodes[c].output[0] not in ix.output_set | ix.outer_refs)
    if not dropped:
        return
    renamed = {ix.nodes[c].output[0]: y for c, y in dropped.items()}
    readers = {r for c in dropped for r, _ in ix.consumers.get(ix.nodes[c].output[0], [])}
    nodes = []
    for i, node in enumerate(ix.nodes):
        if i in dropped:
            continue
        for j, name in enumerate(node.input):
            node.input[j] = renamed.get(name, name)
        nodes.append(node)
    replace_nodes(graph, nodes)
    _declare_float_results(graph, ix, [o for r in sorted(readers) for o in ix.nodes[r].output
                                       if o and ix.elem_type(o) == TensorProto.FLOAT])
    found.dequantize_removed += len(dropped)


def _dequantizes(node: NodeProto, dql: NodeProto) -> bool:
    """``node`` is DequantizeLinear(y, y_scale, y_zero_point) of ``dql``'s outputs, per tensor."""
    return (node.op_type == "DequantizeLinear" and node.domain in STANDARD_DOMAINS and bool(_output(node))
            and list(node.input) == list(dql.output) and not any(a.name == "block_size" and a.i for a in node.attribute))


def _declare_float_results(graph: GraphProto, ix: GraphIndex, names: list[str]) -> None:
    """The float op's result keeps the float type the Mul had (inference cannot type a Conv of integers)."""
    declared = {vi.name for vi in (*graph.input, *graph.output, *graph.value_info)}
    for name in names:
        if name not in declared:
            shape = ix.shape(name)
            graph.value_info.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None if shape is None else list(shape)))


def owned(ix: GraphIndex, found: DynamicLift) -> set[str]:
    """Labels of the DynamicQuantizeLinear nodes whose output the dynamic lift typed (not to be warned about)."""
    return {ix.label(i) for i, n in enumerate(ix.nodes) if n.op_type == "DynamicQuantizeLinear" and n.output
            and n.output[0] in found.boundaries}


__all__ = ["DynamicLift", "lift_dynamic", "owned"]
