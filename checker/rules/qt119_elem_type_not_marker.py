"""A quantized tensor's elem_type is not the marker of its storage type: stock tools may misread it.

## What it checks
A declaration that carries field 1000 (a quantized type) has `elem_type`
equal to 1000 + its `storage_type` (1003 for INT8, 1002 for UINT8, …), the
fail-closed marker.

## Why
No stock tool knows these numbers, so onnx.checker, shape inference, the
version converter, optimizers and runtimes refuse the tensor or leave it
closed, instead of computing plain integer arithmetic on stored integers
(measured: proposal/experiments/encodings_vs_tools.py, 200 model-tool pairs,
none fails open). A plain type such as INT8 is accepted by everything and
silently computes on the raw integers. UNDEFINED, the version-1 marker, is
refused by onnxruntime as long as it stays, but `onnx.shape_inference`
replaces it with the storage type, after which onnxruntime runs the model
with plain integer arithmetic (70 fail-open pairs in the same experiment).

## Invalid example
`TypeProto.Tensor { elem_type: 3 (INT8) quantization { storage_type: INT8 ... } }`,
or `elem_type: 0 (UNDEFINED)` with the same quantization.

## Valid example
`TypeProto.Tensor { elem_type: 1003 quantization { storage_type: INT8 ... } }`.

## Fix
Save the model with `onnx_qtypes.save` (it writes the markers, also for a
model read in the version-1 form), or set `elem_type` to 1000 + the storage
type.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx import helper

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.encoding import marker
from onnx_qtypes.proto.storage_types import STORAGE_BY_DATA_TYPE


@rule("QT119", "elem-type-not-marker", "error", typed_only=True)
def check(ctx: Context) -> Iterator[Finding]:
    for decl in ctx.quantized_declarations(unique=False):
        storage = decl.quantization.storage_type
        if storage not in STORAGE_BY_DATA_TYPE or decl.elem_type == marker(storage):
            continue  # an unknown storage type is QT104's
        want = f"elem_type {marker(storage)} (1000 + {STORAGE_BY_DATA_TYPE[storage].name.upper()})"
        if decl.elem_type == 0:
            why = ("elem_type is UNDEFINED, the version-1 marker, which onnx.shape_inference replaces with the storage "
                   f"type, after which runtimes compute on the raw integers; declare {want} (onnx_qtypes.save does)")
        else:
            name = helper.tensor_dtype_to_string(decl.elem_type) if decl.elem_type in helper.get_all_tensor_dtypes() \
                else str(decl.elem_type)
            why = (f"elem_type is {name}; tools without the extension read the stored integers as plain numbers; "
                   f"declare {want} so that they refuse the tensor")
        yield Finding(decl_location(decl, "elem_type"), why)
