"""Refuse a model whose names are not text.

onnx.proto is proto2, so protobuf parses a ``string`` field holding bytes
that are not UTF-8 and Python then returns ``bytes`` where every tool (and
every dict keyed by tensor name) expects ``str``: a graph that silently
connects nothing, or a TypeError deep inside onnx. ``first_non_utf8_name``
reads only the fields that name things (nodes, tensors, attributes, opset
domains, functions, graphs) and the model's producer, domain and doc strings, about 2 µs per node, so the checker and the evaluator
can afford it on every model; lift and lower, which rewrite every string,
walk the whole message instead (``interop.validate.invalid_utf8``).
"""

from __future__ import annotations

from collections.abc import Iterable

import onnx

from onnx_qtypes.proto.errors import ModelLoadError
from onnx_qtypes.proto.model import iter_graphs

_NODE_FIELDS = ("name", "op_type", "domain")
_MODEL_FIELDS = ("producer_name", "producer_version", "domain", "doc_string")  # copied by tools as text


def _first_bytes(pointer: str, values: Iterable[object]) -> tuple[str, bytes] | None:
    for i, value in enumerate(values):
        if value.__class__ is bytes:
            return f"{pointer}/{i}", value  # type: ignore[return-value]
    return None


def _in_nodes(pointer: str, nodes: Iterable[onnx.NodeProto]) -> tuple[str, bytes] | None:
    for n, node in enumerate(nodes):
        here = f"{pointer}/node/{n}"
        for field in _NODE_FIELDS:
            value = getattr(node, field)
            if value.__class__ is bytes:
                return f"{here}/{field}", value
        found = (_first_bytes(f"{here}/input", node.input) or _first_bytes(f"{here}/output", node.output)
                 or _first_bytes(f"{here}/attribute", (a.name for a in node.attribute)))
        if found:
            return found
    return None


def first_non_utf8_name(model: onnx.ModelProto) -> tuple[str, bytes] | None:
    """(JSON pointer, bytes) of the first name in ``model`` that is not UTF-8 text, or None."""
    for field in _MODEL_FIELDS:
        value = getattr(model, field)
        if value.__class__ is bytes:
            return f"/{field}", value
    found = _first_bytes("/opset_import", (o.domain for o in model.opset_import))
    for pointer, graph in iter_graphs(model):
        for field in ("name", "doc_string"):
            value = getattr(graph, field)
            if not found and value.__class__ is bytes:
                found = f"{pointer}/{field}", value
        found = found or _in_nodes(pointer, graph.node)
        for kind in ("input", "output", "value_info", "initializer", "sparse_initializer"):
            if found:
                return found
            values = getattr(graph, kind)
            names = (v.values.name for v in values) if kind == "sparse_initializer" else (v.name for v in values)
            found = _first_bytes(f"{pointer}/{kind}", names)
    for f, function in enumerate(model.functions):
        here = f"/functions/{f}"
        for field in ("name", "domain"):
            value = getattr(function, field)
            if not found and value.__class__ is bytes:
                found = f"{here}/{field}", value
        found = (found or _first_bytes(f"{here}/input", function.input) or _first_bytes(f"{here}/output", function.output)
                 or _first_bytes(f"{here}/value_info", (v.name for v in function.value_info))
                 or _in_nodes(here, function.node))
    return found


def require_utf8_names(model: onnx.ModelProto, where: str) -> None:
    """Raise ModelLoadError naming the field (after ``where``, if given) when a name in ``model`` is not UTF-8."""
    found = first_non_utf8_name(model)
    if found is not None:
        pointer, value = found
        raise ModelLoadError(
            f"{where + ': ' if where else ''}{pointer} holds {value[:40]!r}, which is not UTF-8; ONNX names and strings must be UTF-8 text (rename it)"
        )


__all__ = ["first_non_utf8_name", "require_utf8_names"]
