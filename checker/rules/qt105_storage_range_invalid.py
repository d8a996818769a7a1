"""The storage range is empty or leaves the storage type.

## What it checks
`storage_type_min <= storage_min < storage_max <= storage_type_max`, where
absent bounds default to the storage type's own limits.

Float storage (float8, float4e2m1) takes no storage range: QT122.

## Why
Narrowed ranges (TFLite weights use int8 `[-127, 127]`) are part of the type:
quantize clamps to them. A range outside the storage type cannot be stored,
and an empty or one-value range makes every scale meaningless.

## Invalid example
`int8<-129:127>:float32<...>`; `uint8<10:10>:float32<...>`.

## Valid example
`int8<-127:127>:float32<scale 0.01>`.

## Fix
Keep the bounds inside the storage type and `storage_min < storage_max`;
drop them to use the full range.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import Context, decl_location, storage_of
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.validity import range_problem


@rule("QT105", "storage-range-invalid", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    lo, hi = cols.storage_min, cols.storage_max
    valid = (cols.type_min <= lo) & (lo < hi) & (hi <= cols.type_max)
    for decl in cols.declarations(cols.known_storage & ~valid):
        qt = decl.qtype
        storage = storage_of(qt)
        if storage is None or storage.is_float:
            continue  # QT104; QT122 (float storage takes no range)
        if problem := range_problem(storage, qt.storage_min, qt.storage_max):
            bad_min = not storage.min <= qt.storage_min or qt.storage_min >= qt.storage_max
            field = "storage_min" if bad_min and decl.quantization.HasField("storage_min") else "storage_max"
            yield Finding(decl_location(decl, "quantization", field), problem)
