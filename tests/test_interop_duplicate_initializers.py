"""Initializers repeated under one name, as onnx-neural-compressor 1.0 writes the bias that several Gemms share
(``<bias>_quantized`` / ``_scale`` / ``_zero_point`` once per reader): identical copies are merged and the model
lifts whole and computes what onnxruntime computes; copies that differ are refused, naming the name and places."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes.interop import lift_model, lower
from onnx_qtypes.interop.errors import MalformedQDQError
from onnx_qtypes.reference_ops import ReferenceEvaluator
from tests.corpus import run_onnxruntime


def _t(name, value, dtype):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def _shared_bias_model(second_scale: float) -> onnx.ModelProto:
    """Two QDQ Gemms reading one int32 bias; its three initializers written twice (the second scale given)."""
    rng = np.random.default_rng(5)
    x_scale, w_scale = 0.02, 0.01
    bias = [_t("b_quantized", rng.integers(-300, 300, 3), np.int32), _t("b_scale", x_scale * w_scale, np.float32),
            _t("b_zero_point", 0, np.int32)]
    copies = [_t("b_quantized", numpy_helper.to_array(bias[0]), np.int32), _t("b_scale", second_scale, np.float32),
              _t("b_zero_point", 0, np.int32)]
    inits = [_t("xs", x_scale, np.float32), _t("xz", 0, np.int8),
             _t("w_quantized", rng.integers(-90, 90, (3, 4)), np.int8), _t("ws", w_scale, np.float32),
             _t("wz", 0, np.int8), _t("ys", 0.05, np.float32), _t("yz", 0, np.int8), *bias, *copies]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q_x"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq_x"),
        helper.make_node("DequantizeLinear", ["w_quantized", "ws", "wz"], ["wd"], name="dq_w"),
        helper.make_node("DequantizeLinear", ["b_quantized", "b_scale", "b_zero_point"], ["bd"], name="dq_b"),
        helper.make_node("Gemm", ["xd", "wd", "bd"], ["g1"], name="gemm1", transB=1),
        helper.make_node("Gemm", ["xd", "wd", "bd"], ["g2"], name="gemm2", transB=1, alpha=0.5),
        helper.make_node("Add", ["g1", "g2"], ["s"], name="add"),
        helper.make_node("QuantizeLinear", ["s", "ys", "yz"], ["sq"], name="q_s"),
        helper.make_node("DequantizeLinear", ["sq", "ys", "yz"], ["y"], name="dq_s"),
    ]
    graph = helper.make_graph(nodes, "shared_bias", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def test_identical_copies_are_merged_and_the_model_computes_what_onnxruntime_computes():
    original = _shared_bias_model(0.02 * 0.01)
    result = lift_model(original)
    assert not result.left and not result.warnings
    assert any("'b_scale' was defined 2 times with the same value" in note for note in result.notes)
    names = [t.name for t in result.model.graph.initializer]
    assert len(names) == len(set(names))
    feeds = {"x": np.random.default_rng(1).normal(0, 1, (2, 4)).astype(np.float32)}
    theirs = run_onnxruntime(original, feeds, optimize=False)["y"]
    (ours,) = ReferenceEvaluator(result.model).run(None, feeds)
    assert np.abs(np.asarray(ours) - theirs).max() <= 0.05 * 1.0001  # one step of y at most
    assert np.array_equal(run_onnxruntime(lower(result.model), feeds, optimize=False)["y"], theirs)


def test_copies_that_differ_are_refused_by_name_and_place():
    with pytest.raises(MalformedQDQError, match=r"'b_scale' is defined 2 times with different values "
                                                r"\(/graph/initializer/\d+, /graph/initializer/\d+\)"):
        lift_model(_shared_bias_model(0.5))


def test_check_reports_identical_copies_at_each_name_as_onnx_checker_refuses_the_file():
    """The lift keeps one copy, so the lifted form had nothing wrong: check said clean, where onnx.checker and
    ``run`` refuse the file (the inconsistency scan, seed 228)."""
    from onnx_qtypes import diagnose

    original = _shared_bias_model(0.02 * 0.01)
    with pytest.raises(onnx.checker.ValidationError, match="not unique"):
        onnx.checker.check_model(original)
    found = [d for d in diagnose(original).diagnostics if d.rule == "QT310"]
    names = [t.name for t in original.graph.initializer]
    expected = {(f"/graph/initializer/{len(names) - 1 - names[::-1].index(n)}", n)
                for n in ("b_quantized", "b_scale", "b_zero_point")}
    assert {(d.location.pointer, d.location.tensor) for d in found} == expected
    assert all("is defined 2 times" in d.message and d.is_error for d in found)
