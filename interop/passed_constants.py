"""Parameters passed through Identity / Cast become plain constants on the QuantizeLinear / DequantizeLinear the lift
keeps.

torch.onnx.export writes a zero point as ``Identity(Constant)``, and exporters cast parameters to their type. The
lift reads through both (``GraphIndex.constant_tensor``); a boundary QuantizeLinear / DequantizeLinear it keeps would
still read the Identity's output, which ``check`` cannot compare with the static type of the tensor (QT308 on a file
the lift wrote). So each such Identity / Cast becomes a Constant holding the value it writes, under the same name:
every reader sees the same values.
"""

from __future__ import annotations

from onnx import GraphProto, TensorProto, helper

from onnx_qtypes.interop.graph import PASSED_CONSTANT_OPS, QDQ_OPS, STANDARD_DOMAINS, GraphIndex



def materialise(graph: GraphProto, ix: GraphIndex) -> int:
    """Turn every Identity / Cast of a constant that a Q / DQ of ``graph`` reads as scale or zero point into a
    Constant (``ix`` indexes ``graph``); how many were turned."""
    turned = 0
    for node in graph.node:
        if node.op_type not in QDQ_OPS or node.domain not in STANDARD_DOMAINS:
            continue
        for name in node.input[1:3]:
            p = ix.producer.get(name) if name else None
            producer = None if p is None else ix.nodes[p]
            passes = producer is not None and producer.domain in STANDARD_DOMAINS
            if not passes or producer.op_type not in PASSED_CONSTANT_OPS:
                continue
            value = ix.constant_tensor(name)
            if value is None:
                continue
            tensor = TensorProto()
            tensor.CopyFrom(value)
            tensor.name = name
            producer.CopyFrom(helper.make_node("Constant", [], [name], name=producer.name, value=tensor))
            turned += 1
    return turned


__all__ = ["materialise"]
