"""Inputs and outputs of an op the target runs without rescaling have different parameters (profile).

## What it checks
For every node whose op the profile lists in `shared_parameters`, all
quantized inputs and outputs carry the same storage type, range, scales and
zero points as the first quantized output (the axis may differ, as it does
through Transpose).

## Why
Many NPUs implement Concat, pooling, Add or Min/Max as pure data movement
or integer arithmetic without a rescale, so every operand must share one
scale and zero point (TFLite: "inputs and outputs must all have same
scale/zero_point"; Rockchip via Paddle-Lite: "CONCAT ... must have same
quantize parameter!"). onnxruntime's quantizer emits Concat inputs with
different scales (measured: 0.00717 and 0.333); such a model is valid under
the extension but not on these targets.

## Invalid example
Under `tflite-int8`: `Concat(a: int8<0.007:0>, b: int8<0.333:0>) -> c: int8<0.333:0>`.

## Valid example
`a`, `b` and `c` all `int8:float32<0.333:0>`.

## Fix
Requantize the inputs to the output's parameters before the op (or
calibrate with shared parameters: onnxruntime's `QDQ...` overrides, PT2E
`SharedQuantizationSpec`).
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.qtype import QType


def _parameters(qt: QType) -> tuple:
    return qt.storage, qt.expressed, qt.scale, qt.zero_point, qt.storage_min, qt.storage_max


@rule("QT506", "parameters-not-shared", "error")
def check(ctx: Context) -> Iterator[Finding]:
    if not ctx.profile.shared_parameters:
        return
    for ref in ctx.nodes_of(*ctx.profile.shared_parameters):
        operands = [("output", i, n) for i, n in enumerate(ref.outputs) if n]
        operands += [("input", i, n) for i, n in enumerate(ref.inputs) if n]
        typed = [(kind, i, n, qt) for kind, i, n in operands if (qt := ctx.qtype(ref.scope, n)) is not None]
        if len(typed) < 2:
            continue
        _, _, ref_name, ref_type = typed[0]
        for kind, index, name, qt in typed[1:]:
            if _parameters(qt) != _parameters(ref_type):
                yield Finding(
                    ref.location(kind, index),
                    f"profile {ctx.profile.name!r} runs {ref.op_type} without rescaling: {kind} {name!r} is {qt}, "
                    f"but {ref_name!r} is {ref_type}; all quantized operands must share scale and zero point",
                )
