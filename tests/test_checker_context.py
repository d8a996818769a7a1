"""The checker's model index: roles, float view, shapes."""

from __future__ import annotations

import onnx
from checker_models import Graph, conv_model, int8, qmsg, stats
from onnx import TensorProto

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.profile import load_profile
from onnx_qtypes.proto import QType, Statistics, TensorStatistics


def test_roles_follow_the_operators():
    ctx = Context(conv_model(), load_profile(None))
    assert ctx.role("", "w") == "weight" and ctx.role("", "b") == "bias"
    assert ctx.role("", "x_q") == "activation" and ctx.role("", "y_q") == "activation"
    # a MatMul operand that is computed, not constant, is an activation
    g = Graph().input("a", (2, 2), int8()).input("b", (2, 2), int8())
    g.node("MatMul", ["a", "b"], ["c"], name="mm").output("c", (2, 2))
    assert Context(g.build(), load_profile(None)).role("", "b") == "activation"


def test_float_view_replaces_types_constants_and_boundaries():
    model = conv_model()
    ctx = Context(model, load_profile(None))
    view = ctx.view
    onnx.checker.check_model(view, full_check=True)  # a stock-valid float model
    ops = [n.op_type for n in view.graph.node]
    assert ops == ["Identity", "Conv", "Identity"]
    inputs = {i.name: i.type.tensor_type.elem_type for i in view.graph.input}
    assert inputs["w"] == TensorProto.FLOAT and inputs["b"] == TensorProto.FLOAT
    assert {i.name for i in view.graph.initializer} == {"x_q_scale", "x_q_zero_point", "y_q_scale", "y_q_zero_point"}
    assert not view.graph.value_info  # declarations are read from the typed model; inference fills gaps
    assert model.graph.node[0].op_type == "QuantizeLinear"  # the typed model is untouched


def test_shapes_come_from_declarations_then_constants_then_inference():
    model = conv_model()
    for vi in model.graph.value_info:
        if vi.name == "y_q":
            vi.type.tensor_type.ClearField("shape")
    ctx = Context(model, load_profile(None))
    assert ctx.shape("", "x_q") == (1, 3, 8, 8)  # declared
    assert ctx.shape("", "x_q_scale") == ()  # an initializer's dims
    assert "inferred" not in ctx.__dict__  # nothing asked for inference yet
    assert ctx.shape("", "y_q") == (1, 4, 8, 8)  # inferred on the float view
    assert ctx.elem_type("", "x") == TensorProto.FLOAT


def test_duplicate_declarations_are_checked_once():
    g = Graph().input("q", (2,), int8(statistics=stats(min=0.0))).value("q", (2,), int8())
    g.node("Identity", ["q"], ["y"], name="id").output("y", (2,))
    ctx = Context(g.build(), load_profile(None))
    assert len(list(ctx.quantized_declarations())) == 1
    assert len(list(ctx.quantized_declarations(unique=False))) == 2
