"""The storage type is not one of the extension's storage types.

## What it checks
`storage_type` is one of INT2, UINT2, INT4, UINT4, INT8, UINT8, INT16,
UINT16, INT32 (onnx `TensorProto.DataType` values 26, 25, 22, 21, 3, 2, 5, 4,
6) or, as float storage, FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2,
FLOAT8E5M2FNUZ, FLOAT4E2M1 (17, 18, 19, 20, 23). An absent `storage_type`
reads as UNDEFINED (0) and is not allowed.

## Why
The storage type fixes how the values are stored and the default storage
range. A wide float, int64 or unknown storage type has no such range, so neither
the zero point nor the data can be checked, and a runtime cannot know how to
read the tensor.

## Invalid example
`QuantizedType { storage_type: 7 (INT64) }`, or a QuantizedType with no
`storage_type`.

## Valid example
`QuantizedType { storage_type: 3 (INT8) scale: 0.05 }`.

## Fix
Store the quantized values in one of the allowed types; 64-bit
storage is not part of the extension (use INT32 for accumulators and bias).
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.storage_types import storage_problem


@rule("QT104", "storage-type-not-allowed", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    for decl in cols.declarations(~cols.known_storage):
        if problem := storage_problem(decl.quantization.storage_type):
            yield Finding(decl_location(decl, "quantization", "storage_type"), problem)
