"""The target does not accept this zero point (profile).

## What it checks
Under a profile that lists the zero points a role accepts, every zero point
of the type (0 for a static type without zero points) is in the list.
Dynamic types are checked by QT503, not here.

## Why
Symmetric-only targets skip the zero-point correction in their kernels:
TensorRT's ONNX parser asserts "zeroPt must be all zeros"; TFLite requires
weight zero points of 0. A non-zero zero point is then either refused or
silently ignored.

## Invalid example
Under `symmetric-int8`: an activation `int8:float32<0.02:-10>`.

## Valid example
Under `symmetric-int8`: `int8:float32<0.02:0>`.

## Fix
Recalibrate symmetrically (zero point 0), for example with
`activation_symmetric=True` in onnxruntime's quantizer.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import constrained, profile_label, summarize


@rule("QT504", "zero-point-not-allowed", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl, role, rc in constrained(ctx):
        if rc.zero_points is None or decl.qtype.is_dynamic:
            continue
        allowed = set(rc.zero_points)
        bad = [(i, f"zero_point[{i}] = {z}") for i, z in enumerate(decl.qtype.zero_point) if z not in allowed]
        if bad:
            index, message = summarize(bad, "zero points")
            yield Finding(
                decl_location(decl, "quantization", "zero_point", index),
                f"{profile_label(ctx, role)} accepts zero points {sorted(allowed)}, found {message}",
            )
