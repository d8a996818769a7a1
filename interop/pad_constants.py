"""A Pad whose constant value other nodes read too reads its own copy of it.

onnxruntime's QOperator quantizer runs a constant-mode Pad on the stored integers and pads with the zero point of its
input: it passes the very initializer the QLinear node before it writes that input with (its ``y_zero_point``). On
integers that is right, the zero point stands for real 0. Typed, the pad value is a value of the data's type (a Pad
links its inputs 0 and 2, ``proto.data_movement``), while the QLinear node reads the same initializer as a plain
parameter: one tensor cannot be both, and the lift left every node connected to it (197 nodes of torchvision's
swin_t). So before the lift recognises anything, each such Pad reads a copy of its own (``<name>_<k>``): the values,
and what the file computes, stay the same.
"""

from __future__ import annotations

from onnx import ModelProto, TensorProto

from onnx_qtypes.interop.graph import STANDARD_DOMAINS, GraphIndex, Names, node_label


def own_pad_constants(model: ModelProto) -> list[str]:
    """Give, in place, every standard Pad whose constant value is an initializer something else reads too (another
    node, a subgraph, the graph's outputs) a copy of it; one note per Pad."""
    graph = model.graph
    pads = [i for i, node in enumerate(graph.node)
            if node.op_type == "Pad" and node.domain in STANDARD_DOMAINS and len(node.input) > 2 and node.input[2]]
    if not pads:
        return []
    ix = GraphIndex(graph)
    names = Names(ix.all_names())  # subgraphs' names too
    notes = []
    for i in pads:
        node, value = graph.node[i], graph.node[i].input[2]
        if value not in ix.initializers or value in ix.input_set:
            continue
        others = {c for c, _ in ix.consumers.get(value, ()) if c != i}  # (a Pad reading it twice links both reads)
        if not others and value not in ix.outer_refs and value not in ix.output_set:
            continue
        copy = TensorProto()
        copy.CopyFrom(ix.initializers[value])
        copy.name = names.fresh(value)
        graph.initializer.append(copy)
        node.input[2] = copy.name
        ix.consumers[value] = [(c, j) for c, j in ix.consumers[value] if c != i]  # (a later Pad: one reader fewer)
        notes.append(f"{node_label(node, i)} pads with {value!r}, which something else reads too; it reads its own "
                     f"copy, {copy.name!r}")
    return notes


__all__ = ["own_pad_constants"]
