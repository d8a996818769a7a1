"""The target does not accept this granularity (profile).

## What it checks
Under a profile that restricts granularity for a tensor's role: dynamic
types only if `dynamic` is allowed; per-tensor only if `per_tensor`;
per-axis only if `per_axis` is true, or — when it is `"output-channel"` —
only along the output channels (weights: the axis QT402 names for their
Conv / ConvTranspose / MatMul / Gemm; biases: their last axis; activations:
axis 1, the NCHW channel); blocked only if `blocked` is true or lists the
block size.

## Why
Integer-only targets implement a few layouts: TFLite has per-tensor
activations and per-channel weights only; a DSP with a pure-shift
requantizer has one scale per tensor. A model outside them falls back to
the CPU or is refused.

## Invalid example
Under `tflite-int8`: an activation per-axis on axis 1; a dynamic activation
type.

## Valid example
Under `tflite-int8`: per-tensor static activations, per-output-channel
weights.

## Fix
Recalibrate with the granularity the target supports.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import WEIGHTED_OPS, Context, Declared, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.profile import RoleConstraints
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import constrained, profile_label
from onnx_qtypes.checker.weights import output_channel_axis

ACTIVATION_CHANNEL_AXIS = 1  # NCHW


def _channel_axis(ctx: Context, decl: Declared, role: str) -> int | None:
    shape = ctx.shape(decl.scope, decl.name)
    if role == "bias":
        return None if shape is None else len(shape) - 1
    if role == "weight":
        for ref, index in ctx.consumers.get((decl.scope, decl.name), []):
            if ref.op_type in WEIGHTED_OPS and index == 1:
                return output_channel_axis(ref, None if shape is None else len(shape))
        return None
    return ACTIVATION_CHANNEL_AXIS


def _problem(ctx: Context, decl: Declared, role: str, rc: RoleConstraints) -> tuple[str, str] | None:
    qt = decl.qtype
    if qt.is_dynamic:
        return None if rc.dynamic else ("scale", "accepts static parameters only, found a dynamic type")
    if qt.axis is None:
        return None if rc.per_tensor else ("scale", "does not accept per-tensor parameters")
    if qt.block_size is not None:
        if rc.blocked is True or (isinstance(rc.blocked, tuple) and qt.block_size in rc.blocked):
            return None
        sizes = f" other than block sizes {list(rc.blocked)}" if isinstance(rc.blocked, tuple) else ""
        return "block_size", f"does not accept blocked parameters{sizes}, found block_size {qt.block_size}"
    if rc.per_axis is True:
        return None
    if rc.per_axis is False:
        return "axis", f"does not accept per-axis parameters, found axis {qt.axis}"
    wanted = _channel_axis(ctx, decl, role)
    if wanted is None or qt.axis != wanted:
        where = "no output-channel axis here" if wanted is None else f"the output channels are axis {wanted}"
        return "axis", f"accepts per-axis parameters only along the output channels ({where}), found axis {qt.axis}"
    return None


@rule("QT503", "granularity-not-supported", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl, role, rc in constrained(ctx):
        if found := _problem(ctx, decl, role, rc):
            field, message = found
            yield Finding(decl_location(decl, "quantization", field), f"{profile_label(ctx, role)} {message}")
