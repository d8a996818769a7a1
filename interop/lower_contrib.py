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

from collections.abc import Callable, Container

from onnx import AttributeProto, NodeProto, defs, helper
from onnx_qtypes.interop.graph import MS_DOMAIN, STANDARD_DOMAINS, attributes, node_with_attributes
from onnx_qtypes.interop.qoperator import MICROSOFT, bias_problem, gemm_b_axis, triples
from onnx_qtypes.proto.qtype import QType

QLINEAR_STORAGE = ("int8", "uint8")  # what QLinearConv / QLinearMatMul and onnxruntime's QLinear* kernels take


def contrib_reason(node: NodeProto, op_type: str, types: dict[str, QType]) -> str | None:
    """Why ``node``, lifted from com.microsoft ``op_type``, cannot be written back as that op (None: it can)."""
    spec = MICROSOFT.get(op_type)
    if spec is None:  # a hand-edited mark
        return f"{op_type} is not a com.microsoft operator lower writes back"
    if spec.float_op != node.op_type or node.domain not in STANDARD_DOMAINS:
        return f"it is a {node.op_type}, which {op_type} does not compute"
    if others := sorted(set(attributes(node)) - spec.takes - spec.implied):  # onnxruntime refuses the model
        return f"attribute(s) {', '.join(others)}, which {op_type} does not take"
    if spec.bias is not None:
        return _qgemm_reason(node, types)
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
    if reason := _operand_problem(op_type, kinds[:-1]) or _output_problem(op_type, kinds[-1]):
        return reason
    if len({q.storage for q in kinds}) != 1:
        return f"{op_type} takes one storage type on every side"
    return None


def _operand_problem(op_type: str, kinds: list[QType], axes: tuple[int | None, ...] = (None,)) -> str | None:
    for qtype in kinds:
        if qtype.is_dynamic or qtype.block_size is not None or qtype.axis not in axes:
            return f"{op_type} takes {'per-tensor' if axes == (None,) else 'these'} constant parameters"
        if qtype.storage not in QLINEAR_STORAGE or qtype.expressed != "float32":
            return f"{op_type} takes int8 / uint8 expressed in float32"
    return None


def _output_problem(op_type: str, out: QType) -> str | None:
    if reason := _operand_problem(op_type, [out]):
        return reason
    if (out.storage_min, out.storage_max) != (out.storage_type.min, out.storage_type.max):
        return f"a narrowed output range ({op_type} saturates at the full range)"
    return None


def _qgemm_reason(node: NodeProto, types: dict[str, QType]) -> str | None:
    """QGemm: A per tensor, B per tensor or per column of op(B), an int32 bias of scale A * B (float32) and zero point
    0 if any, a typed output or a float one; alpha folded into B's scales on the way in (so 1 here), beta 1."""
    attrs = attributes(node)
    if attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
        return "alpha and beta other than 1 (lift folds QGemm's alpha into the weight's scales)"
    if len(node.output) != 1 or not 2 <= len(node.input) <= 3:
        return "its inputs and outputs do not fit QGemm's"
    if not all(n in types for n in node.input[:2]):  # lift keeps a float-output QGemm's DequantizeLinear nodes
        return "its operands are dequantized before it"
    a, b = (types[n] for n in node.input[:2])
    if reason := _operand_problem("QGemm", [a]) or _operand_problem("QGemm", [b], (None, gemm_b_axis(2, attrs))):
        return reason
    if len(node.input) == 3 and node.input[2] and (reason := bias_problem(types.get(node.input[2]), a, b,
                                                                          "A scale * B scale")):
        return reason
    out = types.get(node.output[0])
    return None if out is None else _output_problem("QGemm", out)


def _float_default(op_type: str, attribute: str, opset: int) -> AttributeProto:
    """``attribute`` of ``op_type`` (default domain) at ``opset`` as its schema defaults it (Softmax-11's axis: 1)."""
    default = defs.get_schema(op_type, opset).attributes[attribute].default_value
    made = AttributeProto()
    made.CopyFrom(default)
    made.name = attribute
    return made


def contrib_node(node: NodeProto, op_type: str, types: Container[str], integer: Callable[[str], str],
                 parameters: Callable[[str], tuple[str, str]], name: str, opset: int) -> NodeProto:
    """``node`` as com.microsoft ``op_type`` on the stored values: ``integer`` names a tensor of ``types`` by its
    stored twin, ``parameters`` by its (scale, zero point) tensors; ``opset`` is the default domain's version
    (QLinearSoftmax computes the Softmax of the version it names). QGemm's output may be float (not in ``types``)."""
    spec = MICROSOFT[op_type]
    plain = list(node.input[:len(spec.plain)])
    operands = list(node.input[len(spec.plain):])
    if spec.bias is not None:  # QGemm: the bias follows the operands
        operands, bias = operands[:len(spec.operands)], operands[len(spec.operands):]
    out = node.output[0]
    assert spec.output is not None
    slots: dict[int, str] = dict(zip(spec.plain, plain))
    if out in types:
        slots[spec.output[0]], slots[spec.output[1]] = parameters(out)
    for operand, tensor in zip(triples(spec, len(operands)) if spec.variadic else spec.operands, operands):
        slots[operand.data] = integer(tensor)
        slots[operand.scale], slots[operand.zero_point] = parameters(tensor)
    if spec.bias is not None and bias and bias[0]:
        slots[spec.bias.data] = integer(bias[0])
    inputs = [slots.get(i, "") for i in range(max(slots) + 1)]
    # the attributes the op takes, copied as they are (contrib_reason: the rest is implied); opset: the typed model's
    renewed = ("opset",) if "opset" in spec.drop else ()
    made = node_with_attributes(op_type, inputs, [integer(out) if out in types else out], node, name=name,
                                drop=tuple(a.name for a in node.attribute
                                           if a.name not in spec.takes or a.name in renewed))
    made.domain = MS_DOMAIN
    if renewed:
        made.attribute.append(helper.make_attribute("opset", opset))
    given = {a.name for a in made.attribute}
    for attribute, _ in spec.defaults:  # the op's own default differs from the float operator's: the latter, said
        if attribute not in given:
            made.attribute.append(_float_default(spec.float_op, attribute, opset))
    made.attribute.sort(key=lambda a: a.name)  # (in name order, as helper.make_node writes them)
    return made
