"""A quantized type or its statistics use a field or value this version does not define.

## What it checks
`QuantizedType`, `TensorStatistics` and `Statistics` messages contain only
the fields `proto/onnx_qtypes.proto` defines, `schema` holds one of its
enum values, a `QuantizedType.version` is one this checker knows (1, 2 or
3; absent means 1), and a `QuantizedType` uses only the fields of the
version it declares (`scale_tensor` needs version 2, `offset` version 3).

## Why
Protobuf keeps unknown fields silently. A newer version of the extension may
add a field that changes what the values mean (a second axis, a float zero
point); a consumer that ignores it would misread the tensor — the fail-open
problem one level down. An unknown `schema` value reads as ASYMMETRIC, so a
predicate the producer meant to declare would not be checked. A type written
for a newer extension version says so in `version`, so that a reader fails
closed even when the newer version only changed what a known field means.

## Invalid example
`QuantizedType { storage_type: INT8 scale: 0.1 schema: 9 }`, a
QuantizedType carrying field number 30, `version: 4`, or a `scale_tensor`
in a type without `version`.

## Valid example
`QuantizedType { storage_type: INT8 scale: 0.1 schema: SYMMETRIC }`, with
no `version`, or a `scale_tensor` with `version: 2`.

## Fix
Check the model with a checker that knows the newer version, or drop the
field when it was written by mistake.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.versions import unknown_fields


@rule("QT115", "unknown-extension-field", "error", typed_only=True)
def check(ctx: Context) -> Iterator[Finding]:
    found_in: dict[tuple[int, int], list[tuple[tuple, str]]] = {}  # per distinct declared type: its messages
    for decl in ctx.distinct_declarations:
        found: list[tuple[tuple, str]] = []
        if decl.quantization is not None:
            found += unknown_fields(decl.quantization, ("quantization",))
        if decl.raw_statistics is not None:
            found += unknown_fields(decl.raw_statistics, ("statistics",))
        if found:
            found_in[(id(decl.quantization), id(decl.raw_statistics))] = found
    if not found_in:
        return
    for decl in ctx.declarations:
        for path, message in found_in.get((id(decl.quantization), id(decl.raw_statistics)), ()):
            yield Finding(decl_location(decl, *path), f"{message}; a consumer that ignores it may misread the tensor")
