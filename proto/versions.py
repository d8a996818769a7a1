"""Extension versions, and the fields and values a reader of this version does not know (it refuses them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet

from onnx_qtypes.proto import onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.schema import Schema

_SCHEMA_FIELD = pb.QuantizedType.DESCRIPTOR.fields_by_name["schema"].number


# Extension versions this reader knows. 1: the fields of the first release (a type without `version`);
# 2: parameters by reference (scale_tensor, zero_point_tensor); 3: the LLM weight formats (offset,
# offset_tensor, codebook, quantized and narrower-float parameter tensors: proposal/spec/llm_formats.md).
# A writer writes the lowest version whose fields the type uses, so that a type an older reader can read
# stays readable by it.
KNOWN_VERSIONS = (1, 2, 3)
REFERENCES_VERSION = 2
LLM_FORMATS_VERSION = 3
# fields a version adds (a field of a later version than the type declares is unknown to that version)
VERSION_FIELDS = {2: ("scale_tensor", "zero_point_tensor"), 3: ("offset", "offset_tensor", "codebook")}
_SINGULAR = ("scale_tensor", "zero_point_tensor", "offset_tensor")  # the others are repeated: present when non-empty


def fields_version(qtype: Any) -> int:
    """The lowest version whose fields a QType (or anything with its attribute names) uses."""
    if getattr(qtype, "codebook", ()) or any(getattr(qtype, "offset", ())) or getattr(qtype, "offset_tensor", None):
        return LLM_FORMATS_VERSION
    if getattr(qtype, "scale_tensor", None) is not None or getattr(qtype, "zero_point_tensor", None) is not None:
        return REFERENCES_VERSION
    return 1


def declared_version(msg: pb.QuantizedType) -> int:
    """The version a message declares (absent: 1)."""
    return msg.version if msg.HasField("version") else 1


def unknown_fields(msg: Message, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    """(path, what) for every field or schema value of ``msg`` (a QuantizedType or TensorStatistics, nested
    Statistics included) this version does not define. Protobuf keeps such a field aside and reads the
    default, so an unknown schema would read as asymmetric: every reader reports these (checker: QT115)."""
    if isinstance(msg, pb.QuantizedType) and msg.HasField("version") and msg.version not in KNOWN_VERSIONS:
        yield (*path, "version"), (
            f"extension version {msg.version} is not one this reader knows ({', '.join(map(str, KNOWN_VERSIONS))}); "
            "read the model with a newer onnx-qtypes"
        )
    elif isinstance(msg, pb.QuantizedType):  # a field of a later version than the type declares: not its field
        declared = declared_version(msg)
        for version, fields in VERSION_FIELDS.items():
            for field in fields if declared < version else ():
                if msg.HasField(field) if field in _SINGULAR else len(getattr(msg, field)):
                    yield (*path, field), (f"field {field} belongs to extension version {version}, but the "
                                           f"type declares version {declared}; a version-{declared} reader does "
                                           f"not know it (write version {version})")
    for field in UnknownFieldSet(msg):
        if isinstance(msg, pb.QuantizedType) and field.field_number == _SCHEMA_FIELD and field.wire_type == 0:
            known = ", ".join(f"{s.name.lower()} ({s.value})" for s in Schema)
            yield (*path, "schema"), f"value {field.data} is not defined by this version of the extension (known: {known})"
        else:
            yield path, f"{type(msg).__name__} field {field.field_number} is not defined by this version of the extension"
    if isinstance(msg, pb.TensorStatistics):
        if msg.HasField("tensor"):
            yield from unknown_fields(msg.tensor, (*path, "tensor"))
        for i, entry in enumerate(msg.per_axis):
            yield from unknown_fields(entry, (*path, "per_axis", i))


def unknown_field_problem(msg: Message, path: str = "quantization") -> str | None:
    """The first of ``unknown_fields`` as one line ("quantization.schema: value 9 is not defined ..."), or None."""
    for segments, what in unknown_fields(msg, (path,)):
        dotted = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in segments)[1:]
        return f"{dotted}: {what}"
    return None
