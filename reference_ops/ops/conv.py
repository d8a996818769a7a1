"""Conv: integer im2col + exact GEMM, fixed-point requantization.

y = zero_point_y + round(acc * s_x * s_w[m] / s_y[m] + (b - zp_b) * s_b / s_y[m]),
acc = sum (x - zp_x)(w - zp_w[m]) over the window, exact. Input per-tensor;
weights per-tensor or per-axis on axis 0; bias (int, any of those) and
output per-tensor or per output channel. Padding adds real 0, i.e. zp_x.
"""

from __future__ import annotations

import math

import numpy as np

from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported
from onnx_qtypes.reference_ops.ops._matmul import exact_matmul, plan_dtype
from onnx_qtypes.reference_ops.ops._requant import output
from onnx_qtypes.reference_ops.ops._windows import pad_spatial, spatial_attributes, windows
from onnx_qtypes.reference_ops.quant import broadcast_parameters


def channel_scales(qtype: QType, shape: tuple[int, ...], channels: int, axis: int) -> np.ndarray:
    """Per-channel scales (length ``channels``) of a type that is per-tensor or per-axis on ``axis``."""
    if qtype.block_size is not None or qtype.axis not in (None, axis):
        raise Unsupported(f"{qtype} must be per-tensor or per-axis on axis {axis}")
    return np.broadcast_to(broadcast_parameters(qtype, shape)[0].reshape(-1), (channels,)).astype(np.float64)


def has_bias(ctx: KernelContext) -> bool:
    return len(ctx.node.input) > 2 and bool(ctx.node.input[2])


def requantize_channels(ctx: KernelContext, acc: np.ndarray, multipliers: dict[str, np.ndarray]) -> np.ndarray:
    """The output of an (N, M, *spatial) accumulator plus the optional bias, per output channel."""
    channel = (1, acc.shape[1]) + (1,) * (acc.ndim - 2)
    terms = [(acc, multipliers["accumulator"].reshape(channel))]
    if has_bias(ctx):
        b, b_t = ctx.typed_input(2)
        terms.append(((b - broadcast_parameters(b_t, b.shape)[1]).reshape(channel), multipliers["bias"].reshape(channel)))
    return output(terms, ctx.output_type(0), acc.shape)


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    x_t, w_t, y_t = ctx.input_type(0), ctx.input_type(1), ctx.output_type(0)
    if x_t.axis is not None:
        raise Unsupported("a per-axis input type")
    w_shape = ctx.shape(1)
    m = w_shape[0]
    s_y = channel_scales(y_t, (1, m), m, 1)
    out = {"accumulator": x_t.scale[0] * channel_scales(w_t, w_shape, m, 0) / s_y}
    if has_bias(ctx):
        out["bias"] = channel_scales(ctx.input_type(2), (m,), m, 0) / s_y
    return out


def run(ctx: KernelContext) -> tuple:
    multipliers = plan(ctx)
    x, x_t = ctx.typed_input(0)
    w, w_t = ctx.typed_input(1)
    group = int(ctx.attr("group", 1))
    m, kernel = w.shape[0], w.shape[2:]
    if list(ctx.attr("kernel_shape", None) or kernel) != list(kernel):
        raise Unsupported("kernel_shape differs from the weights' shape")
    strides, dilations, begin, end = spatial_attributes(ctx, x.shape[2:], kernel)
    n, c = x.shape[:2]
    cg, mg = c // group, m // group
    xs = x - x_t.zero_point[0]
    ws = w - broadcast_parameters(w_t, w.shape)[1]
    k = cg * math.prod(kernel)
    dtype, chunk = plan_dtype(k, int(np.abs(ws).max(initial=0)), int(np.abs(xs).max(initial=0)))
    padded = pad_spatial(xs.astype(dtype), begin, end, 0)
    view = windows(padded, kernel, strides, dilations)  # (N, C, *out, *kernel)
    out_shape = view.shape[2 : 2 + len(kernel)]
    spatial = len(kernel)
    # (N, C, *out, *k) -> (N, G, Cg, *k, *out) -> (N, G, K, L)
    order = (0, 1, *range(2 + spatial, 2 + 2 * spatial), *range(2, 2 + spatial))
    cols = view.transpose(order).reshape(n, group, k, math.prod(out_shape))
    acc = exact_matmul(ws.astype(dtype).reshape(1, group, mg, k), cols, dtype, chunk)
    return (requantize_channels(ctx, acc.reshape((n, m, *out_shape)), multipliers),)
