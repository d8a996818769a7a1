"""com.microsoft QuantizeLinear / DequantizeLinear read as the standard operators.

onnxruntime's quantizer writes them (``UseQDQContribOps``, and 16-bit or 4-bit types below opset 21); so do AMD
Quark (A8W8, A16W8, S16S8) and onnxruntime's int4 weight quantizer. They compute what the standard operators of
opset 21 compute for the same inputs and attributes (scale, zero point, axis, block size). Before anything else the
lift moves them to the default domain, raising the model's opset where the standard operators need it (16-bit,
4-bit or blocked: 21; per-axis: 13), so that the lifted model's boundary nodes are standard ONNX that the reference
(``run``) and every runtime execute. A model the converter cannot raise keeps them, with a note saying why.
"""

from __future__ import annotations

from onnx import ModelProto, NodeProto, TensorProto

from onnx_qtypes.interop.graph import MS_DOMAIN, QDQ_OPS, GraphIndex, attributes
from onnx_qtypes.interop.opset import qdq_opset, raise_opset
from onnx_qtypes.proto.names import non_utf8_attribute

BITS = {TensorProto.INT8: 8, TensorProto.UINT8: 8, TensorProto.INT16: 16, TensorProto.UINT16: 16,
        TensorProto.INT4: 4, TensorProto.UINT4: 4, TensorProto.INT32: 32}


def _needed(ix: GraphIndex, node: NodeProto) -> int:
    """The standard opset that holds this node's type (21 when its storage type cannot be told)."""
    zero_point = node.input[2] if len(node.input) > 2 and node.input[2] else None
    storage = ix.constant_dtype(zero_point) if zero_point else (
        ix.constant_dtype(node.input[0]) if node.op_type == "DequantizeLinear" and node.input else TensorProto.UINT8)
    scale = ix.constant(node.input[1]) if len(node.input) > 1 and node.input[1] else None
    attrs = attributes(node)
    return qdq_opset(BITS.get(storage or 0, 0), scale is not None and scale.size > 1, bool(attrs.get("block_size", 0)))


def to_standard_domain(model: ModelProto) -> list[str]:
    """Move, in place, the main graph's com.microsoft QuantizeLinear / DequantizeLinear to the default domain; notes."""
    graph = model.graph
    # (a string attribute that is not text stays out of ONNX's domain, whose reader refuses it: the node is left)
    found = [i for i, n in enumerate(graph.node) if n.domain == MS_DOMAIN and n.op_type in QDQ_OPS
             and non_utf8_attribute(n) is None]
    if not found:
        return []
    ix = GraphIndex(graph)
    needed = max(_needed(ix, graph.node[i]) for i in found)
    notes = []
    try:
        raised = raise_opset(model, needed)
    except ValueError as exc:
        return [f"{len(found)} com.microsoft QuantizeLinear / DequantizeLinear node(s) kept in their domain: {exc}"]
    if raised:
        notes.append(raised)
    for node in model.graph.node:  # the converter may have rebuilt the graph
        if node.domain == MS_DOMAIN and node.op_type in QDQ_OPS and non_utf8_attribute(node) is None:
            node.domain = ""
    notes.append(f"{len(found)} com.microsoft QuantizeLinear / DequantizeLinear node(s) read as the standard operators")
    return notes


__all__ = ["to_standard_domain"]
