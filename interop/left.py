"""What the lift left as it was: every quantization node of the user's file still in the lifted model, named by its
place in that file (op type, name, /graph/node/<index>) with the reason, and counted exactly.

The lift rewrites the graph in several steps (QONNX, MatMulNBits, dynamic quantization, QOperator expansion), so
node positions move. ``stamp`` marks every main-graph node with its position in the file before the first step;
``collect`` reads the marks on the nodes still there, and ``strip`` removes them before the model is returned.

A quantization node is left when it is still in the lifted model and is not one of the typed model's own boundary
nodes: a QuantizeLinear writing, or a DequantizeLinear reading, a quantized type is the typed form of a float graph
input or output; any other QuantizeLinear / DequantizeLinear, every QOperator, integer, contrib or custom quantizing
node is left. A custom-domain node whose operator quantizes (Quark's ``BFPQuantizeDequantize``, ``MXQuantizeDequantize``,
``ExtendedQuantizeLinear``...) is an *unknown quantization*, never "no quantization".
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from onnx import GraphProto, NodeProto, TensorProto, helper

from onnx_qtypes.interop.graph import MS_DOMAIN, ORIGIN_KEY, QDQ_OPS, QONNX_DOMAINS, STANDARD_DOMAINS, node_label
from onnx_qtypes.reference_ops.producer_ops import QUARK_DOMAIN


@dataclasses.dataclass(frozen=True)
class LeftNode:
    """One quantization node of the file that the lift left as it was, and why."""

    index: int  # position in the file's main graph
    name: str
    op_type: str
    domain: str
    reason: str

    @property
    def label(self) -> str:
        node = NodeProto(op_type=self.op_type, name=self.name, domain=self.domain)
        return node_label(node, self.index)

    def line(self) -> str:
        return f"{self.label}: {self.reason}"


def stamp(graph: GraphProto) -> bool:
    """Mark every node with its position in the file (kept by copies, read by ``collect`` and ``node_label``, and
    by ``check``'s locator). A mark the file itself carries is overwritten: the position is the lift's to say.
    Returns whether any node carried metadata of its own before (if none did, the mark is all a node carries)."""
    carried = False
    for i, node in enumerate(graph.node):
        props = node.metadata_props
        marks = None
        if props:  # (most nodes have none)
            carried = True
            marks = [p for p in props if p.key == ORIGIN_KEY]
        if marks:
            for mark in marks:
                mark.value = str(i)
        else:
            props.add(key=ORIGIN_KEY, value=str(i))
    return carried


def origin(node: NodeProto) -> int | None:
    for p in node.metadata_props:
        if p.key == ORIGIN_KEY:
            return int(p.value)
    return None


def strip(graph: GraphProto) -> None:
    for node in graph.node:
        marks = [k for k, p in enumerate(node.metadata_props) if p.key == ORIGIN_KEY]
        for k in reversed(marks):
            del node.metadata_props[k]


def custom_quantizer(node: NodeProto) -> bool:
    """A node of a domain the lift does not read whose operator says it quantizes."""
    if node.domain in STANDARD_DOMAINS or node.domain == MS_DOMAIN or node.domain in QONNX_DOMAINS:
        return False
    return "quant" in node.op_type.lower() or node.op_type.upper().startswith(("BFP", "MX"))


def is_quantization_node(node: NodeProto, typed: set[str]) -> bool:
    """Whether ``node``, still in the lifted model, is quantization the lift left (not a typed boundary node)."""
    from onnx_qtypes.interop.qoperator import looks_quantized  # qoperator imports graph, as this module does

    if node.op_type in QDQ_OPS and (node.domain in STANDARD_DOMAINS or node.domain == MS_DOMAIN):
        side = node.output if node.op_type == "QuantizeLinear" else node.input
        return not (side and side[0] in typed)
    if node.domain in QONNX_DOMAINS:
        return True
    if node.op_type == "DynamicQuantizeLinear" and node.domain in STANDARD_DOMAINS and node.output:
        return node.output[0] not in typed  # typed dynamic: the typed model's own boundary
    return looks_quantized(node) or custom_quantizer(node) or (node.domain == MS_DOMAIN and node.op_type == "MatMulNBits")


def collect(graph: GraphProto, typed: set[str], reasons: dict[int, str]) -> list[LeftNode]:
    """Every quantization node of the file still in ``graph`` (typed: the quantized tensors), in file order."""
    found = []
    stored: dict[str, int] | None = None  # the initializers' data types: read for the first custom quantizer
    for node in graph.node:
        at = origin(node)
        if at is None or not is_quantization_node(node, typed):
            continue
        if custom_quantizer(node):
            if stored is None:
                stored = {t.name: t.data_type for t in graph.initializer}
            reason = _default_reason(node, stored)
        else:
            reason = reasons.get(at) or _default_reason(node)
        found.append(LeftNode(at, node.name, node.op_type, node.domain, reason))
    return sorted(found, key=lambda n: n.index)


def _quark_detail(node: NodeProto, stored: dict[str, int]) -> str:
    """What AMD Quark 0.13's own operators (domain com.amd.quark) compute, read from the node: "" for others."""
    if node.domain != QUARK_DOMAIN:
        return ""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    element = attrs.get("element_dtype", b"")
    element = element.decode(errors="replace") if isinstance(element, bytes) else str(element)
    if node.op_type in ("MXQuantizeDequantize", "BFPQuantizeDequantize") and "block_size" in attrs:
        kind = "MX" if node.op_type.startswith("MX") else "block floating point"
        return (f"{kind} quantize-dequantize of {element or 'its elements'} in blocks of {attrs['block_size']} along "
                f"axis {attrs.get('axis', '?')}, each block's shared power-of-two scale computed at run time")
    if node.op_type in ("ExtendedQuantizeLinear", "ExtendedDequantizeLinear") and len(node.input) > 2:
        code = stored.get(node.input[2])
        if code in (TensorProto.BFLOAT16, TensorProto.FLOAT16):
            name = "bfloat16" if code == TensorProto.BFLOAT16 else "float16"
            return (f"quantization to {name} storage (its zero point is {name}), a storage type the proposal does "
                    "not define")
    return ""


def _default_reason(node: NodeProto, stored: dict[str, int] | None = None) -> str:
    if custom_quantizer(node):
        detail = _quark_detail(node, stored or {})
        return f"unknown quantization: {node.op_type} ({node.domain}) not lifted" + (f": {detail}" if detail else "")
    if node.op_type in QDQ_OPS:
        return "its integer tensor is not typed (a quantization node around it is left)"
    return "not a quantization pattern the lift knows"


def summary(left: list[LeftNode]) -> str:
    """``left 40 node(s) as they were: 38 QGemm, 2 QLinearMul`` (most frequent first)."""
    counts = Counter(n.op_type if n.domain in STANDARD_DOMAINS else f"{n.domain}.{n.op_type}" for n in left)
    shown = ", ".join(f"{count} {op}" for op, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"left {len(left)} quantization node(s) as they were: {shown}"


__all__ = ["LeftNode", "collect", "stamp", "strip", "summary"]
