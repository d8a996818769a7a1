"""The output type of a DynamicQuantizeLinear is not the one it computes.

## What it checks
DynamicQuantizeLinear chooses a uint8 scale and zero point per tensor from
its input's range, asymmetrically over the full range [0, 255]. A declared
type on its output `y` MUST be that type, dynamic: uint8 ASYMMETRIC, per
tensor, without a narrowed storage range and without static parameters
(semantics.md#dynamic-binding). A wrong storage type is QT305's finding.

## Why
Every consumer dequantizes `y` with its type's parameters. A static type, a
symmetric schema, a per-axis type or a narrowed range describes parameters
DynamicQuantizeLinear does not produce, so the same integers would mean other
reals than the `y_scale` / `y_zero_point` outputs say, for nearly every input
(the reference evaluator refuses to run it).

## Invalid example
`x_q, s, z = DynamicQuantizeLinear(x)` with `x_q` declared
`QuantizedType { storage_type: UINT8 schema: SYMMETRIC }`, or with static
`scale: 0.02 zero_point: 128`.

## Valid example
`x_q` declared `QuantizedType { storage_type: UINT8 }` (dynamic, asymmetric).

## Fix
Declare `y` dynamic uint8 asymmetric; for another type use QuantizeLinear
with parameters computed for that type.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.schema import Schema


def _problem(qt: QType) -> str | None:
    if not qt.is_dynamic:
        return "static parameters, but DynamicQuantizeLinear chooses its scale and zero point at run time"
    if qt.schema is not Schema.ASYMMETRIC:
        return f"schema {qt.schema.name}, but DynamicQuantizeLinear quantizes asymmetrically"
    if qt.axis is not None:
        return f"{qt.granularity} parameters, but DynamicQuantizeLinear chooses one scale for the whole tensor"
    st = qt.storage_type
    if (qt.storage_min, qt.storage_max) != (st.min, st.max):
        return f"storage range [{qt.storage_min}, {qt.storage_max}], but DynamicQuantizeLinear uses [0, 255]"
    return None


@rule("QT125", "dynamic-quantize-linear-type-mismatch", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for ref in ctx.nodes_of("DynamicQuantizeLinear"):
        if not ref.outputs or not ref.outputs[0]:
            continue
        qt = ctx.qtype(ref.scope, ref.outputs[0])
        if qt is None or qt.storage != "uint8":  # another storage type breaks the schema: QT305
            continue
        problem = _problem(qt)
        if problem:
            yield Finding(
                ref.location("output", 0),
                f"output {ref.outputs[0]!r} is typed {qt}: {problem}; declare it dynamic uint8 asymmetric",
                related=(ctx.type_location(ref.scope, ref.outputs[0]),),
            )
