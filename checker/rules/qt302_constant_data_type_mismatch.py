"""A quantized initializer or Constant does not hold its storage type.

## What it checks
The `TensorProto` of an initializer or of a `Constant` node's `value` whose
name is declared quantized holds the type's storage: its `data_type` is the
storage type's marker, 1000 + `storage_type`, or, in a file of the first
release, the storage type itself (QT311 reports that form). Any other data
type is this error.

## Why
Quantized constants hold the storage integers, encoded exactly as a plain
integer tensor of the storage type. Float data under a quantized declaration
(or int8 data under a uint8 type) is either un-quantized weights or a
conversion bug; reading it as storage would be wrong either way.

## Invalid example
Initializer `w` with `data_type: FLOAT` and `value_info w:
int8:float32:axis=0<...>`.

## Valid example
Initializer `w` with `data_type: 1003` (the marker of INT8) and the same
declaration.

## Fix
Quantize the weights into the storage type (`onnx_qtypes.set_qtype` refuses
to declare a mismatching type), or declare the type the data is stored in.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx import helper

from onnx_qtypes.checker.context import Context, storage_of
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


@rule("QT302", "constant-data-type-mismatch", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for (scope, name), const, qt in ctx.quantized_constants():
        storage = storage_of(qt)
        if storage is None or const.data_type == storage.data_type:
            continue
        have = helper.tensor_dtype_to_string(const.data_type) if const.data_type in helper.get_all_tensor_dtypes() \
            else f"data type {const.data_type}"
        yield Finding(
            const.location(),
            f"holds {have}, but its quantized type {qt} stores {storage.name}; quantized constants hold the "
            "storage integers",
            related=(ctx.type_location(scope, name),),
        )
