"""Input checks shared by lift and lower that the type validity helpers of ``proto.qtype`` do not cover.

- ``invalid_utf8``: onnx.proto is proto2, so a parser accepts ``string``
  fields holding bytes that are not UTF-8 and Python then returns ``bytes``
  where every tool expects ``str``. The first such field, as a JSON pointer.
- ``unknown_field``: a field number or ``schema`` value of the extension's
  messages that this version does not define (protobuf keeps them silently;
  rewriting the message would drop them).
"""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet

from onnx_qtypes.proto import onnx_qtypes_pb2 as pb

_STRING, _MESSAGE = FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_MESSAGE
SCHEMA_FIELD = pb.QuantizedType.DESCRIPTOR.fields_by_name["schema"].number


def _submessages(message: Message) -> Iterator[tuple[str, int | None, Message]]:
    """(field name, index or None, message) for every message set inside ``message``, one level down."""
    for field, value in message.ListFields():
        if field.type != _MESSAGE:
            continue
        if field.is_repeated:
            for i, item in enumerate(value):
                yield field.name, i, item
        else:
            yield field.name, None, value


def invalid_utf8(message: Message, pointer: str = "") -> tuple[str, bytes] | None:
    """(JSON pointer, bytes) of the first string field of ``message`` that is not UTF-8, or None.

    One pass over every message of the model (about 15 µs per node), so it
    walks the fields itself rather than through ``_submessages``.
    """
    inside = []
    for field, value in message.ListFields():
        if field.type == _STRING:
            if not field.is_repeated:
                if value.__class__ is bytes:
                    return f"{pointer}/{field.name}", value
                continue
            for i, item in enumerate(value):
                if item.__class__ is bytes:
                    return f"{pointer}/{field.name}/{i}", item
        elif field.type == _MESSAGE:
            inside.append((field, value))
    for field, value in inside:
        for i, item in enumerate(value) if field.is_repeated else [(None, value)]:
            found = invalid_utf8(item, f"{pointer}/{field.name}" + ("" if i is None else f"/{i}"))
            if found:
                return found
    return None


def unknown_field(message: Message, path: str) -> str | None:
    """What the first field or enum value unknown to this version in ``message`` (or inside it) is, or None."""
    kind = type(message).__name__
    for field in UnknownFieldSet(message):
        if isinstance(message, pb.QuantizedType) and field.field_number == SCHEMA_FIELD and field.wire_type == 0:
            known = ", ".join(f"{v.name.lower()} ({v.number})" for v in pb.Schema.DESCRIPTOR.values)
            return f"{path}.schema: value {field.data} is not defined by this version of the extension (known: {known})"
        return f"{path}: {kind} field {field.field_number} is not defined by this version of the extension"
    for name, i, sub in _submessages(message):
        found = unknown_field(sub, f"{path}.{name}" + ("" if i is None else f"[{i}]"))
        if found:
            return found
    return None


__all__ = ["invalid_utf8", "unknown_field"]
