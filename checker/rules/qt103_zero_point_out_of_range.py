"""A zero point lies outside the storage range.

## What it checks
Every zero point lies in `[storage_min, storage_max]` (the storage type's
full range unless the type narrows it). Zero points are integers by the wire
format (`repeated int64`), so real 0 is then exactly representable.

## Why
The zero point is the stored integer that means real 0. Outside the storage
range no stored value means 0, so padding, ReLU and zero-initialised
accumulators cannot be exact. Today such zero points are stored in the
zero-point tensor of a QuantizeLinear node and silently wrap (uint8 300
becomes 44 in both onnx.reference and onnxruntime).

Float storage (float8, float4e2m1) has zero point 0, checked by QT121.

## Invalid example
`uint8:float32<scale 0.1, zero_point 300>`; `int8<-127:127>:float32<scale
0.1, zero_point -128>` (outside the narrowed range).

## Valid example
`uint8:float32<scale 0.1, zero_point 255>`.

## Fix
Recompute the zero point from the calibrated range clamped to the storage
range (`zero_point = clamp(storage_min - round(min / scale), storage_min,
storage_max)`), or widen the storage type.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import Context, decl_location, storage_of
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import summarize_flagged
from onnx_qtypes.proto.validity import range_problem, zero_point_problem


@rule("QT103", "zero-point-out-of-range", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    lo, hi = cols.storage_min[cols.zero_point_owner], cols.storage_max[cols.zero_point_owner]  # 0, 0: QT104's
    for decl in cols.owners((cols.zero_points < lo) | (cols.zero_points > hi), of_zero_points=True):
        qt = decl.qtype
        storage = storage_of(qt)
        if storage is None or storage.is_float or range_problem(storage, qt.storage_min, qt.storage_max):
            continue  # QT104 / QT105 report the storage itself; QT121 float storage's zero points
        if not decl.quantization.zero_point:  # none written: every zero point is 0
            if problem := zero_point_problem(0, qt.storage_min, qt.storage_max):
                yield Finding(decl_location(decl, "quantization", "zero_point"),
                              f"no zero point is written, so every zero point is 0, and {problem} of {storage.name}")
            continue
        zero_points = np.asarray(qt.zero_point, np.int64)  # the written ones
        flagged = (zero_points < qt.storage_min) | (zero_points > qt.storage_max)  # zero_point_problem's test
        problem = functools.partial(_problem, lo=qt.storage_min, hi=qt.storage_max)
        if found := summarize_flagged(flagged, qt.zero_point, problem, "zero points"):
            index, message = found
            yield Finding(decl_location(decl, "quantization", "zero_point", index), f"{message} of {storage.name}")


def _problem(i: int, zero_point: int, lo: int, hi: int) -> str | None:
    return f"zero_point[{i}]: {p}" if (p := zero_point_problem(zero_point, lo, hi)) else None
