"""A block size is not positive, or is given without an axis.

## What it checks
`block_size > 0`, and `block_size` only appears together with `axis`.
Whether the block count matches `dim(axis)` is QT107's business; the last
block may be short, so any positive block size fits any dimension.

## Why
Blocked parameters split `axis` into runs of `block_size` elements. A zero or
negative size splits nothing, and a block size without an axis does not say
which dimension to split. Today `block_size = -2` passes onnx.checker.

## Invalid example
`int4:float32:axis=1:block=0<...>`; a type with `block_size: 32` and no
`axis`.

## Valid example
`int4:float32:axis=1:block=32<...>`.

## Fix
Give the axis the blocks run along and a positive block size, or drop
`block_size` for a per-axis type.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


@rule("QT110", "block-size-invalid", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    for decl in cols.declarations(cols.has_block):
        qt = decl.qtype
        if qt.block_size is None:
            continue
        where = decl_location(decl, "quantization", "block_size")
        if qt.block_size <= 0:
            yield Finding(where, f"block_size {qt.block_size} must be > 0")
        elif qt.axis is None:
            yield Finding(where, f"block_size {qt.block_size} needs an axis to run along; set axis")
