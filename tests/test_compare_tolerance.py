"""The per-node rule compare judges through (``node_bounds`` and ``float_limit`` in conformance_tests/tolerance.py,
the suite's one tolerance function) and compare's distance in storage steps, on hand-made nodes whose bounds are
worked out by hand."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from onnx import helper, numpy_helper

from onnx_qtypes import QType, set_qtype
from onnx_qtypes.compare.steps import storage_steps
from onnx_qtypes.conformance.tolerance import UNBOUNDED, Bound, ModelView, float_limit, node_bounds

S = Fraction(1, 8)  # scales are binary fractions: the bounds below are exact


def _view(node, types, constants=None, shapes=None):
    """A one-node typed model: ``types`` the quantized tensors, ``constants`` initializers (storage when typed)."""
    constants = constants or {}
    shapes = shapes or {}
    names = [n for n in (*node.input, *node.output) if n and n not in constants]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 0 if n in types else 1, shapes.get(n))
                                            for n in node.input if n and n not in constants],
                              [helper.make_tensor_value_info(n, 0 if n in types else 1, shapes.get(n))
                               for n in node.output],
                              [numpy_helper.from_array(v, n) for n, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    for n, qt in types.items():
        if n in names or n in constants:
            set_qtype(model, n, qt)
    return ModelView(model)


def _steps(answer):
    return answer.steps


def test_quantize_linear_allows_one_step_on_near_ties_only():
    """A.3's definition, evaluated exactly with fractions: 0 < |x/s - (k + 1/2)| <= |x/s| * 2^-24 (float32)."""
    s = np.float32(0.1)
    x = np.array([np.float32(k * s) for k in (3.5, 7.5, 3.2, -2.5, 11.5, 0.25)] + [np.float32(0.05)], np.float32)
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"])
    view = _view(node, {"y": QType("int8", float(s), 0)}, {"s": np.array(s)})
    answer = node_bounds(view, node, {}, {"x": x.astype(np.float64)})["y"]
    expected = []
    for v in x:
        q = Fraction(float(v)) / Fraction(float(s))
        d = abs(q - (q.__floor__() + Fraction(1, 2)))
        expected.append(0 < d <= abs(q) * Fraction(1, 2 ** 24))
    assert any(expected) and not all(expected)
    assert answer.steps == 0 and answer.near is not None and answer.near.tolist() == expected
    assert answer.near_count == sum(expected) and "near-ties" in answer.reason


def test_an_operator_with_agreeing_inputs_has_its_class_tolerance():
    int8 = QType("int8", 0.125, 0)
    relu = helper.make_node("Relu", ["x"], ["y"])
    assert node_bounds(_view(relu, {"x": int8, "y": int8}), relu, {})["y"].steps == 0
    assert node_bounds(_view(relu, {"x": int8, "y": QType("int8", 0.25, 0)}), relu, {})["y"].steps == 1
    conv = helper.make_node("Conv", ["x", "w"], ["y"])
    w = np.ones((1, 1, 1, 1), np.int8)
    view = _view(conv, {"x": int8, "y": int8, "w": QType("int8", 0.5, 0, schema="symmetric")}, {"w": w})
    assert node_bounds(view, conv, {})["y"].steps == 1


def test_conv_chain_bound_from_its_weights():
    """t_y = 1 + floor(L R_x / s_y) + 1 with L the largest L1 norm of an output channel's weights:
    channels [1, -2] and [0.5, 0.5] (w_scale 0.5) give L = 3; R_x = 2 steps * 0.125, s_y = 0.25: 1 + floor(3) + 1."""
    w = np.array([2, -4, 1, 1], np.int8).reshape(2, 2, 1, 1)
    conv = helper.make_node("Conv", ["x", "w"], ["y"])
    view = _view(conv, {"x": QType("int8", 0.125, 0), "y": QType("int8", 0.25, 0),
                        "w": QType("int8", 0.5, 0, schema="symmetric")}, {"w": w})
    assert node_bounds(view, conv, {"x": Bound(2, 2 * S)})["y"].steps == 5


def test_copies_pass_the_deviation_on_and_requantizing_adds_a_step():
    int8 = QType("int8", 0.125, 0)
    relu = helper.make_node("Relu", ["x"], ["y"])
    assert node_bounds(_view(relu, {"x": int8, "y": int8}), relu, {"x": Bound(3, 3 * S)})["y"].steps == 3
    # L = 1, R_x = 3 * 0.125, s_y = 0.25: 1 + floor(1.5) + 1 = 3
    view = _view(relu, {"x": int8, "y": QType("int8", 0.25, 0)})
    assert node_bounds(view, relu, {"x": Bound(3, 3 * S)})["y"].steps == 3


def test_matmul_of_two_activations_is_bounded_by_the_other_operands_magnitude():
    """y = a b with both operands deviating: each enters with the other's largest column / row L1 norm, widened by
    that operand's own deviation (K of them per output). a = [[1, 2]], b = [[1], [-3]] (reals), R_a = 1/8,
    R_b = 1/4: L_a = (1 + 3) + 2 * 1/4 = 4.5, L_b = (1 + 2) + 2 * 1/8 = 3.25;
    t_y = 1 + floor((4.5/8 + 3.25/4) / (1/4)) + 1 = 1 + floor(5.5) + 1 = 7."""
    a, b, y = QType("int8", 0.125, 0), QType("int8", 0.25, 0), QType("int8", 0.25, 0)
    mm = helper.make_node("MatMul", ["a", "b"], ["y"])
    view = _view(mm, {"a": a, "b": b, "y": y}, shapes={"a": [1, 2], "b": [2, 1], "y": [1, 1]})
    values = {"a": np.array([[1.0, 2.0]]), "b": np.array([[1.0], [-3.0]])}
    carried = {"a": Bound(1, S), "b": Bound(1, 2 * S)}
    answer = node_bounds(view, mm, carried, values)["y"]
    assert answer.steps == 7 and "semantics.md#chains" in answer.reason
    # without the values, each operand's magnitude is what its type represents: 128 * 0.25 and 128 * 0.125, K = 2
    typed_only = node_bounds(view, mm, carried)["y"]
    assert typed_only.steps == 1 + math.floor((2 * 32 * S + 2 * 16 * 2 * S) / Fraction(1, 4)) + 1


def test_gemm_of_two_activations_counts_k_products_per_output():
    """Gemm(a [3, 16], b [4, 16], transB=1, alpha=1/2): an output sums K = 16 products (not N = 4). Only a deviates
    (R_a = 1/8) and no values are given, so L_a = alpha * K * (the largest real b's type represents, 128 / 16):
    t_y = 1 + floor(1/2 * 16 * 8 * 1/8 / 2) + 1 = 6 (counting N products instead would give 3)."""
    a, b, y = QType("int8", 0.125, 0), QType("int8", 0.0625, 0, schema="symmetric"), QType("int8", 2.0, 0)
    gemm = helper.make_node("Gemm", ["a", "b"], ["y"], transB=1, alpha=0.5)
    view = _view(gemm, {"a": a, "b": b, "y": y}, shapes={"a": [3, 16], "b": [4, 16], "y": [3, 4]})
    want = 1 + math.floor(Fraction(1, 2) * 16 * Fraction(128, 16) * S / 2) + 1
    assert node_bounds(view, gemm, {"a": Bound(1, S)})["y"].steps == want == 6


def test_conv_transpose_bound_is_the_l1_norm_of_each_output_channels_weights():
    """ConvTranspose weights are (C, M/group, k): with two groups, output channel j of group g reads W[c, j] for the
    group's input channels c only. W (reals, scale 1/2) = [[1, 2]], [[3, 0]] | [[-1, 0]], [[4, 1]] per (c, j) gives
    per output channel: group 0: |1|+|3| = 4, |2|+|0| = 2; group 1: |-1|+|4| = 5, |0|+|1| = 1 -> L = 5."""
    w = np.array([[1, 2], [3, 0], [-1, 0], [4, 1]], np.int8).reshape(4, 2, 1, 1) * 2
    ct = helper.make_node("ConvTranspose", ["x", "w"], ["y"], group=2)
    view = _view(ct, {"x": QType("int8", 0.125, 0), "y": QType("int8", 0.5, 0),
                      "w": QType("int8", 0.5, 0, schema="symmetric")}, {"w": w.astype(np.int8)})
    # t_y = 1 + floor(5 * 3/8 / (1/2)) + 1 = 1 + 3 + 1
    assert node_bounds(view, ct, {"x": Bound(3, 3 * S)})["y"].steps == 5


def test_layer_normalization_is_bounded_from_the_definitions_values_and_only_from_them():
    """x = [1, -1] (one group, N = 2, epsilon 0): mean 0, sigma 1, z = [1, -1]; an input within delta = 1/8 moves z
    by delta (2 + max|z|) / (sigma - delta) = (1/8) 3 / (7/8) = 3/7, times max|gamma| = 2."""
    ln = helper.make_node("LayerNormalization", ["x", "g"], ["y"], epsilon=0.0)
    view = _view(ln, {"x": QType("int8", 0.125, 0), "y": QType("int8", 0.125, 0)},
                 {"g": np.array([2.0, -1.0], np.float32)}, shapes={"x": [1, 2], "y": [1, 2]})
    answer = node_bounds(view, ln, {"x": Bound(1, S)}, {"x": np.array([[1.0, -1.0]])})["y"]
    assert answer.steps == 1 + math.floor(Fraction(6, 7) / S) + 1
    unbounded = node_bounds(view, ln, {"x": Bound(1, S)})["y"]
    assert unbounded.steps == UNBOUNDED and "definition's values" in unbounded.reason


@pytest.mark.parametrize("op, attrs, deviated", [("Resize", {"mode": "cubic"}, "x"), ("Exp", {}, "x")])
def test_no_bound_where_the_rule_gives_none(op, attrs, deviated):
    int8 = QType("int8", 0.125, 0)
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    answer = node_bounds(_view(node, {"x": int8, "y": int8}), node, {deviated: Bound(1, S)})["y"]
    assert answer.steps == UNBOUNDED and answer.real is None
    add = helper.make_node("Add", ["a", "b"], ["y"])
    unknown = node_bounds(_view(add, {"a": int8, "b": int8, "y": int8}), add, {"a": Bound(UNBOUNDED, None)})["y"]
    assert unknown.steps == UNBOUNDED and "no known bound" in unknown.reason


def test_a_dequantized_value_steps_away_rounds_at_its_own_magnitude():
    """NNCF's PP-OCR cls: a QuantizeLinear 4 steps off (within its bound), then DequantizeLinear: the definition
    has s, onnxruntime 5 · s rounded to float32, 4 · s plus half a unit in the last place of 5 · s away. The rounding
    allowance at the definition's magnitude alone called that element beyond; the data and scale are the file's."""
    s = np.float32(0.01556777)
    dq = helper.make_node("DequantizeLinear", ["x"], ["y"])
    answer = node_bounds(_view(dq, {"x": QType("int8", float(s), 0)}), dq, {"x": Bound(4, 4 * Fraction(float(s)))})["y"]
    expected, got = np.array([s], np.float32), np.array([np.float32(5) * s], np.float32)
    distance = abs(float(got[0]) - float(expected[0]))
    assert distance > float(4 * Fraction(float(s))) + 2.0 ** -23 * float(s)  # beyond the old allowance
    assert distance <= float_limit(expected, answer)[0]
    assert abs(float(np.float32(6) * s) - float(s)) > float_limit(expected, answer)[0]  # 5 steps is still beyond


def test_a_float_value_may_differ_by_the_rule_plus_its_expressed_types_rounding():
    """DequantizeLinear (exact): the input's R plus one unit in the last place per element, at the larger magnitude
    the element may have (|y| + R); a float op computing a new value: also 32 units in the last place of the
    tensor's largest magnitude."""
    dq = helper.make_node("DequantizeLinear", ["x"], ["y"])
    view = _view(dq, {"x": QType("int8", 0.125, 0)})
    answer = node_bounds(view, dq, {"x": Bound(2, 2 * S)})["y"]
    assert answer.real == 2 * S and not answer.computes
    y = np.array([1.0, -4.0, 0.0], np.float32)
    ulp, tiny = 2.0 ** -23, float(np.finfo(np.float32).smallest_subnormal)
    assert float_limit(y, answer).tolist() == [0.25 + 1.25 * ulp + tiny, 0.25 + 4.25 * ulp + tiny,
                                               0.25 + 0.25 * ulp + tiny]
    softmax = helper.make_node("Softmax", ["x"], ["y"])
    computed = node_bounds(_view(softmax, {"x": QType("int8", 0.125, 0)}), softmax, {})["y"]
    assert computed.computes and computed.real == 0
    assert float_limit(y, computed)[2] == 32 * ulp * 4 + tiny  # (R = 0: no other magnitude)
    unbounded = node_bounds(_view(softmax, {"x": QType("int8", 0.125, 0)}), softmax, {"x": Bound(UNBOUNDED, None)})
    assert np.isinf(float_limit(y, unbounded["y"])).all()  # no bound is no limit, never the rounding alone


def test_storage_steps():
    int8 = QType("int8", 1.0, 0)
    assert storage_steps(np.array([-128, 5], np.int8), np.array([127, 3], np.int8), int8).tolist() == [255, 2]
    f8 = ml_dtypes.float8_e4m3fn
    qt = QType("float8e4m3fn", 1.0, 0)
    ref = np.array([0.0, -0.0, 1.0, np.nan, 1.0], f8)
    got = np.array([-0.0, 0.001953125, 1.125, np.nan, np.nan], f8)
    # +0 / -0 one position; -0 to the smallest positive subnormal two; 1 to 1.125 one; NaN / NaN none; NaN / 1 never
    assert storage_steps(ref, got, qt).tolist() == [1, 2, 1, 0, np.inf]
