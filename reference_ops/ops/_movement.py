"""Data movement on storage integers.

A data-movement operator's outputs are copies of input elements, so it can
run on the storage integers themselves (onnx.reference's own
implementation does the moving). With equal parameters the result is
bit-identical to the definition; otherwise each moved element is
requantized to the output type. Per-axis and blocked inputs are handled by
moving, alongside the data, the index of each element's parameter pair.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext
from onnx_qtypes.reference_ops.ops._requant import convert
from onnx_qtypes.reference_ops.quant import parameter_index


def _as_int(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values)
    return np.rint(values).astype(np.int64) if values.dtype.kind == "f" else values.astype(np.int64)


def move(ctx: KernelContext, mover: Callable[[np.ndarray], np.ndarray] | None = None) -> tuple:
    """Run a one-input data-movement node on storage (other inputs passed through)."""
    q, source = ctx.typed_input(0)
    out = ctx.output_type(0)
    if mover is None:
        def mover(array: np.ndarray) -> np.ndarray:
            return ctx.reference(array, *ctx.inputs[1:])[0]
    moved = _as_int(mover(q))
    if source.axis is None:
        scale, zero_point = np.float64(source.scale[0]), np.int64(source.zero_point[0])
    else:
        index = np.broadcast_to(parameter_index(source, q.shape), q.shape).astype(np.int64)
        moved_index = _as_int(mover(index))
        scale = np.asarray(source.scale, np.float64)[moved_index]
        zero_point = np.asarray(source.zero_point, np.int64)[moved_index]
    return (convert(moved, scale, zero_point, out),)


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    """Nothing when the parameters agree; the rescale multiplier for per-tensor types that differ."""
    source, out = ctx.input_type(0), ctx.output_type(0)
    if source.axis is None and out.axis is None:
        ratio = source.scale[0] / out.scale[0]
        return {} if ratio == 1 else {"rescale": np.asarray(ratio)}
    return {}
