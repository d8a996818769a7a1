"""Clean-room decoder of onnx-qtypes QuantizedType (written from proto/onnx_qtypes.proto and spec/types.md only)."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np


class Refuse(Exception):
    """The model is refused (invalid or unreadable)."""


# ---------------------------------------------------------------- storage tables (types.md §2, §2.2)
INT_RANGES = {
    26: (-2, 1), 25: (0, 3), 22: (-8, 7), 21: (0, 15), 3: (-128, 127), 2: (0, 255),
    5: (-32768, 32767), 4: (0, 65535), 6: (-(2 ** 31), 2 ** 31 - 1),
}
FLOAT_STORAGE = {
    17: (ml_dtypes.float8_e4m3fn, 448.0), 18: (ml_dtypes.float8_e4m3fnuz, 240.0),
    19: (ml_dtypes.float8_e5m2, 57344.0), 20: (ml_dtypes.float8_e5m2fnuz, 57344.0),
    23: (ml_dtypes.float4_e2m1fn, 6.0),
}
INT_NP = {26: np.int8, 25: np.uint8, 22: np.int8, 21: np.uint8, 3: np.int8, 2: np.uint8,
          5: np.int16, 4: np.uint16, 6: np.int32}
EXPRESSED_NP = {1: np.float32, 10: np.float16, 16: ml_dtypes.bfloat16}
SUB_BYTE_BITS = {26: 2, 25: 2, 22: 4, 21: 4, 23: 4}


def storage_np(st: int):
    if st in INT_NP:
        return np.dtype(INT_NP[st])
    return np.dtype(FLOAT_STORAGE[st][0])


# ---------------------------------------------------------------- protobuf wire reading
def _varint(buf: bytes, i: int):
    shift = 0
    result = 0
    while True:
        if i >= len(buf):
            raise Refuse("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift > 70:
            raise Refuse("varint too long")


def _signed64(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


def _signed32(v: int) -> int:
    v = _signed64(v)
    v &= (1 << 32) - 1
    return v - (1 << 32) if v >= 1 << 31 else v


def parse_fields(buf: bytes):
    """Yield (field number, wire type, value) with value an int (wt 0, 1, 5 raw ints) or bytes (wt 2)."""
    i = 0
    out = []
    while i < len(buf):
        key, i = _varint(buf, i)
        fn, wt = key >> 3, key & 7
        if fn == 0:
            raise Refuse("field number 0")
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 1:
            if i + 8 > len(buf):
                raise Refuse("truncated fixed64")
            v = buf[i:i + 8]
            i += 8
        elif wt == 5:
            if i + 4 > len(buf):
                raise Refuse("truncated fixed32")
            v = buf[i:i + 4]
            i += 4
        elif wt == 2:
            ln, i = _varint(buf, i)
            if i + ln > len(buf):
                raise Refuse("truncated length-delimited field")
            v = buf[i:i + ln]
            i += ln
        else:
            raise Refuse(f"unsupported wire type {wt}")
        out.append((fn, wt, v))
    return out


def _doubles(wt, v):
    if wt == 1:
        return [struct.unpack("<d", v)[0]]
    if wt == 2:
        if len(v) % 8:
            raise Refuse("packed doubles not a multiple of 8 bytes")
        return list(struct.unpack(f"<{len(v) // 8}d", v))
    raise Refuse("repeated double with wrong wire type")


def _varints(wt, v):
    if wt == 0:
        return [_signed64(v)]
    if wt == 2:
        vals = []
        i = 0
        while i < len(v):
            x, i = _varint(v, i)
            vals.append(_signed64(x))
        return vals
    raise Refuse("repeated varint with wrong wire type")


@dataclass
class RawQType:
    storage_type: int | None = None
    expressed_type: int = 1
    scale: list = field(default_factory=list)
    zero_point: list = field(default_factory=list)
    axis: int | None = None
    block_size: int | None = None
    schema: int = 0
    storage_min: int | None = None
    storage_max: int | None = None
    scale_tensor: str | None = None
    zero_point_tensor: str | None = None
    version: int | None = None
    offset: list = field(default_factory=list)
    offset_tensor: str | None = None
    codebook: list = field(default_factory=list)
    present: set = field(default_factory=set)


SCALAR_VARINT = {1: "storage_type", 2: "expressed_type", 5: "axis", 6: "block_size", 7: "schema",
                 8: "storage_min", 9: "storage_max", 12: "version"}
STRINGS = {10: "scale_tensor", 11: "zero_point_tensor", 14: "offset_tensor"}
DOUBLES = {3: "scale", 13: "offset", 15: "codebook"}
FIELD_VERSION = {10: 2, 11: 2, 12: 2, 13: 3, 14: 3, 15: 3}


def decode_qtype(buf: bytes, where: str) -> RawQType:
    q = RawQType()
    for fn, wt, v in parse_fields(buf):
        q.present.add(fn)
        if fn in SCALAR_VARINT:
            if wt != 0:
                raise Refuse(f"{where}: field {fn} has wire type {wt}")
            val = _signed32(v) if fn in (1, 2, 7, 12) else _signed64(v)
            setattr(q, SCALAR_VARINT[fn], val)
        elif fn in STRINGS:
            if wt != 2:
                raise Refuse(f"{where}: field {fn} has wire type {wt}")
            try:
                setattr(q, STRINGS[fn], v.decode("utf-8"))
            except UnicodeDecodeError as e:
                raise Refuse(f"{where}: field {fn} is not UTF-8") from e
        elif fn in DOUBLES:
            getattr(q, DOUBLES[fn]).extend(_doubles(wt, v))
        elif fn == 4:
            q.zero_point.extend(_varints(wt, v))
        else:
            raise Refuse(f"{where}: QuantizedType carries field {fn}, which the specification does not define")
    return q


def _check_statistics(buf: bytes, where: str):
    for fn, wt, v in parse_fields(buf):
        if fn not in (1, 2, 3, 4, 5, 6, 7):
            raise Refuse(f"{where}: Statistics field {fn} is not defined")


def check_tensor_statistics(buf: bytes, where: str):
    for fn, wt, v in parse_fields(buf):
        if fn not in (1, 2, 3, 4):
            raise Refuse(f"{where}: TensorStatistics field {fn} is not defined")
        if fn in (1, 3):
            if wt != 2:
                raise Refuse(f"{where}: TensorStatistics field {fn} wire type {wt}")
            _check_statistics(v, where)


def decode_tensor_type(buf: bytes, where: str):
    """Return (elem_type, RawQType or None) from the bytes of a TypeProto.Tensor (types.md §1.1 steps 1-3)."""
    elem = 0
    qbuf = None
    for fn, wt, v in parse_fields(buf):
        if fn == 1 and wt == 0:
            elem = _signed32(v)
        elif fn == 1000:
            if wt != 2:
                raise Refuse(f"{where}: field 1000 has wire type {wt}")
            qbuf = v if qbuf is None else qbuf + v  # protobuf merges repeated message fields
        elif fn == 1001:
            if wt != 2:
                raise Refuse(f"{where}: field 1001 has wire type {wt}")
            check_tensor_statistics(v, where)
    if qbuf is None:
        return elem, None
    return elem, decode_qtype(qbuf, where)


# ---------------------------------------------------------------- resolved type
@dataclass
class QT:
    storage: int
    expressed: int
    scales: np.ndarray | None  # float64, flattened; None = dynamic
    zps: np.ndarray | None  # int64, flattened (same count as scales)
    axis: int | None
    block: int | None
    schema: int
    smin: int
    smax: int
    version: int
    offsets: np.ndarray | None = None
    codebook: np.ndarray | None = None
    is_v3: bool = False

    @property
    def is_float(self):
        return self.storage in FLOAT_STORAGE

    @property
    def dynamic(self):
        return self.scales is None

    @property
    def np_storage(self):
        return storage_np(self.storage)

    @property
    def np_expressed(self):
        return np.dtype(EXPRESSED_NP[self.expressed])

    def identity_key(self):
        def arr(a):
            return None if a is None else tuple(float(x) for x in np.asarray(a).ravel())

        offs = self.offsets
        if offs is not None and not np.any(offs):
            offs = None
        zps = None if self.zps is None else tuple(int(x) for x in self.zps)
        return (self.storage, self.expressed, arr(self.scales), zps, self.axis, self.block, self.schema,
                self.smin, self.smax, arr(offs), arr(self.codebook))

    def with_params(self, scales, zps):
        return QT(self.storage, self.expressed, np.asarray(scales, np.float64).ravel(),
                  np.asarray(zps, np.int64).ravel(), self.axis, self.block, self.schema, self.smin, self.smax,
                  self.version)


def param_shape(shape, axis, block):
    if axis is None:
        return ()
    if block is None:
        return (shape[axis],)
    p = list(shape)
    p[axis] = -(-shape[axis] // block)
    return tuple(p)


def expected_count(shape, axis, block):
    ps = param_shape(shape, axis, block)
    return int(np.prod(ps)) if ps else 1


def expand_params(values: np.ndarray, shape, axis, block):
    """Per-element parameter array broadcastable to `shape` (semantics.md §1 param_index)."""
    values = np.asarray(values)
    if axis is None:
        return values.reshape(()) if values.size == 1 else values.ravel()[0]
    r = len(shape)
    if block is None:
        bshape = [1] * r
        bshape[axis] = shape[axis]
        return values.reshape(bshape)
    ps = param_shape(shape, axis, block)
    v = values.reshape(ps)
    v = np.repeat(v, block, axis=axis)
    sl = [slice(None)] * r
    sl[axis] = slice(0, shape[axis])
    return v[tuple(sl)]
