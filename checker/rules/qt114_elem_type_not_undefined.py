"""A quantized tensor's elem_type is not UNDEFINED: the model fails open.

## What it checks
Every declaration that carries a `quantization` field (1000) has
`elem_type = UNDEFINED (0)`.

## Why
UNDEFINED is the fail-closed marker. With it, stock onnx.checker and
onnxruntime refuse the model; with `elem_type = INT8` they accept it and run
plain integer arithmetic on the stored values (measured: Add of two int8
tensors holding 100 returns -56 in onnxruntime 1.31, where the quantized
meaning is 100 * scale + 100 * scale). The storage type lives in
`QuantizedType.storage_type`.

## Invalid example
`TypeProto.Tensor { elem_type: 3 (INT8) quantization { storage_type: INT8 ... } }`.

## Valid example
`TypeProto.Tensor { elem_type: 0 quantization { storage_type: INT8 ... } }`.

## Fix
Set `elem_type` to 0 (`onnx_qtypes.set_qtype` does this).
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx import helper

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


@rule("QT114", "elem-type-not-undefined", "error", typed_only=True)
def check(ctx: Context) -> Iterator[Finding]:
    if not any(d.elem_type for d in ctx.distinct_declarations if d.quantization is not None):
        return  # every declaration shares its elem_type with one of these
    for decl in ctx.quantized_declarations(unique=False):
        if decl.elem_type:
            name = helper.tensor_dtype_to_string(decl.elem_type) if decl.elem_type in helper.get_all_tensor_dtypes() \
                else str(decl.elem_type)
            yield Finding(
                decl_location(decl, "elem_type"),
                f"elem_type is {name}; a quantized tensor must declare elem_type UNDEFINED (0) so that tools "
                "without the extension refuse it instead of computing on the raw integers",
            )
