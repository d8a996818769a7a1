"""A data-movement op's quantized output does not keep its input's parameters: it must requantize.

## What it checks
For every data-movement op (`DATA_MOVEMENT` in proto/data_movement.py:
Identity, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Slice, Expand,
Tile, DepthToSpace, SpaceToDepth, Gather, GatherElements, GatherND, MaxPool,
GlobalMaxPool, ReduceMax, ReduceMin, Resize in mode nearest, Pad, Split,
Concat), when a data input and an output are both quantized, the output's type equals the input's (statistics excluded),
with per-axis parameters following their axis:
- Transpose: the axis moves to `perm.index(axis)`;
- Reshape, Flatten, Squeeze, Unsqueeze: the axis keeps its size and the
  number of elements before it; otherwise per-axis parameters cannot survive;
- Slice, Gather, Split, Concat along the axis: the parameters of the
  selected slices, in order (constant indices only);
- any other change of the axis' size: per-axis parameters cannot follow.
Concat: every quantized input equals the output (or, per-axis along the
concat axis, the output's parameters are the inputs' in order). Pad's
constant value, when quantized, has the input's type.

## Why
These ops copy stored integers without arithmetic. Under the extension's
semantics (dequantize, apply the op, quantize the output) different output
parameters are still well defined, so the model is valid — but the op is no
longer data movement: every implementation must requantize, results shift
by up to one step, and integer-only targets refuse it (TFLite: "inputs and
outputs must all have the same scale/zero_point"; StableHLO reshape C1,
transpose C4, concatenate C1). Hence a warning, which profiles for such
targets raise to an error (`tflite-int8` does). onnxruntime's quantizer
writes Concat inputs with different scales (measured: 0.00717 and 0.333).

## Invalid example
`y_q = Reshape(x_q, shape)` with `x_q: int8:float32<0.02:0>` and `y_q:
int8:float32<0.04:0>`; `Transpose<perm=[1,0]>` of a per-axis type on axis 0
whose output is per-axis on axis 0.

## Valid example
`y_q` with `int8:float32<0.02:0>`; the transposed output per-axis on axis 1.

## Fix
Give the output the input's type (`onnx_qtypes.set_qtype(model, out,
get_qtype(model, in))`), or insert an explicit requantization
(DequantizeLinear + QuantizeLinear) if a different scale is intended.
Where the output's range leaves out part of the input's (a quantizer
folded a following Relu or Clip into the output's parameters, as
onnxruntime's does after a Split), the message says so: the input's type
alone would drop that clamp, so keep the Relu or Clip as an operator.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.columns import valid_type, well_formed
from onnx_qtypes.checker.context import Context, NodeRef
from onnx_qtypes.checker.data_movement import DATA_MOVEMENT, data_indices, expect, expect_concat, is_data_movement
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.rules.qt208_range_clips_statistics import representable_ranges
from onnx_qtypes.proto.qtype import QType


def _mismatch(ctx: Context, ref: NodeRef, out_index: int, source: str, want: QType, have: QType) -> Finding:
    out = ref.outputs[out_index]
    clamp = _clamped(want, have) if well_formed(ctx, want) and well_formed(ctx, have) else None  # (else: QT1xx)
    if clamp is not None:  # keeping the input's parameters would drop a clamp the output's parameters hold
        return Finding(
            ref.location("output", out_index),
            f"output {out!r} is {have}, but {ref.op_type} copies stored values; its range {clamp} clamps that of "
            f"{source!r} ({want}), as a Relu or Clip folded into its parameters does: keep that clamp as its operator "
            f"after {ref.op_type} and give {out!r} the parameters of {source!r}, which avoids a requantization",
        )
    return Finding(
        ref.location("output", out_index),
        f"output {out!r} is {have}, but {ref.op_type} copies stored values: keeping the parameters of "
        f"{source!r} ({want}) avoids a requantization",
    )


def _clamped(want: QType, have: QType) -> str | None:
    """The output's real range ("[0, 4.2]") when, per tensor, it leaves out more than half a step of the input's at
    either end (the requantization then clamps, not only rounds); None otherwise."""
    if len(want.scale) != 1 or len(have.scale) != 1 or want.is_dynamic or have.is_dynamic:
        return None
    (wl, wh), (hl, hh) = representable_ranges(want)[0], representable_ranges(have)[0]
    half = abs(want.scale[0]) / 2
    return f"[{hl:.6g}, {hh:.6g}]" if hl > wl + half or hh < wh - half else None


def _concat(ctx: Context, ref: NodeRef) -> Iterator[Finding]:
    out = ctx.qtype(ref.scope, ref.outputs[0])
    names = [n for n in ref.inputs if n]
    types = [ctx.qtype(ref.scope, n) for n in names]
    if out is None or any(t is None for t in types) or valid_type(ctx, ref.scope, ref.outputs[0]) is None:
        return  # an invalid output type is no type to copy (QT1xx reports it)
    valid = all(valid_type(ctx, ref.scope, n) is not None for n in names)
    joined = expect_concat(ctx, ref, types, out) if valid else None  # derived from valid inputs only
    if joined is not None and joined.qtype is not None:
        if joined.qtype != out:
            yield _mismatch(ctx, ref, 0, "its inputs", joined.qtype, out)
        return
    for index, (name, qt) in enumerate(zip(names, types)):
        if qt != out:  # statistics take no part in equality
            yield Finding(
                ref.location("input", index),
                f"input {name!r} is {qt}, but the output is {out}: Concat must requantize this input instead of "
                "copying it; give every input the output's type",
            )


@rule("QT401", "data-movement-parameters-changed", "warning")
def check(ctx: Context) -> Iterator[Finding]:
    for ref in ctx.nodes_of(*DATA_MOVEMENT):
        if not is_data_movement(ref):
            continue
        if ref.op_type == "Concat":
            yield from _concat(ctx, ref)
            continue
        source = ref.inputs[0] if ref.inputs else ""
        qt = valid_type(ctx, ref.scope, source) if source else None
        if qt is None:
            continue  # not quantized, or an invalid type that says nothing about the output's (QT1xx reports it)
        for out_index in data_indices(ref, "output"):
            have = ctx.qtype(ref.scope, ref.outputs[out_index])
            if have is None:
                continue
            expected = expect(ctx, ref, qt, out_index)
            if expected.impossible:
                yield Finding(
                    ref.location("output", out_index),
                    f"{expected.impossible}: {source!r} is {qt}, so {ref.op_type} must requantize; use a per-tensor "
                    f"type before {ref.op_type}, or declare {ref.outputs[out_index]!r} float",
                )
            elif expected.qtype is not None and expected.qtype != have:
                yield _mismatch(ctx, ref, out_index, source, expected.qtype, have)
        if ref.op_type == "Pad" and len(ref.inputs) > 2 and ref.inputs[2]:
            value = ctx.qtype(ref.scope, ref.inputs[2])
            if value is not None and value != qt:
                yield Finding(
                    ref.location("input", 2),
                    f"the pad value {ref.inputs[2]!r} is {value}, but the padded data {source!r} is {qt}; "
                    "they must have the same type",
                )
