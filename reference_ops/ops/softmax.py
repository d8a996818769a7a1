"""Softmax: integer exponentials from a table, exact integer sums, one rounding division.

Along the axis, d = max(q) - q >= 0 indexes a table E[d] = round(exp(-s_x d) 2**24)
built once from the definition; y = zp_y + round(E[d] / (sum E * s_y)), with
1 / s_y as a 31-bit fixed-point multiplier and the quotient rounded half to
even. Per-tensor types of at most 16 bits. Opset < 13 coerces to 2-D at
``axis`` (default 1); opset >= 13 normalizes along ``axis`` (default -1).
"""

from __future__ import annotations

import math

import numpy as np

from onnx_qtypes.reference_ops import fixed_point
from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported
from onnx_qtypes.reference_ops.quant import storage_range, to_storage

EXP_BITS = 24
MAX_TABLE = 1 << 16


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    source, out = ctx.input_type(0), ctx.output_type(0)
    if source.axis is not None or out.axis is not None:
        raise Unsupported("Softmax needs per-tensor types")
    lo, hi = storage_range(source)
    if hi - lo + 1 > MAX_TABLE:
        raise Unsupported(f"an exponential table over {source.storage} would have {hi - lo + 1} entries")
    key = ("softmax", source)
    cache = ctx.cache()
    if key not in cache:
        steps = np.arange(hi - lo + 1, dtype=np.float64)
        cache[key] = np.rint(np.exp(-source.scale[0] * steps) * (1 << EXP_BITS)).astype(np.int64)
    return {"exp_table": cache[key], "output_reciprocal": np.asarray(1.0 / out.scale[0])}


def run(ctx: KernelContext) -> tuple:
    constants = plan(ctx)
    q, _ = ctx.typed_input(0)
    out = ctx.output_type(0)
    shape = q.shape
    if ctx.opset < 13:
        axis = int(ctx.attr("axis", 1))
        axis = axis + q.ndim if axis < 0 else axis
        q = q.reshape(math.prod(shape[:axis]), -1)
        axis = 1
    else:
        axis = int(ctx.attr("axis", -1))
    exps = constants["exp_table"][q.max(axis=axis, keepdims=True) - q]
    total = exps.sum(axis=axis, keepdims=True)
    multiplier, shift = fixed_point.quantize_multiplier(float(constants["output_reciprocal"]))
    values = fixed_point.rounding_divide(exps * multiplier, total, shift)
    lo, hi = storage_range(out)
    return (to_storage(np.clip(values + out.zero_point[0], lo, hi).reshape(shape), out),)
