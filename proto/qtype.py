"""QType: one quantized element type, and the tables every wing shares.

A QType is immutable and validated on construction. The validity tests are
small module-level functions returning a problem description (or None) so
that the checker's rules reuse them instead of restating them.
``QType.from_proto(..., validate=False)`` builds an unvalidated instance
for reporting on models that break the rules.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import math
import numbers
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import ml_dtypes
import numpy as np
import onnx
from google.protobuf.message import Message
from google.protobuf.unknown_fields import UnknownFieldSet
from onnx import TensorProto

from onnx_qtypes.proto import onnx_qtypes_pb2 as pb
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

EXPRESSED_TYPES: dict[str, ExpressedType] = {
    e.name: e
    for e in (
        ExpressedType("float32", TensorProto.FLOAT),
        ExpressedType("float16", TensorProto.FLOAT16),
        ExpressedType("bfloat16", TensorProto.BFLOAT16),
    )
}
EXPRESSED_BY_DATA_TYPE = {e.data_type: e for e in EXPRESSED_TYPES.values()}


def _is_int(value: object) -> bool:
    # bool is an int subclass and 3.0 hashes like 3: dict lookups alone would take True for FLOAT, 3.0 for INT8
    if type(value) is int:  # the common case, without the abstract base class's slower test
        return True
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


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
        elif _is_int(value) and value in {s.value for s in cls}:
            return cls(value)
        names = ", ".join(s.name.lower() for s in cls)
        raise QTypeError("schema", f"unknown schema {value!r}; expected one of {names}")


_SCHEMAS = {s.value: s for s in Schema}


def storage_type(value: str | int | StorageType) -> StorageType:
    """Look up a storage type by name ("int8") or onnx data type (3)."""
    if isinstance(value, StorageType):
        return value
    found = STORAGE_TYPES.get(value) if isinstance(value, str) else STORAGE_BY_DATA_TYPE.get(value) if _is_int(value) else None
    if found is None:
        raise QTypeError("storage", storage_problem(value) or f"unknown storage type {value!r}")
    return found


def expressed_type(value: str | int | ExpressedType) -> ExpressedType:
    """Look up an expressed type by name ("float32") or onnx data type (1)."""
    if isinstance(value, ExpressedType):
        return value
    if value == "float":
        value = "float32"
    found = EXPRESSED_TYPES.get(value) if isinstance(value, str) else EXPRESSED_BY_DATA_TYPE.get(value) if _is_int(value) else None
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


# --- validity tests shared with the checker's rules ------------------------


def storage_problem(value: object) -> str | None:
    """Why ``value`` is not an allowed storage type, or None."""
    known = value in STORAGE_TYPES if isinstance(value, str) else _is_int(value) and value in STORAGE_BY_DATA_TYPE
    if known:
        return None
    allowed = ", ".join(STORAGE_TYPES)
    return f"storage type {data_type_name(value)} is not allowed; use one of {allowed}"


def expressed_problem(value: object) -> str | None:
    """Why ``value`` is not an allowed expressed type, or None."""
    known = (value in EXPRESSED_TYPES or value == "float" if isinstance(value, str)
             else _is_int(value) and value in EXPRESSED_BY_DATA_TYPE)
    if known:
        return None
    allowed = ", ".join(EXPRESSED_TYPES)
    return f"expressed type {data_type_name(value)} is not a float type; use one of {allowed}"


def range_problem(storage: StorageType, lo: int, hi: int) -> str | None:
    """Why [lo, hi] is not a valid storage range of ``storage``, or None."""
    if not storage.min <= lo < hi <= storage.max:
        return (
            f"storage range [{lo}, {hi}] must satisfy {storage.min} <= storage_min < "
            f"storage_max <= {storage.max} for {storage.name}"
        )
    return None


def float_storage_problem(storage: StorageType, zero_points: Sequence[int], lo: int, hi: int) -> str | None:
    """Why a float storage type's zero points or storage range are not the ones it admits (all 0, the full
    range), or None; None for integer storage. Checker: QT121 (zero points), QT122 (range)."""
    if not storage.is_float:
        return None
    if any(zero_points):
        bad = next(z for z in zero_points if z != 0)
        return f"zero point {bad} on {storage.name} storage: a float storage type's zero point is 0"
    if (lo, hi) != (storage.min, storage.max):
        return (f"storage range [{lo}, {hi}] on {storage.name} storage: a float storage type takes no storage "
                f"range (quantize saturates to +-{storage.max})")
    return None


def scale_problem(scale: float) -> str | None:
    """Why ``scale`` is not a valid scale (error), or None. A negative scale is valid here: where it may stand
    is for the graph to say (proposal/spec/types.md#negative-scales, checker rules QT128 and QT409-QT411)."""
    if not math.isfinite(scale) or scale == 0:
        return f"scale {scale!r} must be finite and non-zero"
    return None


def negative_scale_problem(schema: Schema, scales: Sequence[float], zero_points: Sequence[int], lo: int) -> str | None:
    """Why a negative scale contradicts the schema, or None: symmetric_with_unsigned's unsigned form (zero point
    at ``lo``, storage_min) stands for non-negative reals, which a negative scale turns non-positive."""
    if schema is not Schema.SYMMETRIC_WITH_UNSIGNED:
        return None
    for i, (scale, zero_point) in enumerate(zip(scales, zero_points)):
        if scale < 0 and zero_point == lo:
            return (f"scale[{i}] {scale!r} is negative in the unsigned form of schema symmetric_with_unsigned "
                    f"(zero point {zero_point} = storage_min), which stands for non-negative reals only")
    return None


def scale_warning(scale: float, expressed: ExpressedType) -> str | None:
    """Why ``scale`` is suspicious in ``expressed`` (warning), or None."""
    if scale_problem(scale):
        return None
    scale = abs(scale)  # the sign is exact in every float type
    dtype = expressed.np_dtype
    with np.errstate(over="ignore"):  # beyond float16's range the cast gives inf, reported below
        stored = float(np.asarray(scale, dtype=np.float64).astype(dtype))
    if stored != scale:
        return f"scale {scale!r} is not exactly representable in {expressed.name} (nearest is {stored!r})"
    if scale < float(ml_dtypes.finfo(dtype).smallest_normal):
        return f"scale {scale!r} is subnormal in {expressed.name}; some hardware flushes it to 0"
    return None


def _first_bad_scale(scales: Sequence[float]) -> float | None:
    """The first scale that is not finite and non-zero, or None (one vector step for any count)."""
    values = np.fromiter(scales, dtype=np.float64, count=len(scales))
    bad = ~(np.isfinite(values) & (values != 0))
    return scales[int(np.argmax(bad))] if bad.any() else None


def _first_outside(values: Sequence[int], lo: int, hi: int) -> int | None:
    """The first value outside [lo, hi], or None."""
    try:
        array = np.fromiter(values, dtype=np.int64, count=len(values))
    except OverflowError:  # beyond int64 is outside every storage range
        return next(v for v in values if not lo <= v <= hi)
    outside = (array < lo) | (array > hi)
    return values[int(np.argmax(outside))] if outside.any() else None


def zero_point_problem(zero_point: int, lo: int, hi: int) -> str | None:
    """Why ``zero_point`` is not valid in storage range [lo, hi], or None."""
    if not lo <= zero_point <= hi:
        return f"zero point {zero_point} is outside the storage range [{lo}, {hi}]"
    return None


def is_pow2(scale: float) -> bool:
    """True when ``scale`` is exactly 2^k for an integer k."""
    if not math.isfinite(scale) or scale <= 0:
        return False
    mantissa, _ = math.frexp(scale)
    return mantissa == 0.5


def unsigned_midpoint(type_min: Any, type_max: Any) -> Any:
    """The storage *type's* midpoint ``(min + max + 1) // 2``: 0 for every signed type, 2^(bits-1) for an
    unsigned one (128 for uint8). It is where a signed zero point 0 lands when the values are re-encoded
    in the unsigned type of the same width (uint8 q = int8 q + 128). Integers or numpy arrays alike."""
    return (type_min + type_max + 1) // 2


def symmetric_with_unsigned_zero_points(type_min: Any, type_max: Any, storage_min: Any) -> tuple[Any, Any]:
    """The zero points SYMMETRIC_WITH_UNSIGNED admits, as (symmetric form, unsigned form).

    Symmetric form: real 0 at the storage type's midpoint (0 for signed storage, 128 for uint8), whatever
    the declared range. Unsigned form: real 0 at ``storage_min``, the bottom of the declared (possibly
    narrowed) range, so only non-negative reals are representable (int8 with -128 is uint8 with 0). This is
    Glow's ``SymmetricWithUnsigned`` (offset 0 or the range's minimum, its ``validateQuantizationParams`` in
    lib/Quantization/Base/Base.cpp), closed under re-encoding int8 <-> uint8. Integers or numpy arrays alike.
    """
    return unsigned_midpoint(type_min, type_max), storage_min


def schema_problem(
    schema: Schema, scales: Sequence[float], zero_points: Sequence[int], lo: int, hi: int,
    storage: StorageType | None = None,
) -> str | None:
    """Why the parameters break ``schema``'s predicate, or None.

    ``lo``, ``hi``: the declared storage range; ``storage``: the storage type, needed only to judge the
    zero points of SYMMETRIC_WITH_UNSIGNED (its symmetric form depends on the type's signedness).
    """
    if schema.symmetric and any(zero_points):
        bad = next(z for z in zero_points if z != 0)
        return f"schema {schema.name.lower()} requires every zero point to be 0, found {bad}"
    if schema is Schema.SYMMETRIC_WITH_UNSIGNED and zero_points:
        if storage is None:
            raise TypeError("schema_problem needs the storage type to judge symmetric_with_unsigned zero points")
        centre, bottom = symmetric_with_unsigned_zero_points(storage.min, storage.max, lo)
        allowed = {centre, bottom}
        if not set(zero_points) <= allowed:
            bad = next(z for z in zero_points if z not in allowed)
            either = " or ".join(str(z) for z in sorted(allowed, key=lambda z: z != centre))
            return (f"schema symmetric_with_unsigned requires every zero point to be {either} "
                    f"({centre}: the type's midpoint, symmetric; {bottom}: storage_min, unsigned), found {bad}")
    if schema.pow2:
        values = np.fromiter(scales, dtype=np.float64, count=len(scales))
        mantissa, _ = np.frexp(values)
        not_pow2 = ~(np.isfinite(values) & (values > 0) & (mantissa == 0.5))
        if not_pow2.any():
            return (f"schema {schema.name.lower()} requires every scale to be exactly 2^k, "
                    f"found {scales[int(np.argmax(not_pow2))]!r}")
    return None


_SCHEMA_FIELD = pb.QuantizedType.DESCRIPTOR.fields_by_name["schema"].number


# Extension versions this reader knows. 1: the fields of the first release (a type without `version`);
# 2: parameters by reference (scale_tensor, zero_point_tensor). A writer writes the lowest version whose
# fields the type uses, so that a type a version-1 reader can read stays readable by it.
KNOWN_VERSIONS = (1, 2)
REFERENCES_VERSION = 2


def unknown_fields(msg: Message, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    """(path, what) for every field or schema value of ``msg`` (a QuantizedType or TensorStatistics, nested
    Statistics included) this version does not define. Protobuf keeps such a field aside and reads the
    default, so an unknown schema would read as asymmetric: every reader reports these (checker: QT115)."""
    if isinstance(msg, pb.QuantizedType) and msg.HasField("version") and msg.version not in KNOWN_VERSIONS:
        yield (*path, "version"), (
            f"extension version {msg.version} is not one this reader knows ({', '.join(map(str, KNOWN_VERSIONS))}); "
            "read the model with a newer onnx-qtypes"
        )
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


def block_count(dim: int, block_size: int) -> int:
    """Number of blocks along a dimension; the last block may be short."""
    return -(-dim // block_size)


def parameter_shape(qtype: QType, shape: Sequence[int | None]) -> tuple[int | None, ...] | None:
    """Expected shape of the scale/zero-point array for a tensor of ``shape``.

    () for per-tensor, (dim,) for per-axis, the tensor shape with the axis
    dimension divided into blocks for blocked; None when the axis is out of
    range. Unknown dimensions stay None.
    """
    if qtype.axis is None:
        return ()
    if not 0 <= qtype.axis < len(shape):
        return None
    dim = shape[qtype.axis]
    if qtype.block_size is None:
        return (dim,)
    blocks = None if dim is None else block_count(dim, qtype.block_size)
    return tuple(blocks if i == qtype.axis else d for i, d in enumerate(shape))


def reference_dims(msg: pb.QuantizedType, shape: Sequence[int | None] | None) -> tuple[int | None, ...] | None:
    """The dims a parameter initializer of ``msg`` must have for a tensor of ``shape``; None when unknown."""
    if not msg.HasField("axis"):
        return ()
    if shape is None:
        return None
    if not msg.HasField("block_size"):
        return (shape[msg.axis],) if 0 <= msg.axis < len(shape) else None
    if not 0 <= msg.axis < len(shape) or msg.block_size <= 0:
        return None
    return tuple(
        (None if d is None else block_count(d, msg.block_size)) if i == msg.axis else d for i, d in enumerate(shape)
    )


def reference_values(
    msg: pb.QuantizedType, lookup: Callable[[str], Any], shape: Sequence[int | None] | None
) -> tuple[str | None, np.ndarray | None, np.ndarray | None]:
    """(problem, scales, zero points) of the parameters ``msg`` names by reference, read through ``lookup``
    (initializer name -> TensorProto or None); the arrays are flat, row-major, None for a parameter listed in
    the type. ``problem`` says why they cannot be read (the values are then None)."""
    wanted = reference_dims(msg, shape)
    arrays: dict[str, np.ndarray] = {}
    for field, listed, data_type, kind in (
        ("scale", msg.scale, msg.expressed_type, np.float64),
        ("zero_point", msg.zero_point, msg.storage_type, np.int64),
    ):
        if not msg.HasField(f"{field}_tensor"):
            continue
        name = getattr(msg, f"{field}_tensor")
        where = f"{field}_tensor {name!r}"
        if listed:
            return f"{where}: the type lists {field} values too; give one form, not both", None, None
        init = lookup(name)
        if init is None:
            return f"{where} names no initializer of the graph (parameters by reference live in initializers)", None, None
        from onnx_qtypes.proto.encoding import plain_data_type, tensor_array  # noqa: PLC0415 (imports this module)

        if plain_data_type(init.data_type) != data_type:  # a zero point a boundary op reads is marked
            return (f"{where} holds {data_type_name(init.data_type)}, but {field}s of this type are "
                    f"{data_type_name(data_type)}"), None, None
        dims = tuple(init.dims)
        fits = dims in ((), (1,)) if wanted == () else (
            len(dims) == 1 if wanted is None and not msg.HasField("block_size") else
            wanted is None or (len(dims) == len(wanted) and all(w is None or w == d for w, d in zip(wanted, dims))))
        if not fits:
            shown = "[] or [1]" if wanted == () else "[" + ",".join("?" if w is None else str(w) for w in wanted) + "]" \
                if wanted is not None else "1-D"
            return f"{where} has dims {list(dims)}, but the parameter shape is {shown}", None, None
        try:
            values = tensor_array(init)
        except Exception as exc:  # noqa: BLE001 - onnx raises several types for data unlike its dims
            return f"{where}: its data does not decode ({' '.join(str(exc).split())[:120]})", None, None
        arrays[field] = np.asarray(values).astype(kind).reshape(-1)
    scales, zero_points = arrays.get("scale"), arrays.get("zero_point")
    count = scales.size if scales is not None else len(msg.scale)
    if zero_points is not None and zero_points.size != count:
        return (f"zero_point_tensor {msg.zero_point_tensor!r} holds {zero_points.size} zero points for {count} "
                "scales"), None, None
    return None, scales, zero_points


def stored_outside_type(tensor: TensorProto) -> tuple[int, int] | None:
    """(index, value) of the first integer a TensorProto of an 8- or 16-bit type holds outside its type's range,
    or None. Such values sit in ``int32_data`` (raw_data cannot hold them); numpy and runtimes read them
    wrapped (a uint8 300 becomes 44), so what the model means differs from what its producer wrote."""
    st = STORAGE_BY_DATA_TYPE.get(tensor.data_type)
    if st is None or st.bits not in (8, 16) or not tensor.int32_data:
        return None
    values = np.asarray(tensor.int32_data, np.int64)
    outside = np.flatnonzero((values < st.min) | (values > st.max))
    return (int(outside[0]), int(values[outside[0]])) if outside.size else None


def listing(msg: pb.QuantizedType, scales: np.ndarray | None, zero_points: np.ndarray | None) -> pb.QuantizedType:
    """A copy of ``msg`` with referenced parameters listed (``reference_values``'s arrays; None: as it was)."""
    out = pb.QuantizedType()
    out.CopyFrom(msg)
    if scales is not None:
        out.scale[:] = scales.tolist()
    if zero_points is not None:
        out.zero_point[:] = zero_points.tolist()
    return out


def count_problem(qtype: QType, shape: Sequence[int | None]) -> str | None:
    """Why the parameter count does not fit a tensor of ``shape``, or None."""
    if qtype.is_dynamic:
        return None
    rank = len(shape)
    if qtype.axis is not None and rank == 0:
        return f"{qtype.granularity} parameters are not allowed on a scalar"
    if qtype.axis is not None and not 0 <= qtype.axis < rank:
        return f"axis {qtype.axis} is outside [0, {rank}) for a rank-{rank} tensor"
    expected = parameter_shape(qtype, shape)
    assert expected is not None
    if any(d is None for d in expected):
        return None  # unknown dimension: checked at run time
    want = math.prod(expected)  # type: ignore[arg-type]
    if len(qtype.scale) != want:
        what = {
            "per-tensor": "a per-tensor type needs 1 scale",
            "per-axis": f"a per-axis type on axis {qtype.axis} of shape {list(shape)} needs {want} scales",
            "blocked": (
                f"a blocked type (axis {qtype.axis}, block_size {qtype.block_size}) of shape "
                f"{list(shape)} needs {want} scales (parameter shape {list(expected)})"
            ),
        }[qtype.granularity]
        return f"{what}, found {len(qtype.scale)}"
    return None


# --- statistics --------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Statistics:
    """Statistics of one set of real values; None means unknown."""

    min: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None
    count: int | None = None
    histogram_edges: tuple[float, ...] = ()
    histogram_counts: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        sets = object.__setattr__
        for name in ("min", "max", "mean", "std"):
            sets(self, name, _as_real(getattr(self, name), f"statistics.{name}"))
        sets(self, "count", _as_int(self.count, "statistics.count"))
        sets(self, "histogram_edges", _as_tuple(self.histogram_edges, float, "statistics.histogram_edges"))
        sets(self, "histogram_counts", _as_tuple(self.histogram_counts, int, "statistics.histogram_counts"))

    def to_proto(self) -> pb.Statistics:
        msg = pb.Statistics()
        for name in ("min", "max", "mean", "std", "count"):
            value = getattr(self, name)
            if value is not None:
                setattr(msg, name, value)
        msg.histogram_edges.extend(self.histogram_edges)
        msg.histogram_counts.extend(self.histogram_counts)
        return msg

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {n: getattr(self, n) for n in ("min", "max", "mean", "std", "count")}
        out = {k: v for k, v in out.items() if v is not None}
        if self.histogram_edges or self.histogram_counts:
            out["histogram_edges"] = list(self.histogram_edges)
            out["histogram_counts"] = list(self.histogram_counts)
        return out

    @classmethod
    def from_proto(cls, msg: pb.Statistics) -> Statistics:
        fields = {n: getattr(msg, n) for n in ("min", "max", "mean", "std", "count") if msg.HasField(n)}
        return cls(**fields, histogram_edges=tuple(msg.histogram_edges), histogram_counts=tuple(msg.histogram_counts))


@dataclasses.dataclass(frozen=True)
class TensorStatistics:
    """Calibration statistics of a tensor: whole-tensor and per-slice."""

    tensor: Statistics | None = None
    axis: int | None = None
    per_axis: tuple[Statistics, ...] = ()
    method: str | None = None

    def __post_init__(self) -> None:
        per_axis = tuple(self.per_axis)
        for name, value in (("tensor", self.tensor), *(("per_axis", s) for s in per_axis)):
            if value is not None and not isinstance(value, Statistics):
                raise QTypeError(f"statistics.{name}", f"expected a Statistics, got {value!r}")
        if self.method is not None and not isinstance(self.method, str):
            raise QTypeError("statistics.method", f"expected a string, got {self.method!r}")
        object.__setattr__(self, "per_axis", per_axis)
        object.__setattr__(self, "axis", _as_int(self.axis, "statistics.axis"))

    def to_proto(self) -> pb.TensorStatistics:
        msg = pb.TensorStatistics()
        if self.tensor is not None:
            msg.tensor.CopyFrom(self.tensor.to_proto())
        if self.axis is not None:
            msg.axis = self.axis
        msg.per_axis.extend(s.to_proto() for s in self.per_axis)
        if self.method is not None:
            msg.method = self.method
        return msg

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.tensor is not None:
            out["tensor"] = self.tensor.to_dict()
        if self.axis is not None:
            out["axis"] = self.axis
        if self.per_axis:
            out["per_axis"] = [s.to_dict() for s in self.per_axis]
        if self.method is not None:
            out["method"] = self.method
        return out

    @classmethod
    def from_proto(cls, msg: pb.TensorStatistics) -> TensorStatistics:
        return cls(
            tensor=Statistics.from_proto(msg.tensor) if msg.HasField("tensor") else None,
            axis=msg.axis if msg.HasField("axis") else None,
            per_axis=tuple(Statistics.from_proto(s) for s in msg.per_axis),
            method=msg.method if msg.HasField("method") else None,
        )


# --- QType -------------------------------------------------------------------


def _array_as_tuple(value: np.ndarray, kind: type) -> tuple | None:
    """A numeric array's values as Python ints or floats in one vector step; None when one needs a closer look."""
    flat, code = value.reshape(-1), value.dtype.kind
    if kind is float and code in "iuf":
        return tuple(flat.astype(np.float64).tolist())
    if kind is int and code in "iu":
        return tuple(flat.tolist())
    if kind is int and code == "f" and bool(np.all(np.isfinite(flat) & (flat == np.floor(flat)))):
        return tuple(map(int, flat.tolist()))
    return None  # bool, object, strings, or a float zero point that is not integral: the loop below says which


def _as_int(value: Any, field: str) -> int | None:
    """An optional integer field. Integral floats (2.0) are taken as zero points are (``_as_tuple``);
    a bool or a fraction is refused rather than truncated by int()."""
    if value is None or type(value) is int:
        return value
    if _is_int(value) or (isinstance(value, numbers.Real) and not isinstance(value, bool) and float(value).is_integer()):
        return int(value)
    raise QTypeError(field, f"expected an integer, got {value!r}")


def _as_real(value: Any, field: str) -> float | None:
    """An optional real field, checked as scales are."""
    return value if value is None or type(value) is float else _as_tuple((value,), float, field)[0]


def _as_tuple(value: Any, kind: type, field: str) -> tuple:
    if value is None:
        return ()
    if isinstance(value, np.ndarray):
        fast = _array_as_tuple(value, kind)
        if fast is not None:
            return fast
        items = value.reshape(-1).tolist()
    elif isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        items = value if isinstance(value, (list, tuple)) else list(value)
        # Millions of parameters (blocked weights) are common: plain ints and floats skip the per-item checks.
        types = set(map(type, items))
        if types <= {kind}:
            return tuple(items)
        if kind is float and types <= {int, float}:
            with contextlib.suppress(OverflowError):  # an int too large for a float: the loop below names it
                return tuple(map(float, items))
    else:
        items = [value]
    out = []
    for item in items:
        if kind is int:
            if isinstance(item, bool) or not isinstance(item, numbers.Integral):
                if isinstance(item, numbers.Real) and not isinstance(item, bool) and float(item).is_integer():
                    item = int(item)
                else:
                    raise QTypeError(field, f"expected integers, got {item!r}")
            out.append(int(item))
        else:
            if isinstance(item, bool) or not isinstance(item, numbers.Real):
                raise QTypeError(field, f"expected real numbers, got {item!r}")
            try:
                out.append(float(item))
            except OverflowError:
                text = repr(item)
                raise QTypeError(field, f"{text[:20]}… ({len(text)} digits) is too large for a float") from None
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class QType:
    """A quantized element type: ``real = scale[i] * (q - zero_point[i])``.

    ``scale`` empty means dynamic (parameters computed at run time by the
    schema). ``zero_point`` empty with scales given means all zeros.
    ``storage_min``/``storage_max`` default to the storage type's range.
    ``statistics`` is metadata and takes no part in equality or hashing.
    """

    storage: str
    scale: tuple[float, ...] = ()
    zero_point: tuple[int, ...] = ()
    axis: int | None = None
    block_size: int | None = None
    schema: Schema = Schema.ASYMMETRIC
    storage_min: int | None = None
    storage_max: int | None = None
    expressed: str = "float32"
    statistics: TensorStatistics | None = dataclasses.field(default=None, compare=False)
    # Where the parameters are stored, not what they are: names of initializers holding the scales / zero
    # points (parameters by reference), None when listed in the type. Never part of type identity.
    scale_tensor: str | None = dataclasses.field(default=None, compare=False)
    zero_point_tensor: str | None = dataclasses.field(default=None, compare=False)

    def __init__(
        self,
        storage: str | int,
        scale: float | Sequence[float] | np.ndarray | None = (),
        zero_point: int | Sequence[int] | np.ndarray | None = (),
        axis: int | None = None,
        block_size: int | None = None,
        schema: Schema | str | int = Schema.ASYMMETRIC,
        storage_min: int | None = None,
        storage_max: int | None = None,
        expressed: str | int = "float32",
        statistics: TensorStatistics | None = None,
        scale_tensor: str | None = None,
        zero_point_tensor: str | None = None,
        *,
        validate: bool = True,
    ) -> None:
        # Unvalidated construction keeps unknown storage / expressed types for reporting.
        st = storage_type(storage) if validate or storage_problem(storage) is None else None
        ex = expressed_type(expressed) if validate or expressed_problem(expressed) is None else None
        scales = _as_tuple(scale, float, "scale")
        zps = _as_tuple(zero_point, int, "zero_point")
        if scales and not zps:
            zps = (0,) * len(scales)
        sets = object.__setattr__
        sets(self, "storage", st.name if st else data_type_name(storage))
        sets(self, "scale", scales)
        sets(self, "zero_point", zps)
        sets(self, "axis", _as_int(axis, "axis"))
        sets(self, "block_size", _as_int(block_size, "block_size"))
        sets(self, "schema", Schema.parse(schema))
        sets(self, "storage_min", _as_int(storage_min, "storage_min") if storage_min is not None else (st.min if st else None))
        sets(self, "storage_max", _as_int(storage_max, "storage_max") if storage_max is not None else (st.max if st else None))
        sets(self, "expressed", ex.name if ex else data_type_name(expressed))
        if statistics is not None and not isinstance(statistics, TensorStatistics):
            raise QTypeError("statistics", f"expected a TensorStatistics or None, got {statistics!r}")
        sets(self, "statistics", statistics)
        for field, name in (("scale_tensor", scale_tensor), ("zero_point_tensor", zero_point_tensor)):
            if name is not None and (not isinstance(name, str) or not name):
                raise QTypeError(field, f"expected an initializer name (a non-empty str), got {name!r}")
            sets(self, field, name)
        if validate:
            self._validate()

    # -- derived properties
    @property
    def storage_type(self) -> StorageType:
        return storage_type(self.storage)

    @property
    def expressed_type(self) -> ExpressedType:
        return expressed_type(self.expressed)

    @property
    def is_dynamic(self) -> bool:
        return not self.scale

    @functools.cached_property
    def has_negative_scale(self) -> bool:
        """Some scale is negative: real values run against the stored integers' order in those slices
        (cached: a blocked weight has millions of scales, and evaluators ask per node and run)."""
        return bool(self.scale) and min(self.scale) < 0

    @property
    def granularity(self) -> str:
        if self.axis is None:
            return "per-tensor"
        return "per-axis" if self.block_size is None else "blocked"

    def with_statistics(self, statistics: TensorStatistics | None) -> QType:
        """The same type with other statistics (never revalidated: statistics do not affect validity)."""
        copy = object.__new__(QType)
        object.__getattribute__(copy, "__dict__").update(self.__dict__, statistics=statistics)
        return copy

    def replace(self, *, validate: bool = True, **changes: Any) -> QType:
        """A copy with ``changes``; ``validate=False`` keeps invalid values (as in from_proto)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields.update(changes)
        return QType(**fields, validate=validate)

    # -- validation (shape-independent; see count_problem for the rest)
    def _validate(self) -> None:
        st = self.storage_type
        lo, hi = self.storage_min, self.storage_max
        assert lo is not None and hi is not None
        if problem := range_problem(st, lo, hi) or float_storage_problem(st, (), lo, hi):
            raise QTypeError("storage_min", problem)
        if self.block_size is not None:
            if self.block_size <= 0:
                raise QTypeError("block_size", f"block_size {self.block_size} must be > 0")
            if self.axis is None:
                raise QTypeError("block_size", "a blocked type needs an axis")
        if self.axis is not None and self.axis < 0:
            raise QTypeError("axis", f"axis {self.axis} must be >= 0 (store the normalized axis)")
        if self.is_dynamic:
            if self.zero_point:
                raise QTypeError("zero_point", "a dynamic type (no scale) carries no zero points")
            return
        if len(self.zero_point) != len(self.scale):
            raise QTypeError(
                "zero_point", f"{len(self.scale)} scales need {len(self.scale)} zero points, found {len(self.zero_point)}"
            )
        if self.axis is None and len(self.scale) != 1:
            raise QTypeError("scale", f"a per-tensor type needs exactly 1 scale, found {len(self.scale)}; set axis")
        if (bad := _first_bad_scale(self.scale)) is not None:
            raise QTypeError("scale", scale_problem(bad))
        if problem := float_storage_problem(st, self.zero_point, lo, hi):
            raise QTypeError("zero_point", problem)
        if (bad_zp := _first_outside(self.zero_point, lo, hi)) is not None:
            raise QTypeError("zero_point", zero_point_problem(bad_zp, lo, hi))
        if problem := schema_problem(self.schema, self.scale, self.zero_point, lo, hi, st):
            raise QTypeError("schema", problem)
        if self.has_negative_scale and (problem := negative_scale_problem(self.schema, self.scale, self.zero_point, lo)):
            raise QTypeError("scale", problem)

    def check_shape(self, shape: Sequence[int | None], tensor: str | None = None) -> None:
        """Raise QTypeError when the parameters do not fit ``shape``."""
        if problem := count_problem(self, shape):
            raise QTypeError("scale", problem, tensor)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (statistics included when present)."""
        out: dict[str, Any] = {
            "storage": self.storage,
            "expressed": self.expressed,
            "granularity": "dynamic" if self.is_dynamic else self.granularity,
            "scale": list(self.scale),
            "zero_point": list(self.zero_point),
            "axis": self.axis,
            "block_size": self.block_size,
            "schema": self.schema.name.lower(),
            "storage_min": self.storage_min,
            "storage_max": self.storage_max,
        }
        if self.scale_tensor is not None or self.zero_point_tensor is not None:
            out["parameters_in"] = {"scale": self.scale_tensor, "zero_point": self.zero_point_tensor}
        if self.statistics is not None:
            out["statistics"] = self.statistics.to_dict()
        return out

    # -- proto conversion
    def to_proto(self) -> pb.QuantizedType:
        """The message declaring this type; parameters by reference name their initializers instead of being
        listed (the initializers themselves are the model's: ``proto.model.set_qtype`` writes them)."""
        msg = pb.QuantizedType()
        msg.storage_type = self.storage_type.data_type
        msg.expressed_type = self.expressed_type.data_type
        if self.scale_tensor is not None:
            msg.scale_tensor = self.scale_tensor
        else:
            msg.scale.extend(self.scale)
        if self.zero_point_tensor is not None:
            msg.zero_point_tensor = self.zero_point_tensor
        elif any(self.zero_point) or self.scale_tensor is None:
            msg.zero_point.extend(self.zero_point)
        if self.scale_tensor is not None or self.zero_point_tensor is not None:
            msg.version = REFERENCES_VERSION
        if self.axis is not None:
            msg.axis = self.axis
        if self.block_size is not None:
            msg.block_size = self.block_size
        msg.schema = self.schema.value
        st = self.storage_type
        if self.storage_min != st.min:
            msg.storage_min = self.storage_min  # type: ignore[assignment]
        if self.storage_max != st.max:
            msg.storage_max = self.storage_max  # type: ignore[assignment]
        return msg

    @classmethod
    def from_values(
        cls, storage: StorageType, scale: list[float], zero_point: list[int], axis: int | None,
        block_size: int | None, expressed: ExpressedType, schema: Schema = Schema.ASYMMETRIC,
        scale_tensor: str | None = None, zero_point_tensor: str | None = None,
    ) -> QType:
        """``QType(storage.data_type, scale, zero_point, axis, block_size, schema, expressed=..., validate=False)``
        for values already of their field types (Python floats and ints, as numpy's ``tolist`` gives them, known
        storage and expressed types), without coercing each again: the lift reads thousands of them."""
        if (not all(type(v) is float for v in scale) or not all(type(v) is int for v in zero_point)
                or any(n is not None and (type(n) is not str or not n) for n in (scale_tensor, zero_point_tensor))
                or not all(v is None or type(v) is int for v in (axis, block_size))):
            return cls(storage.data_type, scale, zero_point, axis, block_size, schema, expressed=expressed.data_type,
                       scale_tensor=scale_tensor, zero_point_tensor=zero_point_tensor, validate=False)
        qtype = object.__new__(cls)
        object.__getattribute__(qtype, "__dict__").update(
            storage=storage.name, scale=tuple(scale), zero_point=tuple(zero_point) or (0,) * len(scale), axis=axis,
            block_size=block_size, schema=schema, storage_min=storage.min, storage_max=storage.max,
            expressed=expressed.name, statistics=None, scale_tensor=scale_tensor, zero_point_tensor=zero_point_tensor)
        return qtype

    @classmethod
    def from_proto(
        cls, msg: pb.QuantizedType, statistics: TensorStatistics | None = None, *, validate: bool = True
    ) -> QType:
        """The QType a message declares; ``validate=False`` keeps invalid values for reporting.

        Fields this version does not define are not looked at here (``proto.model.require_known_fields``).
        """
        storage = STORAGE_BY_DATA_TYPE.get(msg.storage_type)
        expressed = EXPRESSED_BY_DATA_TYPE.get(msg.expressed_type)
        has = msg.HasField
        if storage is None or expressed is None:  # unknown types: the general constructor names them
            return cls(
                storage=msg.storage_type,
                scale=tuple(msg.scale),
                zero_point=tuple(msg.zero_point),
                axis=msg.axis if has("axis") else None,
                block_size=msg.block_size if has("block_size") else None,
                schema=_SCHEMAS.get(msg.schema, Schema.ASYMMETRIC),
                storage_min=msg.storage_min if has("storage_min") else None,
                storage_max=msg.storage_max if has("storage_max") else None,
                expressed=msg.expressed_type,
                statistics=statistics,
                scale_tensor=msg.scale_tensor if has("scale_tensor") else None,
                zero_point_tensor=msg.zero_point_tensor if has("zero_point_tensor") else None,
                validate=validate,
            )
        # Protobuf already typed every field: skip the generic coercion (checker reads thousands of these).
        scales = tuple(msg.scale[:])  # a slice converts in one call, iteration one element at a time
        qtype = object.__new__(cls)
        object.__getattribute__(qtype, "__dict__").update(
            storage=storage.name,
            scale=scales,
            zero_point=tuple(msg.zero_point[:]) or (0,) * len(scales),
            axis=msg.axis if has("axis") else None,
            block_size=msg.block_size if has("block_size") else None,
            schema=_SCHEMAS.get(msg.schema, Schema.ASYMMETRIC),
            storage_min=msg.storage_min if has("storage_min") else storage.min,
            storage_max=msg.storage_max if has("storage_max") else storage.max,
            expressed=expressed.name,
            statistics=statistics,
            scale_tensor=msg.scale_tensor if has("scale_tensor") else None,
            zero_point_tensor=msg.zero_point_tensor if has("zero_point_tensor") else None,
        )
        if validate:
            qtype._validate()
        return qtype

    def __str__(self) -> str:
        params = "dynamic" if self.is_dynamic else _format_params(self)
        extra = []
        if self.axis is not None:
            extra.append(f"axis={self.axis}")
        if self.block_size is not None:
            extra.append(f"block={self.block_size}")
        st = STORAGE_TYPES.get(self.storage)
        if st and (self.storage_min, self.storage_max) != (st.min, st.max):
            extra.append(f"range=[{self.storage_min},{self.storage_max}]")
        if self.schema is not Schema.ASYMMETRIC:
            extra.append(self.schema.name.lower())
        tail = (", " + ", ".join(extra)) if extra else ""
        return f"{self.storage}:{self.expressed}<{params}{tail}>"


def _format_params(qt: QType, limit: int = 4) -> str:
    pairs = [f"{s:.6g}:{z}" for s, z in zip(qt.scale[:limit], qt.zero_point[:limit])]
    more = f", ... ({len(qt.scale)} pairs)" if len(qt.scale) > limit else ""
    return ", ".join(pairs) + more
