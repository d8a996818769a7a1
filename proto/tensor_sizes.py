"""Does a stored tensor hold as many values as its dims say?

A hostile or truncated file can declare dims its data does not fill (an
initializer shorter than its dims) or dims claiming 2^40 elements over a
few bytes, or a data_type no ONNX type has: every reader would then fail
late, allocate without bound, or silently read garbage. ``size_problem`` says what is wrong in one line, from
the lengths alone (no value is read or copied), so that the shared reader
refuses such a tensor before any command looks at it.
"""

from __future__ import annotations

import math
import operator

from onnx import TensorProto, helper

from onnx_qtypes.proto import external
from onnx_qtypes.proto.encoding import TYPED_FIELDS, plain_data_type

# Bits per element of each data type whose values have a fixed width (strings and undefined types aside).
BITS = {
    TensorProto.INT2: 2, TensorProto.UINT2: 2, TensorProto.INT4: 4, TensorProto.UINT4: 4,
    TensorProto.FLOAT4E2M1: 4,
    TensorProto.INT8: 8, TensorProto.UINT8: 8, TensorProto.BOOL: 8,
    TensorProto.FLOAT8E4M3FN: 8, TensorProto.FLOAT8E4M3FNUZ: 8, TensorProto.FLOAT8E5M2: 8,
    TensorProto.FLOAT8E5M2FNUZ: 8,
    TensorProto.INT16: 16, TensorProto.UINT16: 16, TensorProto.FLOAT16: 16, TensorProto.BFLOAT16: 16,
    TensorProto.INT32: 32, TensorProto.UINT32: 32, TensorProto.FLOAT: 32,
    TensorProto.INT64: 64, TensorProto.UINT64: 64, TensorProto.DOUBLE: 64,
    TensorProto.COMPLEX64: 64, TensorProto.COMPLEX128: 128,
}
if hasattr(TensorProto, "FLOAT8E8M0"):
    BITS[TensorProto.FLOAT8E8M0] = 8
_COMPLEX = (TensorProto.COMPLEX64, TensorProto.COMPLEX128)  # two typed-field entries per element
_TYPED = operator.attrgetter(*TYPED_FIELDS)


_BYTES = {t: bits // 8 for t, bits in BITS.items() if bits % 8 == 0}  # whole bytes per element


def fits(tensor: TensorProto) -> bool:
    """A quick yes for the common case: raw_data of exactly the right length and no typed field besides
    (``size_problem`` decides the rest)."""
    raw = tensor.raw_data
    width = _BYTES.get(tensor.data_type)
    return (bool(raw) and width is not None and len(raw) == width * math.prod(tensor.dims)
            and not (tensor.float_data or tensor.int32_data or tensor.string_data  # TYPED_FIELDS, unrolled:
                     or tensor.int64_data or tensor.double_data or tensor.uint64_data))  # it stops at the first


def _fields_problem(tensor: TensorProto, data_type: int, type_name: str) -> str | None:
    """Why ``tensor`` does not hold its values in one field, the one its data type uses: two fields (raw_data and
    a typed one: readers disagree on which counts; onnx.checker refuses it unless raw_data is empty, which
    numpy_helper and onnxruntime still read), strings in raw_data, or a typed field of another type (onnx.checker
    refuses both)."""
    held = [f for f, values in zip(TYPED_FIELDS, _TYPED(tensor)) if len(values)]
    if tensor.HasField("raw_data"):
        held.insert(0, "raw_data")
    if len(held) > 1:
        return f"holds values in both {held[0]} and {held[1]}; a tensor holds them in one field"
    if held == ["raw_data"] and data_type == TensorProto.STRING:
        return "holds STRING values in raw_data, where string_data holds them"
    field = helper.tensor_dtype_to_field(data_type) if data_type in BITS or data_type == TensorProto.STRING else None
    if held and held[0] not in ("raw_data", field) and field is not None:
        return f"holds its {type_name} values in {held[0]}, where {field} holds them"
    return None


def size_problem(tensor: TensorProto) -> str | None:
    """Why ``tensor``'s stored values do not fit its dims (negative dims, raw_data of the wrong length, a typed
    field with the wrong count) or cannot be read at all (a data_type ONNX does not define), or None. External
    data that was not loaded is not judged."""
    dims = tuple(tensor.dims)
    if dims and min(dims) < 0:
        return f"dims {list(dims)} contain a negative size"
    lazy = external.is_lazy(tensor)  # in its file: judged by the bytes there, as once loaded into raw_data
    if tensor.data_location == TensorProto.EXTERNAL and not lazy:
        return None
    data_type = plain_data_type(tensor.data_type)
    count = math.prod(dims)
    name = TensorProto.DataType.Name(data_type) if data_type in TensorProto.DataType.values() else str(data_type)
    if not lazy and (problem := _fields_problem(tensor, data_type, name)):
        return problem
    if data_type == TensorProto.STRING:
        found = len(tensor.string_data)
        return None if found == count else f"dims {list(dims)} need {count} strings, found {found}"
    bits = BITS.get(data_type)
    if bits is None:  # no reader can make values of it (onnx.checker refuses UNDEFINED too)
        return f"data_type {tensor.data_type} is not an ONNX data type of stored values"
    if lazy or tensor.HasField("raw_data"):
        need = -(-count * bits // 8)
        found = external.stored_length(tensor) if lazy else len(tensor.raw_data)
        return None if found == need else f"dims {list(dims)} need {need} bytes of {name} raw_data, found {found}"
    # one value per entry of the typed field; sub-byte types packed one byte per entry; complex: two entries
    need = count * 2 if data_type in _COMPLEX else (count if bits >= 8 else -(-count * bits // 8))
    found = max(map(len, _TYPED(tensor)))  # (string_data of a number type: a wrong field, found above)
    if found == need:
        return None
    return f"dims {list(dims)} need {need} {name} values, found {found or 'no data'}"


__all__ = ["BITS", "fits", "size_problem"]
