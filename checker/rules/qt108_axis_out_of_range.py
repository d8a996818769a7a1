"""The quantization axis is negative or not a dimension of the tensor.

## What it checks
A stored `axis` is normalized: `0 <= axis < rank`, where the rank comes from
the declared shape, the initializer's dims or, failing both, shape inference
on the float view.

## Why
Per-axis and blocked parameters are indexed along `axis`. Negative axes are
not allowed in the type (a type must mean the same after a reshape that
changes the rank), and an axis past the rank indexes nothing. Today an axis
of 5 on a rank-4 tensor passes onnx.checker and fails only at run time.

## Invalid example
`int8:float32:axis=4<...>` on a `[1, 3, 8, 8]` tensor; `axis = -1`.

## Valid example
`int8:float32:axis=1<...>` on a `[1, 3, 8, 8]` tensor.

## Fix
Store the non-negative axis the parameters were computed along
(`axis + rank` for a negative one).
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.columns import NO_DIM, columns
from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


@rule("QT108", "axis-out-of-range", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    for decl in cols.declarations(cols.has_axis & ((cols.axis < 0) | (cols.axis_state == NO_DIM))):
        axis = decl.qtype.axis
        if axis is None:
            continue
        if axis < 0:
            yield Finding(decl_location(decl, "quantization", "axis"), f"axis {axis} must be >= 0: store the normalized axis (axis + rank)")
            continue
        shape = decl.shape if decl.shape is not None else ctx.shape(decl.scope, decl.name)
        if shape is not None and len(shape) > 0 and axis >= len(shape):
            yield Finding(decl_location(decl, "quantization", "axis"), f"axis {axis} is outside [0, {len(shape)}) for a rank-{len(shape)} tensor")
