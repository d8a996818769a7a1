"""A constant (initializer or Constant) has a dynamic type.

## What it checks
A dynamic type has no scale: its parameters are chosen at run time by
whoever produces the value from the value's reals (semantics.md#dynamic-binding).
A constant is produced by nothing; it already holds storage integers.

## Why
Nothing chooses the parameters of a constant's integers, so they stand for
no real values: every consumer reads an undefined tensor (the reference
evaluator refuses it, and lower has no form for it). This is typically a
weight whose scales were lost in an edit or a conversion.

## Invalid example
Initializer `w` (int8 data) declared `QuantizedType { storage_type: INT8 }`.

## Valid example
`w` declared `QuantizedType { storage_type: INT8 scale: 0.02 zero_point: 0 }`.

## Fix
Give the constant's type the scales (and zero points) its integers were
quantized with.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


@rule("QT126", "dynamic-type-on-constant", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for (scope, name), const, qt in ctx.quantized_constants():
        if qt.is_dynamic and not (qt.scale_tensor or qt.zero_point_tensor):  # unreadable references: QT117
            yield Finding(
                ctx.type_location(scope, name, "quantization"),
                f"constant {name!r} has a dynamic type ({qt}): nothing chooses parameters for stored integers; "
                "give the type the scales its integers were quantized with",
                related=(const.location(),),
            )
