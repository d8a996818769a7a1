"""A negative scale in the unsigned form of schema symmetric_with_unsigned.

## What it checks
In a type with schema `symmetric_with_unsigned`, no scale whose zero point
is `storage_min` (the schema's unsigned form) is negative.

## Why
Negative scales are valid (proposal/spec/types.md#negative-scales), but
the unsigned form of `symmetric_with_unsigned` declares that the tensor holds
non-negative reals only, every step of the storage range above real 0
(Glow's `SymmetricWithUnsigned`, a ReLU output). A negative scale turns those
reals non-positive: the declared predicate and the values contradict each
other, and a runtime that trusts the schema (skipping a ReLU, choosing an
unsigned kernel) computes something else than the definition.

## Invalid example
`uint8:float32<scale [0.1, -0.1], zero_point [128, 0], axis 0,
symmetric_with_unsigned>`: channel 1 is the unsigned form with a negative
scale.

## Valid example
`uint8:float32<scale [0.1, -0.1], zero_point [128, 128], axis 0,
symmetric_with_unsigned>` (the symmetric form, which admits either sign).

## Fix
Make the scale positive (the data of that channel is non-negative, so its
stored integers need not change sign: recalibrate it), or declare schema
`asymmetric`.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import Context, decl_location, storage_range
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.validity import negative_scale_problem


@rule("QT128", "negative-scale-unsigned-form", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    unsigned = cols.per_scale([d.qtype.schema is Schema.SYMMETRIC_WITH_UNSIGNED for d in cols.types], bool)
    with np.errstate(invalid="ignore"):
        suspect = unsigned & (cols.scales < 0)
    for decl in cols.owners(suspect):
        qt, bounds = decl.qtype, storage_range(decl.qtype)
        if bounds is None or len(qt.zero_point) != len(qt.scale):
            continue  # QT105 / QT107 say what is wrong first
        problem = negative_scale_problem(qt.schema, qt.scale, qt.zero_point, bounds[0])
        if problem is not None:
            index = next(i for i, (s, z) in enumerate(zip(qt.scale, qt.zero_point)) if s < 0 and z == bounds[0])
            yield Finding(decl_location(decl, "quantization", "scale", index), problem)
