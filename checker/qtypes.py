"""QType from a QuantizedType message, fast.

``QType.from_proto(..., validate=False)`` checks every scale and zero point
with generic number tests (about 70 µs for a 16-channel type); the checker
reads thousands of types whose fields are already typed by protobuf. This
builds the identical object directly when the storage and expressed types
are known, and falls back to ``QType.from_proto`` otherwise — or if QType's
fields ever change. tests/test_checker_context.py proves both give equal
objects.
"""

from __future__ import annotations

import dataclasses

from onnx_qtypes.proto import onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.qtype import EXPRESSED_BY_DATA_TYPE, STORAGE_BY_DATA_TYPE, QType, Schema, TensorStatistics

_FIELDS = ("storage", "scale", "zero_point", "axis", "block_size", "schema", "storage_min", "storage_max",
           "expressed", "statistics")
_FAST = tuple(f.name for f in dataclasses.fields(QType)) == _FIELDS and not hasattr(QType, "__slots__")
_SCHEMAS = {s.value: s for s in Schema}


def qtype_from_proto(msg: pb.QuantizedType, statistics: TensorStatistics | None = None) -> QType:
    """The unvalidated QType of ``msg`` (equal to ``QType.from_proto(msg, statistics, validate=False)``)."""
    storage = STORAGE_BY_DATA_TYPE.get(msg.storage_type)
    expressed = EXPRESSED_BY_DATA_TYPE.get(msg.expressed_type)
    if not _FAST or storage is None or expressed is None:
        return QType.from_proto(msg, statistics, validate=False)
    scales = tuple(msg.scale)
    has = msg.HasField
    values = (
        storage.name,
        scales,
        tuple(msg.zero_point) or ((0,) * len(scales)),
        msg.axis if has("axis") else None,
        msg.block_size if has("block_size") else None,
        _SCHEMAS.get(msg.schema, Schema.ASYMMETRIC),
        msg.storage_min if has("storage_min") else storage.min,
        msg.storage_max if has("storage_max") else storage.max,
        expressed.name,
        statistics,
    )
    qtype = object.__new__(QType)
    object.__getattribute__(qtype, "__dict__").update(zip(_FIELDS, values))  # frozen: no __setattr__
    return qtype
