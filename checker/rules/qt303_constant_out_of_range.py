"""A quantized initializer or Constant holds integers outside the storage range.

## What it checks
Every stored integer of a quantized initializer or `Constant` value lies in
`[storage_min, storage_max]` of its type. This matters for narrowed ranges:
int8 data holding -128 under a type with `storage_min = -127`.

## Why
Quantize never produces a value outside the storage range, so such data
cannot come from quantizing real values with this type; hardware that relies
on the narrowed range (TFLite's symmetric int8 weights, which keep -128 free)
computes something else.

## Invalid example
`w = [-128, 3, 127]` (INT8) declared `int8<-127:127>:float32<0.01:0>`.

## Valid example
`w = [-127, 3, 127]` with the same type.

## Fix
Clamp the data to the declared range when quantizing, or declare the full
storage range.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.context import Context, storage_of, storage_range
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import flagged_constant
from onnx_qtypes.proto.validity import range_problem


@rule("QT303", "constant-out-of-range", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for (scope, name), const, qt in ctx.quantized_constants():
        storage = storage_of(qt)
        if storage is None or const.data_type != storage.data_type:
            continue  # QT104 / QT302 report those
        bounds = storage_range(qt)
        if bounds is None or bounds == (storage.min, storage.max) or range_problem(storage, *bounds):
            continue  # the data type itself keeps the values in range, or QT105 reports the range
        extrema = ctx.constant_extrema(scope, name)
        if extrema is not None and bounds[0] <= extrema[0] and extrema[1] <= bounds[1]:
            continue  # screened with every other constant at once
        data = ctx.constant_array(scope, name)
        if data is None or data.size == 0 or (bounds[0] <= data.min() and data.max() <= bounds[1]):
            continue  # screened in the storage dtype, without a copy
        values = data.astype(np.int64).reshape(-1)
        outside = (values < bounds[0]) | (values > bounds[1])
        if finding := flagged_constant(ctx, scope, name, const, values, outside, lambda count, value, index: (
                f"{count} of {values.size} stored values lie outside the storage range [{bounds[0]}, {bounds[1]}] "
                f"of {qt}, the first is {int(value)} at flat index {index}")):
            yield finding
