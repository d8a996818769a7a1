"""The reference against onnxruntime's definition path: every single-op case,
lowered to standard ONNX (DequantizeLinear -> op -> QuantizeLinear) and run by
onnxruntime with every graph optimization disabled (ORT_DISABLE_ALL: each node
as written, no fused QLinear* / QGemm kernels) on the same storage integers,
agrees with the definition within one storage step.

What onnxruntime's optimized (fused) kernels compute is not asserted here: it
is a vendor result, measured per version and recorded as data by
conformance_tests/vendor_results/record_onnxruntime.py (the reproductions
below are the ones recorded there, checked here on the definition path only)."""

from __future__ import annotations

import os

import numpy as np

import pytest
from hypothesis import HealthCheck, assume, given, settings
from reference_cases import CASES, Case
from reference_models import lower_to_qdq, run_onnxruntime, steps_apart

from onnx_qtypes.reference_ops import ReferenceEvaluator

pytest.importorskip("onnxruntime")

SETTINGS = settings(max_examples=int(os.environ.get("QT_EXAMPLES", 20)), deadline=None,
                    suppress_health_check=list(HealthCheck), database=None)
ORT_OPS = sorted(op for op in CASES if op not in ("DequantizeLinear",))


def check(case: Case) -> None:
    assume(case.ort)
    definitional = ReferenceEvaluator(case.model).run(None, case.feeds)
    lowered = lower_to_qdq(case.model, case.shapes)
    runtime = run_onnxruntime(lowered, case.feeds, optimize=False)
    for ours, theirs in zip(definitional, runtime):
        assert ours.shape == theirs.shape
        assert steps_apart(ours, theirs) <= 1


def test_average_pool_ceil_mode_edge_window_matches_the_definition_path():
    """kernel 3, stride 2, ceil_mode 1, count_include_pad 1 on 4 rows: the last window holds rows 2, 3 and is
    divided by 2 (the rows of the input and its pads), as onnxruntime's float AveragePool and onnx.reference do.
    (Recorded vendor deviation: average-pool-ceil-mode-edge-window.)"""
    from onnx_qtypes import QType
    from reference_models import T, typed_model

    x = np.array([89, 35, 2, -59], np.int8).reshape(1, 1, 4, 1)
    model = typed_model("AveragePool", [T("x", (1, 1, 4, 1), QType("int8", 0.05, 3))], [T("y", (1, 1, 2, 1), QType("int8", 0.04, -2))],
                        kernel_shape=[3, 1], strides=[2, 1], ceil_mode=1, count_include_pad=1)
    ours = ReferenceEvaluator(model).run(None, {"x": x})[0].ravel().tolist()
    lowered = lower_to_qdq(model, {"x": (1, 1, 4, 1), "y": (1, 1, 2, 1)})
    plain = run_onnxruntime(lowered, {"x": x}, optimize=False)[0].ravel().tolist()
    # last window: rows 2, 3 -> real (0.05 * (-1 + -62)) / 2 = -1.575 -> -39.375 - 2 -> -41
    assert ours == plain == [47, -41]


def test_softmax_saturates_like_the_definition_path():
    """A probability of 1 above the output range saturates to 127 (y_scale 1/297, zero point 0).
    (Recorded vendor deviation: softmax-saturation.)"""
    from onnx_qtypes import QType
    from reference_models import T, typed_model

    x = np.array([[100, -100]], np.int8)  # softmax ~ [1, 0]
    for inverse in (296, 297):
        model = typed_model("Softmax", [T("x", (1, 2), QType("int8", 0.1, 0))],
                            [T("y", (1, 2), QType("int8", float(np.float32(1 / inverse)), 0))], axis=1)
        lowered = lower_to_qdq(model, {"x": (1, 2), "y": (1, 2)})
        ours = ReferenceEvaluator(model).run(None, {"x": x})[0][0, 0]
        plain = run_onnxruntime(lowered, {"x": x}, optimize=False)[0][0, 0]
        assert ours == plain == 127, inverse


def test_gemm_bias_zero_point_counts_like_the_definition_path():
    """C's own zero point shifts the result (zero point 5000 at scale 0.001: C moves by -5 real, -10 output
    steps). (Recorded vendor deviation: gemm-bias-zero-point.)"""
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
        results[label] = (ReferenceEvaluator(model).run(None, {"a": a})[0].astype(int),
                          run_onnxruntime(lowered, {"a": a}, optimize=False)[0].astype(int))
    ours, plain = results["matching"]
    ours_zp, plain_zp = results["zero point 5000"]
    assert ours.tolist() == plain.tolist()
    assert ours_zp.tolist() == plain_zp.tolist()
    assert np.array_equal(np.clip(ours - 10, 0, 255), ours_zp)


def test_int32_dequantize_does_not_wrap_around():
    """Why the cases keep int32 zero points small: our dequantize subtracts the zero point exactly, where
    onnxruntime's DequantizeLinear subtracts in int32 and wraps (recorded vendor deviation:
    int32-dequantize-wraps)."""
    from onnx_qtypes import QType
    from onnx_qtypes.reference_ops import dequantize

    x = np.array([-3, 5], np.int32)
    assert dequantize(x, QType("int32", 1.0, 2**31 - 1)).tolist() == [-(2**31) - 2, -(2**31) + 6]


@pytest.mark.parametrize("op", ORT_OPS)
def test_onnxruntime_agrees_within_one_step(op):
    @SETTINGS
    @given(CASES[op])
    def prop(case: Case) -> None:
        check(case)

    prop()
