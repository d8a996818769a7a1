"""A float storage type has a non-zero zero point.

## What it checks
A type stored as float8 (float8e4m3fn, float8e4m3fnuz, float8e5m2,
float8e5m2fnuz) or float4e2m1 has every zero point 0. In a QDQ model: the
zero-point tensor of a QuantizeLinear / DequantizeLinear of such a type
holds only zeros.

## Why
Float storage quantizes by scaling alone: ONNX QuantizeLinear-19 and later
compute `saturate(x / scale)` for these types, and a runtime that adds a
float zero point anyway rounds twice (once for the division, once for the
addition), so the stored values depend on the runtime. The extension stores
zero points as integers, which a float8 offset such as 0.5 is not; an offset
meant as an integer (the int8 habit, 128) moves the real 0 away from the
float type's 0.

## Invalid example
`float8e4m3fn:float32<scale 0.1, zero_point 1>`; a DequantizeLinear whose
zero point is `float8e4m3fn 0.5`.

## Valid example
`float8e4m3fn:float32<scale 0.1>` (zero point 0, written or not).

## Fix
Drop the zero point (or write 0). To shift the values, shift them in the
expressed type before quantizing.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import Context, decl_location, storage_of
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


@rule("QT121", "float-storage-zero-point-not-zero", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    float_rows = np.array([(st := storage_of(d.qtype)) is not None and st.is_float for d in cols.types], bool)
    for decl in cols.owners(float_rows[cols.zero_point_owner] & (cols.zero_points != 0), of_zero_points=True):
        written = np.asarray(decl.qtype.zero_point, np.int64)
        index = int(np.flatnonzero(written)[0])
        yield Finding(decl_location(decl, "quantization", "zero_point", index),
                      f"zero_point[{index}] is {written[index]} on {decl.qtype.storage} storage; a float storage "
                      "type's zero point is 0")
