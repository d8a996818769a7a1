"""lift(lower(m)) == m for typed models: parameters, schema, storage range and
statistics identical, graph unchanged; and the lowered model is standard ONNX."""

from __future__ import annotations

from onnx_qtypes.proto.encoding import tensor_array  # noqa: E402 (reads marked initializers)

import numpy as np
import onnx
import pytest
from builders import IR_VERSION, OPSET
from corpus import calibration_cache, corpus_models, run_onnxruntime
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import (QType, Schema, Statistics, TensorStatistics, diagnose, lift, lower, quantized_tensors,
                         set_qtype)
from onnx_qtypes.interop import LowerError, lift_model
from onnx_qtypes.proto import QUANTIZATION_FIELD, STATISTICS_FIELD, iter_declarations
from onnx_qtypes.proto.model import read_qtype, read_statistics
from onnx_qtypes.reference_ops import ReferenceEvaluator


def declarations(model: onnx.ModelProto) -> dict[str, tuple]:
    """Per tensor name: kind, element type, shape, quantized type, statistics (QType equality ignores statistics)."""
    out = {}
    for decl in iter_declarations(model):
        vi = decl.value_info
        tensor_type = vi.type.tensor_type
        shape = (
            tuple(d.dim_value if d.HasField("dim_value") else d.dim_param for d in tensor_type.shape.dim)
            if tensor_type.HasField("shape")
            else None
        )
        qtype = read_qtype(vi)
        stats = qtype.statistics if qtype else read_statistics(vi)
        out[(decl.kind if decl.kind != "value_info" else "vi", decl.name)] = (
            vi.type.tensor_type.elem_type, shape, qtype, stats
        )
    return out


def canonical(model: onnx.ModelProto) -> dict:
    graph = model.graph
    return {
        "nodes": [
            (n.op_type, n.domain, n.name, list(n.input), list(n.output), [a.SerializeToString() for a in n.attribute])
            for n in graph.node
        ],
        "initializers": {t.name: (t.data_type, list(t.dims), tensor_array(t).tobytes()) for t in graph.initializer},
        "inputs": [i.name for i in graph.input],
        "outputs": [o.name for o in graph.output],
        "declarations": declarations(model),
    }


def assert_round_trip(typed: onnx.ModelProto, form: str) -> onnx.ModelProto:
    lowered = lower(typed, form=form)
    assert_standard(lowered)
    back = lift(lowered)
    a, b = canonical(typed), canonical(back)
    for key in ("nodes", "initializers", "inputs", "outputs"):
        assert a[key] == b[key], key
    assert a["declarations"].keys() == b["declarations"].keys()
    for name, (elem, shape, qtype, stats) in a["declarations"].items():
        elem2, shape2, qtype2, stats2 = b["declarations"][name]
        assert (elem, qtype, stats) == (elem2, qtype2, stats2), name
        assert shape is None or shape == shape2, name  # lift may add an inferred shape, never change one
    return lowered


def assert_standard(model: onnx.ModelProto) -> None:
    """No extension field anywhere, IR 10 / opset 21, accepted by onnx.checker (full) and onnxruntime."""
    from google.protobuf.unknown_fields import UnknownFieldSet

    from onnx_qtypes.proto import onnx_qtypes_pb2 as pb

    for decl in iter_declarations(model):
        view = pb.TensorTypeView.FromString(decl.value_info.type.tensor_type.SerializeToString())
        assert not view.HasField("quantization") and not view.HasField("statistics"), decl.name
        assert not [f for f in UnknownFieldSet(view) if f.field_number in (QUANTIZATION_FIELD, STATISTICS_FIELD)]
        assert decl.value_info.type.tensor_type.elem_type != TensorProto.UNDEFINED, decl.name
    assert model.ir_version == 10 and [o.version for o in model.opset_import if o.domain == ""] == [21]
    names = [vi.name for vi in model.graph.value_info]
    assert len(names) == len(set(names)), "a tensor declared twice"
    onnx.checker.check_model(model, full_check=True)


@pytest.mark.parametrize("name", sorted(corpus_models()))
def test_round_trip_of_every_lifted_corpus_model_with_its_statistics(name):
    q = corpus_models()[name]
    typed = lift(q, statistics=calibration_cache(name))
    assert any(t.statistics for t in quantized_tensors(typed).values())
    assert_round_trip(typed, "qoperator" if "-qop" in name else "qdq")


@pytest.mark.parametrize("form", ["qdq", "qoperator"])
def test_round_trip_of_the_example_keeps_schema_narrow_range_and_statistics(example_model, form):
    lowered = assert_round_trip(example_model, form)
    w = quantized_tensors(example_model)["w"]
    assert (w.schema, w.storage_min, w.storage_max) == (Schema.SYMMETRIC, -127, 127)
    keys = {p.key for vi in lowered.graph.value_info for p in vi.metadata_props}
    assert keys == {"onnx_qtypes.quantized_type", "onnx_qtypes.statistics"}
    run_onnxruntime(lowered, {"x": np.zeros((1, 3, 8, 8), np.float32)})
    if form == "qoperator":
        assert [n.op_type for n in lowered.graph.node].count("QLinearConv") == 1


def _typed_add(qtype_in: QType, qtype_out: QType, shape=(2, 4)) -> onnx.ModelProto:
    """x (float) -> Q -> a (typed) ; c = Add(a, b) with b a typed constant ; DQ -> y (float)."""
    b_store = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) % 5 + max(qtype_in.storage_min, 0)
    b_store = np.clip(b_store, qtype_in.storage_min, qtype_in.storage_max).astype(qtype_in.storage_type.np_dtype)
    scale_t = qtype_in.expressed_type.np_dtype
    out_scale = np.asarray(qtype_out.scale[0], scale_t)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["a"], name="q"),
        helper.make_node("Add", ["a", "b"], ["c"], name="add"),
        helper.make_node("DequantizeLinear", ["c", "cs", "cz"], ["y"], name="dq"),
    ]
    inits = [
        numpy_helper.from_array(np.asarray(qtype_in.scale[0], scale_t), "xs"),
        numpy_helper.from_array(np.asarray(qtype_in.zero_point[0]).astype(qtype_in.storage_type.np_dtype), "xz"),
        numpy_helper.from_array(b_store, "b"),
        numpy_helper.from_array(out_scale, "cs"),
        numpy_helper.from_array(np.asarray(qtype_out.zero_point[0]).astype(qtype_out.storage_type.np_dtype), "cz"),
    ]
    et = qtype_in.expressed_type.data_type
    graph = helper.make_graph(
        nodes, "typed_add", [helper.make_tensor_value_info("x", et, list(shape))],
        [helper.make_tensor_value_info("y", et, list(shape))], inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    set_qtype(model, "a", qtype_in)
    set_qtype(model, "b", qtype_in.with_statistics(None))
    set_qtype(model, "c", qtype_out)
    return model


def test_narrow_range_activation_lowers_to_a_clip_that_saturates_there():
    narrow = QType("int8", 0.0625, 0, schema="symmetric", storage_min=-127, storage_max=127)
    typed = _typed_add(QType("int8", 0.0625, 0), narrow)
    lowered = assert_round_trip(typed, "qdq")
    clips = [n for n in lowered.graph.node if n.op_type == "Clip"]
    assert len(clips) == 1 and clips[0].metadata_props[0].value == "storage_range"
    feeds = {"x": np.full((2, 4), -100.0, np.float32)}  # far below the range
    y = run_onnxruntime(lowered, feeds, optimize=False)["y"]
    bound = np.float32(-127 * 0.0625)
    assert y.min() == bound and np.count_nonzero(y == bound) >= 2  # saturated at -127, never at -128
    expected = ReferenceEvaluator(typed).run(None, feeds)[0]
    assert np.array_equal(np.asarray(expected, np.float32), y)


def test_statistics_on_float_tensors_survive():
    typed = _typed_add(QType("uint8", 0.125, 128), QType("uint8", 0.25, 100))
    stats = TensorStatistics(tensor=Statistics(min=-1.5, max=2.25, mean=0.125, std=0.5, count=8,
                                               histogram_edges=(-1.5, 0.0, 2.25), histogram_counts=(3, 5)),
                             method="minmax")
    from onnx_qtypes import set_statistics

    typed.graph.node[-1].output[0] = "yd"  # y = Relu(yd): a float tensor inside the graph
    typed.graph.node.append(helper.make_node("Relu", ["yd"], ["y"], name="relu"))
    typed.graph.value_info.append(helper.make_tensor_value_info("yd", TensorProto.FLOAT, [2, 4]))
    set_statistics(typed, "x", stats)
    set_statistics(typed, "y", TensorStatistics(tensor=Statistics(min=0.0, max=1.0)))
    set_statistics(typed, "yd", TensorStatistics(tensor=Statistics(min=-1.0, max=1.0), method="minmax"))
    lowered = assert_round_trip(typed, "qdq")
    x_decl = next(vi for vi in lowered.graph.input if vi.name == "x")
    assert x_decl.type.tensor_type.elem_type == TensorProto.FLOAT and len(x_decl.metadata_props) == 1


def test_blocked_int4_weights_with_float16_scales_round_trip():
    rng = np.random.default_rng(5)
    k, n, block = 8, 3, 3  # the last block along axis 0 is short (8 = 3 + 3 + 2)
    w_store = rng.integers(-8, 8, size=(k, n)).astype(np.int64)
    scales = rng.uniform(0.01, 0.1, size=(3, n)).astype(np.float16).astype(np.float64)
    w_type = QType("int4", scales.reshape(-1), [0] * scales.size, axis=0, block_size=block, expressed="float16",
                   schema="symmetric")
    import ml_dtypes

    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q"),
        helper.make_node("MatMul", ["xq", "w"], ["yq"], name="mm"),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="dq"),
    ]
    inits = [
        numpy_helper.from_array(np.asarray(0.0625, np.float16), "xs"),
        numpy_helper.from_array(np.asarray(0, np.int8), "xz"),
        numpy_helper.from_array(w_store.astype(ml_dtypes.int4), "w"),
        numpy_helper.from_array(np.asarray(0.125, np.float16), "ys"),
        numpy_helper.from_array(np.asarray(-3, np.int8), "yz"),
    ]
    graph = helper.make_graph(nodes, "blocked", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, n])], inits)
    typed = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    set_qtype(typed, "xq", QType("int8", 0.0625, 0, expressed="float16"))
    set_qtype(typed, "w", w_type)
    set_qtype(typed, "yq", QType("int8", 0.125, -3, expressed="float16"))
    lowered = assert_round_trip(typed, "qdq")
    dq = next(n for n in lowered.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == "w")
    scale = next(t for t in lowered.graph.initializer if t.name == dq.input[1])
    assert list(scale.dims) == [3, n] and scale.data_type == TensorProto.FLOAT16
    assert {a.name: a.i for a in dq.attribute} == {"axis": 0, "block_size": block}
    feeds = {"x": rng.normal(size=(2, k)).astype(np.float16)}
    got = run_onnxruntime(lowered, feeds, optimize=False)["y"]
    want = np.asarray(ReferenceEvaluator(typed).run(None, feeds)[0], np.float64)
    assert np.abs(got.astype(np.float64) - want).max() <= 0.125 * 1.001  # within one step of the definition


@pytest.mark.parametrize(("opset", "storage", "written"), [(13, "int8", 13), (17, "uint8", 17), (10, "int8", 21),
                                                             (13, "int16", 21), (17, "int4", 21), (21, "int8", 21)])
def test_lower_keeps_the_models_opset_where_it_holds_every_type_and_converts_it_otherwise(opset, storage, written):
    """The model's own opset where its QuantizeLinear / DequantizeLinear hold the types (11 to 21): its other
    operators keep the versions, and so onnxruntime's kernels, the original ran on; else converted to 21 with the
    metadata kept."""
    lo, hi = {"int8": (-100, 100), "uint8": (10, 200), "int16": (-100, 100), "int4": (-6, 6)}[storage]
    typed = _typed_add(QType(storage, 0.125, max(3, lo), schema="asymmetric", storage_min=lo, storage_max=hi),
                       QType("int8", 0.25, -7))
    typed.opset_import[0].version = opset
    lowered = lower(typed)
    assert [o.version for o in lowered.opset_import if o.domain == ""] == [written]
    assert lowered.ir_version == (10 if written == 21 else min(typed.ir_version, 10))
    assert quantized_tensors(lift(lowered))["a"].storage_min == lo
    run_onnxruntime(lowered, {"x": np.ones((2, 4), np.float32)}, optimize=False)  # loads and runs


def test_a_kept_opset_onnx_checker_refuses_is_converted_as_before(monkeypatch):
    """Where the model's own opset would not hold a node lower wrote (forced here: a per-axis DequantizeLinear at
    opset 10, which has no axis), onnx.checker says so and lower converts the model to 21 instead of failing."""
    import importlib

    lower_module = importlib.import_module("onnx_qtypes.interop.lower")  # (the package's `lower` is the function)
    monkeypatch.setattr(lower_module._Lowering, "_kept_opset", lambda self, current: True)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
                              [numpy_helper.from_array(np.arange(-6, 6, dtype=np.int8).reshape(3, 4), "w")])
    typed = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)], ir_version=IR_VERSION)
    set_qtype(typed, "w", QType("int8", [0.125, 0.25, 0.5, 1.0], [0, 0, 0, 0], axis=1))
    result = lower_module.lower_model(typed)
    assert [o.version for o in result.model.opset_import if o.domain == ""] == [21] and result.model.ir_version == 10
    onnx.checker.check_model(result.model, full_check=True)
    (y,) = run_onnxruntime(result.model, {"x": np.ones((2, 3), np.float32)}, optimize=False).values()
    assert y.tolist() == [[-0.75, -0.75, 0.0, 3.0]] * 2  # w's column sums [-6, -3, 0, 3] times its scales


def test_lower_refuses_what_has_no_faithful_form():
    inexact = _typed_add(QType("int8", 0.5, 0), QType("int8", 0.5, 0))
    set_qtype(inexact, "b", QType("int8", 0.1, 0))  # 0.1 has no float32 representation
    with pytest.raises(LowerError, match="tensor 'b': scale 0.1 is not exactly representable in float32"):
        lower(inexact)
    with pytest.raises(LowerError, match="unknown form"):
        lower(_typed_add(QType("int8", 0.5, 0), QType("int8", 0.5, 0)), form="qlinear")
    dynamic = _typed_add(QType("uint8", 0.5, 0), QType("uint8", 0.5, 0))
    set_qtype(dynamic, "c", QType("uint8"))
    with pytest.raises(LowerError, match="dynamic type"):
        lower(dynamic)
    broken = _typed_add(QType("int8", 0.5, 0), QType("int8", 0.5, 0))
    broken.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.asarray(0.25, np.float32), "xs"))
    with pytest.raises(LowerError, match="'q'.*boundary QuantizeLinear/DequantizeLinear must use the type's parameters"):
        lower(broken)


def test_a_boundary_node_stating_its_type_s_double_scale_in_float32_is_refused_for_that_reason():
    """The node's float32 0.1 states the type's double 0.1 as QT307 compares them (the reference takes it): lower
    said the node applied another scale than its type's; the reason is that no QDQ node holds the type's scale."""
    typed = _typed_add(QType("int8", 0.1, 0), QType("int8", 0.5, 0))  # xs: float32 0.1, the type of 'a': double 0.1
    assert {d.rule for d in diagnose(typed).diagnostics} == {"QT102"}  # a warning: check exits 0
    with pytest.raises(LowerError, match=r"^tensor 'a': scale 0\.1 is not exactly representable in float32 \(nearest "
                                         r"0\.10000000149011612\)"):
        lower(typed)


def test_lift_of_a_lowered_model_trusts_the_nodes_over_stale_metadata():
    typed = _typed_add(QType("int8", 0.5, 0, schema="symmetric"), QType("int8", 0.5, 0))
    lowered = lower(typed)
    # someone edits the scale after lowering; the metadata no longer describes the nodes
    for t in lowered.graph.initializer:
        if t.name == "xs":
            t.CopyFrom(numpy_helper.from_array(np.asarray(0.25, np.float32), "xs"))
        if t.name.startswith("a_scale"):
            t.CopyFrom(numpy_helper.from_array(np.asarray(0.25, np.float32), t.name))
    result = lift_model(lowered)
    assert any("metadata" in w and "'a'" in w for w in result.warnings)
    a = quantized_tensors(result.model)["a"]
    assert a.scale == (0.25,) and a.schema is Schema.ASYMMETRIC


STORAGES = ["int8", "uint8", "int16", "uint16", "int4", "uint4"]


@st.composite
def qtypes(draw, storage=None):
    storage = storage or draw(st.sampled_from(STORAGES))
    info = QType(storage, 1.0).storage_type
    lo = draw(st.integers(info.min, info.max - 1))
    hi = draw(st.integers(lo + 1, info.max))
    scale = float(np.float32(draw(st.floats(1e-4, 10.0, allow_nan=False))))
    zp = draw(st.integers(lo, hi))
    schema = Schema.SYMMETRIC if zp == 0 and draw(st.booleans()) else Schema.ASYMMETRIC
    return QType(storage, scale, zp, schema=schema, storage_min=lo, storage_max=hi)


@st.composite
def statistics(draw):
    lo = draw(st.floats(-100, 100, allow_nan=False))
    hi = lo + draw(st.floats(0, 100, allow_nan=False))
    counts = draw(st.lists(st.integers(0, 1000), min_size=1, max_size=5))
    edges = np.linspace(lo, hi + 1, len(counts) + 1).tolist()
    return TensorStatistics(
        tensor=Statistics(min=lo, max=hi, count=sum(counts), histogram_edges=tuple(edges), histogram_counts=tuple(counts)),
        method=draw(st.sampled_from([None, "minmax", "percentile:99.9"])),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip_property(data):
    storage = data.draw(st.sampled_from(STORAGES))
    a = data.draw(qtypes(storage))
    c = data.draw(qtypes(storage))
    if data.draw(st.booleans()):
        a = a.with_statistics(data.draw(statistics()))
    if data.draw(st.booleans()):
        c = c.with_statistics(data.draw(statistics()))
    typed = _typed_add(a, c)
    assert_round_trip(typed, data.draw(st.sampled_from(["qdq", "qoperator"])))


@pytest.mark.parametrize("form", ["qdq", "qoperator"])
def test_typed_ops_with_float_results_round_trip(form):
    """MatMul(typed x, typed w) -> float y and Cast(typed r) -> float: lower writes DequantizeLinear nodes for
    them, marked, and lift folds exactly those back; onnxruntime runs the lowered model like the reference."""
    x = helper.make_tensor_value_info("x", TensorProto.INT8, [2, 3])
    w = numpy_helper.from_array(np.arange(-6, 6, dtype=np.int8).reshape(3, 4), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul"),
             helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Cast", ["r"], ["d"], name="cast", to=TensorProto.FLOAT)]
    graph = helper.make_graph(nodes, "float_results", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4]),
                               helper.make_tensor_value_info("d", TensorProto.FLOAT, [2, 3])], [w],
                              value_info=[helper.make_tensor_value_info("r", TensorProto.INT8, [2, 3])])
    typed = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    set_qtype(typed, "x", QType("int8", float(np.float32(0.1)), 2))
    set_qtype(typed, "w", QType("int8", float(np.float32(0.05)), 0))
    set_qtype(typed, "r", QType("int8", float(np.float32(0.1)), 2))
    lowered = assert_round_trip(typed, form)
    assert sum(n.op_type == "DequantizeLinear" for n in lowered.graph.node) >= 2
    feeds = {"x": np.array([[-3, 0, 5], [127, -128, 2]], np.int8)}
    expected = ReferenceEvaluator(typed).run(None, feeds)
    got = run_onnxruntime(lowered, feeds, optimize=False)  # a typed graph input stays its storage integers
    for want, name in zip(expected, ("y", "d")):
        np.testing.assert_allclose(got[name], want, rtol=1e-5, atol=1e-6)


def test_a_typed_models_own_dequantize_keeps_no_lower_mark():
    """The mark says "lower wrote this DQ"; copied onto a boundary DQ of the typed model, lift would fold it away."""
    from onnx_qtypes.interop import metadata

    typed = _typed_add(QType("uint8", 0.125, 128), QType("uint8", 0.25, 100))
    typed.graph.node[-1].output[0] = "yd"  # y = Relu(yd): the DQ is the typed model's own boundary before Relu
    typed.graph.node.append(helper.make_node("Relu", ["yd"], ["y"], name="relu"))
    metadata.mark_inserted(typed.graph.node[2])
    lowered = lower(typed)
    assert not any(metadata.inserted_by_lower(n) for n in lowered.graph.node if n.name == "dq")
    assert [n.op_type for n in lift(lowered).graph.node] == [n.op_type for n in typed.graph.node]


@pytest.mark.parametrize("opset", [11, 12])
def test_lower_converts_below_opset_12_where_onnxruntime_lacks_the_kernels_lower_writes(opset):
    """An int32 an operator computes is quantized in float64 (Clip among the nodes): onnxruntime has no float64
    Clip-11, so a model at 11 is converted to 21 as before; at 12 it is kept. Either way it loads and runs."""
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"], name="add")], "g",
                              [helper.make_tensor_value_info("a", TensorProto.INT8, [4]),
                               helper.make_tensor_value_info("b", TensorProto.INT8, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, [4])])
    typed = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)
    for name in ("a", "b"):
        set_qtype(typed, name, QType("int8", 0.5, 0))
    set_qtype(typed, "y", QType("int32", 2.0**-27, 3))
    lowered = lower(typed)
    assert [o.version for o in lowered.opset_import if o.domain == ""] == [21 if opset == 11 else 12]
    a, b = np.array([1, -2, 3, 10], np.int8), np.array([4, 5, -6, 20], np.int8)
    (y,) = run_onnxruntime(lowered, {"a": a, "b": b}, optimize=False).values()
    assert y.tolist() == [(int(p) + int(q)) * 2**26 + 3 for p, q in zip(a, b)]  # (a + b) / 2 stored at 2^-27
