"""The target does not accept this zero point (profile).

## What it checks
Under a profile that lists the zero points a role accepts, every zero point
of the type (0 for a static type without zero points) is in the list: the
list of the type's storage entry when the profile gives one there (a target
taking int8 with zero point 0 and uint8 with zero point 128, the same
symmetric values offset by 128), else the role's. Dynamic types are checked
by QT503, not here.

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

import functools
from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import constrained, profile_label, summarize_flagged


@rule("QT504", "zero-point-not-allowed", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl, role, rc in constrained(ctx):
        zero_points = rc.zero_points_of(decl.qtype.storage)
        if zero_points is None or decl.qtype.is_dynamic:
            continue
        allowed = set(zero_points)
        storable = [z for z in allowed if -(2**63) <= z < 2**63]  # zero points are int64: no other one matches
        flagged = ~np.isin(np.asarray(decl.qtype.zero_point, np.int64), np.asarray(storable, np.int64))
        problem = functools.partial(_problem, allowed=allowed)
        if found := summarize_flagged(flagged, decl.qtype.zero_point, problem, "zero points"):
            index, message = found
            yield Finding(
                decl_location(decl, "quantization", "zero_point", index),
                f"{profile_label(ctx, role)} accepts zero points {sorted(allowed)}, found {message}",
            )


def _problem(i: int, zero_point: int, allowed: set[int]) -> str | None:
    return None if zero_point in allowed else f"zero_point[{i}] = {zero_point}"
