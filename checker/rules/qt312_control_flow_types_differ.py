"""A value crosses an If, Loop or Scan boundary into a tensor of another type.

## What it checks
Each place where a control-flow node hands a value on unchanged: an If
branch's output k and the If's output k; a Loop's (or Scan's) carried value
k as the node's input, the body's input, the body's output and the node's
output; a Loop's scan outputs and a Scan's scan inputs and outputs (per
iteration in the body, stacked outside). When either tensor is quantized,
both carry the same quantized type (statistics excluded); stacking along
axis s moves a per-axis type's axis a to a + 1 when a >= s (a negative s is
resolved with the stacked tensor's declared rank; unknown rank: not
checked). Scan before opset 9 is not read.

## Why
No operator runs at these crossings, so nothing can requantize: the stored
integers arrive as they left, and a different type on the other side reads
them at another scale — the ReferenceEvaluator measured `[0, 0.4, -1.0,
1.2]` for an If whose branch wrote `[0, 0.6, -2.0, 2.4]` at half the If
output's scale. A plain (unquantized) tensor on one side reads them as
plain numbers. StableHLO's `if`, `case` and `while` require the same of
their branch, body and result types.

## Invalid example
`ifo = If(c)` with `ifo: int8:float32<0.2:0>` and the then-branch output
`t: int8:float32<0.4:0>`.

## Valid example
`t: int8:float32<0.2:0>`, or a `QuantizeLinear` / `DequantizeLinear` pair
inside the branch that requantizes `t` to the If output's type.

## Fix
Give both tensors of the crossing one type (`onnx_qtypes.set_qtype`), or
requantize explicitly inside the body before the value leaves it.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.columns import valid_type
from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.control_flow import CONTROL_FLOW, crossing_problem, crossings


@rule("QT312", "control-flow-types-differ", "error", typed_only=True)
def check(ctx: Context) -> Iterator[Finding]:
    for ref in ctx.nodes_of(*CONTROL_FLOW):
        for crossing in crossings(ref.node, ref.opset):
            types = [ctx.qtype(ref.scope, crossing.inner), ctx.qtype(ref.scope, crossing.outer)]
            valid = [valid_type(ctx, ref.scope, crossing.inner), valid_type(ctx, ref.scope, crossing.outer)]
            if types != valid:
                continue  # an invalid type says nothing about the other side (QT1xx reports it)
            shape = ctx.shape(ref.scope, crossing.outer)
            problem = crossing_problem(ref.node, crossing, *valid, None if shape is None else len(shape))
            if problem:
                yield Finding(ref.location(*crossing.port) if crossing.port else ref.location(), problem)
