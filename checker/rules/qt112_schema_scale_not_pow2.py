"""A scale is not a power of two although the schema says it is.

## What it checks
Under ASYMMETRIC_POW2_SCALE and SYMMETRIC_POW2_SCALE every scale is exactly
`2^k` for an integer `k` (mantissa exactly 0.5 in `frexp`).

## Why
Fixed-point DSPs and FPGA DPUs requantize power-of-two types with a pure
shift; an "almost" power of two (0.12499999) becomes a multiply the target
cannot do, or is silently rounded to the next shift.

## Invalid example
`int8:float32<0.3:0, symmetric_pow2_scale>`.

## Valid example
`int8:float32<0.125:0, symmetric_pow2_scale>`.

## Fix
Round each scale to a power of two (up, to avoid clipping:
`2^ceil(log2(scale))`) and requantize the data, or declare a schema without
the power-of-two predicate.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import not_pow2, summarize_flagged
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.validity import schema_problem


@rule("QT112", "schema-scale-not-pow2", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    for decl in cols.declarations(np.array([d.qtype.schema.pow2 for d in cols.types], bool)):
        qt = decl.qtype
        if not qt.schema.pow2:
            continue
        # Scales only, one at a time so the finding points at the scale.
        problem = functools.partial(_problem, schema=qt.schema)
        if found := summarize_flagged(not_pow2(qt.scale), qt.scale, problem, "scales"):
            index, message = found
            yield Finding(decl_location(decl, "quantization", "scale", index), f"scale[{index}]: {message}")


def _problem(i: int, scale: float, schema: Schema) -> str | None:
    return schema_problem(schema, [scale], [], 0, 1)
