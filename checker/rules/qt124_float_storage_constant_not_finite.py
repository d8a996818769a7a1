"""A constant of a float storage type holds NaN or infinity.

## What it checks
Every stored value of a quantized constant (an initializer or a Constant's
value) whose storage is float8 or float4e2m1 is finite. float8e4m3fn, and
both fnuz types, have a NaN but no infinity; float8e5m2 has both;
float4e2m1 has neither and is never flagged.

## Why
Integer storage has no value that is not a number; float storage does, and
quantize never writes one from finite data (it saturates). A NaN weight is
therefore a conversion accident (a float8 cast without saturation, bytes
read in the wrong format), and it is not contained: every output a
MatMul or Conv computes from that weight row becomes NaN, and the model
still loads and runs.

## Invalid example
An initializer `w` typed `float8e4m3fn:float32<scale 0.05>` holding 0x7F
(NaN) at one position.

## Valid example
The same weight quantized with saturation: the value becomes 448 (0x7E).

## Fix
Requantize the weight from its float source with QuantizeLinear's default
`saturate=1` (or ml_dtypes after clipping to the type's largest finite
value), never by a plain cast.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.context import Context, storage_of
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import flagged_constant


@rule("QT124", "float-storage-constant-not-finite", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for (scope, name), const, qt in ctx.quantized_constants():
        storage = storage_of(qt)
        if storage is None or not storage.is_float or const.data_type != storage.data_type:
            continue  # integer storage has no NaN; QT104 / QT302 report the others
        data = ctx.constant_array(scope, name)
        if data is None or data.size == 0:
            continue
        values = data.reshape(-1)
        if finding := flagged_constant(ctx, scope, name, const, values, ~np.isfinite(values.astype(np.float32)),
                                       lambda count, value, index: (
                                           f"{count} of {values.size} stored values of {qt} are NaN or infinite, the "
                                           f"first ({value}) at flat index {index}; a quantized weight holds finite "
                                           "values")):
            yield finding
