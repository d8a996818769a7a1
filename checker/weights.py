"""Weights and bias of Conv / ConvTranspose / MatMul / Gemm: which axis is the output channel, what K is."""

from __future__ import annotations

import math

from onnx_qtypes.checker.context import Context, NodeRef


def output_channel_axis(ref: NodeRef, weight_rank: int | None) -> int | None:
    """The weight axis that indexes output channels, or None when there is none.

    Conv W is [M, C/group, k...] (axis 0); ConvTranspose W is [C, M/group,
    k...] (axis 1, and only with group 1: with more groups one slice along
    axis 1 feeds one channel of every group); MatMul B is [..., K, N] (last
    axis); Gemm B is [K, N], or [N, K] with transB.
    """
    if ref.op_type == "Conv":
        return 0
    if ref.op_type == "ConvTranspose":
        return 1 if ref.attr("group", 1) == 1 else None
    if ref.op_type == "MatMul":
        return None if weight_rank is None or weight_rank < 2 else weight_rank - 1
    if ref.op_type == "Gemm":
        return 0 if ref.attr("transB", 0) else 1
    return None


def reduction_length(ctx: Context, ref: NodeRef) -> int | None:
    """K: how many products one output accumulates (an upper bound for ConvTranspose)."""
    inputs = ref.inputs
    w = ctx.shape(ref.scope, inputs[1]) if len(inputs) > 1 else None
    a = ctx.shape(ref.scope, inputs[0]) if inputs else None
    if ref.op_type == "Conv" and w is not None and None not in w[1:]:
        return math.prod(w[1:])
    if ref.op_type == "ConvTranspose" and w is not None and len(w) >= 2 and None not in w[:1] + w[2:]:
        return w[0] // max(int(ref.attr("group", 1)), 1) * math.prod(w[2:])
    if ref.op_type == "MatMul":
        if a is not None and a and a[-1] is not None:
            return a[-1]
        if w is not None and w:
            return w[-2] if len(w) >= 2 else w[0]
    if ref.op_type == "Gemm":
        if w is not None and len(w) == 2:
            return w[1] if ref.attr("transB", 0) else w[0]
        if a is not None and len(a) == 2:
            return a[0] if ref.attr("transA", 0) else a[1]
    return None
