"""lower's standard-ONNX form computes what the definition computes (issue 19, Deliver 6; interop.md#lower-set): types too
narrow for their expressed type (QT120) compute in float32 inside, computed int32 tensors quantize in float64,
dynamic graph inputs and outputs follow the calling convention, If / Loop / Scan that only move stored values stay
on storage, typed function bodies are inlined; everything else is refused with a located error."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from corpus import run_onnxruntime
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import QType, lower, set_qtype
from onnx_qtypes.interop.errors import LowerError
from onnx_qtypes.cli import main
from onnx_qtypes.interop.lower import lower_model
from onnx_qtypes.reference_ops import ReferenceEvaluator


def _model(nodes, inputs, outputs, value_info=(), initializers=(), functions=None, opset=21):
    graph = helper.make_graph(nodes, "g", list(inputs), list(outputs), list(initializers), value_info=list(value_info))
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("local", 1)] if functions else [])
    return helper.make_model(graph, opset_imports=imports, ir_version=10, functions=functions)


def _transpose(storage: str, expressed: str) -> onnx.ModelProto:
    """x -> Transpose -> y, both of one type: the QDQ form must give every stored value back."""
    model = _model([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])],
                   [helper.make_tensor_value_info("x", 0, [256, 256])], [helper.make_tensor_value_info("y", 0, [256, 256])])
    for name in ("x", "y"):
        set_qtype(model, name, QType(storage, 0.375, 17, expressed=expressed))
    return model


@pytest.mark.parametrize("storage, expressed", [("int16", "float16"), ("uint16", "float16"), ("uint8", "bfloat16")])
def test_a_type_too_narrow_for_its_expressed_type_computes_in_float32_inside(storage, expressed):
    """QT120 measured up to 16 steps off for int16:float16 with float16 scales; in float32 inside, every one of the
    65,536 values comes back exactly."""
    lowered = lower(_transpose(storage, expressed))
    scales = [t for t in lowered.graph.initializer if t.name.endswith("_scale")]
    assert scales and {t.data_type for t in scales} == {TensorProto.FLOAT}
    if expressed == "float16":
        q = np.arange(65536, dtype=np.int64).reshape(256, 256) + (-32768 if storage == "int16" else 0)
        q = q.astype(storage)
        got = run_onnxruntime(lowered, {"x": q}, optimize=False)["y"]
        np.testing.assert_array_equal(got, q.T)


def test_a_float16_model_that_round_trips_lowers_with_float16_scales_as_before():
    lowered = lower(_transpose("int8", "float16"))
    assert {t.data_type for t in lowered.graph.initializer if t.name.endswith("_scale")} == {TensorProto.FLOAT16}
    assert "Cast" not in {n.op_type for n in lowered.graph.node}


def test_float16_values_enter_and_leave_an_inside_float32_model_by_cast():
    """A float16 graph input is cast to float32 before its QuantizeLinear; a float16 output after its op."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]), helper.make_node("Relu", ["q"], ["r"]),
             helper.make_node("DequantizeLinear", ["r", "s", "z"], ["y"])]
    inits = [onnx.numpy_helper.from_array(np.array(0.375, np.float16), "s"),
             onnx.numpy_helper.from_array(np.array(-5, np.int16), "z")]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [64])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [64])], initializers=inits)
    qtype = QType("int16", 0.375, -5, expressed="float16")
    for name in ("q", "r"):
        set_qtype(model, name, qtype)
    lowered = lower(model)
    ops = [n.op_type for n in lowered.graph.node]
    assert ops[0] == "Cast" and ops[-1] == "Cast"
    x = (np.linspace(-9000, 9000, 64) * 0.375).astype(np.float16)
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    got = run_onnxruntime(lowered, {"x": x}, optimize=False)["y"]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)


def test_a_computed_int32_tensor_quantizes_in_float64_and_saturates():
    nodes = [helper.make_node("Add", ["a", "b"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info(n, 0, [64]) for n in ("a", "b")],
                   [helper.make_tensor_value_info("y", 0, [64])])
    set_qtype(model, "a", QType("int8", 0.125, 0))
    set_qtype(model, "b", QType("int8", 0.25, -5))
    set_qtype(model, "y", QType("int32", 2.0 ** -27, 3))
    feeds = {"a": np.arange(-128, 128, 4, dtype=np.int8), "b": np.arange(-128, 128, 4, dtype=np.int8)}
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    got = run_onnxruntime(lower(model), feeds, optimize=False)["y"]
    assert got.dtype == np.int32 and {np.iinfo(np.int32).min, np.iinfo(np.int32).max} <= set(want.tolist())
    np.testing.assert_array_equal(got, want)


def _dynamic_add(expressed: str = "float32") -> onnx.ModelProto:
    model = _model([helper.make_node("Add", ["x", "c"], ["y"]), helper.make_node("Neg", ["y"], ["z"])],
                   [helper.make_tensor_value_info(n, 0, [2, 3]) for n in ("x", "c")],
                   [helper.make_tensor_value_info(n, 0, [2, 3]) for n in ("y", "z")])
    storage = "int8" if expressed == "float32" else "int16"
    set_qtype(model, "x", QType(storage, expressed=expressed, schema="symmetric"))
    set_qtype(model, "c", QType(storage, 0.25, 3, expressed=expressed))
    set_qtype(model, "y", QType(storage, 0.5, -2, expressed=expressed))
    set_qtype(model, "z", QType(storage, expressed=expressed))
    return model


@pytest.mark.parametrize("expressed", ["float32", "float16"])
def test_dynamic_graph_inputs_and_outputs_follow_the_calling_convention(expressed):
    model = _dynamic_add(expressed)
    dtype, storage = (np.float32, np.int8) if expressed == "float32" else (np.float16, np.int16)
    c = np.array([[1, 5, 7], [10, 3, -12]], storage)
    stored = {"x": np.array([[1, -5, 7], [100, 3, -128]], storage), "c": c,
              "x.scale": np.array(0.125, dtype), "x.zero_point": np.array(0, storage)}
    lowered = lower(model)
    assert [i.name for i in lowered.graph.input] == ["x", "c", "x.scale", "x.zero_point"]
    assert [o.name for o in lowered.graph.output] == ["y", "z", "z.scale", "z.zero_point"]
    reals = {"x": np.array([[1, -5, 7], [10, 3, -12.5]], dtype), "c": c}
    names = ["y", "z", "z.scale", "z.zero_point"]  # the reference evaluator answers the convention's names too
    for feeds, fed_as in ((stored, "storage"), (reals, "reals")):
        want = dict(zip(names, ReferenceEvaluator(model).run(names, feeds)))
        got = run_onnxruntime(lower(model, dynamic_inputs=fed_as), feeds, optimize=False)
        for name in names:
            assert got[name].dtype == want[name].dtype and got[name].shape == want[name].shape, name
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)
        assert float(want["z.scale"]) == want["z"].qtype.scale[0]


@pytest.mark.parametrize("axis", [None, 1])
def test_a_dynamic_input_s_zero_point_is_optional_in_the_lowered_model(axis):
    """semantics.md#calling-convention: x.zero_point absent means all 0. lower writes an all-zero initializer of
    that name, so onnxruntime runs without the feed (zero point 0) and a fed value overrides it."""
    model = _dynamic_add()
    set_qtype(model, "x", QType("int8", expressed="float32", schema="asymmetric", axis=axis))
    count = () if axis is None else (3,)
    x = np.array([[1, -5, 7], [100, 3, -128]], np.int8)
    base = {"x": x, "c": np.array([[1, 5, 7], [10, 3, -12]], np.int8),
            "x.scale": np.full(count, 0.125, np.float32)}
    result = lower_model(model)
    lowered = result.model
    assert any(note.startswith("tensor 'x': 'x.zero_point' is optional") for note in result.notes), result.notes
    [default] = [t for t in lowered.graph.initializer if t.name == "x.zero_point"]
    assert "x.zero_point" in [i.name for i in lowered.graph.input]
    np.testing.assert_array_equal(numpy_helper.to_array(default), np.zeros(count, np.int8))
    names = ["y", "z"]
    without = run_onnxruntime(lowered, base, optimize=False)
    fed = {**base, "x.zero_point": np.full(count, -11, np.int8)}
    with_zp = run_onnxruntime(lowered, fed, optimize=False)
    for feeds, got in ((base, without), (fed, with_zp)):
        want = dict(zip(names, ReferenceEvaluator(model).run(names, feeds)))
        for name in names:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    assert not np.array_equal(without["y"], with_zp["y"])  # the feed took effect


def test_storage_required_makes_a_dynamic_input_s_zero_point_a_required_input(tmp_path):
    """For a runtime that reads an initializer-backed input as a constant (OpenVINO 2026.4, IREE 3.13): no default, the
    feed is the zero point, as in the API and the CLI alike."""
    model = _dynamic_add()
    set_qtype(model, "x", QType("int8", expressed="float32", schema="asymmetric"))
    result = lower_model(model, dynamic_inputs="storage-required")
    lowered = result.model
    assert "x.zero_point" in [i.name for i in lowered.graph.input]
    assert "x.zero_point" not in [t.name for t in lowered.graph.initializer]
    assert any("'x.zero_point' is a required input" in note for note in result.notes), result.notes
    feeds = {"x": np.array([[1, -5, 7], [100, 3, -128]], np.int8), "c": np.array([[1, 5, 7], [10, 3, -12]], np.int8),
             "x.scale": np.array(0.125, np.float32), "x.zero_point": np.array(-11, np.int8)}
    want = ReferenceEvaluator(model).run(["y"], feeds)[0]
    np.testing.assert_array_equal(run_onnxruntime(lowered, feeds, optimize=False)["y"], want)
    with pytest.raises(Exception, match="x.zero_point"):  # onnxruntime: a required input missing
        run_onnxruntime(lowered, {k: v for k, v in feeds.items() if k != "x.zero_point"}, optimize=False)
    src, out = tmp_path / "typed.onnx", tmp_path / "lowered.onnx"
    onnx.save(model, src)
    assert main(["lower", str(src), str(out), "--dynamic-inputs", "storage-required"]) == 0
    written = onnx.load(out)
    assert "x.zero_point" not in [t.name for t in written.graph.initializer]
    assert main(["lower", str(src), str(tmp_path / "x.onnx"), "--dynamic-inputs", "storage-optional"]) == 2


def test_a_dynamic_input_with_an_unknown_zero_point_count_keeps_its_zero_point_required():
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [helper.make_tensor_value_info("x", 0, [2, "n"])],
                   [helper.make_tensor_value_info("y", 0, [2, "n"])])
    set_qtype(model, "x", QType("int8", expressed="float32", schema="asymmetric", axis=1))
    set_qtype(model, "y", QType("int8", 0.5, 0))
    result = lower_model(model)
    assert "x.zero_point" in [i.name for i in result.model.graph.input]
    assert "x.zero_point" not in [t.name for t in result.model.graph.initializer]
    assert "tensor 'x': its zero points' shape [?] is not static, so 'x.zero_point' has no all-zero default and " \
           "must be fed" in result.notes


def test_a_blocked_dynamic_input_names_the_unknown_dimension_of_its_zero_points():
    """Blocked along axis 1 of ["n", 4]: the parameters are [n, 2], unknown in dimension 0, not the type's axis."""
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [helper.make_tensor_value_info("x", 0, ["n", 4])],
                   [helper.make_tensor_value_info("y", 0, ["n", 4])])
    set_qtype(model, "x", QType("int8", expressed="float32", schema="asymmetric", axis=1, block_size=2))
    set_qtype(model, "y", QType("int8", 0.5, 0))
    notes = lower_model(model).notes
    assert any("its zero points' shape [?, 2] is not static" in note for note in notes), notes


def _if_model(body_op: str) -> onnx.ModelProto:
    x = QType("int8", 0.5, 3)
    then = helper.make_graph([helper.make_node(body_op, ["x"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", 0, [4])])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", 0, [4])])
    model = _model([helper.make_node("Relu", ["a"], ["x"]),
                    helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
                   [helper.make_tensor_value_info("a", 0, [4]), helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                   [helper.make_tensor_value_info("y", 0, [4])], [helper.make_tensor_value_info("x", 0, [4])])
    for name in ("a", "x", "t", "e", "y"):
        set_qtype(model, name, x)
    return model


def test_control_flow_that_moves_stored_values_stays_on_storage():
    """The branch reads x, which Relu computed: inside, it reads the stored integers of x."""
    model = _if_model("Identity")
    lowered = lower(model)
    branch = next(n for n in lowered.graph.node if n.op_type == "If").attribute[0].g
    produced = {o for n in lowered.graph.node for o in n.output}
    assert branch.node[0].input[0] in produced and branch.output[0].type.tensor_type.elem_type == TensorProto.INT8
    for c in (True, False):
        feeds = {"a": np.array([-7, 0, 9, 120], np.int8), "c": np.array(c)}
        want = ReferenceEvaluator(model).run(None, feeds)[0]
        np.testing.assert_array_equal(run_onnxruntime(lowered, feeds, optimize=False)["y"], want)


def test_control_flow_that_computes_on_quantized_values_is_refused_with_the_node():
    with pytest.raises(LowerError, match=r"If \(/graph/node/1\): Sigmoid \(/graph/node/1/attribute/1/g/node/0\) in its "
                                         r"then_branch computes on quantized values"):
        lower(_if_model("Sigmoid"))


def _function_model(attributes: bool = False) -> onnx.ModelProto:
    body = helper.make_function("local", "Requant", ["fx"], ["fy"],
                                [helper.make_node("Transpose", ["fx"], ["ft"], perm=[1, 0]),
                                 helper.make_node("Relu", ["ft"], ["fy"])],
                                [helper.make_opsetid("", 21)], attributes=["unused"] if attributes else [])
    body.value_info.extend([helper.make_tensor_value_info(n, 0, None) for n in ("fx", "ft", "fy")])
    call = helper.make_node("Requant", ["x"], ["y"], domain="local", name="call", **({"unused": 1} if attributes else {}))
    model = _model([call], [helper.make_tensor_value_info("x", 0, [2, 3])], [helper.make_tensor_value_info("y", 0, [3, 2])],
                   functions=[body])
    x, y = QType("int8", 0.25, 1), QType("int8", 0.5, -3)
    set_qtype(model, "x", x)
    set_qtype(model, "y", y)
    for name, qtype in (("fx", x), ("ft", x), ("fy", y)):
        set_qtype(model, name, qtype, function="Requant")
    return model


def test_a_typed_function_body_is_inlined():
    model = _function_model()
    lowered = lower(model)
    assert not lowered.functions and "Requant" not in {n.op_type for n in lowered.graph.node}
    feeds = {"x": np.array([[-128, -3, 0], [5, 77, 127]], np.int8)}
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    np.testing.assert_array_equal(run_onnxruntime(lowered, feeds, optimize=False)["y"], want)


@pytest.mark.parametrize("model, words", [
    (lambda: _function_model(attributes=True), r"function local:Requant \(called by call_0\): a typed body with attributes"),
    (lambda: _per_axis_dynamic_output(), r"tensor 'y': a per-axis dynamic type"),
    (lambda: _narrowed_per_axis_output(), r"tensor 'y': a narrowed storage range on a computed per-axis tensor"),
])
def test_what_lower_does_not_write_is_refused_with_a_located_error(model, words):
    with pytest.raises(LowerError, match=words):
        lower(model())


def _per_axis_dynamic_output() -> onnx.ModelProto:
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [helper.make_tensor_value_info("x", 0, [2, 3])],
                   [helper.make_tensor_value_info("y", 0, [2, 3])])
    set_qtype(model, "x", QType("int8", 0.5, 0))
    set_qtype(model, "y", QType("int8", axis=1))
    return model


def _narrowed_per_axis_output() -> onnx.ModelProto:
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [helper.make_tensor_value_info("x", 0, [2, 3])],
                   [helper.make_tensor_value_info("y", 0, [2, 3])])
    set_qtype(model, "x", QType("int8", 0.5, 0))
    set_qtype(model, "y", QType("int8", [0.5, 0.25, 1.0], [0, 0, 0], axis=1, storage_min=-127))
    return model


@pytest.mark.parametrize("length", [32, 20])
def test_a_one_block_1d_weight_lowers_to_a_dequantize_onnxruntime_runs(length):
    """A 1-D blocked weight of one block has a one-element scale, which onnxruntime reads as per-tensor and then
    refuses with a block_size; lower writes the per-tensor DequantizeLinear it equals."""
    w = np.arange(length, dtype=np.int8) - 9
    graph = helper.make_graph([helper.make_node("Identity", ["w"], ["y"])], "g", [],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [length])],
                              [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    set_qtype(model, "w", QType("int8", [0.375], [2], axis=0, block_size=32))
    got = run_onnxruntime(lower(model), {}, optimize=False)["y"]
    np.testing.assert_array_equal(got, (w.astype(np.float32) - 2) * np.float32(0.375))
    np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(["y"], {})[0])


_V3 = "conformance_tests/cases/checker/QT141-near-miss-iq4-nl-levels/model.onnx"


@pytest.mark.parametrize(("change", "words"), [
    (lambda q: setattr(q, "block_size", 0), "block_size 0 must be > 0"),
    (lambda q: setattr(q, "axis", 5), "axis 5 is outside [0, 2)"),
    (lambda q: setattr(q, "axis", -1), "axis -1 must be >= 0"),
    (lambda q: (q.ClearField("scale"), q.scale.extend([1.0, 2.0, 3.0])), "needs 4 scales"),
    (lambda q: (q.ClearField("scale"), setattr(q, "scale_tensor", "nowhere")), "'nowhere' names no initializer"),
    (lambda q: (q.ClearField("offset"), setattr(q, "offset_tensor", "nowhere")), "'nowhere' names no initializer"),
], ids=["block-0", "axis-out-of-range", "axis-negative", "scale-count", "scale-tensor-missing", "offset-tensor-missing"])
@pytest.mark.parametrize("form", ["qdq", "matmulnbits"])
def test_a_broken_version_3_weight_is_refused_naming_it(change, words, form):
    """lower runs before any checker: a version-3 weight check would refuse is a LowerError naming the tensor, not
    an IndexError / ZeroDivisionError or a model onnxruntime then rejects."""
    from builders import ROOT

    from onnx_qtypes.interop.lower import lower_model
    from onnx_qtypes.proto.model import read_view, write_view

    model = onnx.load(ROOT / _V3)
    vi = next(v for v in model.graph.value_info if read_view(v.type.tensor_type).quantization.version == 3)
    view = read_view(vi.type.tensor_type)
    change(view.quantization)
    write_view(vi.type.tensor_type, view)
    with pytest.raises(LowerError, match="tensor 'w'") as err:
        lower_model(model, form)
    assert words in str(err.value)
