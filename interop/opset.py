"""Raise a model's default-domain opset so that standard QuantizeLinear / DequantizeLinear can write a type.

One place for the versions (per-axis parameters: 13; 16-bit, 4-bit, blocked: 21) and for raising the whole model
with onnx.version_converter, so that its other operators keep their meaning at the new version.
"""

from __future__ import annotations

from onnx import ModelProto, version_converter

from onnx_qtypes.interop.graph import default_opset
from onnx_qtypes.proto import iter_graphs


def qdq_opset(bits: int, per_axis: bool, blocked: bool = False) -> int:
    """The first default-domain opset whose QuantizeLinear / DequantizeLinear hold such a type."""
    return 21 if bits != 8 or blocked else 13 if per_axis else 10


def convert(model: ModelProto, version: int) -> ModelProto:
    """``onnx.version_converter.convert_version(model, version)``, with the metadata_props of each node it keeps, which
    the converter drops: the lift's marks of each node's origin, lower's of the nodes it inserted, MatMulNBits'
    accuracy_level (a node is found again by its graph and its outputs: one node writes a name)."""
    kept = {(pointer, tuple(node.output)): list(node.metadata_props)
            for pointer, graph in iter_graphs(model) for node in graph.node if node.metadata_props}
    converted = version_converter.convert_version(model, version)
    for pointer, graph in iter_graphs(converted) if kept else ():
        for node in graph.node:
            if not node.metadata_props and (pointer, tuple(node.output)) in kept:
                node.metadata_props.extend(kept[pointer, tuple(node.output)])
    return converted


def raise_opset(model: ModelProto, needed: int) -> str | None:
    """Raise ``model`` in place to opset ``needed`` when it imports less; a note saying so, or None when nothing was
    done. Raises ValueError (the converter's first line) when onnx.version_converter cannot."""
    have = default_opset(model) or 1
    if needed <= have:
        return None
    try:
        converted = convert(model, needed)
    except Exception as exc:  # noqa: BLE001 - any failure of the converter
        raise ValueError(f"needs opset {needed} (per-axis QuantizeLinear: 13, 16-bit: 21), the model imports {have} "
                         f"and onnx.version_converter could not raise it "
                         f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
    model.CopyFrom(converted)
    return (f"default-domain opset raised from {have} to {needed} by onnx.version_converter "
            "(per-axis QuantizeLinear needs 13, 16-bit needs 21)")
