"""The number of scales or zero points does not fit the type and the tensor's shape.

## What it checks
For a static type (one with scales):
- there are as many zero points as scales (or none, meaning all 0);
- per-tensor (no `axis`): exactly 1 scale;
- per-axis (`axis`, no `block_size`): `dim(axis)` scales;
- blocked (`axis` and `block_size`): as many scales as the parameter shape
  holds — the tensor shape with `dim(axis)` replaced by
  `ceil(dim(axis) / block_size)`, flattened row-major. The last block along
  `axis` may be shorter than `block_size` (ONNX QuantizeLinear-21).

The shape is the one the declaration states, or the initializer's dims when
the declaration states none (QT306 checks the shape inferred on the float
view).

## Why
Each stored integer must find exactly one (scale, zero point) pair. Today a
per-axis scale of the wrong length passes onnx.checker and fails (or reads
out of bounds) only when a runtime executes the node.

## Invalid example
A `[4, 3, 3, 3]` weight with a per-axis type on axis 0 holding 3 scales; a
per-tensor type with 2 scales; 4 scales with 2 zero points.

## Valid example
A `[4, 3, 3, 3]` weight, per-axis on axis 0, with 4 scales and 4 zero points.
A `[8, 10]` weight blocked on axis 1 with block_size 4 holds `8 * 3 = 24`
scales (blocks of 4, 4 and 2).

## Fix
Write one parameter pair per slice (per-axis) or per block (blocked), or
move the `axis` to the dimension the parameters were computed along.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.columns import DIM, DIM_UNKNOWN, columns
from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.validity import count_problem


def shape_is_checkable(qt: QType, shape: tuple | None) -> bool:
    """A shape the count can be checked against (axis and block problems belong to QT108-QT110)."""
    if shape is None or (qt.block_size is not None and qt.block_size <= 0):
        return False
    return qt.axis is None or (len(shape) > 0 and 0 <= qt.axis < len(shape))


@rule("QT107", "parameter-count-mismatch", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    counts_agree = (cols.zero_point_count == 0) | (cols.zero_point_count == cols.scale_count)
    per_tensor = ~cols.has_axis & (cols.scale_count == 1)
    per_axis = cols.has_axis & ~cols.has_block & (
        (cols.axis_state == DIM_UNKNOWN) | ((cols.axis_state == DIM) & (cols.axis_dim == cols.scale_count)))
    for decl in cols.declarations(~(counts_agree & (per_tensor | per_axis))):  # a declared shape that fits: skip
        qt, raw = decl.qtype, decl.quantization
        if qt.is_dynamic:
            continue  # QT113 covers zero points without scales
        if raw.zero_point and len(raw.zero_point) != len(raw.scale):
            yield Finding(
                decl_location(decl, "quantization", "zero_point"),
                f"{len(raw.scale)} scales need {len(raw.scale)} zero points (or none, meaning all 0), "
                f"found {len(raw.zero_point)}",
            )
        if qt.axis is None and len(qt.scale) != 1:
            yield Finding(decl_location(decl, "quantization", "scale"), f"a per-tensor type needs exactly 1 scale, found {len(qt.scale)}; "
                                 "set axis for per-axis parameters")
            continue
        shape = decl.shape if decl.shape is not None else ctx.constant_dims(decl.scope, decl.name)
        if qt.axis is None or (qt.block_size is None and shape is not None and 0 <= qt.axis < len(shape)
                               and shape[qt.axis] in (None, len(qt.scale))):
            continue  # per-tensor with one scale, or per-axis with one scale per slice
        if shape_is_checkable(qt, shape) and (problem := count_problem(qt, shape)):
            yield Finding(decl_location(decl, "quantization", "scale"), problem)
