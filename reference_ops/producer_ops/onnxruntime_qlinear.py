"""onnxruntime's QOperator contrib operators (domain com.microsoft: QLinearAdd, QLinearMul, QLinearSigmoid,
QLinearLeakyRelu, QLinearSoftmax, QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat, QLinearWhere, QGemm),
computed as their schemas describe them: every operand dequantized, the float operator run, the result quantized.

The lift reads such a node as its float operator on typed tensors (``interop.qoperator.MICROSOFT``, this file's one
table of operands, bias, output and float operator). It leaves one as written where no type can stand, as at a scale
of infinity (onnxruntime's quantizer writes one for BERT's -inf attention mask), and every QOperator node whose
integers that node reads; also a channels_last pool and a QLinearSoftmax whose ``opset`` and the model's differ.
``run`` computes those here instead of refusing the model. Each node becomes a small ONNX
graph (DequantizeLinear per operand, the float operator, QuantizeLinear) that the project's own evaluator runs, so
that the dequantize, the operator and the saturating quantize are the ones every other node of ``run`` gets.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from onnx.reference.op_run import OpRun

from onnx_qtypes.interop.graph import MS_DOMAIN
from onnx_qtypes.interop.opset import qdq_opset
from onnx_qtypes.interop.qoperator import (MICROSOFT, NEGATIVE_AXES_OPSET, Spec, foreign_attributes,
                                           opset_attribute_problem, operands, triples_problem)
from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.reference_ops.corrected._base import Refused


class QLinearContrib(OpRun):
    """One com.microsoft QOperator node: its graph is built at the first run, from the inputs' element types.
    (Not a ``Corrected``: QLinearSoftmax's attribute ``opset`` would shadow that class's property.)"""

    op_domain = MS_DOMAIN
    spec: Spec

    def _run(self, *inputs: Any, **attributes: Any) -> tuple:
        given = [None if v is None else np.asarray(v) for v in inputs]
        key = tuple(None if v is None else (v.dtype.str, v.ndim, v.size > 1) for v in given)
        cache = self.__dict__.setdefault("_graphs", {})
        if key not in cache:
            cache[key] = self._evaluator(given)
        evaluator, names = cache[key]
        try:
            return tuple(evaluator.run(None, {n: v for n, v in zip(names, given) if n}))
        except QTypesError as exc:  # (a node of the small graph, unnamed there: this node is named by the caller)
            raise Refused(f"computed as DequantizeLinear, {self.spec.float_op}, QuantizeLinear: {exc}") from None

    def _evaluator(self, given: list[np.ndarray | None]) -> tuple[Any, list[str]]:
        from onnx_qtypes.reference_ops.evaluator import ReferenceEvaluator  # noqa: PLC0415 (it imports this package)

        model, names = _graph(self.onnx_node, self.spec, given, self.default_opset())
        try:
            return ReferenceEvaluator(model), names
        except QTypesError as exc:
            raise Refused(f"computed as DequantizeLinear, {self.spec.float_op}, QuantizeLinear: {exc}") from None

    def default_opset(self) -> int:
        opsets = self.run_params["opsets"]
        return int(opsets.get("", opsets.get("ai.onnx", 1)))


def _graph(node: Any, spec: Spec, given: list[np.ndarray | None], opset: int) -> tuple[Any, list[str]]:
    """The node as DequantizeLinear per operand, its float operator, and a QuantizeLinear when it writes integers;
    with the names its inputs take there ("" for an omitted one)."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    names = [f"in{i}" if v is not None else "" for i, v in enumerate(given)]

    def present(i: int | None) -> bool:
        return i is not None and i < len(given) and given[i] is not None

    if any(not present(i) for i in spec.plain):
        raise Refused(f"{node.op_type}: input {spec.plain} is required")
    if reason := foreign_attributes(spec, node):
        raise Refused(reason)
    nodes, inits = [], []
    float_inputs = [names[i] for i in spec.plain]
    triples = operands(spec, node)
    if problem := triples_problem(spec, len(given)):
        raise Refused(f"{node.op_type}: {problem}")
    if not triples and spec.variadic:
        raise Refused(f"{node.op_type}: no input tensor")
    if problem := _shape_problem(node, spec, attrs, [given[t.data] for t in triples if present(t.data)]):
        raise Refused(f"{node.op_type}: {problem} (onnxruntime refuses the model)")
    factor = attrs.get("alpha", 1.0) if spec.scales_operand else 1.0
    scales: list[str] = []
    per_axis = False
    for k, operand in enumerate(triples):
        if not present(operand.data) or not present(operand.scale):
            raise Refused(f"{node.op_type}: input {operand.data} and its scale (input {operand.scale}) are required")
        scale = names[operand.scale]
        if spec.scales_operand and spec.scales_operand[1] == k and factor != 1.0:
            inits.append(numpy_helper.from_array(np.array(factor, np.float32), f"factor{k}"))
            nodes.append(helper.make_node("Mul", [scale, f"factor{k}"], [f"scale{k}"]))
            scale = f"scale{k}"
        scales.append(scale)
        dq_inputs = [names[operand.data], scale] + ([names[operand.zero_point]] if present(operand.zero_point) else [])
        dq_attrs = {}
        if given[operand.scale].size > 1:
            axis = operand.axis(given[operand.data].ndim, attrs) if operand.axis is not None else None
            if axis is None:
                raise Refused(f"{node.op_type}: input {operand.scale} holds {given[operand.scale].size} scales; "
                              f"onnxruntime's schema takes one for input {operand.data}")
            dq_attrs["axis"] = axis
            per_axis = True
        nodes.append(helper.make_node("DequantizeLinear", dq_inputs, [f"real{k}"], **dq_attrs))
        float_inputs.append(f"real{k}")
    if spec.bias is not None and present(spec.bias.data):  # int32 at the float32 product of the two scales
        a, b = spec.bias.factors
        per_column = any(given[triples[k].scale].size > 1 for k in (a, b))
        bias = names[spec.bias.data]
        nodes.append(helper.make_node("Mul", [scales[a], scales[b]], ["bias_scale"]))
        if per_column:  # a bias of one value (or a scalar) broadcasts over the columns, as onnxruntime adds it
            nodes += [helper.make_node("Shape", ["bias_scale"], ["columns"]),
                      helper.make_node("Expand", [bias, "columns"], ["bias_wide"])]
            bias = "bias_wide"
        nodes.append(helper.make_node("DequantizeLinear", [bias, "bias_scale"], ["bias_real"],
                                      **({"axis": -1} if per_column else {})))
        per_axis = per_axis or per_column
        float_inputs.append("bias_real")
    kept = {**dict(spec.defaults), **{k: v for k, v in attrs.items() if k not in spec.drop}}
    op_opset = max(attrs.get("opset", opset) if spec.float_op == "Softmax" else opset, qdq_opset(8, False))
    if spec.float_op == "Softmax":  # Softmax-11 means what 1 to 10 mean, and takes the default axis -1 as well
        op_opset = max(op_opset, NEGATIVE_AXES_OPSET)
    result = "y"
    if attrs.get("channels_last", 0):  # NHWC in and out: the float operator pools NCHW
        rank = given[triples[0].data].ndim
        to_nchw = [0, rank - 1, *range(1, rank - 1)]
        nodes.append(helper.make_node("Transpose", [float_inputs[0]], ["nchw"], perm=to_nchw))
        float_inputs[0] = "nchw"
        nodes.append(helper.make_node(spec.float_op, float_inputs, ["pooled"], **kept))
        nodes.append(helper.make_node("Transpose", ["pooled"], [result], perm=[0, *range(2, rank), 1]))
    else:
        nodes.append(helper.make_node(spec.float_op, float_inputs, [result], **kept))
    out_scale, out_zero_point = spec.output if spec.output is not None else (None, None)
    if present(out_scale) and spec.output_optional and not present(out_zero_point):
        # QGemm with y_scale alone writes float: its reals divided by y_scale, not rounded (onnxruntime's kernel)
        nodes.append(helper.make_node("Div", [result, names[out_scale]], ["out"]))
        result = "out"
    elif present(out_scale):
        zero_point = names[out_zero_point] if present(out_zero_point) else "out_zero_point"
        if not present(out_zero_point):  # (QLinearAdd, Mul, Sigmoid, LeakyRelu, AveragePool): 0 of the input's type
            inits.append(numpy_helper.from_array(np.zeros((), given[triples[0].data].dtype), zero_point))
        nodes.append(helper.make_node("QuantizeLinear", [result, names[out_scale], zero_point], ["out"]))
        result = "out"
    elif not spec.output_optional or present(out_zero_point):
        raise Refused(f"{node.op_type}: the output's scale (input {out_scale}) is required")
    # (each dimension a name of its own: the graph serves every call whose inputs have these types and ranks)
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype),
                                            [f"{n}_{k}" for k in range(v.ndim)]) for n, v in zip(names, given) if n]
    output = helper.make_tensor_value_info(result, TensorProto.UNDEFINED, None)
    graph = helper.make_graph(nodes, node.op_type, inputs, [output], inits)
    version = max(op_opset, qdq_opset(8, per_axis))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", version)], ir_version=10)
    return model, names


def _shape_problem(node: Any, spec: Spec, attrs: dict, operands: list[np.ndarray]) -> str | None:
    """What of the node's ranks and attribute types its onnxruntime schema refuses, where the float operator would
    compute something anyway: QGemm's operands are matrices, a pool's input has a channel and a spatial axis,
    QLinearSoftmax's ``opset`` is an integer."""
    if problem := opset_attribute_problem(attrs):
        return problem
    if spec.float_op == "Gemm" and any(x.ndim != 2 for x in operands):
        return f"operands of rank {', '.join(str(x.ndim) for x in operands)}, where QGemm takes matrices"
    if spec.float_op in ("AveragePool", "GlobalAveragePool") and operands and operands[0].ndim < 3:
        return f"an input of rank {operands[0].ndim}, where a pool takes N x C x D1 ..."
    return None


def _op_class(op_type: str, spec: Spec) -> type[QLinearContrib]:
    return type(op_type, (QLinearContrib,), {"spec": spec, "__module__": __name__})


CONTRIB_QLINEAR_OPS = [_op_class(op_type, spec) for op_type, spec in MICROSOFT.items()]
