"""The reference against onnxruntime: every single-op case, lowered to
standard ONNX (DequantizeLinear -> op -> QuantizeLinear, which onnxruntime
may fuse into QLinear* kernels), run by onnxruntime 1.31 on the same
storage integers, agrees with the definition within one storage step."""

from __future__ import annotations

import os

import numpy as np
import onnx

import pytest
from hypothesis import HealthCheck, assume, given, settings
from reference_cases import CASES, Case
from reference_models import activations_per_tensor, lower_to_qdq, run_onnxruntime, steps_apart

from onnx_qtypes.reference_ops import ReferenceEvaluator

pytest.importorskip("onnxruntime")

SETTINGS = settings(max_examples=int(os.environ.get("QT_EXAMPLES", 20)), deadline=None,
                    suppress_health_check=list(HealthCheck), database=None)
ORT_OPS = sorted(op for op in CASES if op not in ("DequantizeLinear",))


def check(case: Case) -> None:
    assume(case.ort)
    definitional = ReferenceEvaluator(case.model).run(None, case.feeds)
    assume(case.op != "MaxPool" or definitional[0].shape == case.shapes["y"])  # onnx.reference MaxPool shape bug
    lowered = lower_to_qdq(case.model, case.shapes)
    # onnxruntime fuses DQ -> op -> Q into QLinear* kernels that take scalar activation parameters only (and
    # then fails at run time on per-axis ones), so the fused path is compared for per-tensor activations.
    fused = activations_per_tensor(case.model) and not any(
        known(case) for known in (_fused_average_pool_divergence, _fused_softmax_overflow, _fused_gemm_bias_unchecked))
    modes = (True, False) if fused else (False,)
    for optimize in modes:  # fused QLinear* kernels and the plain float path
        runtime = run_onnxruntime(lowered, case.feeds, optimize=optimize)
        for ours, theirs in zip(definitional, runtime):
            assert ours.shape == theirs.shape
            assert steps_apart(ours, theirs) <= 1


def _fused_average_pool_divergence(case: Case) -> bool:
    """onnxruntime's fused QLinearAveragePool divides a ceil_mode edge window by the whole kernel size under
    count_include_pad=1, where its own float AveragePool and onnx.reference count only the (padded) input:
    kernel 3, stride 2, ceil_mode 1 on 4 rows averages the last two rows over 3 instead of 2."""
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in case.model.graph.node[0].attribute}
    return case.op == "AveragePool" and bool(attrs.get("ceil_mode")) and bool(attrs.get("count_include_pad"))


def test_fused_average_pool_divergence_is_real():
    """The exclusion above documents a measured onnxruntime behaviour, not a guess."""
    from onnx_qtypes import QType
    from reference_models import T, typed_model

    x = np.array([89, 35, 2, -59], np.int8).reshape(1, 1, 4, 1)
    model = typed_model("AveragePool", [T("x", (1, 1, 4, 1), QType("int8", 0.05, 3))], [T("y", (1, 1, 2, 1), QType("int8", 0.04, -2))],
                        kernel_shape=[3, 1], strides=[2, 1], ceil_mode=1, count_include_pad=1)
    ours = ReferenceEvaluator(model).run(None, {"x": x})[0].ravel().tolist()
    lowered = lower_to_qdq(model, {"x": (1, 1, 4, 1), "y": (1, 1, 2, 1)})
    fused = run_onnxruntime(lowered, {"x": x})[0].ravel().tolist()
    plain = run_onnxruntime(lowered, {"x": x}, optimize=False)[0].ravel().tolist()
    # last window: rows 2, 3 -> real (0.05 * (-1 + -62)) / 2 = -1.575 -> -39.375 - 2 -> -41; over 3: -28
    assert ours == plain == [47, -41] and fused == [47, -28]


def _fused_softmax_overflow(case: Case) -> bool:
    """onnxruntime's fused QLinearSoftmax wraps around instead of saturating when a probability exceeds
    the output range by enough: int8, zero point 0, a probability of 1 with y_scale 1/297 comes out as
    -128 (1/296 still gives 127). Compared on the fused path only when no output can saturate."""
    if case.op != "Softmax":
        return False
    from onnx_qtypes import quantized_tensors

    out = quantized_tensors(case.model)["y"]
    return 1 / out.scale[0] + out.zero_point[0] > out.storage_max


def test_fused_softmax_overflow_is_real():
    from onnx_qtypes import QType
    from reference_models import T, typed_model

    x = np.array([[100, -100]], np.int8)  # softmax ~ [1, 0]
    outputs = {}
    for inverse in (296, 297):
        model = typed_model("Softmax", [T("x", (1, 2), QType("int8", 0.1, 0))],
                            [T("y", (1, 2), QType("int8", float(np.float32(1 / inverse)), 0))], axis=1)
        lowered = lower_to_qdq(model, {"x": (1, 2), "y": (1, 2)})
        outputs[inverse] = (ReferenceEvaluator(model).run(None, {"x": x})[0][0, 0],
                            run_onnxruntime(lowered, {"x": x})[0][0, 0],
                            run_onnxruntime(lowered, {"x": x}, optimize=False)[0][0, 0])
    assert outputs[296] == (127, 127, 127)
    assert outputs[297] == (127, -128, 127)  # ours, fused QLinearSoftmax (wraps), plain float path


def _fused_gemm_bias_unchecked(case: Case) -> bool:
    """onnxruntime's DQ -> Gemm -> Q fusion into QGemm reads C as int32 with scale s_a * s_b and zero
    point 0 without checking C's own DequantizeLinear; any other C is silently misread."""
    if case.op != "Gemm" or len(case.model.graph.node[0].input) < 3:
        return False
    from onnx_qtypes import quantized_tensors

    qtypes = quantized_tensors(case.model)
    a, b, c = qtypes["a"], qtypes["b"], qtypes["c"]
    expected = np.float32(a.scale[0]) * np.asarray(b.scale, np.float32)
    given, expected = np.broadcast_arrays(np.asarray(c.scale, np.float32), expected)
    return c.storage != "int32" or any(c.zero_point) or not np.array_equal(given, expected)


def test_fused_gemm_misreads_a_bias_with_other_parameters():
    from onnx_qtypes import QType
    from reference_models import T, typed_model

    rng = np.random.default_rng(0)
    a_t, b_t, y_t = QType("uint8", 0.05, 10), QType("uint8", 0.02, 7), QType("uint8", 0.5, 100)
    b = rng.integers(0, 256, (3, 2)).astype(np.uint8)
    a = rng.integers(0, 256, (2, 3)).astype(np.uint8)
    c = np.array([[100, -200], [300, 400]], np.int32)
    results = {}
    for label, c_t in (("matching", QType("int32", 0.001, 0)), ("zero point 5000", QType("int32", 0.001, 5000))):
        model = typed_model("Gemm", [T("a", (2, 3), a_t), T("b", (3, 2), b_t, value=b), T("c", (2, 2), c_t, value=c)],
                            [T("y", (2, 2), y_t)])
        lowered = lower_to_qdq(model, {"a": (2, 3), "b": (3, 2), "c": (2, 2), "y": (2, 2)})
        results[label] = (ReferenceEvaluator(model).run(None, {"a": a})[0].tolist(),
                          run_onnxruntime(lowered, {"a": a})[0].tolist(),
                          run_onnxruntime(lowered, {"a": a}, optimize=False)[0].tolist())
    ours, fused, plain = results["matching"]
    assert ours == fused == plain
    ours_zp, fused_zp, plain_zp = results["zero point 5000"]
    assert ours_zp == plain_zp != ours  # the zero point shifts C by -5 real: -10 output steps
    assert fused_zp == fused  # the fused QGemm ignored C's zero point


def test_onnxruntime_int32_dequantize_wraps_around():
    """Why the cases keep int32 zero points small: onnxruntime subtracts the zero point in int32."""
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"])], "dq",
        [helper.make_tensor_value_info("x", TensorProto.INT32, [2])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.array(1.0, np.float32), "s"), numpy_helper.from_array(np.array(2**31 - 1, np.int32), "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    x = np.array([-3, 5], np.int32)
    runtime = run_onnxruntime(model, {"x": x})[0]
    assert runtime[0] > 0  # -3 - (2**31 - 1) wrapped around to +2**31 - 2
    from onnx_qtypes import QType
    from onnx_qtypes.reference_ops import dequantize

    assert dequantize(x, QType("int32", 1.0, 2**31 - 1)).tolist() == [-(2**31) - 2, -(2**31) + 6]


@pytest.mark.parametrize("op", ORT_OPS)
def test_onnxruntime_agrees_within_one_step(op):
    @SETTINGS
    @given(CASES[op])
    def prop(case: Case) -> None:
        check(case)

    prop()
