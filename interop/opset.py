"""Raise a model's default-domain opset so that standard QuantizeLinear / DequantizeLinear can write a type.

One place for the versions (per-axis parameters: 13; 16-bit, 4-bit, blocked: 21) and for raising the whole model
with onnx.version_converter, so that its other operators keep their meaning at the new version.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, version_converter

from onnx_qtypes.interop.dynamic_lower import is_dynamic_quantize_linear_type
from onnx_qtypes.interop.graph import default_opset
from onnx_qtypes.proto.qtype import QType


WHY = "per-axis QuantizeLinear needs 13; 4-bit, 16-bit and blocked ones need 21"  # what qdq_opset says, in words


def qdq_opset(bits: int, per_axis: bool, blocked: bool = False) -> int:
    """The first default-domain opset whose QuantizeLinear / DequantizeLinear hold such a type (32 bits: an int32
    bias, which DequantizeLinear has read since opset 10)."""
    return 21 if bits not in (8, 32) or blocked else 13 if per_axis else 10


def type_opset(qtype: QType) -> int:
    """The first default-domain opset whose QuantizeLinear / DequantizeLinear write ``qtype``: ``qdq_opset``'s, 19
    for float8 storage or scales in float16 / bfloat16, 23 for float4e2m1, 25 for int2 / uint2; 21 for a dynamic type
    but 11 for the one DynamicQuantizeLinear computes (the other dynamic types' parameter nodes are written for 21)."""
    storage = qtype.storage_type
    if qtype.is_dynamic:
        return 11 if is_dynamic_quantize_linear_type(qtype) else 21
    if storage.name in ("int2", "uint2"):
        return 25
    if storage.name == "float4e2m1":
        return 23
    needed = qdq_opset(storage.bits, qtype.axis is not None, qtype.block_size is not None)
    return max(needed, 19) if storage.is_float or qtype.expressed != "float32" else needed


def convert(model: ModelProto, version: int) -> ModelProto:
    """``onnx.version_converter.convert_version(model, version)``, with the metadata_props of each node it keeps, which
    the converter drops: the lift's marks of each node's origin, lower's of the nodes it inserted, MatMulNBits'
    accuracy_level. A node is found again by its outputs and those of the nodes whose subgraphs hold it (not by
    position: the converter may insert nodes before it)."""
    kept = {key: list(node.metadata_props) for key, node in _nodes(model.graph) if node.metadata_props}
    converted = version_converter.convert_version(model, version)
    for key, node in _nodes(converted.graph) if kept else ():
        if not node.metadata_props and key in kept:
            node.metadata_props.extend(kept[key])
    return converted


def _nodes(graph: GraphProto, path: tuple = ()) -> Iterator[tuple[tuple, NodeProto]]:
    """Every node of ``graph`` and of its subgraphs, each with its key: the outputs of the nodes holding it, with the
    attribute, then its own outputs."""
    for node in graph.node:
        outputs = tuple(node.output)
        yield (*path, outputs), node
        for attribute in node.attribute:
            graphs = [attribute.g] if attribute.type == AttributeProto.GRAPH else attribute.graphs
            for k, sub in enumerate(graphs):
                yield from _nodes(sub, (*path, outputs, attribute.name, k))


def raise_opset(model: ModelProto, needed: int) -> str | None:
    """Raise ``model`` in place to opset ``needed`` when it imports less; a note saying so, or None when nothing was
    done. Raises ValueError (the converter's first line) when onnx.version_converter cannot."""
    have = default_opset(model) or 1
    if needed <= have:
        return None
    try:
        converted = convert(model, needed)
    except Exception as exc:  # noqa: BLE001 - any failure of the converter
        raise ValueError(f"needs opset {needed} ({WHY}), the model imports {have} "
                         f"and onnx.version_converter could not raise it "
                         f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
    model.CopyFrom(converted)
    return f"default-domain opset raised from {have} to {needed} by onnx.version_converter ({WHY})"
