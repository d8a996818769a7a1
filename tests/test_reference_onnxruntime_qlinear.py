"""onnxruntime's com.microsoft QOperator nodes a lift leaves as written (reference_ops/producer_ops/
onnxruntime_qlinear.py): ``run`` computes them (dequantize, float operator, quantize) instead of refusing the model.

Each operator is checked against the definition worked out here in numpy, and against onnxruntime's unoptimized path
within one step of its output (its kernels round once more in places: the tolerance the suite gives a QOperator node).
"""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from reference_models import run_onnxruntime

from onnx_qtypes.interop import lift_model
from onnx_qtypes.reference_ops import EvaluationError, ReferenceEvaluator

MS = "com.microsoft"
RNG = np.random.default_rng(7)


def _model(node: onnx.NodeProto, feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray],
           output_type: int = TensorProto.INT8) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node], "contrib",
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for n, v in feeds.items()],
        [helper.make_tensor_value_info(node.output[0], output_type, None)],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
                             ir_version=8)


def _onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray], output: int = 0) -> np.ndarray:
    return run_onnxruntime(model, feeds, optimize=False)[output]


def _ours(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    return np.asarray(ReferenceEvaluator(model).run(None, feeds)[0])


def _quantize(real: np.ndarray, scale: float, zero_point: int, dtype: type) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.clip(np.rint(real / np.float32(scale)) + zero_point, info.min, info.max).astype(dtype)


def _real(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    return (q.astype(np.int32) - zero_point).astype(np.float32) * np.float32(scale)


A = RNG.integers(-128, 128, (2, 3, 4)).astype(np.int8)
B = RNG.integers(-128, 128, (3, 4)).astype(np.int8)
PARAMS = {"as": np.float32(0.02), "az": np.int8(3), "bs": np.float32(0.03), "bz": np.int8(-2),
          "ys": np.float32(0.04), "yz": np.int8(1)}


@pytest.mark.parametrize(("op", "fn"), [("QLinearAdd", np.add), ("QLinearMul", np.multiply)])
def test_binary_ops_are_the_definition_and_within_a_step_of_onnxruntime(op: str, fn) -> None:  # noqa: ANN001
    node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], domain=MS)
    model = _model(node, {"a": A, "b": B}, PARAMS)
    feeds = {"a": A, "b": B}
    ours = _ours(model, feeds)
    expected = _quantize(fn(_real(A, 0.02, 3), _real(B, 0.03, -2)), 0.04, 1, np.int8)
    assert ours.dtype == np.int8 and np.array_equal(ours, expected)
    assert np.abs(ours.astype(int) - _onnxruntime(model, feeds).astype(int)).max() <= 1


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize(("opset", "axis"), [(11, 1), (13, 1), (10, None), (11, None), (12, None), (13, None)])
def test_softmax_follows_its_opset_attribute(opset: int, axis: int | None) -> None:
    """Softmax-11 flattens from ``axis`` (1 here) on, Softmax-13 normalizes along it: different results for a 3-d
    input, each the one its ``opset`` attribute names, whatever the model's opset. Without an axis it is the last
    one at every opset (onnxruntime's default), where Softmax-11's own default, 1, would flatten."""
    given = {} if axis is None else {"axis": axis}
    node = helper.make_node("QLinearSoftmax", ["a", "as", "az", "ys", "yz"], ["y"], domain=MS, opset=opset, **given)
    model = _model(node, {"a": A}, {**PARAMS, "ys": np.float32(1 / 256), "yz": np.int8(-128)})
    ours = _ours(model, {"a": A})
    real = _real(A, 0.02, 3)
    probabilities = (_softmax(real, -1) if axis is None else _softmax(real.reshape(2, -1), 1).reshape(real.shape)
                     if opset < 13 else _softmax(real, 1))
    expected = _quantize(probabilities, 1 / 256, -128, np.int8)
    assert np.abs(ours.astype(int) - expected.astype(int)).max() <= 1  # exp in float32 against float64 here
    assert np.abs(ours.astype(int) - _onnxruntime(model, {"a": A}).astype(int)).max() <= 1


@pytest.mark.parametrize("channels_last", [0, 1])
def test_pools_read_channels_last(channels_last: int) -> None:
    x = RNG.integers(0, 256, (1, 4, 5, 3) if channels_last else (1, 3, 4, 5)).astype(np.uint8)
    params = {"as": np.float32(0.05), "az": np.uint8(128), "ys": np.float32(0.03), "yz": np.uint8(100)}
    for op, attrs in (("QLinearGlobalAveragePool", {}), ("QLinearAveragePool", {"kernel_shape": [2, 2]}),
                      ("QLinearAveragePool", {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
                      ("QLinearAveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1})):
        node = helper.make_node(op, ["a", "as", "az", "ys", "yz"], ["y"], domain=MS, channels_last=channels_last,
                                **attrs)
        model = _model(node, {"a": x}, params, TensorProto.UINT8)
        ours = _ours(model, {"a": x})
        nchw = _real(x, 0.05, 128).transpose(0, 3, 1, 2) if channels_last else _real(x, 0.05, 128)
        if op == "QLinearGlobalAveragePool":
            pooled = nchw.mean(axis=(2, 3), keepdims=True)
        elif "pads" in attrs:  # zeros around, counted
            padded = np.pad(nchw, ((0, 0), (0, 0), (1, 1), (1, 1)))
            pooled = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3)).mean(axis=(-2, -1))
        elif "ceil_mode" in attrs:  # the last window of an odd side holds the one element left
            rows = [nchw[:, :, r:r + 2] for r in range(0, nchw.shape[2], 2)]
            pooled = np.stack([np.stack([r[:, :, :, c:c + 2].mean(axis=(2, 3)) for c in range(0, nchw.shape[3], 2)],
                                        axis=-1) for r in rows], axis=-2)
        else:
            pooled = np.lib.stride_tricks.sliding_window_view(nchw, (2, 2), axis=(2, 3)).mean(axis=(-2, -1))
        expected = _quantize(pooled.transpose(0, 2, 3, 1) if channels_last else pooled, 0.03, 100, np.uint8)
        assert ours.shape == expected.shape
        assert np.abs(ours.astype(int) - expected.astype(int)).max() <= 1  # float32 sums against numpy's
        assert np.abs(ours.astype(int) - _onnxruntime(model, {"a": x}).astype(int)).max() <= 1


@pytest.mark.parametrize("bias_shape", [[1], [], [1, 4], [3, 4]])
def test_a_qgemm_bias_broadcasts_over_per_column_scales_as_onnxruntime_adds_it(bias_shape: list) -> None:
    """A bias of one value, a scalar or a matrix beside a per-column B: each column reads it at its own scale
    (the reference refused the first two: its DequantizeLinear took one bias value per scale)."""
    rng = np.random.default_rng(len(bias_shape))  # its own draws, whichever tests ran before
    a = rng.integers(0, 256, (3, 5)).astype(np.uint8)
    b = rng.integers(-127, 128, (5, 4)).astype(np.int8)
    b_scale = np.array([0.01, 0.02, 0.03, 0.04], np.float32)
    bias = rng.integers(-3000, 3000, bias_shape).astype(np.int32)
    inits = {"as": np.float32(0.05), "az": np.uint8(120), "bs": b_scale, "bz": np.zeros(4, np.int8), "c": bias,
             "ys": np.float32(0.2), "yz": np.uint8(128)}
    node = helper.make_node("QGemm", ["a", "as", "az", "b", "bs", "bz", "c", "ys", "yz"], ["y"], domain=MS)
    model = _model(node, {"a": a, "b": b}, inits, TensorProto.UINT8)
    ours = _ours(model, {"a": a, "b": b})
    scales = np.float64(0.05) * b_scale.astype(np.float64)
    real = ((a.astype(np.int64) - 120) @ b.astype(np.int64)) * scales + scales * bias
    assert np.abs(ours.astype(int) - np.clip(np.rint(real / 0.2) + 128, 0, 255)).max() <= 1
    assert np.abs(ours.astype(int) - _onnxruntime(model, {"a": a, "b": b}).astype(int)).max() <= 1


@pytest.mark.parametrize(("per_column", "alpha", "quantized_output"),
                         [(False, 1.0, True), (True, 0.5, True), (True, 1.0, False)])
def test_qgemm_reads_its_bias_at_alpha_times_the_input_scales(per_column: bool, alpha: float,
                                                              quantized_output: bool) -> None:
    a = RNG.integers(0, 256, (3, 5)).astype(np.uint8)
    b = RNG.integers(-127, 128, (5, 4)).astype(np.int8)
    b_scale = np.array([0.01, 0.02, 0.03, 0.04], np.float32) if per_column else np.float32(0.02)
    bias = RNG.integers(-3000, 3000, 4).astype(np.int32)
    inits = {"as": np.float32(0.05), "az": np.uint8(120), "bs": b_scale,
             "bz": np.zeros(4, np.int8) if per_column else np.int8(0), "c": bias}
    inputs = ["a", "as", "az", "b", "bs", "bz", "c"]
    if quantized_output:
        inits |= {"ys": np.float32(0.2), "yz": np.uint8(128)}
        inputs += ["ys", "yz"]
    node = helper.make_node("QGemm", inputs, ["y"], domain=MS, alpha=alpha)
    model = _model(node, {"a": a, "b": b}, inits, TensorProto.UINT8 if quantized_output else TensorProto.FLOAT)
    feeds = {"a": a, "b": b}
    ours = _ours(model, feeds)
    scales = np.float64(0.05) * np.asarray(b_scale, np.float64)
    real = alpha * ((a.astype(np.int64) - 120) @ b.astype(np.int64)) * scales + alpha * scales * bias
    theirs = _onnxruntime(model, feeds)
    if quantized_output:
        expected = np.clip(np.rint(real / 0.2) + 128, 0, 255)
        assert np.abs(ours.astype(int) - expected).max() <= 1
        assert np.abs(ours.astype(int) - theirs.astype(int)).max() <= 1
    else:
        assert ours.dtype == np.float32
        np.testing.assert_allclose(ours, real, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_where_and_concat_requantize_each_operand() -> None:
    condition = RNG.integers(0, 2, (3, 4)).astype(bool)
    node = helper.make_node("QLinearWhere", ["cond", "a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], domain=MS)
    model = _model(node, {"cond": condition, "b": B}, {**PARAMS, "a": A[0]})
    ours = _ours(model, {"cond": condition, "b": B})
    expected = _quantize(np.where(condition, _real(A[0], 0.02, 3), _real(B, 0.03, -2)), 0.04, 1, np.int8)
    assert np.array_equal(ours, expected)
    assert np.abs(ours.astype(int) - _onnxruntime(model, {"cond": condition, "b": B}).astype(int)).max() <= 1

    node = helper.make_node("QLinearConcat", ["ys", "yz", "a", "as", "az", "b", "bs", "bz"], ["y"], domain=MS, axis=0)
    model = _model(node, {"a": A[0], "b": B}, PARAMS)
    ours = _ours(model, {"a": A[0], "b": B})
    expected = _quantize(np.concatenate([_real(A[0], 0.02, 3), _real(B, 0.03, -2)]), 0.04, 1, np.int8)
    assert np.array_equal(ours, expected)
    assert np.abs(ours.astype(int) - _onnxruntime(model, {"a": A[0], "b": B}).astype(int)).max() <= 1


@pytest.mark.parametrize(("op", "attrs", "fn"), [
    ("QLinearSigmoid", {}, lambda r: 1 / (1 + np.exp(-r))),
    ("QLinearLeakyRelu", {"alpha": 0.25}, lambda r: np.where(r >= 0, r, np.float32(0.25) * r)),
])
def test_unary_ops_are_the_definition_and_within_a_step_of_onnxruntime(op: str, attrs: dict, fn) -> None:  # noqa: ANN001
    node = helper.make_node(op, ["a", "as", "az", "ys", "yz"], ["y"], domain=MS, **attrs)
    model = _model(node, {"a": A}, {**PARAMS, "ys": np.float32(0.01)})
    ours = _ours(model, {"a": A})
    expected = _quantize(fn(_real(A, 0.02, 3).astype(np.float64)), 0.01, 1, np.int8)
    assert np.abs(ours.astype(int) - expected.astype(int)).max() <= 1  # float32 against float64 here
    assert np.abs(ours.astype(int) - _onnxruntime(model, {"a": A}).astype(int)).max() <= 1


def test_a_per_channel_scale_where_the_schema_takes_one_is_refused() -> None:
    node = helper.make_node("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], domain=MS)
    model = _model(node, {"a": A, "b": B}, {**PARAMS, "as": np.full(4, 0.02, np.float32), "az": np.full(4, 3, np.int8)})
    with pytest.raises(EvaluationError, match="holds 4 scales"):
        _ours(model, {"a": A, "b": B})


def test_a_model_the_lift_leaves_at_a_scale_of_infinity_runs() -> None:
    """onnxruntime's quantizer writes scale inf for BERT's -inf attention mask: the lift leaves that QLinearAdd and
    the QLinearMul whose integers it reads as written; ``run`` computed no com.microsoft node and refused the model."""
    x = RNG.integers(-128, 128, (2, 4)).astype(np.int8)
    nodes = [helper.make_node("QLinearMul", ["x", "xs", "xz", "w", "ws", "wz", "ms", "mz"], ["m"], domain=MS),
             helper.make_node("QLinearAdd", ["m", "ms", "mz", "mask", "inf", "z0", "inf", "z0"], ["y"], domain=MS)]
    inits = {"xs": np.float32(0.1), "xz": np.int8(0), "w": np.full((2, 4), 7, np.int8), "ws": np.float32(0.05),
             "wz": np.int8(0), "ms": np.float32(0.2), "mz": np.int8(0), "mask": np.zeros((2, 4), np.int8),
             "inf": np.float32(np.inf), "z0": np.int8(0)}
    graph = helper.make_graph(nodes, "mask", [helper.make_tensor_value_info("x", TensorProto.INT8, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [2, 4]),
                               helper.make_tensor_value_info("m", TensorProto.INT8, [2, 4])],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
                              ir_version=8)
    result = lift_model(model)
    assert {n.op_type for n in result.model.graph.node} >= {"QLinearMul", "QLinearAdd"}  # left as written
    m = np.asarray(ReferenceEvaluator(result.model).run(["m"], {"x": x})[0])
    assert np.array_equal(m, _quantize(_real(x, 0.1, 0) * np.float32(0.35), 0.2, 0, np.int8))
    assert np.abs(m.astype(int) - _onnxruntime(model, {"x": x}, output=1).astype(int)).max() <= 1


def test_a_node_its_float_operator_refuses_is_named() -> None:
    """The node is computed as a small graph of its own: an error there names the node of the model, not the
    graph's unnamed Concat."""
    node = helper.make_node("QLinearConcat", ["ys", "yz", "a", "as", "az", "b", "bs", "bz"], ["y"], name="cat",
                            domain=MS, axis=5)
    model = _model(node, {"a": A[0], "b": B}, PARAMS)
    with pytest.raises(EvaluationError, match=r"'cat'.*DequantizeLinear, Concat, QuantizeLinear"):
        _ours(model, {"a": A[0], "b": B})


def test_one_node_runs_on_inputs_of_other_shapes() -> None:
    """A node's small graph is built once per element types and ranks: a second call with other sizes (a dynamic
    batch, a Loop body) is computed, not refused for the sizes of the first."""
    node = helper.make_node("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], domain=MS)
    model = _model(node, {"a": A, "b": B}, PARAMS)
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"  # the model's own input: any batch
    evaluator = ReferenceEvaluator(model)
    for a in (A, A[:1], np.concatenate([A, A])):
        got = np.asarray(evaluator.run(None, {"a": a, "b": B})[0])
        assert np.array_equal(got, _quantize(_real(a, 0.02, 3) + _real(B, 0.03, -2), 0.04, 1, np.int8))


def test_one_node_runs_on_inputs_of_other_ranks() -> None:
    """The small graph's key holds each input's rank (the graph declares it): a call with another rank gets a graph
    of its own, and a later call with the first rank its first graph again."""
    node = helper.make_node("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], domain=MS)
    model = _model(node, {"a": A, "b": B}, PARAMS)
    model.graph.input[0].type.tensor_type.ClearField("shape")  # any rank
    evaluator = ReferenceEvaluator(model)
    for a in (A, A[0], A[0, 0], A):
        got = np.asarray(evaluator.run(None, {"a": a, "b": B})[0])
        assert np.array_equal(got, _quantize(_real(a, 0.02, 3) + _real(B, 0.03, -2), 0.04, 1, np.int8))


def test_an_output_zero_point_left_out_is_zero_of_the_input_type() -> None:
    node = helper.make_node("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "ys"], ["y"], domain=MS)
    model = _model(node, {"a": A, "b": B}, {k: v for k, v in PARAMS.items() if k != "yz"})
    ours = _ours(model, {"a": A, "b": B})
    assert ours.dtype == np.int8  # not QuantizeLinear's uint8
    assert np.array_equal(ours, _quantize(_real(A, 0.02, 3) + _real(B, 0.03, -2), 0.04, 0, np.int8))
    assert np.abs(ours.astype(int) - _onnxruntime(model, {"a": A, "b": B}).astype(int)).max() <= 1


@pytest.mark.parametrize(("trans_a", "trans_b"), [(0, 1), (1, 0), (1, 1)])
def test_qgemm_transposes_as_told_with_a_square_weight(trans_a: int, trans_b: int) -> None:
    """A square B reads the same either way round: only the result tells whether transB was taken."""
    a = RNG.integers(0, 256, (4, 4)).astype(np.uint8)
    b = RNG.integers(-127, 128, (4, 4)).astype(np.int8)
    b_scale = np.array([0.01, 0.02, 0.03, 0.04], np.float32)  # per column of op(B): B's axis 0 when transposed
    inits = {"as": np.float32(0.05), "az": np.uint8(120), "bs": b_scale, "bz": np.zeros(4, np.int8),
             "ys": np.float32(0.2), "yz": np.uint8(128)}
    node = helper.make_node("QGemm", ["a", "as", "az", "b", "bs", "bz", "", "ys", "yz"], ["y"], domain=MS,
                            transA=trans_a, transB=trans_b)
    model = _model(node, {"a": a, "b": b}, inits, TensorProto.UINT8)
    ours = _ours(model, {"a": a, "b": b})
    op_a = (a.astype(np.float64) - 120).T if trans_a else a.astype(np.float64) - 120
    op_b = b.astype(np.float64).T if trans_b else b.astype(np.float64)
    expected = np.clip(np.rint((op_a @ op_b) * 0.05 * b_scale / 0.2) + 128, 0, 255)
    assert np.abs(ours.astype(int) - expected).max() <= 1
    assert np.abs(ours.astype(int) - _onnxruntime(model, {"a": a, "b": b}).astype(int)).max() <= 1


def test_qgemm_with_an_output_scale_alone_writes_its_reals_over_that_scale() -> None:
    """onnxruntime's QGemm with y_scale and no y_zero_point writes float values: the reals divided by y_scale, not
    rounded. The lift leaves such a node with its reason (no quantized type holds those values); run computes it."""
    a = np.array([[130, 140], [100, 120]], np.uint8)
    b = np.array([[1, 2], [3, -4]], np.int8)
    inits = {"as": np.float32(0.05), "az": np.uint8(120), "bs": np.float32(0.02), "bz": np.int8(0),
             "ys": np.float32(0.3)}
    node = helper.make_node("QGemm", ["a", "as", "az", "b", "bs", "bz", "", "ys"], ["y"], name="gemm", domain=MS)
    model = _model(node, {"a": a, "b": b}, inits, TensorProto.FLOAT)
    ours = _ours(model, {"a": a, "b": b})
    expected = ((a.astype(np.float64) - 120) @ b) * 0.05 * 0.02 / 0.3
    assert ours.dtype == np.float32 and np.allclose(ours, expected, rtol=1e-6)
    assert np.allclose(ours, _onnxruntime(model, {"a": a, "b": b}), rtol=1e-6)
    result = lift_model(model)
    assert [n.op_type for n in result.model.graph.node] == ["QGemm"]
    assert any("an output scale without a zero point" in w for w in result.warnings), result.warnings


def test_an_overhanging_window_of_ceil_mode_averages_what_it_holds() -> None:
    """ceil_mode with count_include_pad: the last window of [10 20 30 40 50] (kernel 2, stride 2) reaches past the
    input and holds 50 alone; AveragePool averages it to 50, as onnxruntime's unoptimized float AveragePool does
    (compared here). onnxruntime 1.32's QLinearAveragePool divides it by the whole kernel (25): a departure of its
    contrib kernel from its own float operator, not asserted here (README.md)."""
    x = np.array([[[10, 20, 30, 40, 50]]], np.uint8)
    params = {"as": np.float32(1.0), "az": np.uint8(0), "ys": np.float32(1.0), "yz": np.uint8(0)}
    attrs = {"kernel_shape": [2], "strides": [2], "ceil_mode": 1, "count_include_pad": 1}
    node = helper.make_node("QLinearAveragePool", ["a", "as", "az", "ys", "yz"], ["y"], domain=MS, **attrs)
    ours = _ours(_model(node, {"a": x}, params, TensorProto.UINT8), {"a": x})
    pool = helper.make_node("AveragePool", ["a"], ["y"], **attrs)
    real = x.astype(np.float32)
    float_model = helper.make_model(
        helper.make_graph([pool], "pool", [helper.make_tensor_value_info("a", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]),
        opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    assert ours.tolist() == np.rint(_onnxruntime(float_model, {"a": real})).tolist() == [[[15, 35, 50]]]


def test_a_qoperator_node_inside_a_subgraph_runs() -> None:
    """quantize_static with EnableSubgraph quantizes If / Loop bodies, which the lift leaves as they are: their
    com.microsoft nodes are computed there too (the reference refused them)."""
    a = np.arange(6, dtype=np.uint8).reshape(2, 3) * 20
    inits = {"as": np.float32(0.05), "az": np.uint8(3), "bs": np.float32(0.03), "bz": np.uint8(7),
             "ys": np.float32(0.04), "yz": np.uint8(1), "b": np.full((2, 3), 9, np.uint8)}
    add = helper.make_node("QLinearAdd", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["t"], domain=MS)
    then = helper.make_graph([add], "then", [], [helper.make_tensor_value_info("t", TensorProto.UINT8, [2, 3])])
    other = helper.make_graph([helper.make_node("Identity", ["a"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.UINT8, [2, 3])])
    graph = helper.make_graph([helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], "g",
                              [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                               helper.make_tensor_value_info("a", TensorProto.UINT8, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 3])],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
                              ir_version=8)
    feeds = {"c": np.array(True), "a": a}
    lifted = lift_model(model).model
    got = np.asarray(ReferenceEvaluator(lifted).run(None, feeds)[0])
    expected = _quantize(_real(a, 0.05, 3) + _real(inits["b"], 0.03, 7), 0.04, 1, np.uint8)
    assert np.array_equal(got, expected)
    assert np.abs(got.astype(int) - _onnxruntime(model, feeds).astype(int)).max() <= 1


def test_an_attribute_the_operator_does_not_take_is_refused() -> None:
    """QGemm has no beta (onnxruntime: "Unrecognized attribute: beta"): its float Gemm would have scaled the bias
    by it, a meaning no runtime gives the node."""
    node = helper.make_node("QGemm", ["a", "as", "az", "b", "bs", "bz"], ["y"], name="gemm", domain=MS, beta=2.0)
    a, b = np.zeros((3, 4), np.uint8), np.zeros((4, 2), np.int8)
    model = _model(node, {"a": a, "b": b}, {"as": np.float32(0.05), "az": np.uint8(120), "bs": np.float32(0.02),
                                            "bz": np.int8(0)}, TensorProto.FLOAT)
    with pytest.raises(EvaluationError, match=r"'gemm'.*QGemm takes no attribute beta"):
        _ours(model, {"a": a, "b": b})


def test_qgemm_with_an_output_zero_point_and_no_scale_is_refused_and_left() -> None:
    """onnxruntime's QGemm writes integers when given y_zero_point; without y_scale it has no step to write them at.
    run gave float values into the declared uint8 output, and the lift read the node as a float-output QGemm."""
    a, b = np.zeros((3, 4), np.uint8), np.zeros((4, 2), np.int8)
    inits = {"as": np.float32(0.05), "az": np.uint8(120), "bs": np.float32(0.02), "bz": np.int8(0),
             "yz": np.uint8(128)}
    node = helper.make_node("QGemm", ["a", "as", "az", "b", "bs", "bz", "", "", "yz"], ["y"], name="gemm", domain=MS)
    model = _model(node, {"a": a, "b": b}, inits, TensorProto.UINT8)
    with pytest.raises(EvaluationError, match=r"'gemm'.*the output's scale \(input 7\) is required"):
        _ours(model, {"a": a, "b": b})
    result = lift_model(model)
    assert [n.op_type for n in result.model.graph.node] == ["QGemm"]
    assert any("output scale missing" in w for w in result.warnings), result.warnings


@pytest.mark.parametrize(("op", "inputs", "attrs", "said"), [
    ("QLinearSoftmax", {"a": A}, {"opset": b"13"}, "attribute opset is b'13', not an integer"),
    ("QGemm", {"a": A, "b": B}, {}, "operands of rank 3, 2, where QGemm takes matrices"),
    ("QLinearGlobalAveragePool", {"a": A[0, 0]}, {"channels_last": 1}, "an input of rank 1, where a pool takes"),
])
def test_what_the_schema_refuses_and_the_float_operator_would_compute_is_refused(op, inputs, attrs, said) -> None:
    """onnxruntime refuses these nodes; their float operators computed something all the same (a text opset read
    as 13, a QGemm on a 3-d A, a pool of a vector)."""
    names = {"QGemm": ["a", "as", "az", "b", "bs", "bz", "", "ys", "yz"]}.get(op, ["a", "as", "az", "ys", "yz"])
    node = helper.make_node(op, names, ["y"], name="node", domain=MS, **attrs)
    model = _model(node, inputs, PARAMS)
    with pytest.raises(EvaluationError, match=rf"'node'.*{re.escape(said)}"):
        _ours(model, inputs)


def test_a_concat_whose_inputs_are_no_triples_is_left_by_the_lift_and_refused_by_run_alike() -> None:
    """One reason, worded once (qoperator.triples_problem): the lift leaves the node with it, run refuses with it."""
    node = helper.make_node("QLinearConcat", ["ys", "yz", "a", "as", "az", "b", "bs"], ["y"], name="cat", domain=MS,
                            axis=0)
    model = _model(node, {"a": A[0], "b": B}, PARAMS)
    reason = "inputs after the output's scale and zero point are not (tensor, scale, zero point) triples"
    assert [n.reason for n in lift_model(model).left] == [reason]
    with pytest.raises(EvaluationError, match=rf"'cat'.*{re.escape(reason)}"):
        _ours(model, {"a": A[0], "b": B})
