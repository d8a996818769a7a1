"""The expressed type is not a float type.

## What it checks
`expressed_type` is FLOAT (1), FLOAT16 (10) or BFLOAT16 (16); absent means
FLOAT.

## Why
The expressed type is the type the stored integers stand for: the type of
the scales, of dequantized values, and the type an unmodified operator sees
for this tensor. An integer or unknown expressed type makes the operator's
type constraints and the scale representability undefined.

## Invalid example
`QuantizedType { storage_type: INT8 expressed_type: 6 (INT32) scale: 1 }`.

## Valid example
`QuantizedType { storage_type: INT8 expressed_type: 10 (FLOAT16) scale: 0.0625 }`.

## Fix
Set `expressed_type` to the float type the tensor represents (or drop it
for float32).
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.storage_types import expressed_problem


@rule("QT106", "expressed-type-not-float", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    for decl in cols.declarations(~cols.known_expressed):
        if problem := expressed_problem(decl.quantization.expressed_type):
            yield Finding(decl_location(decl, "quantization", "expressed_type"), problem)
