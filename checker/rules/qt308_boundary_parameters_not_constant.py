"""A boundary QuantizeLinear / DequantizeLinear reads a static type's parameters from a non-constant.

## What it checks
When the quantized side of a QuantizeLinear / DequantizeLinear has a static
type, its `scale` and `zero_point` inputs are initializers or `Constant`
outputs (so QT307 can compare them with the type).

## Why
A static type fixes its parameters; a scale computed or fed at run time may
differ from them, and nothing before run time can tell (measured: a scale
fed as 0 at run time passes every static check today). This is a warning:
the model may be right, but it cannot be verified.

## Invalid example
`x_q = QuantizeLinear(x, s, z)` where `s` is a graph input, with `x_q:
int8:float32<0.02:0>`.

## Valid example
`s` and `z` are initializers holding 0.02 and 0; or `x_q` has a dynamic type
(no scale) and `s` is computed at run time.

## Fix
Store the parameters as initializers equal to the type's, or declare the
type dynamic when they really are computed at run time.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.rules.qt307_boundary_parameters_mismatch import DEQUANTIZE, QUANTIZE, boundary_type


@rule("QT308", "boundary-parameters-not-constant", "warning")
def check(ctx: Context) -> Iterator[Finding]:
    for ref in ctx.nodes_of(QUANTIZE, DEQUANTIZE):
        found = boundary_type(ctx, ref)
        if found is None or found[1].is_dynamic:
            continue
        name, qt = found
        for index, what in ((1, "scale"), (2, "zero point")):
            if len(ref.inputs) > index and ref.inputs[index]:
                if not ctx.is_constant(ref.scope, ref.inputs[index]):
                    yield Finding(
                        ref.location("input", index),
                        f"the {what} is not a constant, so it cannot be checked against the static type of "
                        f"{name!r} ({qt}); store it as an initializer, or make the type dynamic",
                    )
