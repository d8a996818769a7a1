"""ReferenceEvaluator on typed models: the definition on hand-computed cases,
boundary ops, dynamic types, subgraphs (If / Loop / Scan), old opsets,
integer-kernel fallback reporting and located errors."""

from __future__ import annotations

from onnx_qtypes.proto.encoding import tensor_array  # noqa: E402 (reads marked initializers)

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from reference_models import T, typed_model

from onnx_qtypes import QType, diagnose, lower, save, set_qtype
from onnx_qtypes.interop import LowerError
from onnx_qtypes.reference_ops import EvaluationError, ReferenceEvaluator, dequantize, quantize

OPSET = [helper.make_opsetid("", 21)]


def _model(nodes, inputs, outputs, inits=(), value_info=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits), value_info=list(value_info))
    return helper.make_model(graph, opset_imports=OPSET, ir_version=10)


def _vi(name: str, elem: int = TensorProto.INT8, shape=None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


# --- the definition on hand-computed cases -------------------------------------------------


def test_add_dequantizes_adds_and_quantizes_with_ties_to_even():
    a_t, b_t, y_t = QType("int8", 0.5, 0), QType("int8", 0.25, 4), QType("int8", 1.0, -1)
    model = typed_model("Add", [T("a", (2,), a_t), T("b", (2,), b_t)], [T("y", (2,), y_t)])
    # reals: a = [5, -1.5], b = [1, -1]; sum [6, -2.5] -> round half even [6, -2] -> + zp -1
    for kernels in ("definitional", "integer"):
        y = ReferenceEvaluator(model, kernels=kernels).run(None, {"a": np.array([10, -3], np.int8), "b": np.array([8, 0], np.int8)})[0]
        assert y.dtype == np.int8 and y.tolist() == [5, -3]


def test_example_cnn_equals_a_hand_written_float64_pipeline(example_model):
    x = np.random.default_rng(7).normal(0, 1, (1, 3, 8, 8)).astype(np.float32)
    out = ReferenceEvaluator(example_model).run(["pool_q", "y"], {"x": x})
    from onnx_qtypes import get_qtype

    qt = {n: get_qtype(example_model, n) for n in ("x_q", "w", "b", "conv_q", "pool_q")}
    inits = {i.name: tensor_array(i) for i in example_model.graph.initializer}
    xr = dequantize(quantize(x, qt["x_q"]), qt["x_q"])
    w, b = dequantize(inits["w"], qt["w"]), dequantize(inits["b"], qt["b"])
    padded = np.pad(xr, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((1, 4, 8, 8))
    for i in range(8):
        for j in range(8):
            conv[0, :, i, j] = np.tensordot(w, padded[0, :, i : i + 3, j : j + 3], axes=3) + b
    conv_q = quantize(conv, qt["conv_q"])
    relu = np.maximum(dequantize(conv_q, qt["conv_q"]), 0)
    relu_q = quantize(relu, qt["conv_q"])
    pooled = relu_q.reshape(1, 4, 4, 2, 4, 2).max(axis=(3, 5))  # same type: max commutes with dequantize
    np.testing.assert_array_equal(out[0], pooled)
    np.testing.assert_array_equal(out[1], dequantize(pooled, qt["pool_q"]).astype(np.float32))


def test_float_outputs_of_typed_nodes_have_the_expressed_type():
    model = _model([helper.make_node("Conv", ["x", "w"], ["y"])], [_vi("x", TensorProto.INT8, [1, 1, 2, 2])],
                   [_vi("y", TensorProto.FLOAT, [1, 1, 1, 1])], [numpy_helper.from_array(np.ones((1, 1, 2, 2), np.int8), "w")])
    set_qtype(model, "x", QType("int8", 0.5, 0))
    set_qtype(model, "w", QType("int8", 0.25, 0))
    y = ReferenceEvaluator(model).run(None, {"x": np.array([1, 2, 3, 4], np.int8).reshape(1, 1, 2, 2)})[0]
    assert y.dtype == np.float32 and y.item() == 0.5 * 0.25 * 10


def test_models_load_from_paths_and_bytes(tmp_path, example_model):
    save(example_model, tmp_path / "m.onnx")
    x = np.zeros((1, 3, 8, 8), np.float32)
    a = ReferenceEvaluator(str(tmp_path / "m.onnx")).run(None, {"x": x})[0]
    b = ReferenceEvaluator(example_model.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_array_equal(a, b)
    assert isinstance(ReferenceEvaluator(example_model), onnx.reference.ReferenceEvaluator)


@pytest.mark.parametrize(
    ("op", "attrs", "function"),
    [
        ("Abs", {}, np.abs),
        ("Exp", {}, np.exp),
        ("Sqrt", {}, lambda v: np.sqrt(np.maximum(v, 0))),
        ("Erf", {}, lambda v: np.vectorize(__import__("math").erf)(v)),
        ("Softplus", {}, lambda v: np.log1p(np.exp(v))),
        ("ReduceMax", {"keepdims": 1}, lambda v: v.max(keepdims=True)),
        ("LogSoftmax", {"axis": -1}, lambda v: v - v.max(-1, keepdims=True) - np.log(np.exp(v - v.max(-1, keepdims=True)).sum(-1, keepdims=True))),
        # implemented by onnx.reference through its function body (typed float32 constants, read exactly)
        ("MeanVarianceNormalization", {"axes": [0, 1]},
         lambda v: (v - v.mean((0, 1), keepdims=True)) / (v.std((0, 1), keepdims=True) + float(np.float32(1e-9)))),
    ],
)
def test_any_operator_onnx_reference_implements_runs_on_typed_tensors(op, attrs, function):
    x_t, y_t = QType("int8", 0.05, 3), QType("int8", 0.04, -2)
    x = (np.arange(24) * 7 % 50 - 25).astype(np.int8).reshape(2, 12)
    out_shape = (1, 1) if op == "ReduceMax" else (2, 12)
    model = typed_model(op, [T("x", (2, 12), x_t)], [T("y", out_shape, y_t)], **attrs)
    want = quantize(function(dequantize(x, x_t)), y_t).astype(np.int64)
    got = ReferenceEvaluator(model).run(None, {"x": x})[0].astype(np.int64)
    np.testing.assert_array_equal(got, want)  # function bodies too: evaluated on float64 reals


def test_blocked_int4_weights_run_by_the_definition_and_match_onnxruntime():
    """Weight-only int4 with blocks along K (the LLM layout): no integer kernel, the definition runs."""
    rng = np.random.default_rng(5)
    k, n, block = 10, 3, 4
    w_t = QType("int4", (rng.uniform(0.01, 0.05, (3, n))).astype(np.float32).astype(np.float64).reshape(-1),
                rng.integers(-8, 8, 3 * n), axis=0, block_size=block)  # ceil(10 / 4) = 3 blocks, the last short
    w = rng.integers(-8, 8, (k, n)).astype(np.int8)
    import ml_dtypes

    model = typed_model("MatMul", [T("x", (2, k), dtype=TensorProto.FLOAT), T("w", (k, n), w_t, value=w.astype(ml_dtypes.int4))],
                        [T("y", (2, n), dtype=TensorProto.FLOAT)])
    x = rng.normal(size=(2, k)).astype(np.float32)
    ev = ReferenceEvaluator(model, kernels="integer")
    y = ev.run(None, {"x": x})[0]
    assert "definitional" in ev.kernel_log["node"]
    scale = np.repeat(np.asarray(w_t.scale).reshape(3, n), block, axis=0)[:k]
    zero = np.repeat(np.asarray(w_t.zero_point).reshape(3, n), block, axis=0)[:k]
    np.testing.assert_allclose(y, x.astype(np.float64) @ (scale * (w - zero)), rtol=1e-6)
    assert y.dtype == np.float32
    from reference_models import lower_to_qdq, run_onnxruntime

    runtime = run_onnxruntime(lower_to_qdq(model, {"w": (k, n)}), {"x": x}, optimize=False)[0]  # its definition path
    np.testing.assert_allclose(y, runtime, rtol=1e-5, atol=1e-6)


def test_typed_and_plain_outputs_of_one_node():
    x_t = QType("int8", 0.5, 0)
    model = typed_model("TopK", [T("x", (1, 4), x_t), T("k", (1,), dtype=TensorProto.INT64, value=np.array([2], np.int64))],
                        [T("v", (1, 2), QType("int8", 0.25, 0)), T("i", (1, 2), dtype=TensorProto.INT64)])
    values, indices = ReferenceEvaluator(model).run(None, {"x": np.array([[1, 9, -3, 4]], np.int8)})
    assert values.tolist() == [[18, 8]] and indices.tolist() == [[1, 3]]  # reals 4.5, 2 on the 0.25 grid


# --- boundary ops -------------------------------------------------------------------------------


def _q_model(scale: float, zero_point: int, declared: QType) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(np.array(scale, np.float32), "s"), numpy_helper.from_array(np.array(zero_point, np.int8), "z")]
    model = _model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q")],
                   [_vi("x", TensorProto.FLOAT, [3])], [_vi("y", TensorProto.INT8, [3])], inits)
    return set_qtype(model, "y", declared)


def test_quantize_linear_is_the_definitions_quantize():
    model = _q_model(0.5, 1, QType("int8", 0.5, 1))
    y = ReferenceEvaluator(model).run(None, {"x": np.array([0.25, 0.75, 100.0], np.float32)})[0]
    assert y.tolist() == [1, 3, 127]  # 0.5 -> 0, 1.5 -> 2, saturate


def test_boundary_op_with_other_parameters_than_its_type_is_refused():
    model = _q_model(0.25, 1, QType("int8", 0.5, 1))
    for kernels in ("definitional", "integer"):
        with pytest.raises(EvaluationError, match=r"node 'q' \(QuantizeLinear\).*'y'.*differ from the type"):
            ReferenceEvaluator(model, kernels=kernels).run(None, {"x": np.zeros(3, np.float32)})


def test_boundary_mismatch_that_prints_alike_names_the_exact_values():
    step_above = float(np.nextafter(np.float32(0.1), np.float32(1)))  # one float32 step above the type's 0.1
    model = _q_model(step_above, 1, QType("int8", 0.1, 1))
    with pytest.raises(EvaluationError, match=r"at scale\[0\]: 0\.10000000894069672 vs 0\.1;"):
        ReferenceEvaluator(model).run(None, {"x": np.zeros(3, np.float32)})


def test_a_boundary_scale_that_is_the_type_s_scale_in_float32_is_the_type_s_as_qt307_compares_them():
    """validity.md#qt307 compares scales after conversion to the scale input's type: float32 0.1 in the node states
    the type's double 0.1 (QT102 warns that no float32 holds it). check called the file clean and run refused it;
    run now takes it and quantizes with the type's scale, the tensor's only meaning: 0.75 / 0.1 is 7.5, which
    rounds to 8 (over the node's float32 0.1, 7.4999999 would give 7)."""
    model = _q_model(0.1, 1, QType("int8", 0.1, 1))
    assert [d.rule for d in diagnose(model).diagnostics] == ["QT102"]
    for kernels in ("definitional", "integer"):
        y = ReferenceEvaluator(model, kernels=kernels).run(None, {"x": np.array([0.75, -0.75, 0.0], np.float32)})[0]
        assert y.tolist() == [9, -7, 1], kernels  # 8 + 1, -8 + 1, 0 + 1


def _dq_model(scale: np.ndarray, declared: QType, opset: int = 21, **attrs: object) -> onnx.ModelProto:
    out = TensorProto.FLOAT if scale.dtype.kind == "V" or str(scale.dtype).startswith("float8") else \
        helper.np_dtype_to_tensor_dtype(scale.dtype)
    inits = [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(np.array(0, np.int8), "z")]
    graph = helper.make_graph([helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq", **attrs)], "g",
                              [_vi("q", TensorProto.INT8, [3])], [_vi("y", out, [3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10 if opset < 23 else 11)
    return set_qtype(model, "q", declared)


@pytest.mark.parametrize("scale, declared, rule", [
    (np.array(0.1, np.float16), QType("int8", float(np.float32(0.1)), 0), "QT307"),  # not the expressed type
    (np.array(0.1, ml_dtypes.bfloat16), QType("int8", float(np.float32(0.1)), 0), "QT307"),
    (np.array(0.5, ml_dtypes.float8_e8m0fnu), QType("int8", 0.375, 0), "QT307"),  # E8M0 rounds 0.375 to 0.5
    (np.array(0.5, np.float16), QType("int8", 0.5, 0), "QT307"),  # the same value, in another type than expressed
    (np.array(1, np.uint8), QType("int8", 1.0, 0), "QT307"),  # (run called an integer scale 1 "scale 0.0")
])
def test_only_the_expressed_type_states_a_scale_to_its_nearest_value(scale, declared, rule):
    """The comparison after conversion (QT307) holds for a scale input of the expressed type only: a float16 or
    bfloat16 scale input, or an E8M0 one that rounds the type's 0.375 to 0.5, states another scale, and a scale input
    MUST have the expressed type (or E8M0) even holding the same value. check, run and lower all refuse them (run
    computed them with the type's scale, lower kept the node's E8M0 0.5)."""
    attrs = {"output_dtype": TensorProto.FLOAT} if scale.dtype == ml_dtypes.float8_e8m0fnu else {}
    model = _dq_model(scale, declared, opset=24 if attrs else 21, **attrs)
    assert rule in {d.rule for d in diagnose(model).diagnostics if d.is_error}
    with pytest.raises(EvaluationError, match=r"node 'dq' \(DequantizeLinear\).*(differ from the type|is expressed)"):
        ReferenceEvaluator(model).run(None, {"q": np.array([1, 2, 4], np.int8)})
    with pytest.raises(LowerError, match="'q'"):
        lower(model)


def test_quantize_linear_binds_the_parameters_of_a_dynamic_type():
    model = _q_model(0.5, 1, QType("int8"))
    y = ReferenceEvaluator(model).run(None, {"x": np.array([1.0, -1.0, 0.0], np.float32)})[0]
    assert y.tolist() == [3, -1, 1] and y.qtype == QType("int8", 0.5, 1)


def test_dequantize_linear_at_opset_13_runs_where_onnx_reference_cannot():
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "s"), numpy_helper.from_array(np.array(2, np.uint8), "z")]
    model = _model([helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"])], [_vi("x", TensorProto.UINT8, [3])],
                   [_vi("y", TensorProto.FLOAT, [3])], inits)
    model.opset_import[0].version = 13
    x = np.array([0, 2, 255], np.uint8)
    with pytest.raises(RuntimeError, match="No implementation for operator 'DequantizeLinear'"):
        onnx.reference.ReferenceEvaluator(model).run(None, {"x": x})
    assert ReferenceEvaluator(model).run(None, {"x": x})[0].tolist() == [-1.0, 0.0, 126.5]


# --- dynamic types ------------------------------------------------------------------------------


def test_dynamic_quantize_linear_feeds_a_dynamic_type_downstream():
    w = np.array([[1, -2], [3, 4]], np.int8)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["x_q", "x_s", "x_z"], name="dql"),
             helper.make_node("MatMul", ["x_q", "w"], ["y"], name="mm")]
    model = _model(nodes, [_vi("x", TensorProto.FLOAT, [1, 2])], [_vi("y", TensorProto.FLOAT, [1, 2])],
                   [numpy_helper.from_array(w, "w")])
    set_qtype(model, "x_q", QType("uint8"))
    set_qtype(model, "w", QType("int8", 0.5, 0))
    x = np.array([[-1.0, 2.0]], np.float32)
    y, x_q = ReferenceEvaluator(model).run(["y", "x_q"], {"x": x})
    # DynamicQuantizeLinear: scale 3/255, zero point round(255/3) = 85; x_q = [0, 255]
    assert x_q.qtype.zero_point == (85,) and x_q.tolist() == [[0, 255]]
    real = (np.array([0, 255]) - 85) * np.float64(np.float32(3) / np.float32(255))
    np.testing.assert_allclose(y, (real @ (0.5 * w.astype(np.float64)))[None], rtol=1e-6)


def test_dynamic_graph_input_takes_floats_or_storage_with_parameters():
    model = typed_model("Relu", [T("x", (3,), QType("int8", schema="symmetric"))], [T("y", (3,), QType("int8", 0.1, 0))])
    ev = ReferenceEvaluator(model)
    # symmetric: scale 2.54 / 127 = 0.02; relu; requantize to 0.1
    assert ev.run(None, {"x": np.array([-2.54, 0.5, 2.54], np.float32)})[0].tolist() == [0, 5, 25]
    got = ev.run(None, {"x": np.array([-5, 10, 20], np.int8), "x.scale": np.float32(0.1), "x.zero_point": np.int8(0)})[0]
    assert got.tolist() == [0, 10, 20]
    with pytest.raises(EvaluationError, match=r"input 'x'.*dynamic"):
        ev.run(None, {"x": np.array([1, 2, 3], np.int8)})


def test_a_dynamic_float8_input_fed_as_storage_takes_its_scale_not_its_own_range():
    """float8 values beside x.scale are storage (calling convention), not reals quantized by the schema: the
    result follows x.scale (0.5 * [-4, 1.5, 6] = [-2, 0.75, 3]; relu; steps of 0.25), whatever the data's range."""
    model = typed_model("Relu", [T("x", (3,), QType("float8e4m3fn", schema="symmetric"))],
                        [T("y", (3,), QType("int8", 0.25, 0))])
    ev = ReferenceEvaluator(model)
    x = np.array([-4, 1.5, 6], ml_dtypes.float8_e4m3fn)
    assert ev.run(None, {"x": x, "x.scale": np.float32(0.5)})[0].tolist() == [0, 3, 12]
    zero = np.zeros((), ml_dtypes.float8_e4m3fn)
    assert ev.run(None, {"x": x, "x.scale": np.float32(0.5), "x.zero_point": zero})[0].tolist() == [0, 3, 12]
    with pytest.raises(EvaluationError, match=r"input 'x' with x.scale / x.zero_point: float8e4m3fn zero points "
                                              r"must be 0"):
        ev.run(None, {"x": x, "x.scale": np.float32(0.5), "x.zero_point": np.ones((), ml_dtypes.float8_e4m3fn)})
    with pytest.raises(EvaluationError, match=r"x.zero_point holds float32 values; give zeros of float8_e4m3fn"):
        ev.run(None, {"x": x, "x.scale": np.float32(0.5), "x.zero_point": np.zeros((), np.float32)})


def test_a_dynamic_input_refuses_feeds_whose_parameters_it_would_ignore():
    """Reals are quantized by the schema, so x.scale / x.zero_point beside them would be dropped silently; float8
    storage given as integer codes would be read as numbers (56 for the code of 1.0)."""
    model = typed_model("Relu", [T("x", (3,), QType("int8", schema="asymmetric"))], [T("y", (3,), QType("int8", 0.25, 0))])
    reals = np.array([1.0, -2.0, 3.5], np.float32)
    with pytest.raises(EvaluationError, match=r"input 'x'.*float32 values are reals, quantized by its schema, so "
                                              r"x.scale and x.zero_point would be ignored"):
        ReferenceEvaluator(model).run(None, {"x": reals, "x.scale": np.float32(100), "x.zero_point": np.int8(5)})
    assert ReferenceEvaluator(model).run(None, {"x": reals})[0].tolist() == [4, 0, 14]  # reals alone: quantized
    f8 = typed_model("Relu", [T("x", (3,), QType("float8e4m3fn", schema="symmetric"))],
                     [T("y", (3,), QType("int8", 0.25, 0))])
    codes = np.array([-4, 1.5, 6], ml_dtypes.float8_e4m3fn).view(np.uint8)
    with pytest.raises(EvaluationError, match=r"input 'x'.*beside x.scale it takes its storage values as "
                                              r"float8e4m3fn \(ml_dtypes\), got uint8 values"):
        ReferenceEvaluator(f8).run(None, {"x": codes, "x.scale": np.float32(0.5)})


def test_a_dynamic_input_s_zero_points_are_one_per_scale():
    model = typed_model("Relu", [T("x", (3,), QType("int8", schema="asymmetric"))], [T("y", (3,), QType("int8", 0.25, 0))])
    feeds = {"x": np.array([1, 2, 3], np.int8), "x.scale": np.float32(0.5), "x.zero_point": np.array([1, 2], np.int8)}
    with pytest.raises(EvaluationError, match=r"x.zero_point holds 2 values for 1 scales"):
        ReferenceEvaluator(model).run(None, feeds)


# --- subgraphs ------------------------------------------------------------------------------------


def _branch(name: str, op: str, out: str) -> onnx.GraphProto:
    return helper.make_graph([helper.make_node(op, ["x_q"], [out])], name, [], [_vi(out, TensorProto.INT8, [2])])


def test_if_branches_read_outer_typed_values_and_type_their_outputs():
    then_g, else_g = _branch("then", "Relu", "t"), _branch("else", "Neg", "e")
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="if")
    model = _model([node], [_vi("c", TensorProto.BOOL, []), _vi("x_q", TensorProto.INT8, [2])], [_vi("y", TensorProto.INT8, [2])])
    x_t, y_t = QType("int8", 0.5, 0), QType("int8", 0.25, 2)
    for name in ("x_q",):
        set_qtype(model, name, x_t)
    for name in ("t", "e", "y"):
        set_qtype(model, name, y_t)
    x = np.array([-4, 6], np.int8)  # reals [-2, 3]
    ev = ReferenceEvaluator(model)
    assert ev.run(None, {"c": np.array(True), "x_q": x})[0].tolist() == [2, 14]  # relu [0, 3] / 0.25 + 2
    assert ev.run(None, {"c": np.array(False), "x_q": x})[0].tolist() == [10, -10]  # neg [2, -3] / 0.25 + 2


def test_loop_without_cond_runs_m_times():
    """onnx.reference skips the loop when the optional cond is absent; the evaluator supplies `true`."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["v_in", "step"], ["v_out"])],
        "body", [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []), _vi("v_in", TensorProto.FLOAT, [2])],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("v_out", TensorProto.FLOAT, [2])])
    model = _model([helper.make_node("Loop", ["n", "", "v0"], ["v"], body=body)],
                   [_vi("n", TensorProto.INT64, []), _vi("v0", TensorProto.FLOAT, [2]), _vi("x_q", TensorProto.INT8, [1])],
                   [_vi("v", TensorProto.FLOAT, [2])], [numpy_helper.from_array(np.array([1, 3], np.float32), "step")])
    set_qtype(model, "x_q", QType("int8", 1.0, 0))  # a typed model (an unused quantized input)
    feeds = {"n": np.array(3, np.int64), "v0": np.zeros(2, np.float32), "x_q": np.zeros(1, np.int8)}
    assert onnx.reference.ReferenceEvaluator(model).run(None, feeds)[0].tolist() == [0, 0]
    assert ReferenceEvaluator(model).run(None, feeds)[0].tolist() == [3, 9]


def test_loop_carries_a_typed_value_across_iterations():
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["v_in", "step"], ["v_out"])],
        "body", [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []), _vi("v_in", TensorProto.INT8, [2])],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("v_out", TensorProto.INT8, [2])])
    node = helper.make_node("Loop", ["n", "", "v0"], ["v"], body=body, name="loop")
    model = _model([node], [_vi("n", TensorProto.INT64, []), _vi("v0", TensorProto.INT8, [2])], [_vi("v", TensorProto.INT8, [2])],
                   [numpy_helper.from_array(np.array([1, 3], np.int8), "step")])
    v_t = QType("int8", 0.5, 0)
    for name in ("v0", "v_in", "v_out", "v"):
        set_qtype(model, name, v_t)
    set_qtype(model, "step", QType("int8", 0.25, 0))  # reals [0.25, 0.75]
    # each iteration adds [0.25, 0.75] and rounds to the 0.5 grid (ties to even):
    # [0, 0] -> [0.25, 0.75] -> [0, 1] -> [0.25, 1.75] -> [0, 2] -> [0.25, 2.75] -> [0, 3]
    out = ReferenceEvaluator(model).run(None, {"n": np.array(3, np.int64), "v0": np.array([0, 0], np.int8)})[0]
    assert out.tolist() == [0, 6]
    integer = ReferenceEvaluator(model, kernels="integer").run(None, {"n": np.array(3, np.int64), "v0": np.array([0, 0], np.int8)})[0]
    assert integer.tolist() == [0, 6]


def test_scan_accumulates_typed_rows():
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "row"], ["s_out"]), helper.make_node("Relu", ["row"], ["r"])],
        "body", [_vi("s_in", TensorProto.INT8, [2]), _vi("row", TensorProto.INT8, [2])],
        [_vi("s_out", TensorProto.INT8, [2]), _vi("r", TensorProto.INT8, [2])])
    node = helper.make_node("Scan", ["s0", "x"], ["s", "rows"], body=body, num_scan_inputs=1, name="scan")
    model = _model([node], [_vi("s0", TensorProto.INT8, [2]), _vi("x", TensorProto.INT8, [3, 2])],
                   [_vi("s", TensorProto.INT8, [2]), _vi("rows", TensorProto.INT8, [3, 2])])
    t = QType("int8", 1.0, 0)
    for name in ("s0", "x", "s_in", "row", "s_out", "r", "s", "rows"):
        set_qtype(model, name, t)
    x = np.array([[1, -2], [3, -4], [100, 100]], np.int8)
    s, rows = ReferenceEvaluator(model).run(None, {"s0": np.array([0, 0], np.int8), "x": x})
    assert s.tolist() == [104, 94] and rows.tolist() == [[1, 0], [3, 0], [100, 100]]


# --- integer mode reporting, errors -----------------------------------------------------------------


def test_integer_mode_reports_each_nodes_kernel_and_fallback_reason():
    x_t = QType("int8", [0.1, 0.2], [0, 0], axis=1)
    model = typed_model("Conv", [T("x", (1, 2, 3, 3), x_t), T("w", (1, 2, 1, 1), QType("int8", 0.5, 0), value=np.ones((1, 2, 1, 1), np.int8))],
                        [T("y", (1, 1, 3, 3), QType("int8", 0.1, 0))])
    ev = ReferenceEvaluator(model, kernels="integer")
    out = ev.run(None, {"x": np.ones((1, 2, 3, 3), np.int8)})[0]
    assert ev.kernel_log == {"node": "definitional: a per-axis input type"}
    assert out.tolist() == np.full((1, 1, 3, 3), 2).tolist()  # (0.1 + 0.2) * 0.5 / 0.1 = 1.5 -> 2


@pytest.mark.parametrize(
    ("feeds", "message"),
    [
        ({}, r"missing input 'a'"),
        ({"a": np.zeros(2, np.float32), "b": np.zeros(2, np.int8)}, r"input 'a'.*takes its storage integers \(int8\), got float32"),
        ({"a": np.array([0, 300]), "b": np.zeros(2, np.int8)}, r"input 'a': value 300 at index \[1\] is outside the int8 storage range \[-128, 127\]"),
    ],
)
def test_bad_feeds_are_named(feeds, message):
    model = typed_model("Add", [T("a", (2,), QType("int8", 1.0, 0)), T("b", (2,), QType("int8", 1.0, 0))], [T("y", (2,), QType("int8", 1.0, 0))])
    with pytest.raises(EvaluationError, match=message):
        ReferenceEvaluator(model).run(None, feeds)


def test_invalid_types_in_the_model_are_named():
    model = typed_model("Relu", [T("x", (2,), QType("int8", 1.0, 0))], [T("y", (2,), QType("int8", 1.0, 0))])
    from onnx_qtypes.proto import write_qtype

    bad = QType("int8", 1.0, 0).to_proto()
    bad.scale[0] = 0.0
    write_qtype(model.graph.output[0], QType.from_proto(bad, validate=False))
    with pytest.raises(EvaluationError, match=r"tensor 'y'.*scale 0.0 must be finite and non-zero"):
        ReferenceEvaluator(model)


def test_wrong_parameter_count_for_the_runtime_shape_is_located():
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="node")], [_vi("x", TensorProto.INT8, ["n"])],
                   [_vi("y", TensorProto.INT8, ["n"])])
    set_qtype(model, "x", QType("int8", [1.0, 2.0], [0, 0], axis=0))  # fits a dimension of 2, not the 3 fed
    set_qtype(model, "y", QType("int8", 1.0, 0))
    with pytest.raises(EvaluationError, match=r"node 'node' \(Relu\).*'x'.*needs 3 scales, found 2"):
        ReferenceEvaluator(model).run(None, {"x": np.zeros(3, np.int8)})


def test_unknown_kernel_mode_is_refused():
    model = typed_model("Relu", [T("x", (2,), QType("int8", 1.0, 0))], [T("y", (2,), QType("int8", 1.0, 0))])
    with pytest.raises(EvaluationError, match="kernels='fast'"):
        ReferenceEvaluator(model, kernels="fast")


def test_a_model_importing_the_default_domain_as_ai_onnx_runs_as_onnxruntime_runs_it():
    """opset_import may name the default domain "ai.onnx" while its nodes say "" (onnx.checker and onnxruntime
    accept it); onnx.reference finds no opset for "" and refused the model. Typed and plain nodes run alike."""
    from reference_models import run_onnxruntime  # noqa: PLC0415

    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["x"], name="dq"),
             helper.make_node("Relu", ["x"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("q", TensorProto.INT8, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
                              [numpy_helper.from_array(np.array(0.5, np.float32), "s"),
                               numpy_helper.from_array(np.array(-2, np.int8), "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx", 21)], ir_version=10)
    onnx.checker.check_model(model, full_check=True)
    feeds = {"q": np.array([-128, -2, 3, 127], np.int8)}
    want = run_onnxruntime(model, feeds, optimize=False)[0]
    np.testing.assert_array_equal(want, [0.0, 0.0, 2.5, 64.5])
    np.testing.assert_array_equal(ReferenceEvaluator(model).run(None, feeds)[0], want)


@pytest.mark.parametrize("imported", ["", "ai.onnx"])
def test_a_boundary_node_of_domain_ai_onnx_is_found_by_check_as_onnx_checker_finds_it(imported):
    """A boundary DequantizeLinear of domain "ai.onnx": onnx.checker refuses it whatever the model imports ("No opset
    import for domain 'ai.onnx'", or "No Op registered" when it imports "ai.onnx"), and so do run (importing "" only)
    and lower; check called it clean, the float view having made the node an Identity of domain "". It keeps its
    domain there now, so QT310 reports what onnx.checker says of the file."""
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq", domain="ai.onnx")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("q", TensorProto.INT8, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
                              [numpy_helper.from_array(np.array(0.5, np.float32), "s"),
                               numpy_helper.from_array(np.array(-2, np.int8), "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(imported, 21)], ir_version=10)
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(model)
    set_qtype(model, "q", QType("int8", 0.5, -2))
    assert [(d.rule, d.location.node) for d in diagnose(model).diagnostics if d.is_error] == [("QT310", "dq")]
    if imported == "":
        with pytest.raises(EvaluationError, match="No opset import for domain 'ai.onnx'"):
            ReferenceEvaluator(model).run(None, {"q": np.array([-128, -2, 3, 127], np.int8)})
