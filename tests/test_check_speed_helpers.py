"""The helpers that make `check` on a QDQ file cheaper give the answers of the slower code they stand in for."""

from __future__ import annotations

import numpy as np
import onnx
from checker_models import int8
from onnx import TensorProto, helper

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
