"""Insert QuantizeLinear / DequantizeLinear pairs into a float model, as onnxruntime's QDQ format does.

Every calibrated activation ``t`` becomes ``t -> QuantizeLinear -> DequantizeLinear`` with its readers
reading the dequantized value (a graph output keeps its name on the DequantizeLinear's output); a quantized
initializer is replaced by its storage integers and a DequantizeLinear. ``lift`` then turns the pairs into
quantized types between the unmodified operators.
"""

from __future__ import annotations

import numpy as np
from onnx import ModelProto, TensorProto, helper, numpy_helper

from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.reference_ops.quant import quantize


def _stored(values: np.ndarray, name: str, qt: QType) -> TensorProto:
    """Storage integers as a tensor of the storage type (int4 packed by onnx's helper)."""
    values = np.asarray(values)
    return helper.make_tensor(name, qt.storage_type.data_type, values.shape, values.reshape(-1).astype(np.int64).tolist())


def _params(name: str, qt: QType) -> list:
    scale = np.asarray(qt.scale, np.float32)
    zp = np.asarray(qt.zero_point)
    if qt.axis is None:
        scale, zp = scale.reshape(()), zp.reshape(())
    return [numpy_helper.from_array(scale, f"{name}_scale"), _stored(zp, f"{name}_zero_point", qt)]


def _attrs(qt: QType) -> dict:
    return {} if qt.axis is None else {"axis": qt.axis}


def insert_qdq(model: ModelProto, activations: dict[str, QType], initializers: dict[str, QType]) -> ModelProto:
    """A copy of ``model`` with ``activations`` quantize-dequantized and ``initializers`` stored quantized."""
    out = ModelProto()
    out.CopyFrom(model)
    g = out.graph
    outputs = {o.name for o in g.output}
    new_inits, pairs = [], []
    for name, qt in activations.items():
        source = f"{name}_float" if name in outputs else name
        deq = name if name in outputs else f"{name}_dequantized"
        if name in outputs:
            for node in g.node:
                node.output[:] = [source if o == name else o for o in node.output]
        for node in g.node:
            node.input[:] = [deq if i == name else i for i in node.input]
        new_inits += _params(name, qt)
        pairs.append((name, source, deq, qt))
    keep = []
    for init in g.initializer:
        qt = initializers.get(init.name)
        if qt is None:
            keep.append(init)
            continue
        stored = quantize(numpy_helper.to_array(init).astype(np.float64), qt)
        keep.append(_stored(stored, f"{init.name}_quantized", qt))
        new_inits += _params(init.name, qt)
        g.node.insert(0, helper.make_node(
            "DequantizeLinear", [f"{init.name}_quantized", f"{init.name}_scale", f"{init.name}_zero_point"],
            [init.name], name=f"{init.name}_DequantizeLinear", **_attrs(qt)))
    del g.initializer[:]
    g.initializer.extend(keep + new_inits)
    for name, source, deq, qt in pairs:
        q = f"{name}_quantized"
        at = _position(g, source)
        g.node.insert(at, helper.make_node("DequantizeLinear", [q, f"{name}_scale", f"{name}_zero_point"], [deq],
                                           name=f"{name}_DequantizeLinear", **_attrs(qt)))
        g.node.insert(at, helper.make_node("QuantizeLinear", [source, f"{name}_scale", f"{name}_zero_point"], [q],
                                           name=f"{name}_QuantizeLinear", **_attrs(qt)))
    return out


def _position(g, tensor: str) -> int:
    """Index just after the node producing ``tensor`` (0 for a graph input), keeping the graph sorted."""
    for index, node in enumerate(g.node):
        if tensor in node.output:
            return index + 1
    return 0
