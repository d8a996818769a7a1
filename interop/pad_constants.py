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

from collections import Counter

from onnx import ModelProto, TensorProto

from onnx_qtypes.interop.graph import STANDARD_DOMAINS, Names, node_label


def own_pad_constants(model: ModelProto) -> list[str]:
    """Give, in place, every standard Pad whose constant value is an initializer other nodes also read a copy of it;
    one note per Pad."""
    graph = model.graph
    readers = Counter(name for node in graph.node for name in node.input if name)
    initializers = {t.name: t for t in graph.initializer}
    inputs = {vi.name for vi in graph.input}
    names: Names | None = None
    notes = []
    for i, node in enumerate(graph.node):
        if node.op_type != "Pad" or node.domain not in STANDARD_DOMAINS or len(node.input) < 3:
            continue
        value = node.input[2]
        if value not in initializers or value in inputs or readers[value] < 2:
            continue
        if names is None:
            names = Names({vi.name for kind in (graph.input, graph.output, graph.value_info) for vi in kind}
                          | set(initializers) | {o for n in graph.node for o in n.output} | set(readers))
        copy = TensorProto()
        copy.CopyFrom(initializers[value])
        copy.name = names.fresh(value)
        graph.initializer.append(copy)
        node.input[2] = copy.name
        readers[value] -= 1
        notes.append(f"{node_label(node, i, '/graph')} pads with {value!r}, which other nodes read too; it reads its "
                     f"own copy, {copy.name!r}")
    return notes


__all__ = ["own_pad_constants"]
