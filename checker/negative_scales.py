"""Tensors whose type has negative scales, and the operators that may read them (QT409-QT411).

A negative scale makes real values run against the stored integers' order in its slice
(proposal/spec/types.md#negative-scales). Operators linear in such an input are indifferent to that:
Conv, ConvTranspose, Gemm and MatMul sum products, and the sign comes out in the per-channel factor that
multiplies the accumulator. DequantizeLinear is the formula itself. Data movement copies stored values,
except MaxPool, GlobalMaxPool, ReduceMax and ReduceMin, which select the largest (smallest) stored integer:
the smallest (largest) real where the scale is negative.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import WEIGHTED_OPS, Context, NodeRef
from onnx_qtypes.checker.data_movement import is_data_movement
from onnx_qtypes.proto.data_movement import ORDER_SELECTING
from onnx_qtypes.proto.qtype import QType



class Negative(NamedTuple):
    scope: str
    name: str
    qtype: QType


def negative_tensors(ctx: Context) -> list[Negative]:
    """Every tensor whose (first) quantized type has a negative scale, in declaration order (shared)."""
    def compute() -> list[Negative]:
        cols = columns(ctx)
        with np.errstate(invalid="ignore"):
            negative = cols.scales < 0  # every scale of every type at once
        seen: dict[tuple[str, str], Negative] = {}
        for decl in cols.owners(negative):
            seen.setdefault((decl.scope, decl.name), Negative(decl.scope, decl.name, decl.qtype))
        return list(seen.values())
    return ctx.memo("negative_tensors", compute)


def sign_indifferent(ref: NodeRef) -> bool:
    """Whether ``ref`` computes the same on an input however its scales' signs run."""
    return ref.is_onnx and (ref.op_type in WEIGHTED_OPS or ref.op_type == "DequantizeLinear") or is_view(ref)


def is_view(ref: NodeRef) -> bool:
    """Whether ``ref`` copies stored values without comparing them (data movement but max / min selection)."""
    return is_data_movement(ref) and ref.op_type not in ORDER_SELECTING


def negative_channels(qtype: QType) -> str:
    """'scale[3] = -0.0043 (26 of 64 negative)': the first negative scale, and how many there are."""
    negative = [i for i, s in enumerate(qtype.scale) if s < 0]
    first = negative[0]
    count = f" ({len(negative)} of {len(qtype.scale)} negative)" if len(qtype.scale) > 1 else ""
    return f"scale[{first}] = {qtype.scale[first]:.6g}{count}"
