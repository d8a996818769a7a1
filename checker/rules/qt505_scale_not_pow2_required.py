"""The target needs power-of-two scales (profile).

## What it checks
Under a profile with `pow2_scale` for a tensor's role, every scale is
exactly `2^k` — whatever schema the type declares (QT112 checks declared
power-of-two schemas under every profile).

## Why
Fixed-point DSPs and FPGA DPUs requantize by shifting; they have no
multiplier for arbitrary scales (Glow's SymmetricWithPower2Scale, Vitis AI's
DPU).

## Invalid example
Under `pow2-int8`: `int8:float32<0.02:0>`.

## Valid example
Under `pow2-int8`: `int8:float32<0.015625:0>` (2^-6).

## Fix
Round every scale up to a power of two (`2^ceil(log2(scale))`) and
requantize; declare `symmetric_pow2_scale` to make the intent checkable.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import constrained, fmt, not_pow2, profile_label, summarize_flagged
from onnx_qtypes.proto.validity import is_pow2


@rule("QT505", "scale-not-pow2-required", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl, role, rc in constrained(ctx):
        if not rc.pow2_scale:
            continue
        found = summarize_flagged(not_pow2(decl.qtype.scale), decl.qtype.scale, _problem, "scales")
        if found:
            index, message = found
            yield Finding(
                decl_location(decl, "quantization", "scale", index),
                f"{profile_label(ctx, role)} accepts only scales that are exactly 2^k, found {message}",
            )


def _problem(i: int, scale: float) -> str | None:
    return None if is_pow2(scale) else f"scale[{i}] = {fmt(scale)}"
