"""The declared schema of a quantized type: a predicate on its scales and zero points (proto enum ``Schema``)."""

from __future__ import annotations

import enum

from onnx_qtypes.proto import onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.coerce import is_int
from onnx_qtypes.proto.errors import QTypeError


class Schema(enum.Enum):
    """Declared predicate on scale and zero point (proto enum ``Schema``)."""

    ASYMMETRIC = pb.ASYMMETRIC
    SYMMETRIC = pb.SYMMETRIC
    SYMMETRIC_WITH_UNSIGNED = pb.SYMMETRIC_WITH_UNSIGNED
    ASYMMETRIC_POW2_SCALE = pb.ASYMMETRIC_POW2_SCALE
    SYMMETRIC_POW2_SCALE = pb.SYMMETRIC_POW2_SCALE

    @property
    def symmetric(self) -> bool:
        return self in (Schema.SYMMETRIC, Schema.SYMMETRIC_POW2_SCALE)

    @property
    def pow2(self) -> bool:
        return self in (Schema.ASYMMETRIC_POW2_SCALE, Schema.SYMMETRIC_POW2_SCALE)

    @classmethod
    def parse(cls, value: Schema | str | int) -> Schema:
        if isinstance(value, Schema):
            return value
        if isinstance(value, str):
            key = value.strip().upper().replace("-", "_")
            if key in cls.__members__:
                return cls[key]
        elif is_int(value) and value in {s.value for s in cls}:
            return cls(value)
        names = ", ".join(s.name.lower() for s in cls)
        raise QTypeError("schema", f"unknown schema {value!r}; expected one of {names}")


SCHEMAS_BY_VALUE = {s.value: s for s in Schema}
