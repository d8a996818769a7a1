"""Fresh tensor and node names: calibration adds ``<name>_quantized``, ``<name>_scale``, ... to a model that
may already use them (an exporter's ``y_float``), and a taken name would break the graph's SSA form."""

from __future__ import annotations

from collections.abc import Callable

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


def allocator(taken: set[str]) -> Callable[[str], str]:
    """``fresh(base)``: ``base`` if no one uses it, else ``base_1``, ``base_2``, ...; each answer is then taken."""

    def fresh(base: str) -> str:
        name, k = base, 0
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        taken.add(name)
        return name

    return fresh
