"""Insert QuantizeLinear / DequantizeLinear pairs into a float model, as onnxruntime's QDQ format does.

Every calibrated activation ``t`` becomes ``t -> QuantizeLinear -> DequantizeLinear`` with its readers
reading the dequantized value (a graph output keeps its name on the DequantizeLinear's output); a quantized
initializer is replaced by its storage integers and a DequantizeLinear. ``lift`` then turns the pairs into
quantized types between the unmodified operators.
"""

from __future__ import annotations

import numpy as np
from onnx import ModelProto, TensorProto, helper, numpy_helper

from onnx_qtypes.calibration.names import used_names
from onnx_qtypes.interop.graph import Names
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.reference_ops.quant import quantize


def _stored(values: np.ndarray, name: str, qt: QType) -> TensorProto:
    """Storage integers as a tensor of the storage type: bytes as numpy holds them, or packed by onnx's helper
    below 8 bits (a list of Python ints per value cost a transformer's calibration seconds and gigabytes)."""
    values = np.asarray(values)
    storage = qt.storage_type
    if storage.bits >= 8:
        return numpy_helper.from_array(values.astype(storage.np_dtype), name)
    return helper.make_tensor(name, storage.data_type, values.shape, values.reshape(-1).astype(np.int64).tolist())


def _params(names: tuple[str, str], qt: QType) -> list:
    scale = np.asarray(qt.scale, np.float32)
    zp = np.asarray(qt.zero_point)
    if qt.axis is None:
        scale, zp = scale.reshape(()), zp.reshape(())
    return [numpy_helper.from_array(scale, names[0]), _stored(zp, names[1], qt)]


def _attrs(qt: QType) -> dict:
    return {} if qt.axis is None else {"axis": qt.axis}


def insert_qdq(model: ModelProto, activations: dict[str, QType], initializers: dict[str, QType]
               ) -> tuple[ModelProto, dict[str, tuple[str, ...]]]:
    """A copy of ``model`` with ``activations`` quantize-dequantized and ``initializers`` stored quantized, and
    for each the names its typed tensor may have once ``lift`` has read the pairs (its own first).

    One pass over the nodes (a rename table, each pair placed right after its producer): linear in the model.
    """
    out = ModelProto()
    out.CopyFrom(model)
    g = out.graph
    fresh = Names(used_names(out)).fresh
    outputs = {o.name for o in g.output}
    inputs = {i.name for i in g.input}
    new_inits, aliases = [], {}
    read_as: dict[str, str] = {}  # activation -> the dequantized name its readers read
    written_as: dict[str, str] = {}  # a renamed graph output -> the float name its producer now writes
    pairs: dict[str, list] = {}  # the tensor a pair reads -> its (Q, DQ) nodes
    for name, qt in activations.items():
        # a graph output keeps its name on the DequantizeLinear; one that is also a graph input stays as fed
        renamed = name in outputs and name not in inputs
        source = fresh(f"{name}_float") if renamed else name
        deq = name if renamed else fresh(f"{name}_dequantized")
        if renamed:
            written_as[name] = source
        read_as[name] = deq
        params = (fresh(f"{name}_scale"), fresh(f"{name}_zero_point"))
        new_inits += _params(params, qt)
        pairs[source] = (name, deq, params, qt)
    keep, prologue = [], []
    for init in g.initializer:
        qt = initializers.get(init.name)
        if qt is None:
            keep.append(init)
            continue
        stored = quantize(numpy_helper.to_array(init).astype(np.float64), qt)
        q, params = fresh(f"{init.name}_quantized"), (fresh(f"{init.name}_scale"), fresh(f"{init.name}_zero_point"))
        keep.append(_stored(stored, q, qt))
        aliases[init.name] = (init.name, q)
        new_inits += _params(params, qt)
        prologue.append(helper.make_node("DequantizeLinear", [q, *params], [init.name],
                                         name=fresh(f"{init.name}_DequantizeLinear"), **_attrs(qt)))
    del g.initializer[:]
    g.initializer.extend(keep + new_inits)

    def pair(source: str) -> list:
        name, deq, params, qt = pairs[source]
        q = fresh(f"{name}_quantized")
        aliases[name] = (name, q, source)
        return [helper.make_node("QuantizeLinear", [source, *params], [q],
                                 name=fresh(f"{name}_QuantizeLinear"), **_attrs(qt)),
                helper.make_node("DequantizeLinear", [q, *params], [deq],
                                 name=fresh(f"{name}_DequantizeLinear"), **_attrs(qt))]

    produced = {o for node in g.node for o in node.output}
    nodes = list(prologue)
    for source in [s for s in pairs if s not in produced and s not in written_as.values()]:  # graph inputs
        nodes.extend(pair(source))
    for node in g.node:
        node.input[:] = [read_as.get(i, i) for i in node.input]
        node.output[:] = [written_as.get(o, o) for o in node.output]
        nodes.append(node)
        for o in node.output:
            if o in pairs:
                nodes.extend(pair(o))
    del g.node[:]
    g.node.extend(nodes)
    return out, aliases
