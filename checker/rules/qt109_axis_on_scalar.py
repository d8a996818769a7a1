"""A scalar tensor carries per-axis or blocked parameters.

## What it checks
A tensor of rank 0 has a per-tensor type: no `axis`, no `block_size`.

## Why
A scalar has no axis to index parameters along. MLIR's quant dialect and
StableHLO refuse per-axis quantization of scalars for the same reason.

## Invalid example
`int8:float32:axis=0<0.1:0>` on a tensor of shape `[]`.

## Valid example
`int8:float32<0.1:0>` on a tensor of shape `[]`.

## Fix
Drop `axis` (and `block_size`) and keep one scale and zero point.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


@rule("QT109", "axis-on-scalar", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    for decl in cols.declarations(cols.has_axis & (cols.rank <= 0)):  # a scalar, or no declared shape
        qt = decl.qtype
        if qt.axis is None:
            continue
        shape = decl.shape if decl.shape is not None else ctx.shape(decl.scope, decl.name)
        if shape == ():
            yield Finding(
                decl_location(decl, "quantization", "axis"),
                f"{qt.granularity} parameters (axis {qt.axis}) are not allowed on a scalar; use a per-tensor type",
            )
