"""Calibration on the float models exporters actually write: names that collide with the ones calibration adds,
a bias two operators share, ConvTranspose biases, initializers listed as inputs, an input passed through as an
output, float64 models, custom operators, and models that are already quantized."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from corpus import run_onnxruntime
from onnx import TensorProto, helper, numpy_helper
from test_cli import run_cli

from onnx_qtypes import get_qtype, lower, quantized_tensors
from onnx_qtypes.calibration import CalibrationError, calibrate_model
from onnx_qtypes.checker import check_model

RNG = np.random.default_rng(11)


def _model(nodes, inputs, outputs, inits=(), opset=21):
    graph = helper.make_graph(nodes, "m", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _info(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def _const(name, shape, dtype=np.float32):
    return numpy_helper.from_array((RNG.normal(size=shape) * 0.3).astype(dtype), name)


def _samples(shapes: dict, count: int = 4, dtype=np.float32):
    return [{n: RNG.normal(size=s).astype(dtype) for n, s in shapes.items()} for _ in range(count)]


def _runs_like_the_float_model(float_model, typed, samples) -> None:
    """The lowered model runs on onnxruntime and stays close to the float model (SQNR above 20 dB)."""
    qdq = lower(typed)
    qdq.ir_version = 10
    for feed in samples[:2]:
        want = run_onnxruntime(float_model, feed, optimize=False)
        got = run_onnxruntime(qdq, {k: v for k, v in feed.items() if k in {i.name for i in qdq.graph.input}},
                              optimize=False)
        for name, value in want.items():
            error = np.sum((got[name] - value) ** 2)
            assert 10 * np.log10(np.sum(value**2) / max(error, 1e-30)) > 20, name


@pytest.mark.parametrize("taken", ["y_float", "x_quantized", "r_dequantized", "r_scale", "w_quantized"])
def test_names_calibration_would_add_may_already_be_taken(taken):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Identity", ["r"], [taken]), helper.make_node("Sigmoid", [taken], ["y"])]
    model = _model(nodes, [_info("x", [1, 2, 4, 4])], [_info("y", [1, 3, 4, 4])], [_const("w", [3, 2, 1, 1])])
    samples = _samples({"x": [1, 2, 4, 4]})
    result = calibrate_model(model, samples)
    check_model(result.model)  # raises on any error: SSA, QT305, QT310, ...
    _runs_like_the_float_model(model, result.model, samples)


def test_a_bias_two_operators_share_gets_a_copy_for_each():
    nodes = [helper.make_node("Conv", ["x", "w1", "b"], ["c1"]), helper.make_node("Mul", ["x", "ten"], ["x10"]),
             helper.make_node("Conv", ["x10", "w2", "b"], ["c2"]), helper.make_node("Add", ["c1", "c2"], ["y"])]
    inits = [_const("w1", [3, 2, 1, 1]), _const("w2", [3, 2, 1, 1]), _const("b", [3]),
             numpy_helper.from_array(np.array(10.0, np.float32), "ten")]
    model = _model(nodes, [_info("x", [1, 2, 4, 4])], [_info("y", [1, 3, 4, 4])], inits)
    samples = _samples({"x": [1, 2, 4, 4]})
    result = calibrate_model(model, samples)
    check_model(result.model)  # QT405: each copy's scale is its own Conv's input scale times weight scale
    biases = [t for t in quantized_tensors(result.model).values() if t.storage == "int32"]
    assert len(biases) == 2 and biases[0].scale != biases[1].scale
    _runs_like_the_float_model(model, result.model, samples)


def test_a_conv_transpose_bias_is_int32_with_the_bias_rule():
    nodes = [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"])]
    model = _model(nodes, [_info("x", [1, 2, 4, 4])], [_info("y", [1, 3, 4, 4])],
                   [_const("w", [2, 3, 1, 1]), _const("b", [3])])
    samples = _samples({"x": [1, 2, 4, 4]})
    result = calibrate_model(model, samples, per_channel=True)
    check_model(result.model)
    bias = next(t for t in quantized_tensors(result.model).values() if t.storage == "int32")
    weight = next(t for t in quantized_tensors(result.model).values() if t.storage == "int8")
    x = get_qtype(result.model, "x_quantized") or get_qtype(result.model, "x")
    assert weight.axis == 1 and np.allclose(bias.scale, np.float32(x.scale[0]) * np.asarray(weight.scale, np.float32))
    _runs_like_the_float_model(model, result.model, samples)


def test_initializers_listed_as_inputs_are_constants_and_not_left_as_inputs():
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)]
    model = _model(nodes, [_info("x", [2, 4]), _info("w", [3, 4]), _info("b", [3])], [_info("y", [2, 3])],
                   [_const("w", [3, 4]), _const("b", [3])])
    samples = _samples({"x": [2, 4]})
    result = calibrate_model(model, samples)
    assert result.engine == "onnxruntime"
    assert [i.name for i in result.model.graph.input] == ["x"]
    _runs_like_the_float_model(model, result.model, samples)


def test_a_graph_input_that_is_also_an_output_stays_as_fed():
    nodes = [helper.make_node("Sigmoid", ["x"], ["y"])]
    model = _model(nodes, [_info("x", [2, 4])], [_info("y", [2, 4]), _info("x", [2, 4])])
    samples = _samples({"x": [2, 4]})
    result = calibrate_model(model, samples)
    check_model(result.model)
    _runs_like_the_float_model(model, result.model, samples)


def test_a_model_onnxruntime_cannot_load_runs_on_the_reference():
    # onnxruntime has no float64 Conv kernel; onnx.reference has
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"])]
    model = _model(nodes, [_info("x", [1, 2, 4, 4], TensorProto.DOUBLE)], [_info("y", [1, 3, 4, 4], TensorProto.DOUBLE)],
                   [_const("w", [3, 2, 1, 1], np.float64)])
    result = calibrate_model(model, _samples({"x": [1, 2, 4, 4]}, dtype=np.float64))
    assert result.engine == "reference"
    assert result.typed == [] and "nothing quantized" in result.summary()
    assert set(result.statistics) >= {"x", "y"}


def test_an_operator_nothing_can_run_is_a_located_error():
    nodes = [helper.make_node("Foo", ["x"], ["y"], domain="custom")]
    model = helper.make_model(helper.make_graph(nodes, "m", [_info("x", [2])], [_info("y", [2])]), ir_version=10,
                              opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("custom", 1)])
    with pytest.raises(CalibrationError, match="neither onnxruntime nor onnx.reference.*Foo"):
        calibrate_model(model, _samples({"x": [2]}))


def test_an_unknown_engine_is_refused():
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_info("x", [2])], [_info("y", [2])])
    with pytest.raises(CalibrationError, match="unknown engine 'foo'"):
        calibrate_model(model, _samples({"x": [2]}), engine="foo")


def test_an_already_quantized_model_is_refused():
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Relu", ["c"], ["y"])]
    model = _model(nodes, [_info("x", [1, 2, 4, 4])], [_info("y", [1, 3, 4, 4])], [_const("w", [3, 2, 1, 1])])
    samples = _samples({"x": [1, 2, 4, 4]})
    typed = calibrate_model(model, samples).model
    with pytest.raises(CalibrationError, match="already has quantized types"):
        calibrate_model(typed, samples)
    qdq = lower(typed)
    with pytest.raises(CalibrationError, match="already quantized .*QuantizeLinear"):
        calibrate_model(qdq, samples)
    stats_only = calibrate_model(model, samples, stats_only=True).model
    assert calibrate_model(stats_only, samples).typed  # statistics alone are not quantization


def test_tflite_fixed_outputs_keep_their_zero_point_under_a_symmetric_schema():
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Softmax", ["m"], ["y"])]
    model = _model(nodes, [_info("x", [2, 4])], [_info("y", [2, 3])], [_const("w", [4, 3])])
    result = calibrate_model(model, _samples({"x": [2, 4]}), schema="symmetric", profile="tflite-int8")
    check_model(result.model, profile="tflite-int8")
    check_model(result.model)
    softmax = get_qtype(result.model, "y_float") or get_qtype(result.model, "y")
    assert softmax.zero_point == (-128,) and softmax.scale == (1 / 256,)


def test_the_command_line_error_names_the_model_and_the_data(tmp_path):
    model = _model([helper.make_node("Relu", ["a"], ["b"])], [_info("a", [2])], [_info("b", [2])])
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "d.npz", x=np.zeros((3, 2), np.float32))
    result = run_cli("calibrate", str(tmp_path / "m.onnx"), "--data", str(tmp_path / "d.npz"), "-o",
                     str(tmp_path / "out.onnx"))
    assert result.returncode == 2 and not (tmp_path / "out.onnx").exists()
    assert "m.onnx" in result.stderr and "d.npz" in result.stderr and "'x'" in result.stderr


def test_an_axis_whose_length_varies_gets_no_per_slice_statistics():
    """Axis 1 of [batch, sequence, features] is the sequence: per-slice statistics of a length that varies
    would each cover some samples only, so there are none, while the whole-tensor ones count every value."""
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_info("x", [1, "s", 4])], [_info("y", [1, "s", 4])])
    samples = [{"x": RNG.normal(size=(1, n, 4)).astype(np.float32)} for n in (3, 5, 3)]
    stats = calibrate_model(model, samples, stats_only=True).statistics["y"]
    assert stats.per_axis == () and stats.tensor.count == 4 * (3 + 5 + 3)


def test_the_command_line_says_what_a_profile_overrode_and_what_check_finds(tmp_path):
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"])]
    model = _model(nodes, [_info("x", [1, 2, 4, 4])], [_info("y", [1, 3, 4, 4])], [_const("w", [3, 2, 1, 1]),
                                                                                   _const("b", [3])])
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "tiny.npz", x=np.full((2, 1, 2, 4, 4), 1e-30, np.float32))  # a bias far beyond int32
    result = run_cli("calibrate", str(tmp_path / "m.onnx"), "--data", str(tmp_path / "tiny.npz"), "-o",
                     str(tmp_path / "out.onnx"), "--profile", "tflite-int8", "--weight-type", "int4")
    assert result.returncode == 0, result.stderr
    assert "note: weight storage int4 is not among what profile tflite-int8 allows; used int8" in result.stdout
    # the bias, far beyond int32 at input scale x the weights' own scale, gets a weight scale it fits at (it used
    # to saturate: QT407 / QT408), and what check finds is said now, not found later
    assert "note: check finds nothing (profile tflite-int8)" in result.stdout, result.stdout


def test_a_negative_or_symbolic_dimension_takes_any_size():
    """PaddleOCR's exports declare [-1, 3, '?', '?']: a -1 is "any size", as a named dimension is."""
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_info("x", [-1, 3, "h", "h"])],
                   [_info("y", [-1, 3, "h", "h"])])
    samples = _samples({"x": [2, 3, 4, 5]}) + _samples({"x": [1, 3, 6, 6]})
    result = calibrate_model(model, samples)
    assert result.statistics["x"].tensor.count == 4 * (2 * 3 * 4 * 5) + 4 * (3 * 6 * 6)
    with pytest.raises(CalibrationError, match=r"has shape \[2, 4, 4, 4\], the model declares \['\?', 3, 'h', 'h'\]"):
        calibrate_model(model, _samples({"x": [2, 4, 4, 4]}))


def test_weights_written_as_constant_nodes_are_calibrated_as_weights():
    """paddle2onnx (the PP-OCR models) writes every weight as a Constant node: calibrated as an activation, a Conv
    weight would get a per-tensor asymmetric type; as the initializer it is, a symmetric one per channel."""
    w = _const("w", [3, 2, 3, 3])
    nodes = [helper.make_node("Constant", [], ["w"], value=w), helper.make_node("Conv", ["x", "w"], ["c"]),
             helper.make_node("Relu", ["c"], ["y"])]
    model = _model(nodes, [_info("x", [1, 2, 5, 5])], [_info("y", [1, 3, 3, 3])])
    samples = _samples({"x": [1, 2, 5, 5]})
    result = calibrate_model(model, samples, per_channel=True)
    weight = get_qtype(result.model, "w_quantized")
    assert weight.axis == 0 and len(weight.scale) == 3 and weight.schema.symmetric
    assert "Constant" not in {n.op_type for n in result.model.graph.node}
    assert [n.op_type for n in model.graph.node][0] == "Constant"  # the caller's model is left as it was
    check_model(result.model)
    _runs_like_the_float_model(model, result.model, samples)


def test_weights_and_biases_read_through_identity_are_calibrated_as_weights_and_biases():
    """torch.onnx.export deduplicates equal initializers (zero biases, cloned layers' weights, tied embeddings)
    and gives every further reader an Identity of the one kept: read from a node output, a Gemm's bias was
    calibrated as a uint8 activation (QT403 / QT405 errors on calibrate's own output) and a MatMul's weight as
    an asymmetric per-tensor activation."""
    w, b = _const("w", [4, 4]), numpy_helper.from_array(np.zeros(4, np.float32), "b")
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["g1"], name="first"),
             helper.make_node("Identity", ["w"], ["w_again"]), helper.make_node("Identity", ["b"], ["b_again"]),
             helper.make_node("Gemm", ["g1", "w_again", "b_again"], ["g2"], name="second"),
             helper.make_node("Identity", ["w"], ["w_too"]), helper.make_node("MatMul", ["g2", "w_too"], ["y"])]
    model = _model(nodes, [_info("x", [2, 4])], [_info("y", [2, 4])], [w, b])
    samples = _samples({"x": [2, 4]})
    result = calibrate_model(model, samples, per_channel=True)
    check_model(result.model)  # raises on any error: the biases are int32 at input scale x weight scale
    types = quantized_tensors(result.model)
    assert sorted(t.storage for t in types.values() if t.storage == "int32") == ["int32", "int32"]
    weights = [t for t in types.values() if t.storage == "int8"]
    assert weights and all(t.schema.symmetric and t.axis is not None for t in weights)
    assert "Identity" not in {n.op_type for n in result.model.graph.node}
    read = {name for n in result.model.graph.node for name in n.input}
    assert all(t.name in read for t in result.model.graph.initializer)  # no bias left that nothing reads
    assert [n.op_type for n in model.graph.node].count("Identity") == 3  # the caller's model is left as it was
    _runs_like_the_float_model(model, result.model, samples)


@pytest.mark.parametrize(("opset", "options", "becomes"), [
    (17, {"activation": "int16"}, 21),  # torch.onnx.export's opset: int16 QuantizeLinear needs 21
    (17, {"weight": "int4"}, 21),
    (11, {"per_channel": True}, 13),  # a per-axis DequantizeLinear needs 13
    (17, {"per_channel": True}, 17),  # int8 weights and int32 biases: no raise
])
def test_the_opset_is_raised_to_the_first_that_holds_the_chosen_types(opset, options, becomes):
    """calibrate wrote int16 pairs into an opset-17 model: 32 QT305 / QT412 errors on its own output for tiny BERT
    (the lowered model ran: lower raises the opset)."""
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Softmax", ["r"], ["y"], axis=1)]
    model = _model(nodes, [_info("x", [1, 2, 4, 4])], [_info("y", [1, 3, 4, 4])],
                   [_const("w", [3, 2, 1, 1]), _const("b", [3])], opset=opset)
    model.ir_version = 7 if opset < 14 else 8
    samples = _samples({"x": [1, 2, 4, 4]})
    result = calibrate_model(model, samples, **options)
    assert next(o.version for o in result.model.opset_import if o.domain in ("", "ai.onnx")) == becomes
    raised = [n for n in result.notes if "opset raised" in n]
    assert raised == ([f"default-domain opset raised from {opset} to {becomes} by onnx.version_converter "
                       "(per-axis QuantizeLinear needs 13; 4-bit, 16-bit and blocked ones need 21)"]
                      if becomes != opset else [])
    check_model(result.model)  # raises on any error: QT412 (a type the opset's Q / DQ cannot hold), QT305
    _runs_like_the_float_model(model, result.model, samples)


@pytest.mark.parametrize(("schema", "bias"), [("symmetric", True), ("symmetric_pow2_scale", True),
                                            ("symmetric", False)])
def test_a_channel_of_tiny_weights_keeps_its_bias(schema, bias):
    """Trained models have dead channels (PP-OCR rec: weights of 1e-33, QT102 on 14 scales and QT407 on
    calibrate's own output) and channels whose weights are small next to their bias. Per channel, such a weight
    scale made the bias scale (input scale x weight scale) subnormal, or so small that the int32 bias saturated:
    channel 1 below came out 100 off, channel 2 lost its bias whole. Now each weight scale is raised until its
    bias has a normal scale and fits half of int32; without a bias, a weight range whose scale would be subnormal
    is the all-zero range it nearly is."""
    w = np.zeros((3, 2, 1, 1), np.float32)
    w[0] = 0.3
    w[1] = 1e-6  # small weights, large bias
    w[2] = 1e-40  # dead: subnormal weights
    b = np.array([0.1, 100.0, 2.0], np.float32)
    if not bias:
        w[1], b = 0.5, np.zeros(3, np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"][:3 if bias else 2], ["y"])]
    model = _model(nodes, [_info("x", [1, 2, 4, 4])], [_info("y", [1, 3, 4, 4])],
                   [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")][:2 if bias else 1])
    samples = [{"x": np.abs(s["x"])} for s in _samples({"x": [1, 2, 4, 4]})]
    result = calibrate_model(model, samples, per_channel=True, schema=schema)
    findings = check_model(result.model)  # raises on any error; returns the warnings
    assert not [d for d in findings if d.rule in ("QT102", "QT407")], [str(d) for d in findings]
    feed = {"x": samples[0]["x"]}
    want = run_onnxruntime(model, feed, optimize=False)["y"]
    got = run_onnxruntime(lower(result.model), feed, optimize=False)["y"]
    y = get_qtype(result.model, "y") or next(t for n, t in quantized_tensors(result.model).items() if n.startswith("y"))
    assert np.abs(got - want).max() <= 2 * y.scale[0], np.abs(got - want).max(axis=(0, 2, 3))
    raised = [n for n in result.notes if n.startswith("weight 'w'")]  # channel 1 coarser, and said so
    assert len(raised) == bias and (not bias or "1 of 3 channel(s) raised" in raised[0]), result.notes


def test_a_domain_imported_but_unused_still_runs_on_onnxruntime():
    """onnxruntime's quant_pre_process imports com.microsoft and others that no node reads."""
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_info("x", [2, 3])], [_info("y", [2, 3])])
    model.opset_import.extend([helper.make_opsetid("com.microsoft", 1), helper.make_opsetid("ai.onnx.ml", 5)])
    result = calibrate_model(model, _samples({"x": [2, 3]}), engine="onnxruntime")
    assert result.engine == "onnxruntime" and result.typed


def test_the_reference_engine_normalizes_batchnorm_with_its_running_statistics():
    """onnx.reference 1.23 evaluates BatchNormalization-9 with `momentum` in training mode (the batch's own mean
    and variance); calibration's reference engine must see what inference computes, as onnxruntime does."""
    rng = np.random.default_rng(3)
    c = 3
    params = [_const(n, [c], np.float32) for n in ("gamma", "beta")]
    mean = numpy_helper.from_array(rng.normal(2.0, 0.5, c).astype(np.float32), "mean")
    var = numpy_helper.from_array(rng.uniform(0.5, 2.0, c).astype(np.float32), "var")
    nodes = [helper.make_node("BatchNormalization", ["x", "gamma", "beta", "mean", "var"], ["y"], momentum=0.9)]
    model = _model(nodes, [_info("x", [2, c, 4, 4])], [_info("y", [2, c, 4, 4])], [*params, mean, var], opset=11)
    samples = _samples({"x": [2, c, 4, 4]})
    by_engine = {e: calibrate_model(model, samples, engine=e, stats_only=True) for e in ("onnxruntime", "reference")}
    ours, theirs = (by_engine[e].statistics["y"].tensor for e in ("reference", "onnxruntime"))
    assert ours.min == pytest.approx(theirs.min, rel=1e-5) and ours.max == pytest.approx(theirs.max, rel=1e-5)


def test_a_bias_holding_infinity_stays_float_and_its_conv_still_calibrates():
    """A bias with +inf has no statistics (it stays float, named in a note); the bias rule must not type it from
    its input and weight scales anyway, nor raise the weight scale to fit an infinite bias."""
    w = np.full((3, 2, 1, 1), 0.3, np.float32)
    b = np.array([0.1, np.inf, 2.0], np.float32)
    model = _model([helper.make_node("Conv", ["x", "w", "b"], ["y"])], [_info("x", [1, 2, 4, 4])],
                   [_info("y", [1, 3, 4, 4])], [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    result = calibrate_model(model, _samples({"x": [1, 2, 4, 4]}), per_channel=True)
    assert any(n.startswith("tensor 'b' stays float") for n in result.notes), result.notes
    types = quantized_tensors(result.model)
    assert not [t for t in types.values() if t.storage == "int32"]
    assert np.isfinite(np.asarray(next(t for n, t in types.items() if n.startswith("w")).scale)).all()
    check_model(result.model)


def test_a_weight_two_convs_share_gets_the_scale_both_biases_fit():
    """A tied weight (torch.onnx.export's Identity of a deduplicated initializer, now read directly) serves two
    biases. Its scale was raised for the second bias after the first bias's int32 type had been made from the
    old scale: QT405 on calibrate's own output (a reviewer's model)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.normal(size=(3, 2, 1, 1)) * 0.3).astype(np.float32), "w")
    b1 = numpy_helper.from_array(np.array([0.1, 0.2, 0.3], np.float32), "b1")
    b2 = numpy_helper.from_array(np.array([0.1, 1e6, 0.3], np.float32), "b2")  # a bias the weight scale must fit
    nodes = [helper.make_node("Conv", ["x", "w", "b1"], ["c1"]), helper.make_node("Conv", ["x2", "w", "b2"], ["c2"]),
             helper.make_node("Add", ["c1", "c2"], ["y"])]
    model = _model(nodes, [_info("x", [1, 2, 4, 4]), _info("x2", [1, 2, 4, 4])], [_info("y", [1, 3, 4, 4])],
                   [w, b1, b2])
    samples = [{"x": rng.normal(size=(1, 2, 4, 4)).astype(np.float32),
                "x2": (rng.normal(size=(1, 2, 4, 4)) * 5).astype(np.float32)} for _ in range(4)]
    result = calibrate_model(model, samples, per_channel=True)
    check_model(result.model)  # raises on QT405: each bias at its input scale times the weight's final scale
    assert sorted(t.storage for t in quantized_tensors(result.model).values()).count("int32") == 2


def test_a_gemm_bias_broadcast_over_per_channel_weights_stays_float():
    """A Gemm bias of shape [1] broadcasts over N per-channel weight scales; typed at their granularity it was an
    invalid type and calibrate ended in a QTypeError naming no tensor."""
    w = numpy_helper.from_array((RNG.normal(size=(3, 4)) * 0.3).astype(np.float32), "w")
    model = _model([helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)], [_info("x", [2, 4])],
                   [_info("y", [2, 3])], [w, numpy_helper.from_array(np.array([0.5], np.float32), "b")])
    samples = _samples({"x": [2, 4]})
    result = calibrate_model(model, samples, per_channel=True)
    check_model(result.model)
    assert not [t for t in quantized_tensors(result.model).values() if t.storage == "int32"]
    _runs_like_the_float_model(model, result.model, samples)


def test_a_weight_scale_its_bias_would_raise_by_less_than_float32_rounds_is_kept_and_not_noted():
    """bias_fits asked for a scale a quarter of an ulp above the weight's: float32 rounds it back, and the weight
    came back as a new, equal type, which the note counted as raised (0 scales: max() of nothing, a ValueError)."""
    from onnx_qtypes.calibration.calibrate import bias_fits
    from onnx_qtypes.proto.qtype import QType

    scale = float(np.float32(0.01))
    reach = (scale + 0.25 * float(np.spacing(np.float32(scale)))) / (1 + 2.0**-20) * 0.5 * 2**30
    weight = QType("int8", [scale], [0])
    assert bias_fits(weight, QType("uint8", [0.5], [0]), np.array([reach])) is weight


def test_a_bias_no_float32_weight_scale_can_hold_stays_float_with_a_note():
    """A bias of 1e38 over inputs of 1e-30: the weight scale its int32 bias would need is beyond float32. bias_fits
    wrote scale inf, and calibrate ended in "QType.scale: scale inf must be finite" naming no tensor; QT407 then
    cast the float bias to int64 (a RuntimeWarning on the command line). The bias stays float, a note names it,
    and check finds no error."""
    import warnings

    w = (np.random.default_rng(0).normal(size=(3, 2, 1, 1)) * 0.3).astype(np.float32)
    model = _model([helper.make_node("Conv", ["x", "w", "b"], ["y"])], [_info("x", [1, 2, 4, 4])],
                   [_info("y", [1, 3, 4, 4])],
                   [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([1e38, 0, 0], np.float32), "b")])
    samples = [{"x": (s["x"] * 1e-30).astype(np.float32)} for s in _samples({"x": [1, 2, 4, 4]})]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning on the way
        result = calibrate_model(model, samples)
        check_model(result.model)  # raises on any error
    assert any(n.startswith("bias 'b' stays float") for n in result.notes), result.notes
    assert get_qtype(result.model, "b") is None


def test_onnxruntime_reads_every_activation_from_the_model_itself_left_as_it_was():
    """The session is made from the model's own bytes with the activations as outputs (no copy of every weight
    while onnxruntime loads them), and the model is given back unchanged, at its own IR version."""
    from onnx_qtypes.calibration.collect import _with_outputs, float_activations

    model = _model([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
                   [_info("x", [2, 3])], [_info("y", [2, 4])], [_const("w", [3, 4])])
    model.graph.value_info.append(_info("h", [2, 4]))
    model.ir_version = 11  # beyond what onnxruntime 1.32 loads
    before = model.SerializeToString()
    declared = float_activations(model)
    names = list(declared)
    wide = onnx.ModelProto.FromString(_with_outputs(model, [declared[n] for n in names if n != "y"]))
    assert model.SerializeToString() == before
    assert wide.ir_version == 10 and [o.name for o in wide.graph.output] == ["y", *[n for n in names if n != "y"]]
    wide.ClearField("ir_version")
    del wide.graph.output[1:]
    model.ClearField("ir_version")
    assert wide.SerializeToString() == model.SerializeToString()  # nothing else differs
