"""Every declaration of a graph as (name, serialized TypeProto), read with one copy and one parse.

Shared by the checker (every declaration of the model it checks) and the lift (what onnx.shape_inference
declared: ``main_graph``).

Reading a ValueInfoProto's type through onnx's classes costs a few protobuf
calls per declaration (``vi.type``, ``.WhichOneof``, ``.SerializeToString``),
which on a model of thousands of declarations costs more than some rules.
Here a graph's declarations are copied into one GraphProto, serialized once
and parsed as ``Declarations``: a wire-compatible reading of GraphProto that
keeps each declaration's name and its TypeProto as bytes (fields onnx.proto
gives them: ValueInfoProto.name = 1, .type = 2; GraphProto.input = 11,
.output = 12, .value_info = 13; everything else stays unread). A distinct
TypeProto is then parsed once more, straight into the extended view
(``TypeView``: TypeProto.tensor_type = 1 read as TensorTypeView).
"""

from __future__ import annotations

from collections.abc import Iterable

import onnx
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from onnx_qtypes.proto import onnx_qtypes_pb2 as pb

_KINDS = {"input": 11, "output": 12, "value_info": 13}


def _message_classes() -> tuple[type, ...]:
    file = descriptor_pb2.FileDescriptorProto(name="onnx_qtypes_checker_declarations.proto",
                                              package="onnx_qtypes_checker", syntax="proto2",
                                              dependency=[pb.DESCRIPTOR.name])
    label, types = descriptor_pb2.FieldDescriptorProto, descriptor_pb2.FieldDescriptorProto
    decl = file.message_type.add(name="Declaration")
    decl.field.add(name="name", number=1, type=types.TYPE_STRING, label=label.LABEL_OPTIONAL)
    decl.field.add(name="type", number=2, type=types.TYPE_BYTES, label=label.LABEL_OPTIONAL)
    lists = file.message_type.add(name="Declarations")
    for kind, number in _KINDS.items():
        lists.field.add(name=kind, number=number, type=types.TYPE_MESSAGE, label=label.LABEL_REPEATED,
                        type_name=".onnx_qtypes_checker.Declaration")
    # ModelProto read as its main graph's declarations (ModelProto.graph = 7; every other field stays unread)
    model = file.message_type.add(name="ModelDeclarations")
    model.field.add(name="graph", number=7, type=types.TYPE_MESSAGE, label=label.LABEL_OPTIONAL,
                    type_name=".onnx_qtypes_checker.Declarations")
    # TypeProto read with its tensor_type as the extended view (TypeProto.tensor_type = 1; other members unread)
    type_view = file.message_type.add(name="TypeView")
    type_view.field.add(name="tensor_type", number=1, type=types.TYPE_MESSAGE, label=label.LABEL_OPTIONAL,
                        type_name=".onnx_qtypes.TensorTypeView")
    pool = descriptor_pool.Default()  # where the generated onnx_qtypes.proto lives
    try:
        pool.FindFileByName(file.name)
    except KeyError:
        pool.Add(file)
    return tuple(message_factory.GetMessageClass(pool.FindMessageTypeByName(f"onnx_qtypes_checker.{name}"))
                 for name in ("Declarations", "TypeView", "Declaration", "ModelDeclarations"))


# Declaration is held as well: a class made on demand for each parse would be a reference cycle per run.
_Declarations, _TypeView, _Declaration, _ModelDeclarations = _message_classes()


def tensor_type_view(type_bytes: bytes) -> pb.TensorTypeView | None:
    """A serialized TypeProto's tensor_type parsed as the extended view in one step; None if not a tensor type.

    Raises DecodeError when field 1000 or 1001 does not decode.
    """
    type_view = _TypeView.FromString(type_bytes)
    return type_view.tensor_type if type_view.HasField("tensor_type") else None


def read(lists: dict[str, Iterable[onnx.ValueInfoProto]]) -> dict[str, list[tuple[str, bytes]]]:
    """kind -> [(name, TypeProto bytes)] for each of "input", "output", "value_info" given, in order.

    The bytes are what ``vi.type.SerializeToString()`` gives (b"" when the declaration has no type).
    """
    graph = onnx.GraphProto()
    for kind, values in lists.items():
        getattr(graph, kind).extend(values)
    parsed = _Declarations.FromString(graph.SerializeToString())
    return {kind: [(d.name, d.type) for d in getattr(parsed, kind)] for kind in lists}


def main_graph(model_bytes: bytes) -> dict[str, list[tuple[str, bytes]]]:
    """kind -> [(name, TypeProto bytes)] of the main graph of a serialized ModelProto, as ``read`` gives them,
    without reading the nodes or initializers into messages. Raises DecodeError when the bytes do not parse."""
    graph = _ModelDeclarations.FromString(model_bytes).graph
    return {kind: [(d.name, d.type) for d in getattr(graph, kind)] for kind in _KINDS}
