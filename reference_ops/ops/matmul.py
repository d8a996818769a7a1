"""MatMul: exact integer product, fixed-point requantization.

y = zp_y + round((a - zp_a) @ (b - zp_b) * s_a[row] * s_b[col] / s_y[col]).
A per-tensor or per row (axis rank-2); B per-tensor or per column (axis
rank-1); output per-tensor or per column.
"""

from __future__ import annotations

import numpy as np

from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.reference_ops.ops import _blocked_matmul
from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported
from onnx_qtypes.reference_ops.ops._matmul import exact_matmul
from onnx_qtypes.reference_ops.ops._requant import offsets, output, scales


def _check(qtype: QType, rank: int, axis: int, what: str) -> None:
    if qtype.axis is None:
        return
    if qtype.block_size is not None or rank < 2 or qtype.axis != axis:
        raise Unsupported(f"{what} must be per-tensor or per-axis on axis {axis}, found {qtype}")


def _result_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """numpy.matmul's result shape (1-D operands gain, then lose, a dimension)."""
    a2 = a if len(a) > 1 else (1, *a)
    b2 = b if len(b) > 1 else (*b, 1)
    shape = (*np.broadcast_shapes(a2[:-2], b2[:-2]), a2[-2], b2[-1])
    if len(a) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(b) == 1:
        shape = shape[:-1]
    return shape


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    a_t, b_t, y_t = ctx.input_type(0), ctx.input_type(1), ctx.output_type(0)
    a_shape, b_shape = ctx.shape(0), ctx.shape(1)
    _check(a_t, len(a_shape), len(a_shape) - 2, "A")
    _check(b_t, len(b_shape), len(b_shape) - 1, "B")
    y_shape = _result_shape(a_shape, b_shape)
    _check(y_t, len(y_shape), len(y_shape) - 1, "the output")
    s_a = scales(a_t, a_shape)
    s_b = scales(b_t, b_shape)
    s_y = scales(y_t, y_shape)
    # per row: (..., M, 1); per column: (..., 1, N); they broadcast to the result
    return {"accumulator": np.asarray(s_a * s_b / s_y)}


def reads_negative_scales(inputs: list[QType | None], outputs: list[QType | None]) -> bool:
    """A blocked weight's negative scales are handled by its kernel (``_blocked_matmul``)."""
    b_t = inputs[1] if len(inputs) > 1 else None
    return b_t is not None and b_t.block_size is not None and b_t.axis == 0 and _blocked_matmul.reads_negative_scales(
        inputs[0], b_t, outputs[0] if outputs else None)


def run(ctx: KernelContext) -> tuple:
    if _blocked_matmul.applies(ctx.input_qtypes[1], len(ctx.shape(1))):  # GGUF, MatMulNBits-style weights
        return _blocked_matmul.run(ctx)
    multiplier = plan(ctx)["accumulator"]
    a, a_t = ctx.typed_input(0)
    b, b_t = ctx.typed_input(1)
    y_t = ctx.output_type(0)
    da, db = offsets(a, a_t), offsets(b, b_t)
    if da.ndim == 1 or db.ndim == 1:
        left = da[None, :] if da.ndim == 1 else da
        right = db[:, None] if db.ndim == 1 else db
        acc = exact_matmul(left, right)
        if da.ndim == 1:
            acc = acc[..., 0, :]
        if db.ndim == 1:
            acc = acc[..., 0]
    else:
        acc = exact_matmul(da, db)
    return (output([(acc, multiplier)], y_t, acc.shape),)
