"""The helpers that make `check` on a QDQ file cheaper give the answers of the slower code they stand in for."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from checker_models import int8
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import QType
from onnx_qtypes.proto import write_qtype
from onnx_qtypes.proto.graph_order import topological_order
from onnx_qtypes.proto.model import may_declare_extension
from onnx_qtypes.proto.names import _first_in, first_non_utf8_string
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.storage_types import EXPRESSED_TYPES, STORAGE_TYPES


def _declared(tensor_type_bytes: bytes) -> onnx.ModelProto:
    vi = onnx.ValueInfoProto(name="t")
    vi.type.tensor_type.MergeFromString(tensor_type_bytes)
    graph = helper.make_graph([], "g", [], [], value_info=[vi])
    return helper.make_model(graph)


def test_may_declare_extension_sees_field_1000_and_1001_in_any_varint_form():
    plain = helper.make_tensor_type_proto(TensorProto.FLOAT, [2]).tensor_type.SerializeToString()
    assert not may_declare_extension(_declared(plain))
    typed = onnx.ValueInfoProto(name="t")
    write_qtype(typed, int8())
    assert may_declare_extension(helper.make_model(helper.make_graph([], "g", [], [], value_info=[typed])))
    # tag 8002 (field 1000, length-delimited) padded with a continuation byte, and field 1001 as a varint
    for tag in (b"\xc2\xbe\x00", b"\xc8\x3e"):
        payload = b"\x00" if tag == b"\xc2\xbe\x00" else b""
        extra = tag + (b"\x01" + payload if tag == b"\xc2\xbe\x00" else b"\x05")
        assert may_declare_extension(_declared(plain + extra)), tag


def test_from_values_is_the_unvalidated_constructor():
    args = (STORAGE_TYPES["int4"], [0.5, 0.25], [1, -2], 0, None, EXPRESSED_TYPES["float16"])
    made = QType.from_values(*args, Schema.SYMMETRIC, "w_scale", None)
    want = QType("int4", [0.5, 0.25], [1, -2], 0, None, Schema.SYMMETRIC, expressed="float16",
                 scale_tensor="w_scale", validate=False)
    assert made == want and made.__dict__ == want.__dict__
    assert QType.from_values(*args[:1], [0.5], [], None, None, args[5]).zero_point == (0,)
    odd = QType.from_values(args[0], [np.float64(0.5)], [np.int64(3)], None, None, args[5])  # coerced as QType does
    assert odd == QType("int4", 0.5, 3, expressed="float16", validate=False) and type(odd.scale[0]) is float


def test_topological_order_in_one_vector_step_agrees_with_reading_node_by_node():
    nodes = [helper.make_node("Relu", ["b"], ["c"]), helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Relu", ["x"], ["a"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])], [])
    assert topological_order(graph, "/graph") == [2, 1, 0]
    del graph.node[:]
    graph.node.extend(reversed(nodes))
    assert topological_order(graph, "/graph") is None


def test_a_string_that_is_not_utf8_is_found_where_the_walk_finds_it():
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], doc_string="abc\u00e9")],
                                                "g", [], []))
    data = model.SerializeToString().replace("abc\u00e9".encode(), b"abc\xff\xfe")  # as many bytes
    broken = onnx.ModelProto.FromString(data)
    assert first_non_utf8_string(broken) == _first_in(broken) == ("/graph/node/0/doc_string", b"abc\xff\xfe")
    assert first_non_utf8_string(model) is None


@pytest.mark.parametrize("field", ["doc_string", "external_data", "metadata_props"])
def test_the_walk_reads_a_tensor_s_text_fields_and_not_its_values(field):
    """The walk locates a tensor's text (name, doc string, external-data and metadata entries) without copying its
    values out: raw_data that is no text is never reported (a model over the proto3 parse's limit is walked)."""
    tensor = numpy_helper.from_array(np.frombuffer(b"\xff\xfe\xfd\xfc", np.uint8), "w")
    if field == "doc_string":
        tensor.doc_string = "@@"
    else:
        getattr(tensor, field).add(key="@@", value="v")
    model = helper.make_model(helper.make_graph([], "g", [], [], [tensor]))
    broken = onnx.ModelProto.FromString(model.SerializeToString().replace(b"@@", b"\xff\xfe"))
    where = "/graph/initializer/0/" + ("doc_string" if field == "doc_string" else f"{field}/0/key")
    assert first_non_utf8_string(broken) == _first_in(broken) == (where, b"\xff\xfe")
    assert _first_in(model) is None


def test_the_walk_does_not_copy_a_tensor_s_values():
    """A weight of 64 MB in raw_data: the walk read every field of every message it met, and a tensor's values came
    out as a bytes copy of each weight (a model over the proto3 parse's limit is walked: billions of weights)."""
    import tracemalloc  # noqa: PLC0415

    weight = numpy_helper.from_array(np.zeros(1 << 26, np.uint8), "w")
    model = helper.make_model(helper.make_graph([], "g", [], [], [weight]))
    tracemalloc.start()
    try:
        assert _first_in(model) is None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 24, peak  # far below one copy of the values


def test_the_lifts_declarations_written_as_bytes_are_those_write_qtype_makes():
    from onnx_qtypes.interop.lift import _typed_value_info  # noqa: PLC0415
    from onnx_qtypes.proto.reader import WrittenTypes  # noqa: PLC0415
    from onnx_qtypes.proto.statistics import Statistics, TensorStatistics  # noqa: PLC0415

    per_axis = QType("uint8", [0.5, 0.25], [3, 4], axis=1, expressed="float16")
    cases = [(int8(), (1, 16, 8, 8), ""), (int8(), None, "a doc"), (int8(), (), ""),
             (per_axis, (2, 2), ""), (per_axis, (None, 2), "x"),
             (int8().with_statistics(TensorStatistics(Statistics(min=-1.0, max=2.0))), (3,), "")]
    for qtype, shape, doc in cases:
        written = WrittenTypes()
        found = onnx.GraphProto.FromString(_typed_value_info("t\u00e9", qtype, shape, doc, {}, written)).value_info
        want = helper.make_tensor_value_info("t\u00e9", TensorProto.FLOAT, None if shape is None else list(shape), doc)
        write_qtype(want, qtype)
        assert len(found) == 1 and found[0] == want, (qtype, shape)
        if qtype.statistics is None:  # the checker's index finds it by its TypeProto's bytes
            assert list(written.declared) == [want.type.SerializeToString()]


def _screened_and_read(nodes: list, inits: list, inputs: tuple[str, ...] = ()) -> tuple[dict, dict]:
    """(what the bulk screen passes, what read_parameters says of every Q / DQ node: a QType or the exception)."""
    from onnx_qtypes.interop.graph import GraphIndex, infer  # noqa: PLC0415
    from onnx_qtypes.interop.parameter_screen import screen  # noqa: PLC0415
    from onnx_qtypes.interop.recognise import QDQ_DOMAINS, recognise_node  # noqa: PLC0415

    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3])
                                           for n in ("x", *inputs)], [], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    ix = GraphIndex(model.graph, infer(model, initializers=False), opset=21)
    read: dict = {}
    for i, node in enumerate(ix.nodes):
        try:
            read[i] = recognise_node(ix, i, node).evidence[0].qtype
        except Exception as exc:  # noqa: BLE001 - the problem itself is what is compared
            read[i] = exc
    return screen(ix, QDQ_DOMAINS), read


def test_the_parameter_screen_passes_only_what_read_parameters_accepts_and_gives_its_qtypes():
    from onnx import numpy_helper  # noqa: PLC0415

    def init(name: str, values, dtype) -> onnx.TensorProto:  # noqa: ANN001
        return numpy_helper.from_array(np.array(values, dtype), name)

    inits = [init("s", 0.5, np.float32), init("z", 3, np.uint8), init("s3", [0.5, 0.25, 1.0], np.float32),
             init("z3", [0, 1, 2], np.int8), init("s0", 0.0, np.float32), init("s2", [0.5, 0.25], np.float32),
             init("z2", [0, 0], np.int8), init("w", np.zeros((2, 3)), np.int8), init("snan", np.nan, np.float32),
             init("s64", 0.5, np.float64), init("g", 0.5, np.float32)]
    listed = onnx.TensorProto(name="zl", data_type=TensorProto.UINT8, int32_data=[3])  # not in raw_data
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),  # plain, per-tensor
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node("DequantizeLinear", ["w", "s3", "z3"], ["dw"], axis=1),  # plain, per-axis
             helper.make_node("DequantizeLinear", ["w", "s3", "z3"], ["dw0"], axis=0),  # 3 scales, 2 slices
             helper.make_node("DequantizeLinear", ["w", "s3", "z3"], ["dw5"], axis=5),  # axis out of range
             helper.make_node("DequantizeLinear", ["w", "s2", "z3"], ["dwz"], axis=0),  # 2 scales, 3 zero points
             helper.make_node("QuantizeLinear", ["x", "s0", "z"], ["q0"]),  # scale 0
             helper.make_node("QuantizeLinear", ["x", "snan", "z"], ["qn"]),  # scale NaN
             helper.make_node("QuantizeLinear", ["x", "s64", "z"], ["q64"]),  # a double scale
             helper.make_node("QuantizeLinear", ["x", "g", "z"], ["qg"]),  # scale a graph input
             helper.make_node("QuantizeLinear", ["x", "s", "zl"], ["ql"]),  # zero point in int32_data
             helper.make_node("DequantizeLinear", ["w", "s", "z"], ["dwu"]),  # int8 tensor, uint8 zero point
             helper.make_node("DequantizeLinear", ["w", "s2", "z2"], ["dw2"], axis=0, block_size=1)]  # blocked
    screened, read = _screened_and_read(nodes, [*inits, listed], inputs=("g",))
    assert sorted(screened) == [0, 1, 2]
    for i, found in screened.items():
        assert found.qtype == read[i] and found.quantize == (nodes[i].op_type == "QuantizeLinear")
    assert all(isinstance(read[i], Exception) for i in range(3, len(nodes)) if i != 10)  # each a problem, left
    assert read[10] == read[0]  # a zero point in int32_data: valid, left to read_parameters all the same


def _types_both_ways(model: onnx.ModelProto, names: tuple[str, ...] = ()) -> tuple[dict, dict]:
    """name -> (elem_type, shape) of ``names`` (default: every tensor of the main graph), by a GraphIndex of the whole
    inference and by one of a DeferredInference (asked name by name, as the lift asks)."""
    from onnx_qtypes.interop.graph import GraphIndex, infer
    from onnx_qtypes.interop.inference import DeferredInference

    whole = GraphIndex(model.graph, infer(model, initializers=False))
    deferred = GraphIndex(model.graph, DeferredInference(model))
    names = names or sorted(whole.tensor_names() | {vi.name for vi in model.graph.value_info})
    return ({n: (whole.elem_type(n), whole.shape(n)) for n in names},
            {n: (deferred.elem_type(n), deferred.shape(n)) for n in names})


def _qdq_chain(value_info: list, nodes_first: list | None = None, opset: int = 21, **dq_attrs) -> onnx.ModelProto:
    from onnx import numpy_helper

    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "s"),
             numpy_helper.from_array(np.array(3, np.int8), "z"),
             numpy_helper.from_array(np.ones((4, 3), np.int8), "w"),
             numpy_helper.from_array(np.full(4, 0.25, np.float32), "ws")]
    nodes = [helper.make_node("Identity", ["x"], ["a"]), helper.make_node("QuantizeLinear", ["a", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node("DequantizeLinear", ["w", "ws"], ["dw"], axis=0, **dq_attrs),
             helper.make_node("MatMul", ["d", "dw"], ["y"])]
    graph = helper.make_graph((nodes_first or []) + nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                                [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits,
                              value_info=value_info)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def test_deferred_inference_gives_the_whole_inferences_answers_without_running_it_on_a_declared_qdq_file(monkeypatch):
    from onnx_qtypes.interop.inference import DeferredInference

    def whole(self):
        raise AssertionError("the whole model's inference ran")

    declared = _qdq_chain([])
    written = ("a", "q", "d", "dw")  # by Identity / Q / DQ nodes from the declared input and initializers
    by_whole, _ = _types_both_ways(declared, written)
    monkeypatch.setattr(DeferredInference, "full", whole)
    _, by_deferred = _types_both_ways(declared, written)
    for name in written:
        assert by_deferred[name] == by_whole[name] and by_whole[name][0]
    assert by_whole["q"] == (TensorProto.INT8, (2, 4)) and by_whole["dw"] == (TensorProto.FLOAT, (4, 3))


def test_deferred_inference_agrees_where_a_file_declares_otherwise_or_a_node_cannot_tell():
    variants = {
        "conflicting declaration": _qdq_chain([helper.make_tensor_value_info("q", TensorProto.UINT8, [2, 5])]),
        "symbolic declaration": _qdq_chain([helper.make_tensor_value_info("a", TensorProto.FLOAT, ["n", 4])]),
        "declared, not static": _qdq_chain([helper.make_tensor_value_info("q", TensorProto.INT8, ["n", 5])]),
        "declared twice": _qdq_chain([helper.make_tensor_value_info("d", TensorProto.FLOAT, [2, 4]),
                                      helper.make_tensor_value_info("d", TensorProto.FLOAT, [2, 9])]),
        "written twice": _qdq_chain([], [helper.make_node("Identity", ["x"], ["q"])]),
        "unsorted": _qdq_chain([], [helper.make_node("Relu", ["d"], ["r"])]),
        "bad axis": _qdq_chain([], opset=21, block_size=0),
        "opset 10": _qdq_chain([], opset=10),
        "opset 13 per-axis": _qdq_chain([], opset=13),
        "output_dtype": _qdq_chain([], opset=23, output_dtype=TensorProto.FLOAT16),
    }
    ai_onnx = _qdq_chain([])  # a node of domain "ai.onnx" where only "" is imported: onnx skips it
    ai_onnx.graph.node[1].domain = "ai.onnx"
    ir3 = _qdq_chain([])  # before IR 4 an initializer that is not a graph input has no type
    ir3.ir_version = 3
    conflicting_input = _qdq_chain([])  # a graph input an initializer also names, declared otherwise: inference fails
    conflicting_input.graph.input.append(helper.make_tensor_value_info("ws", TensorProto.FLOAT, [3]))
    written_later = _qdq_chain([])  # the Identity writing the QuantizeLinear's input comes after it in the file
    identity = onnx.NodeProto()
    identity.CopyFrom(written_later.graph.node[0])
    del written_later.graph.node[0]
    written_later.graph.node.insert(1, identity)
    twice = _qdq_chain([], opset=23, output_dtype=TensorProto.FLOAT16)  # "" imported twice: which version counts
    twice.opset_import.append(helper.make_opsetid("", 13))
    variants.update({"ai.onnx node": ai_onnx, "IR 3": ir3, "conflicting input": conflicting_input,
                     "written later": written_later, "domain imported twice": twice})
    for label, model in variants.items():
        by_whole, by_deferred = _types_both_ways(model)
        assert by_deferred == by_whole, label


def test_a_model_protobuf_cannot_serialize_gets_its_declarations_as_its_inferred_types(monkeypatch):
    from onnx_qtypes.interop.inference import DeferredInference, declared_types, infer  # noqa: PLC0415

    model = _qdq_chain([helper.make_tensor_value_info("d", TensorProto.FLOAT, [2, 4])])

    def too_big(self):  # noqa: ANN001, ANN202 - as protobuf refuses a message over 2 GiB
        raise ValueError("Message onnx.ModelProto exceeds maximum protobuf size of 2GB")

    monkeypatch.setattr(onnx.ModelProto, "SerializeToString", too_big)
    want = declared_types(model.graph)
    assert infer(model) == want and DeferredInference(model).full() == want


def test_deferred_inference_agrees_on_the_suites_qdq_models():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "conformance_tests" / "cases" / "execution"
    files = sorted(root.glob("*/model.qdq.onnx"))[::12]
    assert len(files) > 100
    for path in files:
        by_whole, by_deferred = _types_both_ways(onnx.load(path))
        assert by_deferred == by_whole, path.parent.name
