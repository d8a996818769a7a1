"""One int32 bias read by several QOperator nodes that need it at different scales: one copy per scale.

A QLinearConv / QGemm reads its int32 bias at the scale input_scale * weight_scale of that node: the bias has no
parameters of its own. onnxruntime's quantizer writes a float bias that several Convs share (exporters deduplicate
equal initializers) as one ``<bias>_quantized`` tensor, quantized once at the first node's scale, and every other
node reads those integers at its own scale. That is what the file computes. A typed tensor has one type, so before
the lift recognises anything, each further scale gets its own copy of the integers (``<bias>_<k>``), read by the
nodes that need that scale: each node then reads the same integers at the same scale as before, and ``lower``
writes the same model back. Nodes that need the same scale keep sharing one tensor.
"""

from __future__ import annotations

from onnx import ModelProto, TensorProto

from onnx_qtypes.interop.errors import MalformedQDQError
from onnx_qtypes.interop.graph import GraphIndex, Names, default_opset, infer
from onnx_qtypes.interop.parameters import Unrecognized
from onnx_qtypes.interop.qoperator import spec_for
from onnx_qtypes.interop.recognise import recognise_node
from onnx_qtypes.proto.qtype import QType


def split_shared_biases(model: ModelProto) -> list[str]:
    """Copy, in place, every constant int32 bias that QOperator nodes read at different scales; one note per bias."""
    graph = model.graph
    readers: dict[str, list[int]] = {}
    for i, node in enumerate(graph.node):
        spec = spec_for(node)
        if spec is not None and spec.bias is not None and len(node.input) > spec.bias.data and node.input[spec.bias.data]:
            readers.setdefault(node.input[spec.bias.data], []).append(i)
    shared = {name: nodes for name, nodes in readers.items() if len(nodes) > 1}
    if not shared:
        return []
    ix = GraphIndex(graph, infer(model), opset=default_opset(model))
    names = Names(ix.all_names())
    notes = []
    for name, nodes in shared.items():
        tensor = ix.constant_tensor(name)
        if tensor is None or name in ix.output_set or any(c not in nodes for c, _ in ix.consumers.get(name, [])):
            continue  # a computed or otherwise-read bias: the lift reports what it cannot type
        by_scale: dict[QType, list[int]] = {}
        for i in nodes:
            needed = _bias_type(ix, i, name)
            if needed is None:
                break
            by_scale.setdefault(needed, []).append(i)
        else:
            if len(by_scale) < 2:
                continue
            for group in list(by_scale.values())[1:]:
                copy = TensorProto()
                copy.CopyFrom(tensor)
                copy.name = names.fresh(name)
                graph.initializer.append(copy)
                for i in group:
                    node = graph.node[i]
                    node.input[spec_for(node).bias.data] = copy.name  # type: ignore[union-attr]
            notes.append(f"int32 bias {name!r} is read by {len(nodes)} QOperator nodes at {len(by_scale)} different "
                         f"scales (input scale times weight scale); each scale reads its own copy of the integers")
    return notes


def _bias_type(ix: GraphIndex, i: int, bias: str) -> QType | None:
    """The type node ``i`` reads ``bias`` at, or None when the node cannot be typed (the lift says why)."""
    try:
        op = recognise_node(ix, i, ix.nodes[i])
    except (Unrecognized, MalformedQDQError):
        return None
    return next((ev.qtype for ev in op.evidence if ev.tensor == bias), None) if op is not None else None


__all__ = ["split_shared_biases"]
