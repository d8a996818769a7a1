"""Window geometry for the corrected pooling operators: the integer kernels' own (``ops._pooling.geometry``:
ONNX's output-shape formula with auto_pad resolved, and, under ceil_mode, no window that starts in the end
padding, as onnxruntime and onnx.reference both do), read from an OpRun's attributes."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnx_qtypes.reference_ops.corrected._base import Refused
from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported
from onnx_qtypes.reference_ops.ops._pooling import geometry
from onnx_qtypes.reference_ops.ops._windows import pad_spatial, windows


def pooling_geometry(op: Any, x: np.ndarray) -> dict:
    """Kernel, strides, dilations, pads, output size and ceil extension of pooling node ``op`` over ``x``."""
    if x.ndim < 3:
        raise Refused(f"{op.onnx_node.op_type} takes an input (N x C x D1 x ...), got shape {list(x.shape)}")
    try:
        g = geometry(KernelContext(op.onnx_node, op, [x], [], []), x.shape)
    except Unsupported as why:
        raise Refused(f"{op.onnx_node.op_type}: {why}") from None
    if any(o <= 0 for o in g["out"]):
        raise Refused(f"{op.onnx_node.op_type}: the window {g['kernel']} does not fit the input "
                      f"{list(x.shape[2:])} with its padding")
    return g


def padded_windows(x: np.ndarray, g: dict, fill: Any) -> np.ndarray:
    """(N, C, *out, *kernel) view of ``x`` padded with ``fill`` (explicit pads and the ceil extension)."""
    padded = pad_spatial(x, g["begin"], [e + extra for e, extra in zip(g["end"], g["extra"])], fill)
    return windows(padded, g["kernel"], g["strides"], g["dilations"], g["out"])
