"""The checker's model index: roles, float view, shapes."""

from __future__ import annotations

import gc
import pathlib

import numpy as np
import onnx
from checker_models import F32, X_SCALE, W_SCALES, Graph, conv_model, int8, qmsg, stats
from onnx import TensorProto

from onnx_qtypes.checker import iter_diagnostics
from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.profile import load_profile
from onnx_qtypes.proto import QType


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


def test_declarations_sharing_a_type_are_each_reported():
    # Three tensors decoded from one TypeProto share its decoded fields; every one is still its own finding.
    bad = qmsg(scale=[0.0], extra=b"\xf0\x01\x01")  # a zero scale and an undefined field 30
    g = Graph()
    for name in ("a", "b", "c"):
        g.input(name, (2,), bad, marker=TensorProto.INT8)
    g.node("Concat", ["a", "b", "c"], ["y"], name="cat", axis=0).output("y", (6,))
    found = {(d.rule, d.location.pointer) for d in iter_diagnostics(g.build())}
    for i in range(3):
        assert ("QT101", f"/graph/input/{i}/type/tensor_type/quantization/scale/0") in found
        assert ("QT119", f"/graph/input/{i}/type/tensor_type/elem_type") in found
        assert ("QT115", f"/graph/input/{i}/type/tensor_type/quantization") in found


def test_screens_leave_the_verdict_near_a_limit_to_the_rule():
    # QT405 and QT408 screen every channel in vector form; values at a hair's breadth from the limit
    # go to the exact test, which decides alone.
    def bias(relative: float) -> QType:
        scales = [float(np.float32(X_SCALE) * np.float32(s)) * (1 + relative) for s in W_SCALES]
        return QType("int32", scales, [0] * 4, axis=0)

    def fired(model: onnx.ModelProto, rule: str) -> bool:
        return any(d.rule == rule for d in iter_diagnostics(model))

    assert not fired(conv_model(bias=bias(0.9e-6)), "QT405")
    assert fired(conv_model(bias=bias(1.1e-6)), "QT405")
    # the largest multiplier x_scale * w_scale / y_scale (w_scale 0.04) just inside SAFE, then just outside 2^29
    w_max = float(np.float32(max(W_SCALES)))
    assert not fired(conv_model(y_q=int8(F32 * w_max / 2.0**28 * (1 + 1e-6), 0)), "QT408")
    assert fired(conv_model(y_q=int8(F32 * w_max / 2.0**29 * (1 - 1e-6), 0)), "QT408")


def test_the_collector_is_paused_only_while_the_checker_computes():
    states = []
    for _ in iter_diagnostics(conv_model(w_axis=1)):  # fires QT402: findings are handed over one by one
        states.append(gc.isenabled())
    assert states and all(states) and gc.isenabled()
    gc.disable()
    try:
        list(iter_diagnostics(conv_model()))
        assert not gc.isenabled()  # the caller's choice stands
    finally:
        gc.enable()


def test_a_run_leaves_no_reference_cycles():
    # What justifies pausing the cycle collector: everything a run builds is freed by reference counting.
    model = onnx.load(str(pathlib.Path(__file__).parents[1] / "examples" / "broken_cnn.onnx"))
    list(iter_diagnostics(model))
    gc.collect()
    gc.disable()
    try:
        list(iter_diagnostics(model))
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_per_axis_parameters_follow_selections_in_order():
    # Slice with a negative step, the second output of Split and Gather with out-of-order indices select the
    # parameters of the slices they keep, in order; the same scales in another order are a QT401 finding.
    scales = [0.125, 0.25, 0.5, 1.0]
    cases = [
        ("Slice", [("starts", [-1]), ("ends", [-5]), ("axes", [1]), ("steps", [-1])], {}, [1.0, 0.5, 0.25, 0.125]),
        ("Slice", [("starts", [3]), ("ends", [0]), ("axes", [1]), ("steps", [-2])], {}, [1.0, 0.25]),
        ("Gather", [("indices", [3, 0])], {"axis": 1}, [1.0, 0.125]),
        ("Split", [("split", [2, 2])], {"axis": 1}, [0.5, 1.0]),
    ]
    for op, extra, attrs, selected in cases:
        for out_scales, fires in ((selected, False), (sorted(selected), selected != sorted(selected))):
            g = Graph(op).input("x", (2, 4), QType("int8", scales, [0] * 4, axis=1))
            for name, values in extra:
                g.init(name, np.array(values, np.int64))
            outputs = ["first", "y"] if op == "Split" else ["y"]
            g.node(op, ["x", *(name for name, _ in extra)], outputs, name="op", **attrs)
            if op == "Split":
                g.value("first", (2, 2)).output("first", (2, 2))  # a float output: nothing to compare
            g.value("y", (2, len(selected)), QType("int8", out_scales, [0] * len(out_scales), axis=1))
            g.output("y", (2, len(selected)))
            found = [d for d in iter_diagnostics(g.build()) if d.rule == "QT401"]
            assert bool(found) == fires, (op, extra, out_scales, [d.message for d in found])


def test_the_qtypes_the_lift_hands_over_are_those_the_checker_decodes():
    # check on a QDQ file takes the lift's QType objects (LiftResult.written) instead of decoding the lifted
    # declarations again: each must be what decoding gives, or findings would change with the route
    from onnx_qtypes.interop.lift import lift_model  # noqa: PLC0415

    example = pathlib.Path(__file__).resolve().parents[1] / "examples" / "broken_qdq_cnn.onnx"
    result = lift_model(example, tolerant=True)
    assert len(result.written) == 4  # the four tensors it types, none with statistics
    decoded = Context(result.model, load_profile(None))._qtypes
    handed = Context(result.model, load_profile(None), qtypes=result.written)._qtypes
    assert handed == decoded
    assert sum(qt is result.written.get(qt.to_proto().SerializeToString()) for qt in handed.values()) == len(handed)
