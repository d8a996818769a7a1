"""Malformed QDQ is reported, never lifted; what the lift does not understand, or no type can hold, stays as it was."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from builders import IR_VERSION, OPSET
from corpus import calibration_samples, corpus_models, float_models
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import QType, lift, quantized_tensors, set_qtype
from onnx_qtypes.cli import main
from onnx_qtypes.interop import LiftWarning, MalformedQDQError, lift_model


def _const(name: str, value, dtype) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def qdq_relu(*, dq_scale=0.5, dq_zp=3, q_zp=3, dq_axis=None, q_scale=0.5, with_dq_zp=True) -> onnx.ModelProto:
    """x -> Q -> xq -> DQ -> Relu -> y, x of shape [2, 3]."""
    dq_inputs = ["xq", "dqs"] + (["dqz"] if with_dq_zp else [])
    dq_attrs = {} if dq_axis is None else {"axis": dq_axis}
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "qs", "qz"], ["xq"], name="quant_x"),
        helper.make_node("DequantizeLinear", dq_inputs, ["xd"], name="dequant_x", **dq_attrs),
        helper.make_node("Relu", ["xd"], ["y"], name="relu"),
    ]
    inits = [
        _const("qs", q_scale, np.float32),
        _const("qz", q_zp, np.int8),
        _const("dqs", dq_scale, np.float32),
        _const("dqz", dq_zp, np.int8),
    ]
    graph = helper.make_graph(
        nodes, "qdq_relu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def weight_dq(scale, zero_point, axis=None, block_size=None, w_shape=(3, 4)) -> onnx.ModelProto:
    """y = MatMul(x, DequantizeLinear(w)) with w an int8 initializer."""
    attrs = {k: v for k, v in (("axis", axis), ("block_size", block_size)) if v is not None}
    nodes = [
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], name="dequant_w", **attrs),
        helper.make_node("MatMul", ["x", "wd"], ["y"], name="matmul"),
    ]
    inits = [
        numpy_helper.from_array(np.ones(w_shape, np.int8), "w"),
        _const("ws", scale, np.float32),
        _const("wz", zero_point, np.int8),
    ]
    graph = helper.make_graph(
        nodes, "weights", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, w_shape[0]])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, w_shape[1]])], inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def test_a_well_formed_pair_lifts():
    typed = lift(qdq_relu())
    assert quantized_tensors(typed)["xq"] == QType("int8", 0.5, 3)


@pytest.mark.parametrize(
    "kwargs, fragments",
    [
        (dict(dq_scale=0.25), ["DequantizeLinear 'dequant_x' (/graph/node/1)", "scale 0.25", "QuantizeLinear 'quant_x'",
                               "scale 0.5", "must use the same parameters"]),
        (dict(dq_zp=4), ["zero point 4", "zero point 3", "'xq'"]),
        (dict(with_dq_zp=False, q_zp=0, dq_zp=0), ["'dequant_x'", "has no zero point", "'quant_x' (/graph/node/0) has one"]),
    ],
    ids=["scale", "zero-point", "missing-zero-point"],
)
def test_pair_disagreement_is_an_error_naming_both_nodes(kwargs, fragments):
    with pytest.raises(MalformedQDQError) as info:
        lift(qdq_relu(**kwargs))
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message


def test_per_axis_dequantize_of_a_per_tensor_partner_is_an_error():
    model = qdq_relu()
    model.graph.initializer[2].CopyFrom(_const("dqs", [0.5, 0.5, 0.5], np.float32))
    model.graph.initializer[3].CopyFrom(_const("dqz", [3, 3, 3], np.int8))
    with pytest.raises(MalformedQDQError, match="axis 1.*per-tensor parameters"):
        lift(model)


@pytest.mark.parametrize(
    "model, fragment",
    [
        (weight_dq([0.1, 0.2, 0.3, 0.4], [0, 0, 0, 0], axis=5),
         "axis 5 is out of range for a rank-2 tensor; use an axis in [-2, 1]"),
        (weight_dq([0.1, 0.2, 0.3], [0, 0, 0], axis=1), "3 scales along axis 1, but that axis of shape [3,4] has 4"),
        (weight_dq([0.1, 0.2, 0.3, 0.4], [0, 0], axis=1), "zero point 'wz' has 2 value(s) but scale 'ws' has 4"),
        (weight_dq(np.full((2, 4), 0.1), np.zeros((2, 4)), axis=0, block_size=1),
         "blocked scale has shape [2,4], but blocks of 1 along axis 0 of shape [3,4] need [3,4]"),
        (weight_dq(np.full((2, 4), 0.1), np.zeros((2, 4))), "scale 'ws' has shape [2,4] but no block_size"),
    ],
    ids=["axis-out-of-range", "scale-count", "zero-point-count", "block-shape", "rank-2-scale"],
)
def test_parameters_that_contradict_the_tensor_are_errors(model, fragment):
    with pytest.raises(MalformedQDQError) as info:
        lift(model)
    assert "DequantizeLinear 'dequant_w' (/graph/node/0), tensor 'w'" in str(info.value)
    assert fragment in str(info.value)


@pytest.mark.parametrize("value", [0.0, float("-inf"), float("inf"), float("nan")])
def test_a_scale_no_type_can_carry_is_left_as_it_was_and_named(value):
    """onnxruntime runs a pair with scale 0 or infinity (dividing by it): the lift keeps it as written and names
    each node, and the rest is lifted (tests/test_interop_untypeable_scales.py: a quantizer's real output)."""
    model = qdq_relu(q_scale=value, dq_scale=value)
    result = lift_model(model)
    assert result.model.graph.SerializeToString() == model.graph.SerializeToString()
    assert not quantized_tensors(result.model)
    for label, scale in (("QuantizeLinear 'quant_x' (/graph/node/0)", "qs"),
                         ("DequantizeLinear 'dequant_x' (/graph/node/1)", "dqs")):
        assert (f"{label}, tensor 'xq': scale '{scale}': scale {value!r} must be finite and non-zero, which no "
                "quantized type holds (QT101); left as it was") in result.warnings
    weight = lift_model(weight_dq([0.1, 0.0, 0.1, 0.1], [0, 0, 0, 0], axis=1))
    assert not quantized_tensors(weight.model)
    assert any(w.startswith("DequantizeLinear 'dequant_w'") and "scale 0.0 must be finite" in w for w in weight.warnings)


def test_a_node_with_a_bad_scale_and_another_fault_is_still_refused():
    """Only a scale no type holds keeps a node as written: with two zero points for one scale as well, onnxruntime
    refuses the node too, and so does the lift."""
    model = qdq_relu(q_scale=0.0, dq_scale=0.0)
    model.graph.initializer[1].CopyFrom(_const("qz", [3, 3], np.int8))
    with pytest.raises(MalformedQDQError, match=r"'quant_x'.*zero point 'qz' has 2 value\(s\) but scale 'qs' has 1"):
        lift(model)


def test_a_zero_point_of_another_type_than_its_tensor_is_an_error():
    model = weight_dq(0.1, 0)
    model.graph.initializer[2].CopyFrom(_const("wz", 0, np.uint8))  # w stays int8
    import onnxruntime

    with pytest.raises(Exception, match="Type Error"):  # onnxruntime refuses to load it (its own exception class)
        onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(MalformedQDQError, match=r"tensor 'w': the tensor is INT8 but its zero point 'wz' is UINT8"):
        lift(model)


def test_cli_reports_malformed_qdq_in_one_located_line(tmp_path, capsys):
    path = tmp_path / "bad.onnx"
    onnx.save(qdq_relu(dq_zp=9), path)
    assert main(["lift", str(path), str(tmp_path / "out.onnx")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "'dequant_x'" in err[0] and "Traceback" not in err[0]
    assert not (tmp_path / "out.onnx").exists()


def test_a_scale_computed_at_run_time_is_left_alone_with_a_warning():
    model = qdq_relu()
    model.graph.initializer.pop(0)  # "qs" becomes a graph input: not a constant any more
    model.graph.input.append(helper.make_tensor_value_info("qs", TensorProto.FLOAT, []))
    before = model.SerializeToString()
    result = lift_model(model)
    assert result.model.graph.SerializeToString() == onnx.ModelProto.FromString(before).graph.SerializeToString()
    assert any("'quant_x'" in w and "scale 'qs' is not a constant (a graph input" in w for w in result.warnings)
    assert not quantized_tensors(result.model)


def test_a_node_reading_quantized_integers_pins_them():
    """A Cast on the stored integers means something only for plain integers: nothing around it is typed."""
    model = qdq_relu()
    model.graph.node.append(helper.make_node("Cast", ["xq"], ["xi"], name="peek", to=TensorProto.FLOAT))
    model.graph.output.append(helper.make_tensor_value_info("xi", TensorProto.FLOAT, [2, 3]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        typed = lift(model)
    messages = [str(w.message) for w in caught if issubclass(w.category, LiftWarning)]
    assert any("Cast 'peek'" in m and "'xq'" in m for m in messages), messages
    assert not quantized_tensors(typed)
    assert [n.op_type for n in typed.graph.node] == ["QuantizeLinear", "DequantizeLinear", "Relu", "Cast"]


def test_dynamic_quantization_that_is_not_the_pattern_is_left_as_it_was(tmp_path):
    """quantize_dynamic's output lifts (tests/test_interop_dynamic.py); with its scale product not the
    activation's scale times the weight's, the integer result means something else, so nothing is typed."""
    from onnxruntime.quantization import quantize_dynamic

    onnx.save(float_models()["mlp"], tmp_path / "mlp.onnx")
    quantize_dynamic(tmp_path / "mlp.onnx", tmp_path / "dyn.onnx")
    model = onnx.load(tmp_path / "dyn.onnx")
    for node in model.graph.node:
        if node.op_type == "Mul" and node.input[0].endswith("_scale") and node.input[1].endswith("_scale"):
            node.input[0] = node.input[1]  # weight scale squared: no longer x_scale * w_scale
    result = lift_model(model)
    assert result.model.graph.SerializeToString() == model.graph.SerializeToString()
    named = {n.name for n in model.graph.node if n.op_type in ("DynamicQuantizeLinear", "MatMulInteger")}
    assert named and all(any(f"'{name}'" in w for w in result.warnings) for name in named)
    assert result.typed_tensors == 0


def test_a_model_without_quantization_lifts_to_itself():
    model = float_models()["cnn"]
    result = lift_model(model)
    assert result.model.SerializeToString() == model.SerializeToString()
    assert result.notes == ["the model has no quantization; it lifts to itself"] and not result.warnings


def test_lifting_a_typed_model_changes_nothing():
    typed = lift(corpus_models()["mlp-qdq_u8_pertensor"])
    result = lift_model(typed)
    assert result.model.SerializeToString() == typed.SerializeToString()
    assert "already typed" in result.notes[0]


def test_quantization_inside_a_subgraph_is_reported_and_left():
    inner = qdq_relu().graph
    inner.ClearField("input")
    branch = helper.make_graph(list(inner.node), "then", [], list(inner.output), list(inner.initializer))
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "else", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["out"], name="branch", then_branch=branch, else_branch=other)], "g",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []), helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    result = lift_model(model)
    then = [a.name for a in graph.node[0].attribute].index("then_branch")
    inside = [w for w in result.warnings if "in a subgraph, which the lift does not lift" in w]
    assert inside == [f"{n.op_type} {n.name!r} (/graph/node/0/attribute/{then}/g/node/{k}): in a subgraph, which the "
                      "lift does not lift; left as it was" for k, n in enumerate(branch.node)
                      if n.op_type in ("QuantizeLinear", "DequantizeLinear")] and inside, result.warnings
    assert result.model.SerializeToString() == model.SerializeToString()


def test_the_lift_does_not_modify_its_argument():
    q = corpus_models()["cnn-qop_u8"]
    before = q.SerializeToString()
    lift(q)
    assert q.SerializeToString() == before


def test_onnxruntime_refuses_what_lift_reports():
    """The malformed cases are not hypothetical: onnxruntime fails on the axis case at run time."""
    import onnxruntime

    bad = weight_dq([0.1, 0.2, 0.3, 0.4], [0, 0, 0, 0], axis=5)
    with pytest.raises(Exception, match="axis"):
        session = onnxruntime.InferenceSession(bad.SerializeToString(), providers=["CPUExecutionProvider"])
        session.run(None, {"x": calibration_samples("mlp")[0]["x"][:, :3]})


def test_typed_tensors_keep_set_qtype_semantics():
    """A lifted weight is an ordinary typed initializer: set_qtype accepts the lifted type unchanged."""
    typed = lift(weight_dq([0.5, 0.25, 0.125, 0.0625], [0, 1, 2, 3], axis=1))
    w = quantized_tensors(typed)["w"]
    assert w == QType("int8", [0.5, 0.25, 0.125, 0.0625], [0, 1, 2, 3], axis=1)
    set_qtype(typed, "w", w)


@pytest.mark.parametrize("y_zero_point", [[128, 128], 128])
def test_a_qlinear_node_with_a_bad_scale_is_kept_only_when_that_is_its_only_fault(y_zero_point):
    """A QLinearMatMul reads every operand before it judges: an infinite a_scale with a y_zero_point of two values for
    one y_scale is refused (QT107 besides QT101), the infinite a_scale alone keeps the node as written."""
    def const(value, name, dtype):
        return numpy_helper.from_array(np.asarray(value, dtype), name)

    inits = [const(np.inf, "as", np.float32), const(128, "az", np.uint8), const(np.full((4, 4), 130), "b", np.uint8),
             const(0.01, "bs", np.float32), const(128, "bz", np.uint8), const(0.05, "ys", np.float32),
             const(y_zero_point, "yz", np.uint8), const(128, "yz1", np.uint8)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "as", "az"], ["aq"], name="quant_a"),
             helper.make_node("QLinearMatMul", ["aq", "as", "az", "b", "bs", "bz", "ys", "yz"], ["yq"], name="mm"),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz1"], ["y"], name="dequant_y")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    if isinstance(y_zero_point, list):
        with pytest.raises(MalformedQDQError) as info:
            lift_model(model)
        assert {p.rule for p in info.value.every()} == {"QT101", "QT107"}
    else:
        result = lift_model(model)
        assert any(w.startswith("QLinearMatMul 'mm'") and "(QT101); left as it was" in w for w in result.warnings)
