"""A dynamic type (no scales) carries zero points.

## What it checks
A type without scales is dynamic: its parameters are computed at run time
from the data, by its schema. It carries no static zero points.

## Why
Static is the special case of dynamic with fixed parameters; half of a pair
is neither. A runtime cannot tell whether the zero points are meant to be
used with a computed scale or are left over from an edit.

## Invalid example
`QuantizedType { storage_type: UINT8 zero_point: 128 }` (no scale).

## Valid example
`QuantizedType { storage_type: UINT8 }` (dynamic), or
`QuantizedType { storage_type: UINT8 scale: 0.02 zero_point: 128 }` (static).

## Fix
Either add the scales the zero points belong to, or drop the zero points.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


@rule("QT113", "dynamic-type-has-parameters", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    for decl in cols.declarations((cols.scale_count == 0) & (cols.zero_point_count > 0)):
        raw = decl.quantization
        if not raw.scale and raw.zero_point:
            yield Finding(
                decl_location(decl, "quantization", "zero_point"),
                f"a dynamic type (no scale) carries no zero points, found {len(raw.zero_point)}; "
                "add the scales or drop the zero points",
            )
