"""The names a model uses, subgraphs included: calibration adds ``<name>_quantized``, ``<name>_scale``, ... to a
model that may already use them (an exporter's ``y_float``), and a taken name would break the graph's SSA form.
Fresh names are interop's ``Names(used_names(model)).fresh``, as lift and lower make theirs."""

from __future__ import annotations

from onnx import ModelProto

from onnx_qtypes.proto import iter_graphs


def used_names(model: ModelProto) -> set[str]:
    """Every tensor and node name in the model, subgraphs included (their names share one scope with the outer)."""
    names: set[str] = set()
    for _, graph in iter_graphs(model):
        names.update(t.name for t in graph.initializer)
        names.update(v.name for v in (*graph.input, *graph.output, *graph.value_info))
        for node in graph.node:
            names.update(node.input)
            names.update(node.output)
            names.add(node.name)
    names.discard("")
    return names
