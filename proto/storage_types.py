"""The storage and expressed types a quantized type may use: one table each, and their look-ups."""

from __future__ import annotations

import dataclasses
import functools
import sys

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto

from onnx_qtypes.proto.coerce import is_int
from onnx_qtypes.proto.errors import QTypeError


@dataclasses.dataclass(frozen=True)
class StorageType:
    """A type quantized values are stored in: an integer type, or a float8 / float4 type (``is_float``), whose
    min / max are its largest finite values (all integers: 448 for float8e4m3fn, 6 for float4e2m1)."""

    name: str
    data_type: int  # onnx.TensorProto.DataType
    bits: int
    min: int
    max: int
    is_float: bool = False

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(self.data_type))


@dataclasses.dataclass(frozen=True)
class ExpressedType:
    """A floating-point type quantized values stand for."""

    name: str
    data_type: int

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(self.data_type))

    @functools.cached_property
    def smallest_normal(self) -> float:
        """The smallest positive normal value: a scale below it is subnormal (QT102), which hardware may flush."""
        return float(ml_dtypes.finfo(self.np_dtype).smallest_normal)


def integer_range(bits: int, signed: bool) -> tuple[int, int]:
    """The inclusive range of a ``bits``-bit two's-complement (signed) or unsigned integer."""
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def _storage(name: str, data_type: int, bits: int, signed: bool) -> StorageType:
    return StorageType(name, data_type, bits, *integer_range(bits, signed))


def _float_storage(name: str, data_type: int) -> StorageType:
    dtype = onnx.helper.tensor_dtype_to_np_dtype(data_type)
    largest = int(ml_dtypes.finfo(dtype).max)
    return StorageType(name, data_type, ml_dtypes.finfo(dtype).bits, -largest, largest, is_float=True)


STORAGE_TYPES: dict[str, StorageType] = {
    s.name: s
    for s in (
        _storage("int2", TensorProto.INT2, 2, True),
        _storage("uint2", TensorProto.UINT2, 2, False),
        _storage("int4", TensorProto.INT4, 4, True),
        _storage("uint4", TensorProto.UINT4, 4, False),
        _storage("int8", TensorProto.INT8, 8, True),
        _storage("uint8", TensorProto.UINT8, 8, False),
        _storage("int16", TensorProto.INT16, 16, True),
        _storage("uint16", TensorProto.UINT16, 16, False),
        _storage("int32", TensorProto.INT32, 32, True),
        # Float storage (ONNX QuantizeLinear-19 float8, -23 float4): zero point 0, no storage range; quantize
        # saturates to the largest finite value and rounds to the nearest representable one (proposal/spec/types.md).
        _float_storage("float8e4m3fn", TensorProto.FLOAT8E4M3FN),
        _float_storage("float8e4m3fnuz", TensorProto.FLOAT8E4M3FNUZ),
        _float_storage("float8e5m2", TensorProto.FLOAT8E5M2),
        _float_storage("float8e5m2fnuz", TensorProto.FLOAT8E5M2FNUZ),
        _float_storage("float4e2m1", TensorProto.FLOAT4E2M1),
    )
}
STORAGE_BY_DATA_TYPE = {s.data_type: s for s in STORAGE_TYPES.values()}
# Sub-byte integer storage (ml_dtypes' int4 / uint4 / int2 / uint2 arrays) as feeds, outputs and test data sets
# hold it: each value widened to int8 / uint8 (semantics.md#calling-convention), keyed by storage name (which is
# ml_dtypes' dtype name).
SUB_BYTE_WIDENED: dict[str, np.dtype] = {s.name: np.dtype(np.int8 if s.min < 0 else np.uint8)
                                         for s in STORAGE_TYPES.values() if s.bits < 8 and not s.is_float}


def widen(array: np.ndarray) -> np.ndarray:
    """Sub-byte storage (onnx's int4 / uint4 / int2 / uint2 numpy types) as int8 / uint8; anything else as is."""
    array = np.asarray(array)
    wide = SUB_BYTE_WIDENED.get(array.dtype.name)
    return array.astype(wide) if wide is not None else array

EXPRESSED_TYPES: dict[str, ExpressedType] = {
    e.name: e
    for e in (
        ExpressedType("float32", TensorProto.FLOAT),
        ExpressedType("float16", TensorProto.FLOAT16),
        ExpressedType("bfloat16", TensorProto.BFLOAT16),
    )
}
EXPRESSED_BY_DATA_TYPE = {e.data_type: e for e in EXPRESSED_TYPES.values()}

# Version 3: narrower float types a referenced scale / offset initializer may hold for an expressed type, because
# the expressed type holds each of their values exactly (a GGUF float16 d, an MX E8M0 scale in one byte).
EXACT_PARAMETER_TYPES: dict[int, tuple[int, ...]] = {
    TensorProto.FLOAT: (TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.FLOAT8E8M0),
    TensorProto.BFLOAT16: (TensorProto.FLOAT8E8M0,),
}


# Byte-aligned types whose stored bytes (raw_data, external data: little-endian) numpy reads as they are, one value
# per item: what numpy_helper.to_array gives for them, without its per-call look-ups (thousands of parameters).
_BYTE_ALIGNED = {TensorProto.FLOAT: np.dtype("<f4"), TensorProto.DOUBLE: np.dtype("<f8"),
                 TensorProto.FLOAT16: np.dtype("<f2"), TensorProto.BFLOAT16: np.dtype(ml_dtypes.bfloat16),
                 TensorProto.INT8: np.dtype("i1"), TensorProto.UINT8: np.dtype("u1"), TensorProto.INT16: np.dtype("<i2"),
                 TensorProto.UINT16: np.dtype("<u2"), TensorProto.INT32: np.dtype("<i4"),
                 TensorProto.INT64: np.dtype("<i8")}
_LITTLE_ENDIAN = sys.byteorder == "little"


def byte_dtype(data_type: int) -> np.dtype | None:
    """The numpy dtype that reads ``data_type``'s stored bytes as they are on this machine; None for a packed or
    other type, and on a big-endian machine (the stored bytes are little-endian)."""
    return _BYTE_ALIGNED.get(data_type) if _LITTLE_ENDIAN else None


def storage_type(value: str | int | StorageType) -> StorageType:
    """Look up a storage type by name ("int8") or onnx data type (3)."""
    if isinstance(value, StorageType):
        return value
    found = STORAGE_TYPES.get(value) if isinstance(value, str) else STORAGE_BY_DATA_TYPE.get(value) if is_int(value) else None
    if found is None:
        raise QTypeError("storage", storage_problem(value) or f"unknown storage type {value!r}")
    return found


def expressed_type(value: str | int | ExpressedType) -> ExpressedType:
    """Look up an expressed type by name ("float32") or onnx data type (1)."""
    if isinstance(value, ExpressedType):
        return value
    if value == "float":
        value = "float32"
    found = EXPRESSED_TYPES.get(value) if isinstance(value, str) else EXPRESSED_BY_DATA_TYPE.get(value) if is_int(value) else None
    if found is None:
        raise QTypeError("expressed", expressed_problem(value) or f"unknown expressed type {value!r}")
    return found


def data_type_name(value: object) -> str:
    """The name and number of an ONNX data type, as "INT8 (3)"; "data type 99" when undefined; repr() otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return f"{TensorProto.DataType.Name(value)} ({value})"
        except ValueError:
            return f"data type {value}"
    return repr(value)


def storage_problem(value: object) -> str | None:
    """Why ``value`` is not an allowed storage type, or None."""
    known = value in STORAGE_TYPES if isinstance(value, str) else is_int(value) and value in STORAGE_BY_DATA_TYPE
    if known:
        return None
    allowed = ", ".join(STORAGE_TYPES)
    return f"storage type {data_type_name(value)} is not allowed; use one of {allowed}"


def expressed_problem(value: object) -> str | None:
    """Why ``value`` is not an allowed expressed type, or None."""
    known = (value in EXPRESSED_TYPES or value == "float" if isinstance(value, str)
             else is_int(value) and value in EXPRESSED_BY_DATA_TYPE)
    if known:
        return None
    allowed = ", ".join(EXPRESSED_TYPES)
    return f"expressed type {data_type_name(value)} is not a float type; use one of {allowed}"
