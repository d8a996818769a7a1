"""ConvTranspose: exact integer GEMM, col2im by integer scatter-add, fixed-point requantization.

y = zp_y + round(acc * s_x * s_w / s_y + (b - zp_b) * s_b / s_y). Input
per-tensor; weights per-tensor (or per-axis on axis 1 when group is 1);
bias and output per-tensor or per output channel. auto_pad NOTSET / VALID
or an explicit output_shape.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported
from onnx_qtypes.reference_ops.ops._matmul import exact_matmul
from onnx_qtypes.reference_ops.ops.conv import channel_scales, has_bias, requantize_channels
from onnx_qtypes.reference_ops.quant import broadcast_parameters


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    x_t, w_t, y_t = ctx.input_type(0), ctx.input_type(1), ctx.output_type(0)
    if x_t.axis is not None:
        raise Unsupported("a per-axis input type")
    w_shape = ctx.shape(1)
    group = int(ctx.attr("group", 1))
    m = w_shape[1] * group
    if w_t.axis is not None and group != 1:
        raise Unsupported("per-axis weights with group > 1")
    s_w = channel_scales(w_t, w_shape, w_shape[1], 1) if w_t.axis is not None else np.full(m, w_t.scale[0])
    s_y = channel_scales(y_t, (1, m), m, 1)
    out = {"accumulator": x_t.scale[0] * s_w / s_y}
    if has_bias(ctx):
        out["bias"] = channel_scales(ctx.input_type(2), (m,), m, 0) / s_y
    return out


def _pads(ctx: KernelContext, size: list[int], kernel: tuple[int, ...], strides: list[int], dilations: list[int],
          extra: list[int]) -> tuple[list[int], list[int]]:
    n = len(size)
    full = [(s - 1) * st + (k - 1) * d + 1 + e for s, k, st, d, e in zip(size, kernel, strides, dilations, extra)]
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    target = list(ctx.attr("output_shape", None) or [])
    if not target and auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        target = [s * st for s, st in zip(size, strides)]
    if target:
        target = target[-n:]
        total = [f - t for f, t in zip(full, target)]
        if any(t < 0 for t in total):
            raise Unsupported("output_shape larger than the full transposed convolution")
        if auto_pad == "SAME_UPPER":
            return [t // 2 for t in total], [t - t // 2 for t in total]
        return [t - t // 2 for t in total], [t // 2 for t in total]
    if auto_pad == "VALID":
        return [0] * n, [0] * n
    if auto_pad not in ("NOTSET", ""):
        raise Unsupported(f"auto_pad {auto_pad!r}")
    pads = list(ctx.attr("pads", None) or [0] * (2 * n))
    return pads[:n], pads[n:]


def run(ctx: KernelContext) -> tuple:
    multipliers = plan(ctx)
    x, x_t = ctx.typed_input(0)
    w, w_t = ctx.typed_input(1)
    group = int(ctx.attr("group", 1))
    n, c = x.shape[:2]
    size = list(x.shape[2:])
    spatial = len(size)
    kernel = w.shape[2:]
    mg = w.shape[1]
    m, cg = mg * group, c // group
    strides = list(ctx.attr("strides", None) or [1] * spatial)
    dilations = list(ctx.attr("dilations", None) or [1] * spatial)
    extra = list(ctx.attr("output_padding", None) or [0] * spatial)
    begin, end = _pads(ctx, size, kernel, strides, dilations, extra)
    xs = (x - x_t.zero_point[0]).reshape(n, group, cg, math.prod(size))
    ws = (w - broadcast_parameters(w_t, w.shape)[1]).reshape(group, cg, mg * math.prod(kernel))
    contrib = exact_matmul(np.swapaxes(ws, 1, 2)[None], xs)  # (N, G, Mg*K, L)
    contrib = contrib.reshape((n, m, *kernel, *size))
    full = [(s - 1) * st + (k - 1) * d + 1 + e for s, k, st, d, e in zip(size, kernel, strides, dilations, extra)]
    acc = np.zeros((n, m, *full), dtype=contrib.dtype)
    for position in itertools.product(*(range(k) for k in kernel)):
        target = tuple(slice(p * d, p * d + (s - 1) * st + 1, st) for p, d, s, st in zip(position, dilations, size, strides))
        acc[(slice(None), slice(None), *target)] += contrib[(slice(None), slice(None), *position)]
    acc = acc[(slice(None), slice(None), *(slice(b, f - e) for b, f, e in zip(begin, full, end)))]
    return (requantize_channels(ctx, acc, multipliers),)
