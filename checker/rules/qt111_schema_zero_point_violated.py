"""A zero point breaks the declared schema.

## What it checks
- SYMMETRIC and SYMMETRIC_POW2_SCALE: every zero point is 0.
- SYMMETRIC_WITH_UNSIGNED: every zero point is one of two values. The
  symmetric form: the midpoint `(min + max + 1) / 2` of the storage type's
  full range (0 for every signed type; 2, 8, 128, 32768 for uint2, uint4,
  uint8, uint16), whatever the declared range. The unsigned form: `storage_min`
  (-128 for int8, 0 for uint8, -127 for int8 narrowed to [-127, 127]).
  So int8 admits {0, -128} and uint8 {128, 0}.

## Why
A schema is a declared predicate that hardware relies on: symmetric weights
let an integer kernel skip the zero-point correction term, and many
accelerators accept nothing else (TensorRT: "zeroPt must be all zeros").
SYMMETRIC_WITH_UNSIGNED is Glow's schema: real 0 sits either at signed 0 or
at the bottom of the range, where a non-negative tensor (a ReLU output)
uses every step; int8 with zero point -128 holds exactly what uint8 with 0
holds. The schema never changes what a value means; a type that claims a
schema it does not satisfy misleads every tool that trusts the claim.

## Invalid example
`int8:float32<0.1:3, symmetric>`; `int8:float32<0.1:-127, symmetric_with_unsigned>`;
`uint8:float32<0.1:127, symmetric_with_unsigned>`.

## Valid example
`int8:float32<0.1:0, symmetric>`; `int8:float32<0.1:-128, symmetric_with_unsigned>`;
`uint8:float32<0.1:128, symmetric_with_unsigned>`.

## Fix
Requantize with an admitted zero point (0; under SYMMETRIC_WITH_UNSIGNED
also the type's midpoint or `storage_min`), or declare the schema the
parameters actually follow (ASYMMETRIC).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import Context, decl_location, storage_range
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import summarize_flagged
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.storage_types import StorageType
from onnx_qtypes.proto.validity import schema_problem, symmetric_with_unsigned_zero_points


@rule("QT111", "schema-zero-point-violated", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    says = {schema: schema.symmetric or schema is Schema.SYMMETRIC_WITH_UNSIGNED for schema in Schema}  # per schema once
    constrained = cols.per_zero_point([says[d.qtype.schema] for d in cols.types], bool)
    for decl in cols.owners(constrained & (cols.zero_points != 0), of_zero_points=True):
        qt = decl.qtype
        bounds = storage_range(qt)
        if bounds is None or not (qt.schema.symmetric or qt.schema is Schema.SYMMETRIC_WITH_UNSIGNED):
            continue  # the other schemas say nothing about zero points
        # Zero points only (the scale part of the schema is QT112's), one at a time to point at it.
        if not decl.quantization.zero_point:
            continue  # none written: every zero point is 0, which every schema admits (when out of range: QT103's)
        zero_points = np.asarray(qt.zero_point, np.int64)
        flagged = zero_points != 0  # schema_problem's test on every zero point of the type
        storage = qt.storage_type
        if qt.schema is Schema.SYMMETRIC_WITH_UNSIGNED:
            flagged = np.ones_like(flagged)
            for admitted in symmetric_with_unsigned_zero_points(storage.min, storage.max, bounds[0]):
                flagged &= zero_points != admitted
        problem = functools.partial(_problem, schema=qt.schema, bounds=bounds, storage=storage)
        if found := summarize_flagged(flagged, qt.zero_point, problem, "zero points"):
            index, message = found
            yield Finding(decl_location(decl, "quantization", "zero_point", index), f"zero_point[{index}]: {message}")


def _problem(i: int, zero_point: int, schema: Schema, bounds: tuple[int, int], storage: StorageType) -> str | None:
    return schema_problem(schema, [], [zero_point], *bounds, storage)
