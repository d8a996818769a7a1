"""Real-domain offsets that do not fit their type.

## What it checks
A version-3 type's offsets (`offset`, or the initializer `offset_tensor`
names) are finite, one per scale in the scales' layout, and only on a
static type: `real = scale * (q - zero_point) + offset`.

## Why
An offset is the `+ m` of GGUF's Q4_1 and Q5_1 and the `- dmin * min` of the
K-quants. A missing or extra offset shifts every block after it onto
another block's values, and a NaN or infinite one poisons its whole block,
silently: nothing else reads the count.

## Invalid example
`uint4:float32<axis=1, block=32>` with 4 scales and 3 offsets, or an offset
`nan`; or a dynamic type (no scale) with offsets.

## Valid example
The Q4_1 weight `lift` writes from a GGUF file: one float16 `m` per block in
`offset_tensor` beside one `d` per block in `scale_tensor`.

## Fix
Write one finite offset per scale (`onnx-qtypes lift` does, from GGUF).
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.validity import first_not_finite, offset_problem


@rule("QT140", "offset-invalid", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl in ctx.distinct_declarations:
        qt = decl.qtype
        # listed offsets as written: QType drops a list of 0s (no offset), whatever its count
        listed = list(decl.quantization.offset) if decl.quantization is not None else []
        offsets = listed or (qt.offset if qt is not None else ())
        if qt is None or not offsets or decl.reference_problem:  # unreadable references: QT117
            continue
        if problem := offset_problem(offsets, len(qt.scale)):
            index = first_not_finite(offsets)
            where = ("quantization", "offset") if index is None else ("quantization", "offset", index)
            yield Finding(decl_location(decl, *where), problem)
