"""The normative quantize / dequantize formulas, executable.

This module is the only place in the project that maps between real values
and storage integers; every other module imports it. It transcribes
``proposal/spec/semantics.md``:

    dequantize(q)  = scale[i] * (q - zero_point[i]) + offset[i]
    quantize(x)    = clamp(round_half_to_even((x - offset[i]) / scale[i]) + zero_point[i],
                           storage_min, storage_max)

(``offset`` is 0 unless the type has version-3 offsets). A version-3 type with a codebook reads a code as
``scale[i] * codebook[q - storage_min] + offset[i]`` and has no quantize
(proposal/spec/llm_formats.md).

computed in float64. A float storage type (float8, float4: zero point 0) stores
``x / scale[i]`` saturated to its largest finite value and rounded to the
nearest representable value, ties to even (ONNX QuantizeLinear, saturate=1);
dequantize reads it as ``scale[i] * q``. ``i`` is 0 for a per-tensor type, the index along
``axis`` for a per-axis type and the block index along ``axis`` for a
blocked type (ONNX QuantizeLinear-21 layout: the last block may be short,
parameters are stored flattened in row-major order of the parameter shape).

A type without scale is *dynamic*: ``dynamic_parameters`` computes its
parameters from the data, by schema, in the expressed type's arithmetic
(the uint8 asymmetric case is ONNX DynamicQuantizeLinear).
"""

from __future__ import annotations

import math
from fractions import Fraction
from collections.abc import Sequence

import numpy as np

from onnx_qtypes.proto.errors import QTypeError
from onnx_qtypes.proto.parameter_layout import block_count, parameter_shape
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.validity import codebook_problem, offset_problem, symmetric_with_unsigned_zero_points

__all__ = [
    "broadcast_offsets",
    "broadcast_parameters",
    "codebook_entries",
    "dequantize",
    "dequantize_at",
    "dynamic_parameters",
    "quantize_float",
    "parameter_index",
    "quantize",
    "quantize_dynamic",
    "resolve",
    "round_half_to_even",
    "round_to",
    "storage_range",
    "to_storage",
]


def storage_range(qtype: QType) -> tuple[int, int]:
    """The inclusive range [storage_min, storage_max] quantized values saturate to."""
    assert qtype.storage_min is not None and qtype.storage_max is not None
    return qtype.storage_min, qtype.storage_max


def round_half_to_even(x: np.ndarray) -> np.ndarray:
    """Round to the nearest integer, ties to even (IEEE roundTiesToEven)."""
    return np.rint(x)


def saturated(steps: np.ndarray, zero_point: np.ndarray | int, lo: int, hi: int, *,
              nan: np.ndarray | int) -> np.ndarray:
    """Rounded steps (x / scale) plus the zero point, clamped to [lo, hi] (infinities to their side's end); a NaN
    step stores ``nan`` (a typed quantize: the zero point; a QuantizeLinear no type covers: onnxruntime's lo)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(np.isnan(steps), nan, np.clip(steps + zero_point, lo, hi))


def _require_static(qtype: QType, tensor: str | None) -> None:
    if qtype.is_dynamic:
        raise QTypeError("scale", "the type is dynamic (no scale); resolve its parameters from data first", tensor)


def _fitting_shape(qtype: QType, shape: Sequence[int], tensor: str | None) -> tuple[int, ...]:
    shape = tuple(int(d) for d in shape)
    qtype.check_shape(shape, tensor)
    expected = parameter_shape(qtype, shape)
    assert expected is not None
    return expected  # type: ignore[return-value]


def parameter_index(qtype: QType, shape: Sequence[int], tensor: str | None = None) -> np.ndarray:
    """For every element of a tensor of ``shape``, the index of its (scale, zero point) pair.

    An int64 array broadcastable to ``shape``: a 0-d zero for per-tensor, the
    coordinate along ``axis`` for per-axis, the flattened block index for
    blocked types.
    """
    _require_static(qtype, tensor)
    pshape = _fitting_shape(qtype, shape, tensor)
    shape = tuple(int(d) for d in shape)
    if qtype.axis is None:
        return np.zeros((), np.int64)
    if qtype.block_size is None:
        view = [1] * len(shape)
        view[qtype.axis] = shape[qtype.axis]
        return np.arange(shape[qtype.axis], dtype=np.int64).reshape(view)
    flat = np.arange(math.prod(pshape), dtype=np.int64).reshape(pshape)
    along = np.arange(shape[qtype.axis]) // qtype.block_size  # block of each coordinate
    return np.take(flat, along, axis=qtype.axis)


def broadcast_parameters(qtype: QType, shape: Sequence[int], tensor: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(scale float64, zero_point int64) arrays broadcastable to ``shape``.

    Raises QTypeError (naming ``tensor``) when the parameter count does not
    fit the shape.
    """
    return parameters_at(qtype, parameter_index(qtype, shape, tensor))


def parameters_at(qtype: QType, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(scale float64, zero_point int64) of the parameter pairs ``index`` selects: the one place every reader of a
    type's scales and zero points goes through (dequantize, quantize, the integer kernels)."""
    return np.asarray(qtype.scale, dtype=np.float64)[index], np.asarray(qtype.zero_point, dtype=np.int64)[index]


def broadcast_offsets(qtype: QType, shape: Sequence[int], tensor: str | None = None) -> np.ndarray | float:
    """The real-domain offset of every element (float64, broadcastable to ``shape``); 0.0 for a type without."""
    if not qtype.offset:
        return 0.0
    return np.asarray(qtype.offset, dtype=np.float64)[parameter_index(qtype, shape, tensor)]


def dequantize(q: np.ndarray, qtype: QType, *, tensor: str | None = None) -> np.ndarray:
    """Real values of storage integers ``q``: ``scale[i] * (q - zero_point[i]) + offset[i]`` in float64 (with a
    codebook, ``scale[i] * codebook[q - storage_min] + offset[i]``).

    Exact whenever the scale is a float32 (or narrower) value and
    ``|q - zero_point| < 2**29``; int32 storage can lose the last bits. With an offset or a codebook the
    product is exact and the sum rounds once in float64 (53 bits), which holds the exact real of every GGUF
    format (proposal/spec/llm_formats.md#exactness).
    """
    q = np.asarray(q)
    _require_static(qtype, tensor)
    return dequantize_at(q, qtype, parameter_index(qtype, q.shape, tensor), tensor=tensor)


def codebook_entries(codes: np.ndarray, qtype: QType, *, tensor: str | None = None) -> np.ndarray:
    """The codebook entry each code reads (float64): ``codebook[q - storage_min]``, refusing a codebook that does
    not fit its type (one built unvalidated: the checker's view, QT141) and a code outside the range."""
    lo, hi = storage_range(qtype)
    if problem := codebook_problem(qtype.codebook, qtype.storage_type, lo, hi, qtype.zero_point):
        raise QTypeError("codebook", problem, tensor)
    codes = np.asarray(codes, np.int64)
    if codes.size and (codes.min() < lo or codes.max() > hi):
        bad = codes.min() if codes.min() < lo else codes.max()
        raise QTypeError("storage", f"code {int(bad)} is outside the codebook's range [{lo}, {hi}]", tensor)
    return np.asarray(qtype.codebook, dtype=np.float64)[codes - lo]


def dequantize_at(q: np.ndarray, qtype: QType, index: np.ndarray, *, tensor: str | None = None) -> np.ndarray:
    """``dequantize`` with each element's parameter index given (broadcastable to ``q``): what a kernel that has
    moved codes and their indices together (Gather of rows of a blocked weight) reads them as."""
    q = np.asarray(q)
    scale, zero_point = parameters_at(qtype, index)
    # no offset is no addition: -0 + 0.0 would turn float storage's -0 (and a negative scale's 0) into +0
    if qtype.offset and (problem := offset_problem(qtype.offset, len(qtype.scale))):
        raise QTypeError("offset", problem, tensor)  # a type built unvalidated (the checker's view: QT140)
    offset = np.asarray(qtype.offset, dtype=np.float64)[index] if qtype.offset else None
    if qtype.storage_type.is_float and q.dtype == qtype.storage_type.np_dtype:
        scaled = scale * q.astype(np.float64)  # zero point 0; NaN and inf (where the type has them) stay
        return scaled if offset is None else scaled + offset
    if q.dtype.kind not in "iub" and not _is_ml_integer(q.dtype):
        raise QTypeError("storage", f"expected storage integers, got {q.dtype} values", tensor)
    codes = q.astype(np.int64)
    if qtype.codebook:
        values = codebook_entries(codes, qtype, tensor=tensor)
    else:
        values = (codes - zero_point).astype(np.float64)
    return scale * values if offset is None else scale * values + offset


def quantize(x: np.ndarray, qtype: QType, *, tensor: str | None = None, saturate: bool = True) -> np.ndarray:
    """Storage integers of real values ``x`` (static types only). ``saturate`` (QuantizeLinear's attribute)
    matters to float storage only: see ``quantize_float``.

    ``x / scale`` is one correctly rounded float64 division. For float32
    (or narrower) ``x`` and scale with ``|x / scale| < 2**28`` that decides
    every rounding, ties included, exactly as exact arithmetic would. A
    type with offsets (GGUF's -dmin) subtracts the offset first, in float64,
    then divides: each step correctly rounded, but the difference may need
    up to 53 bits, so the claim above does not carry over: a value within a
    float64 rounding of a tie may round as the tie does.
    ±inf saturate; NaN has no quantized value and maps to the zero point.
    """
    if qtype.codebook:
        raise QTypeError("codebook", "a type with a codebook has no quantize (it declares constants only: "
                         "proposal/spec/llm_formats.md)", tensor)
    scale, zero_point = broadcast_parameters(qtype, np.shape(x), tensor)
    x = np.asarray(x, dtype=np.float64) - broadcast_offsets(qtype, np.shape(x), tensor)
    if qtype.storage_type.is_float:
        return quantize_float(x / scale, qtype, saturate=saturate)
    lo, hi = storage_range(qtype)
    with np.errstate(invalid="ignore", over="ignore"):
        steps = round_half_to_even(x / scale)
    return to_storage(saturated(steps, zero_point, lo, hi, nan=zero_point).astype(np.int64), qtype)


def quantize_float(steps: np.ndarray, qtype: QType, *, saturate: bool = True) -> np.ndarray:
    """``steps`` (x / scale, float64) in a float storage type, rounded to nearest, ties to even. ``saturate``:
    beyond the largest finite value (infinities too) clamp to it; otherwise what ONNX's saturate=0 gives (NaN
    for e4m3fn and the fnuz types, inf for e5m2; float4e2m1 has neither and saturates). NaN stays NaN."""
    st = qtype.storage_type
    if saturate or st.name == "float4e2m1":
        steps = np.clip(steps, st.min, st.max)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.asarray(steps, np.float64).astype(st.np_dtype)


def to_storage(values: np.ndarray, qtype: QType, *, tensor: str | None = None) -> np.ndarray:
    """Integers already inside the storage range, as an array of the storage dtype (values of a float storage
    type: exactly representable ones)."""
    values = np.asarray(values)
    if qtype.storage_type.is_float:
        return _exact_float_storage(values, qtype, tensor)
    lo, hi = storage_range(qtype)
    if values.size and (values.min() < lo or values.max() > hi):
        bad = values.min() if values.min() < lo else values.max()
        raise QTypeError("storage", f"value {int(bad)} is outside the storage range [{lo}, {hi}]", tensor)
    return values.astype(qtype.storage_type.np_dtype)


def _exact_float_storage(values: np.ndarray, qtype: QType, tensor: str | None) -> np.ndarray:
    dtype = qtype.storage_type.np_dtype
    if values.dtype == dtype:
        return values
    stored = values.astype(dtype)
    same = (stored.astype(np.float64) == values.astype(np.float64)) | (np.isnan(values.astype(np.float64)) & np.isnan(stored.astype(np.float64)))
    if not same.all():
        bad = values.reshape(-1)[int(np.argmin(same.reshape(-1)))]
        raise QTypeError("storage", f"value {bad!r} is not exactly representable in {qtype.storage}", tensor)
    return stored


def _is_ml_integer(dtype: np.dtype) -> bool:
    return dtype.name in ("int2", "uint2", "int4", "uint4")


# --- dynamic types -------------------------------------------------------------


def _group_extrema(x: np.ndarray, qtype: QType) -> tuple[np.ndarray, np.ndarray]:
    """Per parameter group: (min, max) of ``x``, shaped like the parameter array."""
    if qtype.axis is None:
        return np.asarray([x.min()]), np.asarray([x.max()])
    axis = qtype.axis
    if qtype.block_size is None:
        moved = np.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)
        return moved.min(axis=1), moved.max(axis=1)
    dim, size = x.shape[axis], qtype.block_size
    blocks = block_count(dim, size)
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, blocks * size - dim)
    lo = np.pad(x, pad, constant_values=np.inf)  # padding never wins a min
    hi = np.pad(x, pad, constant_values=-np.inf)
    split = x.shape[:axis] + (blocks, size) + x.shape[axis + 1 :]
    return lo.reshape(split).min(axis=axis + 1).reshape(-1), hi.reshape(split).max(axis=axis + 1).reshape(-1)


def dynamic_parameters(x: np.ndarray, qtype: QType, *, tensor: str | None = None) -> QType:
    """The static type a dynamic ``qtype`` takes for data ``x``.

    Per group (whole tensor, slice or block), in the expressed type's
    arithmetic, with ``rmin = min(0, min x)``, ``rmax = max(0, max x)`` and
    an empty range counted as a range of 1:

    - asymmetric: ``scale = (rmax - rmin) / (qmax - qmin)``,
      ``zero_point = round_half_to_even(clamp(qmin - rmin / scale, qmin, qmax))``
      (for uint8 this is ONNX DynamicQuantizeLinear);
    - symmetric: ``scale = max(|rmin|, rmax) / qsym``, zero point 0, with
      ``qsym = min(-qmin, qmax)`` for signed storage and ``qmax`` otherwise;
    - symmetric_with_unsigned (Glow's choice, any storage type): when
      ``min x >= 0``, the unsigned form: zero point ``qmin`` and
      ``scale = rmax / (qmax - qmin)``; otherwise the symmetric form: zero
      point ``mid``, the storage type's midpoint (0 signed, 128 uint8), and
      ``scale = max(|rmin|, rmax) / qsym`` with ``qsym = min(mid - qmin, qmax - mid)``
      (``qmax - mid`` when ``mid == qmin``); a declared range that leaves no
      room above ``mid`` (``mid`` outside ``[qmin, qmax)``) takes the unsigned form;
    - float storage (zero point 0): the symmetric form, whatever the schema;
    - *_pow2_scale: the scale rounded up to the next power of two, then the
      zero point recomputed with it.

    "In the expressed type's arithmetic" means (proposal/spec/semantics.md#dynamic-parameters): every operation
    is correctly rounded once to the expressed type (nearest, ties to even), and the integer constants
    (``qmax - qmin``, ``qsym``, ``qmin``) enter as the exact integers they are, never rounded to the expressed
    type first: ``float16(65535)`` is infinity, and int16 / uint16 storage expressed in float16 would get a
    scale of 0.
    """
    if not qtype.is_dynamic:
        return qtype
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        raise QTypeError("scale", "cannot compute dynamic parameters of an empty tensor", tensor)
    if not np.all(np.isfinite(x)):
        raise QTypeError("scale", "cannot compute dynamic parameters: the data holds NaN or infinity", tensor)
    _check_axis(qtype, x.shape, tensor)
    ftype = qtype.expressed_type.np_dtype
    lo, hi = storage_range(qtype)
    gmin, gmax = _group_extrema(x, qtype)
    rmin = round_to(np.minimum(gmin, 0.0), ftype)
    rmax = round_to(np.maximum(gmax, 0.0), ftype)
    schema = qtype.schema
    if qtype.storage_type.is_float:  # zero point 0 whatever the schema: the symmetric form
        schema = Schema.SYMMETRIC_POW2_SCALE if schema.pow2 else Schema.SYMMETRIC

    def nonempty(r: np.ndarray) -> np.ndarray:  # an empty range counts as a range of 1 (no arithmetic)
        return np.where(r == 0, ftype.type(1.0), r).astype(ftype)

    def over(r: np.ndarray, steps: int) -> np.ndarray:  # r / steps, the integer exact, rounded once
        return _rounded_operation(np.divide, nonempty(r), np.float64(steps), ftype)

    zero_points = np.zeros(rmin.shape, np.int64)
    if schema in (Schema.ASYMMETRIC, Schema.ASYMMETRIC_POW2_SCALE):
        scales = over(_rounded_operation(np.subtract, rmax, rmin, ftype), hi - lo)
    else:
        amax = np.maximum(-rmin, rmax).astype(ftype)  # exact: a negation and a choice
        scales = over(amax, min(-lo, hi) if lo < 0 else hi)
        if schema is Schema.SYMMETRIC_WITH_UNSIGNED:
            st = qtype.storage_type
            mid, bottom = symmetric_with_unsigned_zero_points(st.min, st.max, lo)
            unsigned = over(rmax, hi - lo)
            if lo <= mid < hi:
                negative = gmin < 0
                signed = over(amax, min(mid - lo, hi - mid) if lo < mid else hi - mid)
                scales = np.where(negative, signed, unsigned).astype(ftype)
                zero_points = np.where(negative, mid, bottom).astype(np.int64)
            else:
                scales = np.broadcast_to(unsigned, rmax.shape).astype(ftype)
                zero_points = np.full(rmax.shape, bottom, np.int64)
    if schema.pow2:
        scales = _pow2_ceiling(scales.astype(np.float64)).astype(ftype)
    if not np.all(np.isfinite(scales.astype(np.float64))):
        raise QTypeError("scale", f"cannot compute dynamic parameters: the data's range overflows {qtype.expressed} "
                         "(the arithmetic of the expressed type)", tensor)
    scales = _positive(scales, ftype)
    if schema in (Schema.ASYMMETRIC, Schema.ASYMMETRIC_POW2_SCALE):
        steps = _rounded_operation(np.divide, rmin, scales, ftype)  # rmin / scale
        initial = _rounded_operation(np.subtract, np.float64(lo), steps, ftype)  # qmin - that, qmin exact
        clamped = np.clip(initial.astype(np.float64), lo, hi)
        zero_points = round_half_to_even(clamped).astype(np.int64)
    return qtype.replace(scale=tuple(float(s) for s in scales), zero_point=tuple(int(z) for z in zero_points))


def round_to(values: np.ndarray, ftype: np.dtype) -> np.ndarray:
    """float64 ``values`` rounded once to ``ftype`` (float32, float16, bfloat16): nearest, ties to even.

    numpy rounds float64 to float32 and float16 correctly; ml_dtypes goes to bfloat16 through float32, which
    can round twice (1 + 2^-8 + 2^-30 becomes 1, not 1 + 2^-7). Rounding to float32 *to odd* first keeps the
    information the second rounding needs (24 >= 8 + 2 bits), so that path is correct too.
    """
    values = np.asarray(values, np.float64)
    ftype = np.dtype(ftype)
    if ftype in (np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64)):
        with np.errstate(over="ignore"):
            return values.astype(ftype)
    with np.errstate(over="ignore", invalid="ignore"):
        near = values.astype(np.float32)
        inexact = np.isfinite(near) & (near.astype(np.float64) != values)
        away = inexact & (np.abs(near.astype(np.float64)) > np.abs(values))
        toward_zero = np.where(away, np.nextafter(near, np.float32(0)), near)
        bits = toward_zero.view(np.uint32) | np.where(inexact, np.uint32(1), np.uint32(0))
        return bits.view(np.float32).astype(ftype)


def _rounded_operation(op, a: np.ndarray, b: np.ndarray, ftype: np.dtype) -> np.ndarray:
    """``op(a, b)`` of exact operands (float64-representable values) rounded once to ``ftype``.

    float64 rounds the exact result first; rounding that to ``ftype`` again can differ from rounding the exact
    result only where the float64 value lands exactly halfway between two values of ``ftype``. There the exact
    result decides (rational arithmetic), so the result is correctly rounded whatever the operands' widths (an
    int32 range of 2^32 - 1 steps has more bits than float64 can spare for a float32 quotient).
    """
    a64, b64 = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        wide = op(a64, b64)
    out = np.array(round_to(wide, ftype), copy=True)
    flat_out, flat_wide = out.reshape(-1), wide.reshape(-1)
    near = flat_out.astype(np.float64)
    other = np.nextafter(flat_out, np.where(flat_wide > near, np.inf, -np.inf).astype(ftype))
    halfway = np.isfinite(near) & np.isfinite(other.astype(np.float64)) & (flat_wide != near) & (
        (near + other.astype(np.float64)) / 2 == flat_wide)
    for i in np.flatnonzero(halfway):
        ai, bi = Fraction(float(a64.reshape(-1)[i])), Fraction(float(b64.reshape(-1)[i]))
        exact = ai / bi if op is np.divide else ai - bi if op is np.subtract else None
        assert exact is not None, op
        if exact != Fraction(float(flat_wide[i])):  # the wide value is a false tie: round toward the exact side
            above = exact > Fraction(float(flat_wide[i]))
            flat_out[i] = max(flat_out[i], other[i]) if above else min(flat_out[i], other[i])
    return out


def _check_axis(qtype: QType, shape: Sequence[int], tensor: str | None) -> None:
    if qtype.axis is not None and not 0 <= qtype.axis < len(shape):
        raise QTypeError("axis", f"axis {qtype.axis} is outside [0, {len(shape)}) for a rank-{len(shape)} tensor", tensor)


def _pow2_ceiling(scales: np.ndarray) -> np.ndarray:
    mantissa, exponent = np.frexp(scales)
    return np.where(mantissa == 0.5, scales, np.ldexp(1.0, exponent))


def _positive(scales: np.ndarray, ftype: np.dtype) -> np.ndarray:
    """A range so small that its scale underflows gets the smallest positive value instead."""
    if np.all(scales > 0):
        return scales
    import ml_dtypes

    tiny = ml_dtypes.finfo(ftype).smallest_subnormal
    return np.where(scales > 0, scales, tiny).astype(ftype)


def resolve(qtype: QType, x: np.ndarray, *, tensor: str | None = None) -> QType:
    """``qtype`` itself when static; its parameters computed from ``x`` when dynamic."""
    return dynamic_parameters(x, qtype, tensor=tensor) if qtype.is_dynamic else qtype


def quantize_dynamic(x: np.ndarray, qtype: QType, *, tensor: str | None = None) -> tuple[np.ndarray, QType]:
    """Quantize with parameters resolved from ``x``: (storage, the static type used)."""
    resolved = resolve(qtype, x, tensor=tensor)
    return quantize(x, resolved, tensor=tensor), resolved
