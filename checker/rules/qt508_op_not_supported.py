"""The target does not run this op on quantized tensors (profile).

## What it checks
Under a profile that lists `supported_ops`, every node with a quantized
input or output is one of them.

## Why
An op the target cannot run on integers makes the whole subgraph fall back
to another device (or fail to compile); knowing it before deployment lets
the engineer keep that op in float.

## Invalid example
Under a profile supporting `["Conv", "Relu", "QuantizeLinear",
"DequantizeLinear"]`: a `Sigmoid` on a quantized tensor.

## Valid example
The same model with `Sigmoid` computed on float values (between a
DequantizeLinear and a QuantizeLinear).

## Fix
Dequantize before the op and quantize after it, or choose a target that
supports it.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


@rule("QT508", "op-not-supported", "error")
def check(ctx: Context) -> Iterator[Finding]:
    supported = ctx.profile.supported_ops
    if supported is None:
        return
    for ref in ctx.nodes:
        if ref.op_type in supported:
            continue
        names = [n for n in (*ref.inputs, *ref.outputs) if n]
        touched = next((n for n in names if ctx.qtype(ref.scope, n) is not None), None)
        if touched is not None:
            yield Finding(
                ref.location(),
                f"profile {ctx.profile.name!r} does not run {ref.op_type} on quantized tensors (it reads or writes "
                f"{touched!r}); supported: {', '.join(sorted(supported))}",
            )
