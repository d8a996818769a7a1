"""Resize (mode nearest): data movement on the storage integers; other modes interpolate
and use the definition."""

from __future__ import annotations

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported
from onnx_qtypes.reference_ops.ops._movement import move
from onnx_qtypes.reference_ops.ops._movement import plan as _plan


def _nearest(ctx: KernelContext) -> None:
    mode = ctx.attr("mode", "nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode != "nearest":
        raise Unsupported(f"Resize mode {mode!r} interpolates")


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    _nearest(ctx)
    return _plan(ctx)


def run(ctx: KernelContext) -> tuple:
    _nearest(ctx)
    return move(ctx, lambda array: ctx.reference(array.astype(np.float64), *ctx.inputs[1:])[0])
