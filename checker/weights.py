"""Weights and bias of Conv / ConvTranspose / MatMul / Gemm: which axis is the output channel, what K is."""

from __future__ import annotations

import math
from typing import NamedTuple

from onnx_qtypes.checker.context import WEIGHTED_OPS, Context, NodeRef
from onnx_qtypes.proto.qtype import QType


class Weighted(NamedTuple):
    """A Conv / ConvTranspose / Gemm / MatMul node with the quantized types of its operands (None: not quantized)."""

    ref: NodeRef
    x: QType | None  # input 0
    w: QType | None  # input 1 (None as well when the node has no input 1)
    y: QType | None  # output 0


def weighted(ctx: Context) -> list[Weighted]:
    """Every default-domain node of WEIGHTED_OPS with its operand types, in model order (shared between rules)."""
    return ctx.memo("weighted", lambda: [_weighted(ctx, ref) for ref in ctx.nodes_of(*WEIGHTED_OPS)])


def _weighted(ctx: Context, ref: NodeRef) -> Weighted:
    inputs, outputs = ref.inputs, ref.outputs
    x = ctx.qtype(ref.scope, inputs[0]) if inputs else None
    w = ctx.qtype(ref.scope, inputs[1]) if len(inputs) > 1 else None
    y = ctx.qtype(ref.scope, outputs[0]) if outputs else None
    return Weighted(ref, x, w, y)


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
    if ref.op_type == "Conv" and w is not None and None not in w[1:]:
        return math.prod(w[1:])
    if ref.op_type == "ConvTranspose" and w is not None and len(w) >= 2 and None not in w[:1] + w[2:]:
        return w[0] // max(int(ref.attr("group", 1)), 1) * math.prod(w[2:])
    a = ctx.shape(ref.scope, inputs[0]) if inputs else None
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
