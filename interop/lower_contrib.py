"""The com.microsoft QOperator nodes ``lower``'s qoperator form writes back.

``lift`` reads onnxruntime's com.microsoft QLinear* nodes as the float operator on typed tensors and marks that
operator with the op type it came from (``metadata.CONTRIB_KEY``). Written back as float QDQ, such an operator
means the same, but runs another kernel: onnxruntime's QLinearAdd, for one, rounds a value that lies within one
float32 rounding of a tie differently from DequantizeLinear, Add and QuantizeLinear in float32, so the lowered model
was one step off the original on a few elements of real files. The qoperator form therefore writes the marked node
as its original contrib op whenever the types still have that op's form; the input layout comes from the table the
lift reads (``qoperator.MICROSOFT``), so the two directions cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable

from onnx import NodeProto, helper
from onnx_qtypes.interop.graph import MS_DOMAIN, STANDARD_DOMAINS
from onnx_qtypes.interop.qoperator import MICROSOFT, triples
from onnx_qtypes.proto.qtype import QType

QLINEAR_STORAGE = ("int8", "uint8")  # what QLinearConv / QLinearMatMul and onnxruntime's QLinear* kernels take


def contrib_reason(node: NodeProto, op_type: str, types: dict[str, QType]) -> str | None:
    """Why ``node``, lifted from com.microsoft ``op_type``, cannot be written back as that op (None: it can)."""
    spec = MICROSOFT.get(op_type)
    if spec is None or spec.float_op != node.op_type or node.domain not in STANDARD_DOMAINS:
        return f"it is a {node.op_type}, which {op_type} does not compute"
    if spec.bias is not None or spec.scales_operand is not None:
        return f"{op_type} folds its bias and alpha into the scales; lower writes it as QDQ"
    plain = node.input[:len(spec.plain)]
    operands = node.input[len(spec.plain):]
    if len(node.output) != 1 or (not spec.variadic and len(operands) != len(spec.operands)) or not operands:
        return f"its inputs and outputs do not fit {op_type}'s"
    if any(name in types for name in plain):
        return "its condition is quantized"
    linked = [*operands, node.output[0]]
    if not all(name in types for name in linked):
        return "not quantized on every side"
    kinds = [types[name] for name in linked]
    for qtype in kinds:
        if qtype.is_dynamic or qtype.axis is not None or qtype.block_size is not None:
            return f"{op_type} takes per-tensor constant parameters"
        if qtype.storage not in QLINEAR_STORAGE or qtype.expressed != "float32":
            return f"{op_type} takes int8 / uint8 expressed in float32"
    if len({q.storage for q in kinds}) != 1:
        return f"{op_type} takes one storage type on every side"
    out = kinds[-1]
    if (out.storage_min, out.storage_max) != (out.storage_type.min, out.storage_type.max):
        return f"a narrowed output range ({op_type} saturates at the full range)"
    return None


def contrib_node(node: NodeProto, op_type: str, integer: Callable[[str], str],
                 parameters: Callable[[str], tuple[str, str]], name: str, opset: int) -> NodeProto:
    """``node`` as com.microsoft ``op_type`` on the stored values: ``integer`` names a tensor's stored twin,
    ``parameters`` its (scale, zero point) tensors; ``opset`` is the default domain's version (QLinearSoftmax
    computes the Softmax of the version it names)."""
    spec = MICROSOFT[op_type]
    plain = list(node.input[:len(spec.plain)])
    operands = list(node.input[len(spec.plain):])
    out = node.output[0]
    assert spec.output is not None
    slots: dict[int, str] = dict(zip(spec.plain, plain))
    slots[spec.output[0]], slots[spec.output[1]] = parameters(out)
    for operand, tensor in zip(triples(spec, len(operands)) if spec.variadic else spec.operands, operands):
        slots[operand.data] = integer(tensor)
        slots[operand.scale], slots[operand.zero_point] = parameters(tensor)
    inputs = [slots[i] for i in range(max(slots) + 1)]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if "opset" in spec.drop:
        attrs["opset"] = opset
    return helper.make_node(op_type, inputs, [integer(out)], name=name, domain=MS_DOMAIN, **attrs)
