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

from collections.abc import Iterator

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import Context, decl_location, storage_range
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import summarize
from onnx_qtypes.proto.qtype import Schema, schema_problem


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
        problems = [
            (i, p) for i, z in enumerate(decl.quantization.zero_point)
            if (p := schema_problem(qt.schema, [], [z], *bounds))
        ]
        if problems:
            index, message = summarize(problems, "zero points")
            yield Finding(decl_location(decl, "quantization", "zero_point", index), f"zero_point[{index}]: {message}")
