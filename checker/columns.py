"""The model's quantized types in flat arrays, for rules that screen them all at once.

Type rules call the validity helpers of proto/validity.py for their messages;
on a model with thousands of per-channel types, calling a helper per scale
(or even a few attribute reads per declaration, rule after rule) costs more
than the whole of onnx.checker. So the distinct declared types are read once
into columns: one row per type (a declaration with its TypeProto repeated by
other declarations shares that row: same type, same shape) and every scale
and zero point in flat arrays. Rules compute a mask that holds for every
type they might report (a superset: a screen, never the verdict), and run
their per-declaration code only on the declarations of those types, so the
helper still decides every finding.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

import numpy as np

from onnx_qtypes.checker.context import Context, Declared
from onnx_qtypes.proto.errors import QTypeError
from onnx_qtypes.proto.parameter_values import ParameterValues, values_array
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.storage_types import EXPRESSED_TYPES, STORAGE_TYPES
from onnx_qtypes.proto.validity import count_problem, negative_scale_problem, symmetric_with_unsigned_zero_points

UNKNOWN = -1  # rank of a declaration without a shape
# axis_state: what the declared shape says about the type's axis
DIM, DIM_UNKNOWN, NO_DIM = 0, 1, 2  # axis_dim holds its size / a symbolic or absent dim / no axis or shape, or outside


@dataclasses.dataclass(frozen=True)
class Columns:
    decls: list[Declared]  # the unique quantized declarations, in model order
    row_of: np.ndarray  # per declaration, its type's row
    types: list[Declared]  # per row, the first declaration of that type (and shape)
    # per row, as the QType reads the message
    known_expressed: np.ndarray  # an allowed expressed type
    scale_count: np.ndarray
    zero_point_count: np.ndarray  # with scales, none written reads as one 0 per scale
    has_axis: np.ndarray
    axis: np.ndarray  # 0 without an axis
    has_block: np.ndarray
    block_size: np.ndarray  # 0 without a block size
    known_storage: np.ndarray  # an allowed storage type (the next four are 0 otherwise)
    storage_min: np.ndarray
    storage_max: np.ndarray
    type_min: np.ndarray  # the storage type's limits
    type_max: np.ndarray
    rank: np.ndarray  # the declared shape's rank, UNKNOWN without one
    axis_state: np.ndarray  # DIM, DIM_UNKNOWN or NO_DIM
    axis_dim: np.ndarray  # shape[axis] when axis_state is DIM, else 0
    # every scale and zero point of every row (absent zero points read as 0, as they mean); a type of many
    # parameters by its distinct values only (``_representatives``)
    scales: np.ndarray  # float64
    scale_owner: np.ndarray  # row, per scale
    zero_points: np.ndarray  # int64
    zero_point_owner: np.ndarray

    def declarations(self, rows: np.ndarray) -> list[Declared]:
        """The declarations whose row is flagged in the boolean mask ``rows``, in model order."""
        return [self.decls[i] for i in np.flatnonzero(rows[self.row_of])]

    def owners(self, mask: np.ndarray, of_zero_points: bool = False) -> list[Declared]:
        """The declarations whose type owns at least one flagged scale (zero point), in model order."""
        owner = self.zero_point_owner if of_zero_points else self.scale_owner
        rows = np.zeros(len(self.types), bool)
        rows[owner[mask]] = True
        return self.declarations(rows)

    def per_scale(self, values: list, dtype: type) -> np.ndarray:
        """A per-row value broadcast to every scale."""
        return np.asarray(values, dtype=dtype)[self.scale_owner]

    def per_zero_point(self, values: list, dtype: type) -> np.ndarray:
        """A per-row value broadcast to every zero point."""
        return np.asarray(values, dtype=dtype)[self.zero_point_owner]


def columns(ctx: Context) -> Columns:
    return ctx.memo("columns", lambda: _build(ctx))


def _build(ctx: Context) -> Columns:
    decls = list(ctx.quantized_declarations())
    row_by_message: dict[int, int] = {}  # declarations decoded from one TypeProto share their message object
    types: list[Declared] = []
    for decl in decls:
        if id(decl.quantization) not in row_by_message:
            row_by_message[id(decl.quantization)] = len(types)
            types.append(decl)
    # thousands of types differ in their parameters only: each distinct rest (everything _row reads) is one row
    # of ``distinct``, and each type takes its row from there
    keys = [(qt.storage, qt.expressed, len(qt.scale), len(qt.zero_point), qt.axis, qt.block_size, qt.storage_min,
             qt.storage_max, d.shape) for d in types for qt in (d.qtype,)]
    position: dict[tuple, int] = {}
    distinct = []
    for key in keys:
        if key not in position:
            position[key] = len(distinct)
            distinct.append(_row(*key))
    table = np.array(distinct, dtype=np.int64).reshape(len(distinct), 15)[
        np.array([position[key] for key in keys], dtype=np.intp)].T
    scale_counts, zp_counts = table[1], table[2]
    scales, scale_sizes = _flat([d.qtype.scale for d in types], np.float64)
    zero_points, zero_point_sizes = _flat([d.qtype.zero_point for d in types], np.int64)
    index = np.arange(len(types))
    return Columns(
        decls, np.array([row_by_message[id(d.quantization)] for d in decls], dtype=np.intp), types,
        table[0].astype(bool), scale_counts, zp_counts, table[3].astype(bool), table[4], table[5].astype(bool),
        table[6], table[7].astype(bool), *table[8:], scales, np.repeat(index, scale_sizes), zero_points,
        np.repeat(index, zero_point_sizes),
    )


def _row(storage_type: str, expressed: str, scale_count: int, zero_point_count: int, axis: int | None,
         block_size: int | None, storage_min: int | None, storage_max: int | None,
         shape: tuple[int | None, ...] | None) -> tuple[int | bool, ...]:
    """One row of the table ``_build`` makes (the fields of ``Columns`` from known_expressed to axis_dim)."""
    storage = STORAGE_TYPES.get(storage_type)  # None when the written storage_type is not allowed
    rank = UNKNOWN if shape is None else len(shape)
    axis_state, axis_dim = NO_DIM, 0
    if axis is not None and 0 <= axis < rank:
        axis_state, axis_dim = (DIM_UNKNOWN, 0) if shape[axis] is None else (DIM, shape[axis])
    return (
        expressed in EXPRESSED_TYPES, scale_count, zero_point_count,
        axis is not None, axis or 0, block_size is not None, block_size or 0,
        storage is not None, storage_min if storage else 0, storage_max if storage else 0,
        storage.min if storage else 0, storage.max if storage else 0, rank, axis_state, axis_dim,
    )


def _flat(values: list[Sequence], dtype: type) -> tuple[np.ndarray, list[int]]:
    """Every type's ``_representatives`` joined in one array, and how many each gave. When every type lists its
    values (a tuple, short enough to stand as it is), they are read in one step, element by element as
    ``values_array`` reads each tuple."""
    if all(type(v) is tuple and len(v) <= _DISTINCT_ABOVE for v in values):
        sizes = [len(v) for v in values]
        return np.fromiter(itertools.chain.from_iterable(values), dtype=dtype, count=sum(sizes)), sizes
    parts = [_representatives(v, dtype) for v in values]
    return _joined(parts, dtype), [v.size for v in parts]


# A type with more parameters than this stands in the flat arrays by its distinct values only.
_DISTINCT_ABOVE = 4096


def _representatives(values: Sequence, dtype: type) -> np.ndarray:
    """A type's parameters as the flat arrays hold them: all of them, or for a large type (a blocked weight's
    millions of scales, held by reference) its distinct values only, which every screen answers alike (each
    tests one value at a time, or takes a type's largest): the columns then grow with the number of types, not
    of parameters, and each type's values are read once, one type at a time."""
    if len(values) <= _DISTINCT_ABOVE:
        return values_array(values, dtype)
    held = values.held() if isinstance(values, ParameterValues) else np.asarray(values)
    if not any(held.strides):  # one value broadcast (zero points none of which is written)
        return held.reshape(-1)[:1].astype(dtype)
    if held.dtype.itemsize == 2:  # float16 scales (a 4-bit LLM's): 65,536 bit patterns, counted instead of sorted
        present = np.flatnonzero(np.bincount(held.reshape(-1).view(np.uint16), minlength=1 << 16))
        held = present.astype(np.uint16).view(held.dtype)
    return np.unique(held.astype(dtype))  # NaNs as one, -0.0 as 0.0: no screen tells them apart


def _joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def well_formed(ctx: Context, qtype: QType) -> bool:
    """Whether a type passes every test that does not depend on a shape (QType's own validation).

    Rules that derive one type from another (QT401: a data-movement op's output from its input) derive only
    from well-formed types: the type rules (QT1xx) report what is wrong with the others, and advice to copy
    them would copy the error. Decided for every declared type at once, on the columns.
    """
    verdicts = ctx.memo("well_formed", lambda: _verdicts(columns(ctx)))
    verdict = verdicts.get(id(qtype))  # the types live as long as the context: ids stay theirs
    if verdict is None:  # not a declared type: QType decides
        try:
            qtype.replace()
        except QTypeError:
            return False
        return True
    return verdict


def valid_type(ctx: Context, scope: str, name: str) -> QType | None:
    """A tensor's quantized type when it is valid: well formed, with parameters that fit its shape if known.

    None for a tensor without a quantized type and for one whose type the type rules (QT1xx) report.
    """
    qtype = ctx.qtype(scope, name)
    if qtype is None or not well_formed(ctx, qtype):
        return None
    shape = ctx.shape(scope, name)
    return qtype if shape is None or count_problem(qtype, shape) is None else None


def _verdicts(c: Columns) -> dict[int, bool]:
    """id(QType) -> well formed, for the type of every row (the tests of QType._validate, vectorized)."""
    n = len(c.types)
    schema = np.fromiter((d.qtype.schema.value for d in c.types), np.int64, n)
    ok = c.known_storage & c.known_expressed
    ok &= (c.type_min <= c.storage_min) & (c.storage_min < c.storage_max) & (c.storage_max <= c.type_max)
    ok &= ~c.has_axis | (c.axis >= 0)
    ok &= ~c.has_block | ((c.block_size > 0) & c.has_axis)
    static = c.scale_count > 0  # a dynamic type carries no zero points; a static one a pair per scale
    ok &= np.where(static, (c.zero_point_count == c.scale_count) & (c.has_axis | (c.scale_count == 1)),
                   c.zero_point_count == 0)
    scales, owner = c.scales, c.scale_owner
    with np.errstate(invalid="ignore"):
        bad = ~(np.isfinite(scales) & (scales != 0))  # a negative scale is well formed (QT128 / QT409-QT411)
        pow2 = np.isin(schema, (Schema.ASYMMETRIC_POW2_SCALE.value, Schema.SYMMETRIC_POW2_SCALE.value))[owner]
        bad[pow2] |= np.frexp(scales[pow2])[0] != 0.5  # exactly 2^k: the mantissa is 1/2
    ok &= np.bincount(owner[bad], minlength=n) == 0
    zero_points, owner = c.zero_points, c.zero_point_owner
    lo, hi = c.storage_min[owner], c.storage_max[owner]
    bad = (zero_points < lo) | (zero_points > hi)
    symmetric = np.isin(schema, (Schema.SYMMETRIC.value, Schema.SYMMETRIC_POW2_SCALE.value))
    bad |= symmetric[owner] & (zero_points != 0)
    unsigned = schema == Schema.SYMMETRIC_WITH_UNSIGNED.value
    centre, bottom = symmetric_with_unsigned_zero_points(c.type_min[owner], c.type_max[owner], lo)
    bad |= unsigned[owner] & (zero_points != centre) & (zero_points != bottom)
    ok &= np.bincount(owner[bad], minlength=n) == 0
    for i in np.flatnonzero(ok & unsigned):  # few: the negative scales symmetric_with_unsigned refuses (QT128)
        qt = c.types[i].qtype
        ok[i] = not (qt.has_negative_scale and negative_scale_problem(qt.schema, qt.scale, qt.zero_point, qt.storage_min))
    return {id(d.qtype): bool(v) for d, v in zip(c.types, ok.tolist())}
