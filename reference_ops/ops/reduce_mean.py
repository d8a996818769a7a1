"""ReduceMean: exact integer sum of (x - zp_x) over the reduced axes, times s_x / s_y as a
fixed-point multiplier, divided exactly by the element count (one rounding, half to
even). A per-axis input may not be quantized along a reduced axis."""

from __future__ import annotations

import math

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported
from onnx_qtypes.reference_ops.ops._pooling import average
from onnx_qtypes.reference_ops.ops._requant import convert_type, offsets, scales


def _axes(ctx: KernelContext, rank: int) -> tuple[int, ...] | None:
    """Normalized reduced axes; None means no reduction (noop_with_empty_axes)."""
    if ctx.opset >= 18:
        given = ctx.value(1)
        axes = [] if given is None else [int(a) for a in np.asarray(given).reshape(-1)]
    else:
        axes = list(ctx.attr("axes", None) or [])
    if not axes:
        return None if int(ctx.attr("noop_with_empty_axes", 0)) else tuple(range(rank))
    return tuple(sorted({a + rank if a < 0 else a for a in axes}))


def _reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    return tuple(1 if i in axes else d for i, d in enumerate(shape) if keepdims or i not in axes)


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    source, out = ctx.input_type(0), ctx.output_type(0)
    shape = ctx.shape(0)
    axes = _axes(ctx, len(shape))
    if axes is None:
        return {}
    if source.block_size is not None or source.axis in axes:
        raise Unsupported("the input is quantized along a reduced axis")
    keepdims = bool(int(ctx.attr("keepdims", 1)))
    s_in = np.broadcast_to(scales(source, shape), shape)[tuple(slice(0, 1) if i in axes else slice(None) for i in range(len(shape)))]
    reduced = _reduced_shape(shape, axes, keepdims)
    count = math.prod(shape[a] for a in axes)
    return {"rescale": s_in.reshape(reduced) / scales(out, reduced), "count": np.asarray(count)}


def run(ctx: KernelContext) -> tuple:
    q, source = ctx.typed_input(0)
    out = ctx.output_type(0)
    axes = _axes(ctx, q.ndim)
    if axes is None:
        return (convert_type(q, source, out),)
    constants = plan(ctx)
    sums = offsets(q, source).sum(axis=axes, keepdims=bool(int(ctx.attr("keepdims", 1))))
    return (average(sums, constants["count"], constants["rescale"], out),)
