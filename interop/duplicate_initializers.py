"""One initializer per name: copies that are the same message are merged, copies that differ are refused.

onnx-neural-compressor 1.0 quantizes a float bias that several Gemms share (torch.onnx.export shares equal
initializers) once per reader and writes every copy under the same names (``<bias>_quantized``, ``<bias>_scale``,
``<bias>_zero_point``). ONNX defines each name once (onnx.checker refuses such a file; onnxruntime silently takes one
copy). Identical copies are one value, and the lift keeps the first. Copies that differ (the scales do) leave the
model without a single meaning, so the lift refuses it, naming them, instead of writing a typed model that ``run``
and ``lower`` would refuse later.
"""

from __future__ import annotations

from collections import defaultdict

from onnx import GraphProto

from onnx_qtypes.interop.errors import MalformedQDQError


def repeated_names(graph: GraphProto) -> dict[str, list[int]]:
    """Each initializer name ``graph`` defines more than once, with the positions of its definitions."""
    positions: dict[str, list[int]] = defaultdict(list)
    for i, tensor in enumerate(graph.initializer):
        positions[tensor.name].append(i)
    return {name: where for name, where in positions.items() if len(where) > 1}


def merge_duplicates(graph: GraphProto) -> list[str]:
    """Drop repeated identical initializers of ``graph`` (notes saying so); MalformedQDQError when copies differ."""
    repeated = repeated_names(graph)
    for name, where in repeated.items():
        first = graph.initializer[where[0]]
        if any(graph.initializer[k] != first for k in where[1:]):
            places = ", ".join(f"/graph/initializer/{k}" for k in where)
            raise MalformedQDQError(
                f"initializer {name!r} is defined {len(where)} times with different values ({places}); ONNX defines "
                "each name once, so the model has no single meaning: give each copy its own name", tensor=name)
    for k in sorted((k for where in repeated.values() for k in where[1:]), reverse=True):
        del graph.initializer[k]
    return [f"initializer {name!r} was defined {len(where)} times with the same value; one is kept"
            for name, where in repeated.items()]


__all__ = ["merge_duplicates", "repeated_names"]
