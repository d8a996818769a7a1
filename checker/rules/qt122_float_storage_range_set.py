"""A float storage type declares a storage range.

## What it checks
A type stored as float8 or float4e2m1 writes neither `storage_min` nor
`storage_max` (or writes the type's own limits, the largest finite values:
±448 for float8e4m3fn, ±240 for float8e4m3fnuz, ±57344 for the e5m2 types,
±6 for float4e2m1).

## Why
A narrowed storage range is a clamp in storage units, natural for integers
(TFLite's int8 `[-127, 127]`). For float storage, QuantizeLinear saturates
at the type's largest finite value and nothing else: no ONNX operator
clamps float8 values to a narrower interval, so `lower` could not write the
range as QDQ, and a range between representable values (`[-100, 300]` for
e4m3fn, whose neighbours of 300 are 288 and 320) has no meaning in the
type. A narrower real range is the scale's job.

## Invalid example
`float8e4m3fn<-240:240>:float32<scale 0.1>`.

## Valid example
`float8e4m3fn:float32<scale 0.1>`; to saturate at ±24.0 real, scale 24/448.

## Fix
Drop `storage_min` / `storage_max`; choose the scale so that the largest
real value maps to the type's largest finite value.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import Context, decl_location, storage_of
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.validity import float_storage_problem


@rule("QT122", "float-storage-range-set", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    for decl in cols.declarations(cols.known_storage & ((cols.storage_min != cols.type_min)
                                                        | (cols.storage_max != cols.type_max))):
        qt = decl.qtype
        storage = storage_of(qt)
        if storage is not None and (problem := float_storage_problem(storage, (), qt.storage_min, qt.storage_max)):
            field = "storage_min" if qt.storage_min != storage.min else "storage_max"
            yield Finding(decl_location(decl, "quantization", field), problem)
