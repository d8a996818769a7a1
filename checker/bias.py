"""The bias operand of Conv / ConvTranspose / Gemm and the operands it must agree with."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from onnx_qtypes.checker.context import WEIGHTED_OPS, Context, NodeRef
from onnx_qtypes.checker.weights import weighted
from onnx_qtypes.proto.qtype import QType


class BiasUse(NamedTuple):
    ref: NodeRef
    bias: str
    qtype: QType
    x: QType | None  # input 0's type
    w: QType | None  # input 1's type


def bias_uses(ctx: Context) -> list[BiasUse]:
    """Every quantized bias (input 2 of Conv, ConvTranspose, Gemm) with the input and weight types."""
    return ctx.memo("bias_uses", lambda: list(_bias_uses(ctx)))


def _bias_uses(ctx: Context) -> Iterator[BiasUse]:
    for ref, x, w, _ in weighted(ctx):
        spec = WEIGHTED_OPS[ref.op_type]
        if spec[1] is None or len(ref.inputs) <= spec[1] or not ref.inputs[spec[1]]:
            continue
        name = ref.inputs[spec[1]]
        qt = ctx.qtype(ref.scope, name)
        if qt is None:
            continue
        yield BiasUse(ref, name, qt, x if ref.inputs[0] else None, w if ref.inputs[1] else None)


def added_by_shift(ctx: Context, use: BiasUse) -> bool:
    """Under a profile with ``bias_shift`` (AMD's DPU): every bias scale is the accumulator scale of its channel
    (input scale x weight scale) times an exact power of two, so the target shifts the stored bias into the
    accumulator's units, whatever its storage."""
    b, x, w = use.qtype, use.x, use.w
    if not ctx.profile.bias_shift or x is None or w is None or b.is_dynamic or x.is_dynamic or w.is_dynamic:
        return False
    if x.axis is not None or w.block_size is not None or len(b.scale) not in (1, len(w.scale)):
        return False
    weight = np.asarray(w.scale, np.float64)
    bias = np.asarray(b.scale, np.float64)
    if len(bias) == 1 and len(weight) > 1:
        return False  # one bias scale for channels of different units: no single shift
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        ratio = bias / (x.scale[0] * weight)
    return bool(np.all(np.isfinite(ratio) & (ratio > 0) & (np.frexp(ratio)[0] == 0.5)))


def adds_nothing(ctx: Context, use: BiasUse) -> bool:
    """The bias is a constant whose every stored value is its zero point: every real is 0, whatever its storage and
    scale (AMD Quark writes PyTorch's zero-initialized biases as int8, scale 1), so no kernel has anything to add."""
    zero_points = set(use.qtype.zero_point)
    if use.qtype.is_dynamic or len(zero_points) != 1:
        return False
    extrema = ctx.constant_extrema(use.ref.scope, use.bias)
    return extrema is not None and extrema[0] == extrema[1] == zero_points.pop()
