"""A zero point breaks the declared schema.

## What it checks
- SYMMETRIC and SYMMETRIC_POW2_SCALE: every zero point is 0.
- SYMMETRIC_WITH_UNSIGNED: every zero point is 0 or the unsigned midpoint
  `(storage_min + storage_max + 1) / 2` (128 for uint8, 32768 for uint16).

## Why
A schema is a declared predicate that hardware relies on: symmetric weights
let an integer kernel skip the zero-point correction term, and many
accelerators accept nothing else (TensorRT: "zeroPt must be all zeros").
The schema never changes what a value means; a type that claims a schema it
does not satisfy misleads every tool that trusts the claim.

## Invalid example
`int8:float32<0.1:3, symmetric>`; `uint8:float32<0.1:127, symmetric_with_unsigned>`.

## Valid example
`int8:float32<0.1:0, symmetric>`; `uint8:float32<0.1:128, symmetric_with_unsigned>`.

## Fix
Requantize with zero point 0 (or the midpoint), or declare the schema the
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
from onnx_qtypes.proto.qtype import Schema, schema_problem, unsigned_midpoint


@rule("QT111", "schema-zero-point-violated", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    constrained = cols.per_zero_point([d.qtype.schema.symmetric or d.qtype.schema is Schema.SYMMETRIC_WITH_UNSIGNED
                                       for d in cols.types], bool)
    for decl in cols.owners(constrained & (cols.zero_points != 0), of_zero_points=True):
        qt = decl.qtype
        bounds = storage_range(qt)
        if bounds is None or not (qt.schema.symmetric or qt.schema is Schema.SYMMETRIC_WITH_UNSIGNED):
            continue  # the other schemas say nothing about zero points
        # Zero points only (the scale part of the schema is QT112's), one at a time to point at it.
        if not decl.quantization.zero_point:
            continue  # none written: every zero point is 0, which both schemas allow
        zero_points = np.asarray(qt.zero_point, np.int64)
        flagged = zero_points != 0  # schema_problem's test on every zero point of the type
        if qt.schema is Schema.SYMMETRIC_WITH_UNSIGNED:
            flagged &= zero_points != unsigned_midpoint(*bounds)
        problem = functools.partial(_problem, schema=qt.schema, bounds=bounds)
        if found := summarize_flagged(flagged, qt.zero_point, problem, "zero points"):
            index, message = found
            yield Finding(decl_location(decl, "quantization", "zero_point", index), f"zero_point[{index}]: {message}")


def _problem(i: int, zero_point: int, schema: Schema, bounds: tuple[int, int]) -> str | None:
    return schema_problem(schema, [], [zero_point], *bounds)
