"""A quantized initializer's dims disagree with its declared shape.

## What it checks
The dims of a quantized initializer or `Constant` value equal the shape
stated by each of its declarations (unknown declared dimensions match
anything). The parameter counts are then checked against these dims (QT107).

## Why
The quantized type's parameters are laid out along the declared shape; if
the data has another shape, per-axis scales land on the wrong slices.

## Invalid example
Initializer `w` with dims `[4, 3, 3, 3]` declared `value_info w` with shape
`[3, 4, 3, 3]`.

## Valid example
Dims and declared shape both `[4, 3, 3, 3]`.

## Fix
Declare the initializer's real shape (or transpose the data and its
parameters together).
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


def _agree(dims: tuple[int, ...], shape: tuple[int | None, ...]) -> bool:
    return len(dims) == len(shape) and all(s is None or s == d for d, s in zip(dims, shape))


@rule("QT304", "constant-shape-mismatch", "error", typed_only=True)
def check(ctx: Context) -> Iterator[Finding]:
    for (scope, name), const, _ in ctx.quantized_constants():
        dims = const.dims
        for decl in ctx.declarations_of(scope, name):
            if decl.shape is not None and dims is not None and decl.shape != dims and not _agree(dims, decl.shape):
                shape = ["?" if d is None else d for d in decl.shape]
                yield Finding(
                    const.location(),
                    f"has dims {list(dims)}, but {decl.pointer} declares shape {shape}; they must agree",
                    related=(decl_location(decl),),
                )
