"""Shape inference on the float view gives a shape the parameter counts do not fit.

## What it checks
For a per-axis or blocked type whose own declaration does not fix the
dimensions the count depends on (no shape, or `dim(axis)` unknown), the
shape `onnx.shape_inference` infers on the float view (every quantized
tensor replaced by its expressed type, boundary Q/DQ by Identity) must fit
the parameter count, as in QT107.

## Why
Intermediate tensors are often declared without a shape; their per-axis
parameters still have to match the channel count the graph computes. Only
shape inference knows it before run time.

## Invalid example
`Conv` producing `conv_q` of inferred shape `[1, 4, 8, 8]` while
`value_info conv_q` (no shape) is per-axis on axis 1 with 3 scales.

## Valid example
The same declaration with 4 scales, or a per-tensor type.

## Fix
Write one parameter pair per inferred slice, and declare the shape so that
QT107 checks it directly.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.columns import DIM, columns
from onnx_qtypes.checker.context import MAIN, Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.rules.qt107_parameter_count_mismatch import shape_is_checkable
from onnx_qtypes.proto.parameter_layout import parameter_shape
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.validity import count_problem


def _decided(qt: QType, shape: tuple | None) -> bool:
    if not shape_is_checkable(qt, shape):
        return False
    expected = parameter_shape(qt, shape)
    return expected is not None and all(d is not None for d in expected)


@rule("QT306", "inferred-count-mismatch", "error", typed_only=True)
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    decided = ~cols.has_block & (cols.axis_state == DIM)  # per-axis on a declared size: QT107's business
    for decl in cols.declarations((cols.scale_count > 0) & cols.has_axis & ~decided):
        qt = decl.qtype
        if decl.scope != MAIN or qt.is_dynamic or qt.axis is None:
            continue
        declared = decl.shape if decl.shape is not None else ctx.constant_dims(decl.scope, decl.name)
        if _decided(qt, declared):
            continue  # QT107 checked it against the declared shape
        inferred = ctx.inferred.shapes.get(decl.name)
        if inferred is None or not shape_is_checkable(qt, inferred):
            continue
        if problem := count_problem(qt, inferred):
            shown = ["?" if d is None else d for d in inferred]
            yield Finding(
                decl_location(decl, "quantization", "scale"),
                f"shape inference on the float view gives {shown}: {problem}",
            )
