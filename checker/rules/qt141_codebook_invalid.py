"""A codebook that does not fit its type.

## What it checks
A version-3 type with a `codebook` has integer storage, exactly one finite
entry per storage code (`storage_max - storage_min + 1` of them), every
zero point 0 and a scale (it is not dynamic): `real = scale *
codebook[q - storage_min] + offset`.

## Why
A codebook is what makes IQ4_NL and NF4 weights typed values: the stored
code picks a level, the block scale sizes it. A short table leaves codes
without a value, a float storage type already has values of its own, and a
zero point has nothing to shift in a table of levels; each silently gives
some code another meaning than the file it came from.

## Invalid example
`uint4:float32<codebook[15]>` (16 codes, 15 entries); a codebook on
FLOAT4E2M1 storage; a codebook with zero point 8.

## Valid example
IQ4_NL as `lift` writes it: uint4 codes, the 16 levels
`-127, -104, ..., 113` as the codebook, one float16 `d` per block of 32.

## Fix
Give one finite entry per code of the storage range, on integer storage
with zero point 0.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.storage_types import STORAGE_TYPES
from onnx_qtypes.proto.validity import codebook_problem


@rule("QT141", "codebook-invalid", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl in ctx.distinct_declarations:
        qt = decl.qtype
        storage = STORAGE_TYPES.get(qt.storage) if qt is not None else None
        if qt is None or not qt.codebook or storage is None or qt.storage_min is None or qt.storage_max is None:
            continue  # an unknown storage type is QT104's finding
        if qt.is_dynamic and not decl.reference_problem:
            yield Finding(decl_location(decl, "quantization", "codebook"),
                          "a dynamic type (no scale) has no codebook: a codebook type declares constants only")
        elif problem := codebook_problem(qt.codebook, storage, qt.storage_min, qt.storage_max, qt.zero_point):
            field = ("quantization", "zero_point") if problem.startswith("zero point") else ("quantization", "codebook")
            yield Finding(decl_location(decl, *field), problem)
