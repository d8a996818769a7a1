"""The exact set lower writes (proposal/spec/interop.md#lower-set): one representative model per listed kind.

Each kind W1-W9 that the text says lower writes is lowered to a model with no extension left that
onnx.checker accepts; each kind R1-R9 that it says lower refuses is refused with a LowerError naming the tensor
or node. The accepted representatives are suite cases (their typed model.onnx); the refused ones are built here.
A kind added to the text without a row here, or a row whose kind the text no longer lists, fails
``test_every_listed_kind_has_a_representative``.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import onnx
import pytest
from builders import ROOT
from onnx import TensorProto, helper, numpy_helper
from test_lower_standard_form import _function_model, _if_model, _model, _narrowed_per_axis_output, _per_axis_dynamic_output

from onnx_qtypes import QType, lower, set_qtype
from onnx_qtypes.interop.errors import LowerError

CASES = ROOT / "conformance_tests" / "cases" / "execution"
TEXT = (ROOT / "proposal" / "spec" / "interop.md").read_text(encoding="utf-8")

WRITTEN = {  # kind -> suite cases whose typed model is of that kind
    "W1": ["add-int2-float32-per-tensor", "dequantize_linear-float8e5m2-float32-per-tensor",
           "matmul-int8-wfloat4e2m1-float32-blocked", "conv-by-reference-int8-float32-per-axis",
           "conv-negative-weight-scale-int8-float32", "add-version-2-int8-float32"],
    "W2": ["add-int32-saturation-int8-float32"],
    "W3": ["add-narrowed-int8-float32", "conv-narrowed-int8-float32-per-axis"],
    "W4": ["add-int16-float16-per-tensor", "transpose-uint16-float16-per-tensor"],
    "W5": ["if-int8-float32-then", "loop-int8-float32", "scan-int8-float32"],
    "W6": ["function-typed-body-int8-float32", "function-untyped-body-int8-float32"],
    "W7": ["dynamic-graph-input-storage-int8-float32", "dynamic-graph-input-storage-without-zero-point-int8-float32",
           "dynamic-graph-input-reals-int8-float32",
           "dynamic-graph-output-int8-float32", "dynamic-symmetric_with_unsigned-int8-float32",
           "dynamic-quantize-uint16-float16", "dynamic_quantize_linear-uint8-float32-mixed"],
    "W8": ["gguf-gather-q4_k", "gguf-matmul-mxfp4"],
    "W9": ["add-int8-bfloat16-per-tensor"],
}

X = QType("int8", 0.5, 0)


def _unary(op: str, y: QType, x: QType = X, shape=(2, 3)) -> onnx.ModelProto:
    model = _model([helper.make_node(op, ["x"], ["y"], name="n")], [helper.make_tensor_value_info("x", 0, list(shape))],
                   [helper.make_tensor_value_info("y", 0, list(shape))])
    set_qtype(model, "x", x)
    set_qtype(model, "y", y)
    return model


def _invalid_type():
    model = _unary("Relu", X)
    view = model.graph.output[0].type.tensor_type
    from onnx_qtypes.proto.model import read_view, write_view  # noqa: PLC0415

    typed = read_view(view)
    typed.quantization.scale[:] = [0.0]
    write_view(view, typed)
    return model


def _boundary_mismatch():
    inits = [numpy_helper.from_array(np.array(0.25, np.float32), "s"), numpy_helper.from_array(np.array(0, np.int8), "z")]
    model = _model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q")],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])], [helper.make_tensor_value_info("y", 0, [4])],
                   initializers=inits)
    set_qtype(model, "y", X)
    return model


def _requantizing_branch():
    model = _if_model("Identity")
    set_qtype(model, "t", QType("int8", 0.25, 3))
    return model


def _order_on_negative_scale():
    then = helper.make_graph([helper.make_node("ReduceMax", ["w"], ["t"], keepdims=1)], "then", [],
                             [helper.make_tensor_value_info("t", 0, [1])])
    other = helper.make_graph([helper.make_node("Slice", ["w", "st", "en"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", 0, [1])])
    inits = [numpy_helper.from_array(np.array([1, -2, 3, -4], np.int8), "w"),
             numpy_helper.from_array(np.array([0]), "st"), numpy_helper.from_array(np.array([1]), "en")]
    model = _model([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other, name="if")],
                   [helper.make_tensor_value_info("c", TensorProto.BOOL, [])], [helper.make_tensor_value_info("y", 0, [1])],
                   initializers=inits)
    for name in ("w", "t", "e", "y"):
        set_qtype(model, name, QType("int8", -0.5, 0))
    return model


def _function_with_subgraph():
    model = _function_model()
    body = helper.make_graph([helper.make_node("Identity", ["ft"], ["o"])], "b", [], [helper.make_tensor_value_info("o", 0, None)])
    model.functions[0].node[1].CopyFrom(helper.make_node("Constant", [], ["c"],
                                                         value=helper.make_tensor("v", TensorProto.BOOL, [], [True])))
    model.functions[0].node.append(helper.make_node("If", ["c"], ["fy"], then_branch=body, else_branch=body))
    return model


def _dynamic_constant():
    model = _model([helper.make_node("Relu", ["w"], ["y"], name="n")], [], [helper.make_tensor_value_info("y", 0, [2])],
                   initializers=[numpy_helper.from_array(np.array([1, 2], np.int8), "w")])
    set_qtype(model, "w", QType("int8"))
    set_qtype(model, "y", X)
    return model


def _dynamic_quantize_linear_other_type():
    model = _model([helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"], name="dql")],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])], [helper.make_tensor_value_info("y", 0, [4])])
    set_qtype(model, "y", QType("int8"))
    return model


def _dequantize_dynamic_with_other_operands():
    model = _model([helper.make_node("Relu", ["x"], ["h"], name="r"), helper.make_node("DequantizeLinear", ["h", "s"], ["y"], name="dq")],
                   [helper.make_tensor_value_info("x", 0, [4])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
                   initializers=[numpy_helper.from_array(np.array(0.25, np.float32), "s")])
    set_qtype(model, "x", X)
    set_qtype(model, "h", QType("int8"))
    return model


def _without_static_shape(y: QType):
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="n")], [helper.make_tensor_value_info("x", 0, [2, "d"])],
                   [helper.make_tensor_value_info("y", 0, [2, "d"])])
    set_qtype(model, "x", X)
    set_qtype(model, "y", y)
    return model


def _not_convertible():
    model = _model([helper.make_node("RMSNormalization", ["x", "g"], ["y"], name="n")],
                   [helper.make_tensor_value_info("x", 0, [2, 3])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                   initializers=[numpy_helper.from_array(np.ones(3, np.float32), "g")], opset=23)
    set_qtype(model, "x", X)
    return model


REFUSED = {  # kind -> [(model builder, what the error must name)]
    "R1": [(_invalid_type, r"tensor 'y'.*scale")],
    "R2": [(lambda: _unary("Relu", QType("int8", 0.1, 0, expressed="float16")), r"tensor 'y': scale 0\.1 is not exactly"),
           (lambda: _without_static_shape(QType("int8", [0.5] * 2, [0] * 2, axis=1, block_size=2)),
            r"tensor 'y': a blocked type needs the tensor's full static shape")],
    "R3": [(_boundary_mismatch, r"QuantizeLinear 'q' \(/graph/node/0\) applies scale 0\.25 to 'y'"),
           (_dequantize_dynamic_with_other_operands, r"DequantizeLinear 'dq' \(/graph/node/1\) dequantizes 'h'"),
           (_dynamic_quantize_linear_other_type, r"DynamicQuantizeLinear 'dql' \(/graph/node/0\) writes 'y'")],
    "R4": [(lambda: _if_model("Sigmoid"), r"If \(/graph/node/1\): Sigmoid \(/graph/node/1/attribute/1/g/node/0\)"),
           (_requantizing_branch, r"Identity \(/graph/node/1/attribute/1/g/node/0\) .* requantizes"),
           (_order_on_negative_scale, r"ReduceMax \(/graph/node/0/attribute/1/g/node/0\) .* negative scale")],
    "R5": [(lambda: _function_model(attributes=True), r"function local:Requant \(called by call_0\): a typed body with attributes"),
           (_function_with_subgraph, r"function local:Requant \(called by call_0\): node 2 \(If\) has a subgraph")],
    "R6": [(_dynamic_constant, r"tensor 'w': a dynamic type \(no scale\) on a constant"),
           (_per_axis_dynamic_output, r"tensor 'y': a per-axis dynamic type"),
           (lambda: _unary("Relu", QType("int2")), r"tensor 'y': a dynamic int2 type"),
           (lambda: _unary("Relu", QType("int32")), r"Relu 'n' \(/graph/node/0\) computes int32 tensor 'y' of a dynamic type"),
           (lambda: _unary("Relu", QType("float8e4m3fn", schema="symmetric")), r"tensor 'y': a dynamic float8e4m3fn type"),
           (lambda: _unary("Relu", QType("int4", storage_min=-7)), r"tensor 'y': a narrowed storage range on a dynamic int4")],
    "R7": [(_narrowed_per_axis_output, r"tensor 'y': a narrowed storage range on a computed per-axis tensor")],
    "R8": [(lambda: _without_static_shape(QType("int32", [0.5, 0.25], [0, 0], axis=0)),
            r"Relu 'n' \(/graph/node/0\) computes per-axis int32 tensor 'y' without a static shape")],
    "R9": [(_not_convertible, r"RMSNormalization 'n' \(/graph/node/\d+\) has no definition at opset 21")],
}


def test_every_listed_kind_has_a_representative():
    listed = set(re.findall(r"\*\*([WR]\d)\. ", TEXT[TEXT.index('<a id="lower-set">'):TEXT.index('<a id="lower-dynamic">')]))
    assert listed == set(WRITTEN) | set(REFUSED)


@pytest.mark.parametrize("case", [c for cases in WRITTEN.values() for c in cases])
def test_each_kind_lower_writes_lowers_to_plain_onnx(case):
    typed = onnx.load(str(CASES / case / "model.onnx"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # W9: bfloat16's warning about onnxruntime
        plain = lower(typed)
    onnx.checker.check_model(plain)
    marked = [vi.name for vi in (*plain.graph.input, *plain.graph.output, *plain.graph.value_info)
              if vi.type.tensor_type.elem_type >= 1000]
    assert not marked and not any(t.data_type >= 1000 for t in plain.graph.initializer)


@pytest.mark.parametrize(("kind", "build", "names"), [(k, b, n) for k, rows in REFUSED.items() for b, n in rows],
                         ids=lambda v: v if isinstance(v, str) and re.fullmatch(r"R\d", v) else None)
def test_each_kind_lower_refuses_is_refused_naming_the_tensor_or_node(kind, build, names):
    with pytest.raises(LowerError, match=names):
        lower(build())
