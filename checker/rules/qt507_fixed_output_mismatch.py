"""An op whose output parameters the target fixes has other ones (profile).

## What it checks
For every node whose op the profile lists in `fixed_output`, a quantized
output 0 whose storage type has an entry carries exactly that scale and
zero point, per-tensor.

## Why
Targets implement Softmax, Sigmoid (logistic) and Tanh with lookup tables or
fixed-point kernels that produce one output encoding; TFLite fixes Softmax
and Logistic at (1/256, -128) and Tanh at (1/128, 0) for int8. Any other
declared encoding is either refused or silently replaced.

## Invalid example
Under `tflite-int8`: `Softmax -> y: int8:float32<0.004:-128>`.

## Valid example
`y: int8:float32<0.00390625:-128>`.

## Fix
Declare the fixed parameters for that output (the calibrated range of these
ops is known in advance anyway).
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import fmt


@rule("QT507", "fixed-output-mismatch", "error")
def check(ctx: Context) -> Iterator[Finding]:
    if not ctx.profile.fixed_output:
        return
    for ref in ctx.nodes_of(*ctx.profile.fixed_output):
        entries = ctx.profile.fixed_output.get(ref.op_type)
        if not entries or not ref.outputs or not ref.outputs[0]:
            continue
        qt = ctx.qtype(ref.scope, ref.outputs[0])
        fixed = next((e for e in entries if qt is not None and e.storage == qt.storage), None)
        if fixed is None:
            continue
        if qt.axis is not None or qt.scale != (fixed.scale,) or qt.zero_point != (fixed.zero_point,):
            yield Finding(
                ref.location("output", 0),
                f"profile {ctx.profile.name!r} fixes {ref.op_type} {fixed.storage} outputs at scale "
                f"{fmt(fixed.scale)}, zero point {fixed.zero_point} (per-tensor); found {qt}",
            )
