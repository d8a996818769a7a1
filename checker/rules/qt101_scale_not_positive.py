"""A scale is zero, infinite or NaN.

## What it checks
Every scale of a quantized type is finite and non-zero, except that a
scale a version-3 type reads from a referenced parameter initializer may
be 0. So is the constant scale input of each QuantizeLinear,
DequantizeLinear and QLinear node of a QDQ or QOperator file, and of each
such node no type covers in a typed model (a lift keeps one with a bad
scale as written: proposal/spec/interop.md#lift-untypeable-scales). (The slug, kept
as ids and slugs are never renamed, dates from when every negative scale was
refused too; negative scales are now valid where QT128 and QT409-QT411
allow them.)

## Why
A value means `real = scale * (q - zero_point)`. A zero scale maps every
stored integer to 0, and NaN or infinity poison every result. Today
`onnx.checker` accepts all of them, and runtimes disagree on what they
compute: with scale 0, onnx.reference returns 0 while onnxruntime saturates
to 0 or 255.

## Invalid example
`int8:float32<scale 0.0, zero_point 0>`, or a per-axis type with scales
`[0.02, inf, nan]`.

## Valid example
`int8:float32<scale 0.02, zero_point 0>`; also a per-axis weight with
scales `[0.02, -0.5]`, as NNCF's symmetric weight compression writes it.
A version-3 type (an LLM weight format, constants only, QT142) may have a
scale of 0 read from a referenced parameter initializer: GGUF writes d = 0
for a block of zeros. A listed scale is never 0, in any version.

## Fix
Recalibrate the tensor. A channel whose values are all zero still needs a
non-zero scale (any one works, e.g. 1.0); do not store 0.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.columns import columns
from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import summarize_flagged
from onnx_qtypes.proto.validity import scale_problem, zero_scale_allowed


@rule("QT101", "scale-not-positive", "error")
def check(ctx: Context) -> Iterator[Finding]:
    cols = columns(ctx)
    with np.errstate(invalid="ignore"):
        suspect = ~(np.isfinite(cols.scales) & (cols.scales != 0))  # screen every scale at once
    for decl in cols.owners(suspect):
        scales = np.asarray(decl.qtype.scale, np.float64)
        # a referenced scale of a version-3 type (a constant) may be 0: GGUF's d of a block of zeros
        zero_allowed = zero_scale_allowed(decl.qtype.version, decl.qtype.scale_tensor is not None)
        with np.errstate(invalid="ignore"):
            flagged = ~(np.isfinite(scales) & ((scales != 0) | zero_allowed))  # scale_problem's test
        if found := summarize_flagged(flagged, decl.qtype.scale, _problem, "scales"):
            index, message = found
            yield Finding(decl_location(decl, "quantization", "scale", index), message)


def _problem(i: int, scale: float) -> str | None:
    return f"scale[{i}]: {p}" if (p := scale_problem(scale)) else None
