"""ReferenceEvaluator checks its feeds against the declared inputs before
anything runs (name, shape with symbolic dimensions, element kind, values;
exact conversion only), and refuses models that assign a name twice."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from reference_models import T, typed_model

from onnx_qtypes import QType, set_qtype
from onnx_qtypes.reference_ops import EvaluationError, ReferenceEvaluator
from onnx_qtypes.reference_ops.errors import FeedError
from onnx_qtypes.reference_ops.feeds import check_feeds, check_headers, input_specs
from onnx_qtypes.reference_ops.single_assignment import single_assignment_problems

OPSET = [helper.make_opsetid("", 21)]
I8 = QType("int8", 0.5, 0)


def _model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    return helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, list(inits)), opset_imports=OPSET, ir_version=10)


def _vi(name: str, elem: int = TensorProto.FLOAT, shape=None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def _relu_int8(shape=(2, 3)) -> onnx.ModelProto:
    return typed_model("Relu", [T("a", shape, I8)], [T("b", shape, I8)])


def _add_symbolic() -> onnx.ModelProto:
    """b = a + c, float inputs of shape [N, 3]; b quantized."""
    model = _model([helper.make_node("Add", ["a", "c"], ["b"])], [_vi("a", shape=["N", 3]), _vi("c", shape=["N", 3])],
                   [_vi("b", TensorProto.INT8, ["N", 3])])
    set_qtype(model, "b", QType("int8", 0.25, 0))
    return model


# --- shapes ----------------------------------------------------------------------------------------


def test_a_quantized_feed_of_the_wrong_shape_is_refused_naming_expected_and_found():
    with pytest.raises(FeedError) as err:
        ReferenceEvaluator(_relu_int8()).run(None, {"a": np.zeros((3, 3), np.int8)})
    assert str(err.value) == "input 'a': expected int8 storage of int8:float32<0.5:0>, shape [2, 3], got shape [3, 3]"


def test_a_misshaped_float_feed_is_refused_before_onnx_reference_runs(example_model):
    with pytest.raises(FeedError, match=r"^input 'x': expected float32, shape \[1, 3, 8, 8\], got shape \[1, 2, 8, 8\]$"):
        ReferenceEvaluator(example_model).run(None, {"x": np.zeros((1, 2, 8, 8), np.float32)})


def test_rank_mismatch_is_refused():
    with pytest.raises(FeedError, match=r"got shape \[6\]"):
        ReferenceEvaluator(_relu_int8()).run(None, {"a": np.zeros(6, np.int8)})


def test_symbolic_dimensions_take_any_size_but_one_size_across_inputs():
    ev = ReferenceEvaluator(_add_symbolic())
    for n in (1, 4):
        out = ev.run(None, {"a": np.ones((n, 3), np.float32), "c": np.ones((n, 3), np.float32)})[0]
        assert out.shape == (n, 3) and (out == 8).all()  # 2 / 0.25
    with pytest.raises(FeedError, match=r"^input 'c': expected float32, shape \[N, 3\], got shape \[4, 3\]: "
                                        r"dimension 0 is 'N', which is 2 in input 'a'$"):
        ev.run(None, {"a": np.ones((2, 3), np.float32), "c": np.ones((4, 3), np.float32)})


def test_unknown_dimensions_and_undeclared_shapes_take_anything():
    model = _model([helper.make_node("Relu", ["a"], ["b"])], [_vi("a", TensorProto.INT8, [None, 2])], [_vi("b", TensorProto.INT8)])
    set_qtype(model, "a", I8)
    set_qtype(model, "b", I8)
    assert ReferenceEvaluator(model).run(None, {"a": np.array([[-1, 1]] * 5, np.int8)})[0].tolist() == [[0, 1]] * 5
    no_shape = _model([helper.make_node("Relu", ["a"], ["b"])], [_vi("a")], [_vi("b")])
    assert ReferenceEvaluator(no_shape).run(None, {"a": np.ones((2, 2, 2), np.float32)})[0].shape == (2, 2, 2)


# --- names -------------------------------------------------------------------------------------------


def test_a_feed_that_is_not_a_graph_input_is_refused():
    with pytest.raises(FeedError, match=r"^feed 'z' is not a graph input; the model's inputs are \['a'\]$"):
        ReferenceEvaluator(_relu_int8()).run(None, {"a": np.zeros((2, 3), np.int8), "z": np.zeros(1)})


def test_an_input_with_an_initializer_may_be_fed_or_left_to_its_default():
    model = _model([helper.make_node("Add", ["a", "w"], ["b"])], [_vi("a", shape=[2]), _vi("w", shape=[2])], [_vi("b", shape=[2])],
                   [numpy_helper.from_array(np.array([1, 2], np.float32), "w")])
    ev = ReferenceEvaluator(model)
    assert ev.run(None, {"a": np.zeros(2, np.float32)})[0].tolist() == [1, 2]
    assert ev.run(None, {"a": np.zeros(2, np.float32), "w": np.array([5, 6], np.float32)})[0].tolist() == [5, 6]
    with pytest.raises(FeedError, match=r"input 'w': expected float32, shape \[2\], got shape \[3\]"):
        ev.run(None, {"a": np.zeros(2, np.float32), "w": np.zeros(3, np.float32)})


# --- element kinds and exact conversion ---------------------------------------------------------------


def test_wider_integers_holding_storage_values_are_converted_and_give_the_same_result():
    ev = ReferenceEvaluator(_relu_int8())
    values = np.array([[-128, -1, 0], [1, 5, 127]])
    want = ev.run(None, {"a": values.astype(np.int8)})[0]
    for dtype in (np.int16, np.int32, np.int64, np.uint8):
        fed = np.abs(values).clip(0, 127).astype(dtype) if dtype is np.uint8 else values.astype(dtype)
        got = ev.run(None, {"a": fed})[0]
        assert got.dtype == np.int8
        np.testing.assert_array_equal(got, ev.run(None, {"a": fed.astype(np.int8)})[0])
    assert want.tolist() == [[0, 0, 0], [1, 5, 127]]


def test_wider_integers_outside_the_storage_range_are_refused_naming_the_value_and_range():
    model = typed_model("Relu", [T("a", (3,), QType("int4", 1.0, 0))], [T("b", (3,), QType("int4", 1.0, 0))])
    with pytest.raises(FeedError) as err:
        ReferenceEvaluator(model).run(None, {"a": np.array([0, 7, -9], np.int16)})
    assert str(err.value) == "input 'a': value -9 at index [2] is outside the int4 storage range [-8, 7] of its type int4:float32<1:0>"
    assert "QType." not in str(err.value)


def test_narrowed_storage_ranges_are_enforced():
    qtype = QType("int8", 1.0, 0, storage_min=-127, storage_max=127)
    model = typed_model("Relu", [T("a", (2,), qtype)], [T("b", (2,), qtype)])
    with pytest.raises(FeedError, match=r"value -128 at index \[0\] is outside the int8 storage range \[-127, 127\]"):
        ReferenceEvaluator(model).run(None, {"a": np.array([-128, 0], np.int8)})


def test_float64_values_that_are_float32_exact_are_converted_and_others_refused(example_model):
    ev = ReferenceEvaluator(example_model)
    x32 = np.random.default_rng(3).normal(0, 1, (1, 3, 8, 8)).astype(np.float32)
    for exact in (x32.astype(np.float64), x32.astype(np.float16)):  # every value exact in float32
        want = ev.run(None, {"x": exact.astype(np.float32)})
        got = ev.run(None, {"x": exact})
        for a, b in zip(got, want):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    lossy = x32.astype(np.float64)
    lossy[0, 1, 2, 3] += 1e-12
    with pytest.raises(FeedError) as err:
        ev.run(None, {"x": lossy})
    message = str(err.value)
    assert message.startswith("input 'x': expected float32, shape [1, 3, 8, 8], got float64 values and ")
    assert f"{lossy[0, 1, 2, 3].item()!r} at index [0, 1, 2, 3] is not exactly a float32 value" in message


def test_nan_and_infinity_convert_exactly():
    model = _model([helper.make_node("Relu", ["a"], ["b"])], [_vi("a", shape=[3])], [_vi("b", shape=[3])])
    out = ReferenceEvaluator(model).run(None, {"a": np.array([np.nan, np.inf, -1.0])})[0]
    assert out.dtype == np.float32 and np.isnan(out[0]) and out[1] == np.inf and out[2] == 0


def test_a_float64_value_too_large_for_float32_is_refused():
    model = _model([helper.make_node("Relu", ["a"], ["b"])], [_vi("a", shape=[1])], [_vi("b", shape=[1])])
    with pytest.raises(FeedError, match=r"1e\+300 at index \[0\] is not exactly a float32 value"):
        ReferenceEvaluator(model).run(None, {"a": np.array([1e300])})


@pytest.mark.parametrize(
    ("elem", "fed", "fragment"),
    [
        (TensorProto.FLOAT, np.zeros(2, np.int64), "expected float32, shape [2], got int64 values"),
        (TensorProto.INT8, np.zeros(2, np.float32), "expected int8, shape [2], got float32 values"),
        (TensorProto.INT8, np.array([1, 200], np.int64), "value 200 at index [1] is outside the range [-128, 127] of its type int8"),
        (TensorProto.BOOL, np.zeros(2, np.int8), "expected bool, shape [2], got int8 values"),
    ],
)
def test_plain_inputs_take_their_declared_kind(elem, fed, fragment):
    model = _model([helper.make_node("Identity", ["a"], ["b"])], [_vi("a", elem, [2])], [_vi("b", elem, [2])])
    with pytest.raises(FeedError) as err:
        ReferenceEvaluator(model).run(None, {"a": fed})
    assert fragment in str(err.value)


def test_a_dynamic_input_takes_expressed_values_exactly():
    model = typed_model("Relu", [T("x", (3,), QType("uint8"))], [T("y", (3,), QType("uint8"))])
    ev = ReferenceEvaluator(model)
    a = ev.run(None, {"x": np.array([-1.0, 0.5, 25.5], np.float32)})[0]
    b = ev.run(None, {"x": np.array([-1.0, 0.5, 25.5], np.float32).astype(np.float64)})[0]
    np.testing.assert_array_equal(a, b)
    assert a.qtype == b.qtype
    with pytest.raises(FeedError, match=r"input 'x': expected float32 values for dynamic .*0\.1 at index \[0\] is not exactly"):
        ev.run(None, {"x": np.array([0.1, 0.5, 1.0])})


# --- one check for the CLI and the evaluator --------------------------------------------------------------


def test_headers_alone_are_enough_to_refuse_a_wrong_shape():
    """What `run` uses on .npy headers: no data needed, so a huge array is refused before it is read."""
    specs = input_specs(_relu_int8(), {"a": I8})
    with pytest.raises(FeedError, match=r"^input 'a': expected .*shape \[2, 3\], got shape \[1000000000000\]$"):
        check_headers(specs, {"a": ((10**12,), np.dtype(np.int8))})
    check_headers(specs, {"a": ((2, 3), np.dtype(np.int64))})  # kind and shape fit; values are checked later
    with pytest.raises(FeedError, match="entry 'q' is not a graph input"):
        check_headers(specs, {"q": ((1,), np.dtype(np.int8))}, noun="entry")
    assert check_feeds(specs, {"a": np.ones((2, 3), np.int64)})["a"].dtype == np.int8


# --- single static assignment ------------------------------------------------------------------------------


def _relu_twice() -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["a"], ["b"], name="first"), helper.make_node("Neg", ["a"], ["b"], name="second")]
    return _model(nodes, [_vi("a", shape=[2])], [_vi("b", shape=[2])])


def test_a_tensor_written_by_two_nodes_is_refused():
    with pytest.raises(EvaluationError) as err:
        ReferenceEvaluator(_relu_twice())
    assert str(err.value).startswith("tensor 'b' is written by node 'second' (Neg) and is already the output of node 'first' (Relu)")
    assert "single static assignment" in str(err.value)


def test_duplicate_initializers_and_graph_inputs_are_refused():
    w1 = numpy_helper.from_array(np.array([1, 2], np.float32), "w")
    w2 = numpy_helper.from_array(np.array([3, 4], np.float32), "w")
    inits = _model([helper.make_node("Add", ["a", "w"], ["b"])], [_vi("a", shape=[2])], [_vi("b", shape=[2])], [w1, w2])
    with pytest.raises(EvaluationError, match=r"^initializer 'w' is defined twice; .*single static assignment"):
        ReferenceEvaluator(inits)
    inputs = _model([helper.make_node("Relu", ["a"], ["b"])], [_vi("a", shape=[2]), _vi("a", shape=[2])], [_vi("b", shape=[2])])
    with pytest.raises(EvaluationError, match=r"^graph input 'a' is declared twice"):
        ReferenceEvaluator(inputs)
    overwrite = _model([helper.make_node("Relu", ["a"], ["a"], name="r")], [_vi("a", shape=[2])], [_vi("a", shape=[2])])
    with pytest.raises(EvaluationError, match=r"^tensor 'a' is written by node 'r' \(Relu\) and is already a graph input"):
        ReferenceEvaluator(overwrite)


def _if_model(then_output: str) -> onnx.ModelProto:
    def branch(op: str, out: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node(op, ["x"], [out])], op, [], [_vi(out, shape=[2])])

    node = helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch("Relu", then_output), else_branch=branch("Neg", "t"))
    return _model([helper.make_node("Identity", ["x0"], ["x"], name="id"), node],
                  [_vi("c", TensorProto.BOOL, []), _vi("x0", shape=[2])], [_vi("y", shape=[2])])


def test_a_subgraph_may_not_reuse_an_outer_name_but_sibling_branches_may_share_one():
    model = _if_model("t")  # both branches define their own 't': not a conflict
    assert single_assignment_problems(model) == []
    assert ReferenceEvaluator(model).run(None, {"c": np.array(True), "x0": np.array([-1, 2], np.float32)})[0].tolist() == [0, 2]
    shadow = _if_model("x")  # the then-branch writes 'x', which the main graph defines
    with pytest.raises(EvaluationError, match=r"^in the then_branch graph of node 'if' \(If\): tensor 'x' is written by a Relu node "
                                              r"and is already the output of node 'id' \(Identity\) of an enclosing graph"):
        ReferenceEvaluator(shadow)


def test_an_initializer_that_is_also_a_graph_input_is_its_default_not_a_second_definition():
    model = _model([helper.make_node("Relu", ["w"], ["b"])], [_vi("w", shape=[2])], [_vi("b", shape=[2])],
                   [numpy_helper.from_array(np.array([-1, 1], np.float32), "w")])
    assert single_assignment_problems(model) == []
    assert ReferenceEvaluator(model).run(None, {})[0].tolist() == [0, 1]


def test_declarations_of_one_tensor_with_different_types_are_refused():
    model = _model([helper.make_node("Relu", ["a"], ["c"], name="r1"), helper.make_node("Relu", ["c"], ["b"], name="r2")],
                   [_vi("a", TensorProto.INT8, [2])], [_vi("b", TensorProto.INT8, [2])])
    model.graph.value_info.extend([_vi("c", TensorProto.INT8, [2]), _vi("c", TensorProto.INT8, [2])])
    from onnx_qtypes.proto import write_qtype

    for name in ("a", "b"):
        set_qtype(model, name, I8)
    write_qtype(model.graph.value_info[0], QType("int8", 0.125, 0))
    write_qtype(model.graph.value_info[1], QType("int8", 0.25, 0))
    with pytest.raises(EvaluationError) as err:
        ReferenceEvaluator(model)
    assert str(err.value).startswith("tensor 'c' is declared as int8:float32<0.125:0> (/graph/value_info/0) and as "
                                     "int8:float32<0.25:0> (/graph/value_info/1)")
    write_qtype(model.graph.value_info[1], QType("int8", 0.125, 0))  # the same type twice is one declaration
    assert ReferenceEvaluator(model).run(None, {"a": np.array([-3, 5], np.int8)})[0].tolist() == [0, 5]


def test_errors_while_running_name_node_and_tensor_without_internal_names():
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="node")], [_vi("x", TensorProto.INT8, ["n"])],
                   [_vi("y", TensorProto.INT8, ["n"])])
    set_qtype(model, "x", QType("int8", [1.0, 2.0], [0, 0], axis=0))  # fits a dimension of 2, not the 3 fed
    set_qtype(model, "y", I8)
    with pytest.raises(EvaluationError) as err:
        ReferenceEvaluator(model).run(None, {"x": np.zeros(3, np.int8)})
    assert str(err.value).startswith("node 'node' (Relu): tensor 'x': ")
    assert "needs 3 scales, found 2" in str(err.value) and "QType." not in str(err.value)


@pytest.mark.parametrize(("feeds", "fragment"), [
    ({"x": np.array([np.inf, 0.5, 1.0], np.float32)}, "input 'x': "),
    ({"x": np.array([1, 2, 3], np.uint8), "x.scale": np.array("0.1")}, "x.scale holds <U3 values; give float scales"),
    ({"x": np.array([1, 2, 3], np.uint8), "x.scale": np.float32(0.1), "x.zero_point": np.float32(0.5)},
     "x.zero_point holds float32 values; give integers"),
    ({"x": np.array([1, 2, 3], np.uint8), "x.scale": np.full(3, 0.1, np.float32)},
     "is per-tensor, so x.scale holds one value, not 3"),
], ids=["non-finite-data", "string-scale", "float-zero-point", "scale-count"])
def test_a_dynamic_inputs_parameters_are_checked_not_coerced(feeds, fragment):
    model = typed_model("Relu", [T("x", (3,), QType("uint8"))], [T("y", (3,), QType("uint8"))])
    with pytest.raises(FeedError) as err:
        ReferenceEvaluator(model).run(None, feeds)
    assert fragment in str(err.value) and str(err.value).startswith("input 'x'"), str(err.value)
