"""Refuse a model whose names are not text.

onnx.proto is proto2, so protobuf parses a ``string`` field holding bytes
that are not UTF-8 and Python then returns ``bytes`` where every tool (and
every dict keyed by tensor name) expects ``str``: a graph that silently
connects nothing, or a TypeError deep inside onnx. ``first_non_utf8_name``
reads only the fields that name things (nodes, tensors, attributes, opset
domains, functions, graphs) and the model's producer, domain and doc
strings, to say which name it is; the shared reader then checks every other
string field of the whole message with ``first_non_utf8_string`` (what lift
and lower copy and rewrite: doc strings, metadata, quantization annotations),
so that every command refuses the same files: protobuf parses the model's
bytes once with proto3's UTF-8 rule, under 1 µs per node; only a model that
fails it is walked, about 15 µs per node, to locate the field.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import onnx
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from onnx_qtypes.proto.errors import ModelLoadError
from onnx_qtypes.proto.model import iter_graphs, iter_node_graphs

MODEL_TEXT_FIELDS = ("producer_name", "producer_version", "domain", "doc_string")  # copied by tools as text
_NODE_FIELDS = ("name", "op_type", "domain")
_DECLARATIONS = ("input", "output", "value_info", "initializer")


def _first_field(pointer: str, message: object, fields: Iterable[str]) -> tuple[str, bytes] | None:
    for field in fields:
        value = getattr(message, field)
        if value.__class__ is bytes:
            return f"{pointer}/{field}", value
    return None


def _first_bytes(pointer: str, values: Iterable[object], tail: str = "") -> tuple[str, bytes] | None:
    for i, value in enumerate(values):
        if value.__class__ is bytes:
            return f"{pointer}/{i}{tail}", value  # type: ignore[return-value]
    return None


def _in_nodes(pointer: str, nodes: Iterable[onnx.NodeProto]) -> tuple[str, bytes] | None:
    for n, node in enumerate(nodes):
        here = f"{pointer}/node/{n}"
        found = (_first_field(here, node, _NODE_FIELDS) or _first_bytes(f"{here}/input", node.input)
                 or _first_bytes(f"{here}/output", node.output)
                 or _first_bytes(f"{here}/attribute", (a.name for a in node.attribute), "/name"))
        if found:
            return found
    return None


def first_non_utf8_name(model: onnx.ModelProto) -> tuple[str, bytes] | None:
    """(JSON pointer, bytes) of the first name in ``model`` that is not UTF-8 text, or None."""
    found = _first_field("", model, MODEL_TEXT_FIELDS) or _first_bytes(
        "/opset_import", (o.domain for o in model.opset_import), "/domain")
    for pointer, graph in iter_graphs(model):
        found = found or _in_graph(pointer, graph)
    for f, function in enumerate(model.functions):
        here = f"/functions/{f}"
        found = (found or _first_field(here, function, ("name", "domain"))
                 or _first_bytes(f"{here}/input", function.input) or _first_bytes(f"{here}/output", function.output)
                 or _first_bytes(f"{here}/value_info", (v.name for v in function.value_info), "/name")
                 or _in_nodes(here, function.node))
        for n, node in enumerate(function.node):  # If / Loop / Scan bodies inside the function
            for pointer, graph in iter_node_graphs(f"{here}/node/{n}", node):
                found = found or _in_graph(pointer, graph)
    return found


def _in_graph(pointer: str, graph: onnx.GraphProto) -> tuple[str, bytes] | None:
    found = _first_field(pointer, graph, ("name", "doc_string")) or _in_nodes(pointer, graph.node)
    for kind in _DECLARATIONS:
        found = found or _first_bytes(f"{pointer}/{kind}", (v.name for v in getattr(graph, kind)), "/name")
    return found or _first_bytes(f"{pointer}/sparse_initializer", (v.values.name for v in graph.sparse_initializer),
                                 "/values/name")


def first_non_utf8_string(message: Message, pointer: str = "") -> tuple[str, bytes] | None:
    """(JSON pointer, bytes) of the first ``string`` field anywhere in ``message`` that is not UTF-8, or None."""
    if isinstance(message, onnx.ModelProto) and _all_text(message):
        return None
    return _first_in(message, pointer)


_CHECKED_BYTES = 256 << 20  # a larger model (its weights in memory) is walked: no copy of it is made


def _all_text(model: onnx.ModelProto) -> bool:
    """True when every ``string`` field of ``model`` is UTF-8, decided by protobuf itself: the model's bytes
    parsed as ``_text_checked_model()``, onnx.proto read with proto3's rule that a string is UTF-8. False
    when that cannot say (then ``_first_in`` walks the message and locates the culprit, if any)."""
    try:
        if model.ByteSize() > _CHECKED_BYTES:
            return False
        _text_checked_model().FromString(model.SerializeToString())
    except Exception:  # noqa: BLE001 - bad UTF-8, or anything else protobuf refuses: the walk decides
        return False
    return True


@functools.lru_cache(maxsize=1)
def _text_checked_model() -> type:
    """ModelProto of onnx.proto re-declared in proto3 syntax (same fields and numbers, in its own package and
    pool): parsing a model's bytes with it fails exactly when a string field is not UTF-8. proto2 (onnx.proto)
    hands such a string over as bytes; proto3 refuses it."""
    file = descriptor_pb2.FileDescriptorProto()
    onnx.ModelProto.DESCRIPTOR.file.CopyToProto(file)
    package = file.package
    file.name, file.package, file.syntax = "onnx_qtypes_text_checked.proto", "onnx_qtypes_text_checked", "proto3"

    def proto3(message: descriptor_pb2.DescriptorProto) -> None:
        for field in message.field:
            field.ClearField("default_value")  # proto3 has no explicit defaults; parsing does not use them
            if field.type_name.startswith(f".{package}."):
                field.type_name = f".{file.package}.{field.type_name[len(package) + 2:]}"
        for nested in message.nested_type:
            proto3(nested)

    for message in file.message_type:
        proto3(message)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{file.package}.ModelProto"))


def _first_in(message: Message, pointer: str = "") -> tuple[str, bytes] | None:
    if isinstance(message, onnx.TensorProto):  # its values hold no text: not copied out (a weight held in memory)
        return _first_in_tensor(message, pointer)
    inside = []
    for field, value in message.ListFields():
        if field.type == FieldDescriptor.TYPE_STRING:
            values = enumerate(value) if field.is_repeated else [(None, value)]
            for i, item in values:
                if item.__class__ is bytes:
                    return f"{pointer}/{field.name}" + ("" if i is None else f"/{i}"), item
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            inside.append((field, value))
    for field, value in inside:  # strings of this message first, then one level down
        for i, item in enumerate(value) if field.is_repeated else [(None, value)]:
            found = _first_in(item, f"{pointer}/{field.name}" + ("" if i is None else f"/{i}"))
            if found:
                return found
    return None


def _first_in_tensor(tensor: onnx.TensorProto, pointer: str) -> tuple[str, bytes] | None:
    """``_first_in`` of a tensor's text: its name and doc string, then its external-data and metadata entries."""
    found = _first_field(pointer, tensor, ("name", "doc_string"))
    for field in ("external_data", "metadata_props"):
        for i, entry in enumerate(getattr(tensor, field, ())):
            found = found or _first_field(f"{pointer}/{field}/{i}", entry, ("key", "value"))
    return found


def not_utf8_error(where: str, found: tuple[str, bytes], *,
                   fix: str = "ONNX names and strings must be UTF-8 text (rename it)") -> ModelLoadError:
    """The one message every reader gives for ``found``, after ``where`` (a file, or "" for none)."""
    pointer, value = found
    return ModelLoadError(f"{where + ': ' if where else ''}{pointer} holds {value[:40]!r}, which is not UTF-8; {fix}")


def non_utf8_attribute(node: onnx.NodeProto) -> tuple[str, bytes] | None:
    """(name, bytes) of the node's first STRING / STRINGS attribute holding bytes that are not UTF-8, or None: what
    a step that moves the node into ONNX's domain (whose operators read them as text) must not carry there."""
    for attribute in node.attribute:
        if attribute.type in (onnx.AttributeProto.STRING, onnx.AttributeProto.STRINGS) and (
                found := first_non_utf8_value("", attribute)):
            return attribute.name, found[1]
    return None


def first_non_utf8_element(pointer: str, tensor: onnx.TensorProto) -> tuple[str, bytes] | None:
    """(JSON pointer, bytes) of the first element of a STRING tensor that is not UTF-8, or None (``string_data`` is
    bytes to protobuf; onnx.proto calls each element a UTF-8 string, and onnx.reference decodes it so)."""
    for i, value in enumerate(tensor.string_data):
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return f"{pointer}/string_data/{i}", value
    return None


def first_non_utf8_value(pointer: str, attribute: onnx.AttributeProto) -> tuple[str, bytes] | None:
    """(JSON pointer, bytes) of the first value of a STRING / STRINGS attribute that is not UTF-8, or None
    (``s`` and ``strings`` are bytes to protobuf: nothing has decoded them)."""
    values = [attribute.s] if attribute.type == onnx.AttributeProto.STRING else attribute.strings
    for i, value in enumerate(values):
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return (f"{pointer}/s", value) if attribute.type == onnx.AttributeProto.STRING else (
                f"{pointer}/strings/{i}", value)
    return None


def require_utf8_names(model: onnx.ModelProto, where: str) -> None:
    """Raise ModelLoadError naming the field (after ``where``, if given) when a name in ``model`` is not UTF-8."""
    found = first_non_utf8_name(model)
    if found is not None:
        raise not_utf8_error(where, found)


__all__ = ["MODEL_TEXT_FIELDS", "first_non_utf8_element", "first_non_utf8_name", "first_non_utf8_string",
           "first_non_utf8_value",
           "non_utf8_attribute", "not_utf8_error", "require_utf8_names"]
