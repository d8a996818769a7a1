"""Window geometry and exact integer window sums for the averaging kernels."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.reference_ops import fixed_point
from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported
from onnx_qtypes.reference_ops.ops._windows import pad_spatial, spatial_attributes, windows
from onnx_qtypes.reference_ops.quant import broadcast_parameters, storage_range, to_storage


def per_channel_only(*qtypes: QType) -> None:
    for qtype in qtypes:
        if qtype.block_size is not None or qtype.axis not in (None, 1):
            raise Unsupported(f"{qtype} must be per-tensor or per-axis on the channel axis 1")


def geometry(ctx: KernelContext, shape: Sequence[int]) -> dict:
    """Kernel, strides, dilations, pads, output size and the ceil_mode extension per spatial dim."""
    kernel = list(ctx.attr("kernel_shape", None) or [])
    spatial = list(shape[2:])
    if len(kernel) != len(spatial):
        raise Unsupported("kernel_shape does not match the input rank")
    strides, dilations, begin, end = spatial_attributes(ctx, spatial, kernel)
    ceil_mode = int(ctx.attr("ceil_mode", 0))
    out, extra = [], []
    for size, k, s, d, b, e in zip(spatial, kernel, strides, dilations, begin, end):
        span = (k - 1) * d + 1
        length = size + b + e - span
        count = (-(-length // s) if ceil_mode else length // s) + 1
        if ceil_mode and (count - 1) * s >= size + b:  # a window may not start inside the end padding
            count -= 1
        out.append(count)
        extra.append(max((count - 1) * s + span - (size + b + e), 0))
    return {"kernel": kernel, "strides": strides, "dilations": dilations, "begin": begin, "end": end,
            "out": out, "extra": extra, "spatial": spatial}


def window_sums(values: np.ndarray, g: dict) -> np.ndarray:
    """Exact sums over every window of (N, C, *spatial) integers; padding adds 0."""
    padded = pad_spatial(values, g["begin"], [e + x for e, x in zip(g["end"], g["extra"])], 0)
    view = windows(padded, g["kernel"], g["strides"], g["dilations"], g["out"])
    spatial = len(g["kernel"])
    return view.sum(axis=tuple(range(view.ndim - spatial, view.ndim)), dtype=np.int64)


def window_counts(g: dict, include_pad: bool) -> np.ndarray:
    """Elements each window averages over: the input's, or also the explicit padding's (never the ceil extension)."""
    ones = np.ones((1, 1, *g["spatial"]), np.int64)
    if include_pad:
        ones = pad_spatial(ones, g["begin"], g["end"], 1)
        g = {**g, "begin": [0] * len(g["begin"]), "end": [0] * len(g["end"])}
    return window_sums(ones, g)


def average(sums: np.ndarray, counts: np.ndarray, ratio: np.ndarray, out: QType) -> np.ndarray:
    """Storage of ``zero_point + round(sum * ratio / count)``: the scale ratio s_x / s_y as a
    fixed-point multiplier, the division by the element count exact (rounded half to even),
    so equal scales give exactly the definition's average."""
    multiplier, shift = fixed_point.quantize_multipliers(np.asarray(ratio, np.float64))
    values = fixed_point.rounding_divide(sums * multiplier, counts, shift)
    _, zero_point = broadcast_parameters(out, sums.shape)
    lo, hi = storage_range(out)
    return to_storage(np.clip(values + zero_point, lo, hi), out)
