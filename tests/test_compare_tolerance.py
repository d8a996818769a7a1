"""compare's per-tensor tolerance (decisions A.2-A.4) and its distance in storage steps, on hand-made nodes."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
from onnx import helper

from onnx_qtypes import QType
from onnx_qtypes.compare.steps import storage_steps
from onnx_qtypes.compare.tolerance import UNBOUNDED, NodeFacts, allowance


def _facts(qtypes, reals=None, constants=(), deviation=None):
    return NodeFacts(qtypes, reals or {}, frozenset(constants), deviation or {})


def test_quantize_linear_allows_one_step_on_near_ties_only():
    """A.3's definition, evaluated exactly with fractions: 0 < |x/s - (k + 1/2)| <= |x/s| * 2^-24 (float32)."""
    s = np.float32(0.1)
    x = np.array([np.float32(k * s) for k in (3.5, 7.5, 3.2, -2.5, 11.5, 0.25)] + [np.float32(0.05)], np.float32)
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"])
    near = allowance(node, "y", _facts({"y": QType("int8", float(s), 0)}, {"x": x.astype(np.float64)},
                                       deviation={"x": 0.0, "s": 0.0})).near_ties
    expected = []
    for v in x:
        q = Fraction(float(v)) / Fraction(float(s))
        d = abs(q - (q.__floor__() + Fraction(1, 2)))
        expected.append(0 < d <= abs(q) * Fraction(1, 2 ** 24))
    assert any(expected) and not all(expected)
    assert near is not None and near.tolist() == expected


def test_an_operator_with_agreeing_inputs_has_its_class_tolerance():
    int8 = QType("int8", 0.1, 0)
    relu = helper.make_node("Relu", ["x"], ["y"])
    conv = helper.make_node("Conv", ["x", "w"], ["y"])
    agreed = {"x": 0.0, "w": 0.0}
    assert allowance(relu, "y", _facts({"x": int8, "y": int8}, deviation=agreed)).steps == 0
    assert allowance(relu, "y", _facts({"x": int8, "y": QType("int8", 0.2, 0)}, deviation=agreed)).steps == 1
    assert allowance(conv, "y", _facts({"x": int8, "y": int8}, deviation=agreed)).steps == 1


def test_conv_chain_bound_from_its_weights():
    """t_y = 1 + floor(L t_x s_x / s_y) + 1 with L the largest L1 norm of an output channel's weights:
    channels [1, -2] and [0.5, 0.5] give L = 3; t_x = 2, s_x = 0.1, s_y = 0.25: 1 + floor(2.4) + 1 = 4."""
    w = np.array([1.0, -2.0, 0.5, 0.5]).reshape(2, 2, 1, 1)
    conv = helper.make_node("Conv", ["x", "w"], ["y"])
    facts = _facts({"x": QType("int8", 0.1, 0), "y": QType("int8", 0.25, 0)}, {"w": w}, ["w"], {"x": 2.0, "w": 0.0})
    assert allowance(conv, "y", facts).steps == 4


def test_copies_pass_the_deviation_on_and_requantizing_adds_a_step():
    int8 = QType("int8", 0.1, 0)
    relu = helper.make_node("Relu", ["x"], ["y"])
    assert allowance(relu, "y", _facts({"x": int8, "y": int8}, deviation={"x": 3.0})).steps == 3
    # L = 1, t_x = 3, s_x / s_y = 0.5: 1 + floor(1.5) + 1 = 3
    assert allowance(relu, "y", _facts({"x": int8, "y": QType("int8", 0.2, 0)}, deviation={"x": 3.0})).steps == 3


def test_no_bound_where_a4_gives_none():
    int8 = QType("int8", 0.1, 0)
    matmul = helper.make_node("MatMul", ["a", "b"], ["y"])  # two activations: A.4 has no L for it
    facts = _facts({"a": int8, "b": int8, "y": int8}, deviation={"a": 1.0, "b": 0.0})
    assert allowance(matmul, "y", facts).steps == UNBOUNDED
    unknown = _facts({"a": int8, "b": int8, "y": int8}, deviation={"a": None, "b": 0.0})
    assert allowance(helper.make_node("Add", ["a", "b"], ["y"]), "y", unknown).steps == UNBOUNDED


def test_storage_steps():
    int8 = QType("int8", 1.0, 0)
    assert storage_steps(np.array([-128, 5], np.int8), np.array([127, 3], np.int8), int8).tolist() == [255, 2]
    f8 = ml_dtypes.float8_e4m3fn
    qt = QType("float8e4m3fn", 1.0, 0)
    ref = np.array([0.0, -0.0, 1.0, np.nan, 1.0], f8)
    got = np.array([-0.0, 0.001953125, 1.125, np.nan, np.nan], f8)
    # +0 / -0 one position; -0 to the smallest positive subnormal two; 1 to 1.125 one; NaN / NaN none; NaN / 1 never
    assert storage_steps(ref, got, qt).tolist() == [1, 2, 1, 0, np.inf]
