"""Gemm: exact integer product, fixed-point requantization of alpha*A'B' + beta*C.

A per-tensor; B per-tensor or per output column; C quantized (any
granularity that broadcasts) or absent; output per-tensor or per column.
Negative alpha / beta negate the integer term so multipliers stay >= 0.
"""

from __future__ import annotations

import numpy as np

from onnx_qtypes.reference_ops.ops._kernel import KernelContext, Unsupported
from onnx_qtypes.reference_ops.ops._matmul import exact_matmul
from onnx_qtypes.reference_ops.ops._requant import offsets, output, scales


def _has_c(ctx: KernelContext) -> bool:
    return len(ctx.node.input) > 2 and bool(ctx.node.input[2])


def plan(ctx: KernelContext) -> dict[str, np.ndarray]:
    a_t, b_t, y_t = ctx.input_type(0), ctx.input_type(1), ctx.output_type(0)
    trans_a, trans_b = int(ctx.attr("transA", 0)), int(ctx.attr("transB", 0))
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    a_shape, b_shape = ctx.shape(0), ctx.shape(1)
    if a_t.axis is not None:
        raise Unsupported("A must be per-tensor")
    column_axis = 0 if trans_b else 1
    if b_t.axis not in (None, column_axis) or b_t.block_size is not None:
        raise Unsupported(f"B must be per-tensor or per-axis on axis {column_axis}")
    if y_t.axis not in (None, 1) or y_t.block_size is not None:
        raise Unsupported("the output must be per-tensor or per-axis on axis 1")
    rows = a_shape[1] if trans_a else a_shape[0]
    cols = b_shape[0] if trans_b else b_shape[1]
    s_b = scales(b_t, b_shape)
    s_b = s_b.T if trans_b and s_b.ndim == 2 else s_b  # per output column, shaped (1, N)
    s_y = scales(y_t, (rows, cols))
    out = {"accumulator": abs(alpha) * a_t.scale[0] * s_b / s_y}
    if _has_c(ctx):
        c_t = ctx.input_type(2)
        out["bias"] = abs(beta) * scales(c_t, ctx.shape(2)) / s_y
    return out


def run(ctx: KernelContext) -> tuple:
    multipliers = plan(ctx)
    a, a_t = ctx.typed_input(0)
    b, b_t = ctx.typed_input(1)
    y_t = ctx.output_type(0)
    da, db = offsets(a, a_t), offsets(b, b_t)
    if int(ctx.attr("transA", 0)):
        da = da.T
    if int(ctx.attr("transB", 0)):
        db = db.T
    acc = exact_matmul(da, db)
    if float(ctx.attr("alpha", 1.0)) < 0:
        acc = -acc
    terms = [(acc, multipliers["accumulator"])]
    if _has_c(ctx):
        c, c_t = ctx.typed_input(2)
        dc = offsets(c, c_t)
        terms.append((-dc if float(ctx.attr("beta", 1.0)) < 0 else dc, multipliers["bias"]))
    return (output(terms, y_t, acc.shape),)
