"""The validity tests of one quantized type, shared with the checker's rules: each returns a problem
description (or None), so that QType's constructor and the rules say the same thing."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from onnx_qtypes.proto.parameter_layout import parameter_shape
from onnx_qtypes.proto.parameter_values import any_nonzero, values_array
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.storage_types import ExpressedType, StorageType

if TYPE_CHECKING:
    from onnx_qtypes.proto.qtype import QType


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
    if any_nonzero(zero_points):
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
    if scale < expressed.smallest_normal:
        return f"scale {scale!r} is subnormal in {expressed.name}; some hardware flushes it to 0"
    return None


def first_bad_scale(scales: Sequence[float], zero_allowed: bool = False) -> float | None:
    """The first scale that is not finite and non-zero (finite, with ``zero_allowed``: a version-3 type, see
    ``zero_scale_allowed``), or None (one vector step for any count)."""
    values = values_array(scales, np.float64)
    bad = ~(np.isfinite(values) & ((values != 0) | zero_allowed))
    return scales[int(np.argmax(bad))] if bad.any() else None


def zero_scale_allowed(version: int, referenced: bool) -> bool:
    """Whether a scale of 0 is valid: only a scale read from a referenced parameter initializer (a narrower float
    initializer or a quantized parameter tensor) of a version-3 type, which declares a constant (nothing is
    quantized into it); GGUF writes d = 0 for a block of zeros and sub-block scale codes of 0
    (proposal/spec/llm_formats.md#zero-scales). A listed scale is never 0, in any version."""
    return version >= 3 and referenced


def offset_problem(offsets: Sequence[float], scale_count: int) -> str | None:
    """Why real-domain offsets do not fit their type (count unlike the scales', not finite), or None."""
    if not offsets:
        return None
    if not scale_count:
        return "a dynamic type (no scale) carries no offsets"
    if len(offsets) != scale_count:
        return f"{scale_count} scales need {scale_count} offsets, found {len(offsets)}"
    if (index := first_not_finite(offsets)) is not None:
        return f"offset[{index}] {offsets[index]!r} must be finite"
    return None


def codebook_problem(codebook: Sequence[float], storage: StorageType, lo: int, hi: int,
                     zero_points: Sequence[int]) -> str | None:
    """Why a codebook does not fit its type, or None: one finite entry per storage code in [lo, hi], integer
    storage, every zero point 0 (real = scale * codebook[q - storage_min] + offset)."""
    if not codebook:
        return None
    if storage.is_float:
        return f"a codebook needs integer storage; {storage.name} codes are values already"
    if len(codebook) != hi - lo + 1:
        return (f"a codebook over storage range [{lo}, {hi}] has {hi - lo + 1} entries (one per code), "
                f"found {len(codebook)}")
    if (index := first_not_finite(codebook)) is not None:
        return f"codebook[{index}] {codebook[index]!r} must be finite"
    if any_nonzero(zero_points):
        bad = next(z for z in zero_points if z)
        return f"zero point {bad} with a codebook: the codebook's values are the reals' units, every zero point is 0"
    return None


def first_not_finite(values: Sequence[float]) -> int | None:
    """The index of the first NaN or infinite value, or None."""
    finite = np.isfinite(values_array(values, np.float64))
    return None if finite.all() else int(np.argmin(finite))


def first_outside(values: Sequence[int], lo: int, hi: int) -> int | None:
    """The first value outside [lo, hi], or None."""
    try:
        array = values_array(values, np.int64)
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
    if schema.symmetric and any_nonzero(zero_points):
        bad = next(z for z in zero_points if z != 0)
        return f"schema {schema.name.lower()} requires every zero point to be 0, found {bad}"
    if schema is Schema.SYMMETRIC_WITH_UNSIGNED and zero_points:
        if storage is None:
            raise TypeError("schema_problem needs the storage type to judge symmetric_with_unsigned zero points")
        centre, bottom = symmetric_with_unsigned_zero_points(storage.min, storage.max, lo)
        allowed = {centre, bottom}
        if not set(np.unique(values_array(zero_points, np.int64)).tolist()) <= allowed:
            bad = next(z for z in zero_points if z not in allowed)
            either = " or ".join(str(z) for z in sorted(allowed, key=lambda z: z != centre))
            return (f"schema symmetric_with_unsigned requires every zero point to be {either} "
                    f"({centre}: the type's midpoint, symmetric; {bottom}: storage_min, unsigned), found {bad}")
    if schema.pow2:
        values = values_array(scales, np.float64)
        mantissa, _ = np.frexp(values)
        not_pow2 = ~(np.isfinite(values) & (values > 0) & (mantissa == 0.5))
        if not_pow2.any():
            return (f"schema {schema.name.lower()} requires every scale to be exactly 2^k, "
                    f"found {scales[int(np.argmax(not_pow2))]!r}")
    return None


def node_axis_problem(axis: int, rank: int) -> str | None:
    """Why ``axis``, a QuantizeLinear / DequantizeLinear node's attribute (negative counts from the end), names no
    dimension of a rank-``rank`` tensor, or None. The lift (QT108) and ``run`` word it so."""
    if -rank <= axis < rank:
        return None
    if rank == 0:
        return f"axis {axis} names no dimension of a scalar (rank 0), which takes one scale (per tensor)"
    return f"axis {axis} is out of range for a rank-{rank} tensor; use an axis in [{-rank}, {rank - 1}]"


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
