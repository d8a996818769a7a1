"""Fixed-point export: the constants are the ones the integer kernels use, so
outputs can be reproduced with integer arithmetic alone."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from onnx import TensorProto, helper
from reference_models import T, typed_model

from onnx_qtypes import QType, get_qtype, set_qtype
from onnx_qtypes.reference_ops import ReferenceEvaluator, fixed_point_parameters


def test_conv_multipliers_are_the_scale_ratios(example_model):
    params = fixed_point_parameters(example_model)
    conv = params["conv"]
    assert conv["kernel"] == "integer" and conv["op_type"] == "Conv"
    x, w, b, y = (get_qtype(example_model, n) for n in ("x_q", "w", "b", "conv_q"))
    want = [x.scale[0] * s / y.scale[0] for s in w.scale]
    assert conv["multipliers"]["accumulator"]["real"] == want
    assert conv["multipliers"]["bias"]["real"] == [s / y.scale[0] for s in b.scale]
    for real, m, s in zip(*(conv["multipliers"]["accumulator"][k] for k in ("real", "multiplier", "shift"))):
        assert (1 << 30) <= m < (1 << 31)
        assert abs(Fraction(m, 2**s) - Fraction(real)) <= Fraction(1, 2 ** (s + 1))
    assert conv["zero_points"]["conv_q"] == [-10] and conv["storage_ranges"]["w"] == [-127, 127]
    assert params["relu"]["multipliers"] == {} and params["pool"]["kernel"] == "integer"


def test_integer_arithmetic_alone_reproduces_the_integer_kernel():
    rng = np.random.default_rng(3)
    a_t, b_t, y_t = QType("uint8", 0.0213, 131), QType("int8", [0.011, 0.0071, 0.02], [0, 0, 0], axis=1), QType("int8", 0.093, 7)
    b = rng.integers(-127, 128, (5, 3)).astype(np.int8)
    model = typed_model("MatMul", [T("a", (4, 5), a_t), T("b", (5, 3), b_t, value=b)], [T("y", (4, 3), y_t)])
    a = rng.integers(0, 256, (4, 5)).astype(np.uint8)
    expected = ReferenceEvaluator(model, kernels="integer").run(None, {"a": a})[0]
    acc = (a.astype(np.int64) - 131) @ b.astype(np.int64)
    entry = fixed_point_parameters(model)["node"]["multipliers"]["accumulator"]
    out = np.empty_like(acc)
    for (i, j), value in np.ndenumerate(acc):
        exact = Fraction(int(value) * entry["multiplier"][j], 2 ** entry["shift"][j])
        floor = exact.numerator // exact.denominator
        rest = exact - floor
        rounded = floor + (1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and floor % 2) else 0)
        out[i, j] = min(max(rounded + 7, -128), 127)
    np.testing.assert_array_equal(out, expected)


def test_lookup_tables_are_exported():
    x_t, y_t = QType("int8", 0.05, 0), QType("uint8", 1 / 256, 0)
    model = typed_model("Sigmoid", [T("x", (3,), x_t)], [T("y", (3,), y_t)])
    table = fixed_point_parameters(model)["node"]["tables"]["table"]
    q = np.arange(-128, 128)
    want = np.clip(np.rint(1 / (1 + np.exp(-0.05 * q)) * 256), 0, 255)
    assert len(table) == 256 and table == want.astype(int).tolist()


def test_clip_bounds_are_integer_constants():
    t = QType("int8", 0.1, 0)
    model = typed_model("Clip", [T("x", (2,), t), T("lo", (), value=np.float32(-0.25)), T("hi", (), value=np.float32(0.6))],
                        [T("y", (2,), t)])
    entry = fixed_point_parameters(model)["node"]
    assert entry["constants"] == {"low": [-2, -2], "high": [6, 6]} and entry["multipliers"] == {}


def test_nodes_without_an_integer_kernel_say_why():
    model = typed_model("Neg", [T("x", (2,), QType("int8", 0.1, 0))], [T("y", (2,), QType("int8", 0.1, 0))])
    assert fixed_point_parameters(model)["node"]["kernel"] == "definitional: no integer kernel for this operator"
    dynamic = typed_model("Relu", [T("x", (2,), QType("int8", 0.1, 0))], [T("y", (2,), QType("uint8"))])
    assert "dynamic" in fixed_point_parameters(dynamic)["node"]["kernel"]


def test_subgraph_nodes_are_listed_under_their_parent():
    branch = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="inner")], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.INT8, [2])])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"], name="copy")], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.INT8, [2])])
    graph = helper.make_graph([helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=other, name="if")], "g",
                              [helper.make_tensor_value_info("c", TensorProto.BOOL, []), helper.make_tensor_value_info("x", TensorProto.INT8, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    for name, scale in (("x", 0.1), ("t", 0.2), ("e", 0.2), ("y", 0.2)):
        set_qtype(model, name, QType("int8", scale, 0))
    params = fixed_point_parameters(model)
    assert params["if/then_branch/inner"]["multipliers"]["rescale"]["real"] == [0.5]
    assert params["if"]["kernel"].startswith("definitional")
