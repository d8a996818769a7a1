"""The bias operand of Conv / ConvTranspose / Gemm and the operands it must agree with."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

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
