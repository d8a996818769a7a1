"""Every declaration of a graph as (name, serialized TypeProto), read with one copy and one parse.

Reading a ValueInfoProto's type through onnx's classes costs a few protobuf
calls per declaration (``vi.type``, ``.WhichOneof``, ``.SerializeToString``),
which on a model of thousands of declarations costs more than some rules.
Here a graph's declarations are copied into one GraphProto, serialized once
and parsed as ``Declarations``: a wire-compatible reading of GraphProto that
keeps each declaration's name and its TypeProto as bytes (fields onnx.proto
gives them: ValueInfoProto.name = 1, .type = 2; GraphProto.input = 11,
.output = 12, .value_info = 13; everything else stays unread).
"""

from __future__ import annotations

from collections.abc import Iterable

import onnx
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_KINDS = {"input": 11, "output": 12, "value_info": 13}


def _message_classes() -> type:
    file = descriptor_pb2.FileDescriptorProto(name="onnx_qtypes_checker_declarations.proto",
                                              package="onnx_qtypes_checker", syntax="proto2")
    label, types = descriptor_pb2.FieldDescriptorProto, descriptor_pb2.FieldDescriptorProto
    decl = file.message_type.add(name="Declaration")
    decl.field.add(name="name", number=1, type=types.TYPE_STRING, label=label.LABEL_OPTIONAL)
    decl.field.add(name="type", number=2, type=types.TYPE_BYTES, label=label.LABEL_OPTIONAL)
    lists = file.message_type.add(name="Declarations")
    for kind, number in _KINDS.items():
        lists.field.add(name=kind, number=number, type=types.TYPE_MESSAGE, label=label.LABEL_REPEATED,
                        type_name=".onnx_qtypes_checker.Declaration")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("onnx_qtypes_checker.Declarations"))


_Declarations = _message_classes()


def read(lists: dict[str, Iterable[onnx.ValueInfoProto]]) -> dict[str, list[tuple[str, bytes]]]:
    """kind -> [(name, TypeProto bytes)] for each of "input", "output", "value_info" given, in order.

    The bytes are what ``vi.type.SerializeToString()`` gives (b"" when the declaration has no type).
    """
    graph = onnx.GraphProto()
    for kind, values in lists.items():
        getattr(graph, kind).extend(values)
    parsed = _Declarations.FromString(graph.SerializeToString())
    return {kind: [(d.name, d.type) for d in getattr(parsed, kind)] for kind in lists}
