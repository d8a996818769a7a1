"""Sliding windows for convolution and pooling kernels (any number of spatial dims)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported


def spatial_attributes(ctx: KernelContext, spatial: Sequence[int], kernel: Sequence[int]) -> tuple[list[int], list[int], list[int], list[int]]:
    """(strides, dilations, pads_begin, pads_end) with ONNX defaults and auto_pad resolved."""
    n = len(spatial)
    strides = list(ctx.attr("strides", None) or [1] * n)
    dilations = list(ctx.attr("dilations", None) or [1] * n)
    pads = list(ctx.attr("pads", None) or [0] * (2 * n))
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        begin, end = [], []
        for size, k, s, d in zip(spatial, kernel, strides, dilations):
            total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
            small, large = total // 2, total - total // 2
            begin.append(small if auto_pad == "SAME_UPPER" else large)
            end.append(large if auto_pad == "SAME_UPPER" else small)
        return strides, dilations, begin, end
    if auto_pad == "VALID":
        return strides, dilations, [0] * n, [0] * n
    if auto_pad not in ("NOTSET", ""):
        raise Unsupported(f"auto_pad {auto_pad!r}")
    return strides, dilations, pads[:n], pads[n:]


def pad_spatial(x: np.ndarray, begin: Sequence[int], end: Sequence[int], value: float | int = 0) -> np.ndarray:
    """Pad the trailing spatial dims of an (N, C, *spatial) array."""
    if not any(begin) and not any(end):
        return x
    widths = [(0, 0)] * (x.ndim - len(begin)) + list(zip(begin, end))
    return np.pad(x, widths, constant_values=value)


def windows(x: np.ndarray, kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
            out: Sequence[int] | None = None) -> np.ndarray:
    """Read-only view (N, C, *out, *kernel) of every window of a padded (N, C, *spatial) array."""
    spatial = x.shape[2:]
    if out is None:
        out = [(size - ((k - 1) * d + 1)) // s + 1 for size, k, s, d in zip(spatial, kernel, strides, dilations)]
    if any(o <= 0 for o in out):
        raise Unsupported(f"the window does not fit the padded input {list(spatial)}")
    st = x.strides
    shape = x.shape[:2] + tuple(out) + tuple(kernel)
    strides_ = st[:2] + tuple(st[2 + i] * strides[i] for i in range(len(out))) + tuple(
        st[2 + i] * dilations[i] for i in range(len(out))
    )
    return as_strided(x, shape=shape, strides=strides_, writeable=False)
