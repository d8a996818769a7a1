"""The bias operand of Conv / ConvTranspose / Gemm and the operands it must agree with."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from onnx_qtypes.checker.context import WEIGHTED_OPS, Context, NodeRef
from onnx_qtypes.proto.qtype import QType


@dataclasses.dataclass(frozen=True)
class BiasUse:
    ref: NodeRef
    bias: str
    qtype: QType
    x: QType | None  # input 0's type
    w: QType | None  # input 1's type


def bias_uses(ctx: Context) -> list[BiasUse]:
    """Every quantized bias (input 2 of Conv, ConvTranspose, Gemm) with the input and weight types."""
    return ctx.memo("bias_uses", lambda: list(_bias_uses(ctx)))


def _bias_uses(ctx: Context) -> Iterator[BiasUse]:
    for ref in ctx.nodes_of(*WEIGHTED_OPS):
        spec = WEIGHTED_OPS.get(ref.op_type)
        if spec is None or spec[1] is None or len(ref.inputs) <= spec[1] or not ref.inputs[spec[1]]:
            continue
        name = ref.inputs[spec[1]]
        qt = ctx.qtype(ref.scope, name)
        if qt is None:
            continue
        x = ctx.qtype(ref.scope, ref.inputs[0]) if ref.inputs[0] else None
        w = ctx.qtype(ref.scope, ref.inputs[1]) if ref.inputs[1] else None
        yield BiasUse(ref, name, qt, x, w)
