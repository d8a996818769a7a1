"""The integer accumulator of a Conv / ConvTranspose / MatMul / Gemm may overflow.

## What it checks
For a node whose input and weight are quantized, the largest accumulator
magnitude any input in the storage range can produce,
`max|x - zx| * max over output channels of sum|w - zw| + max|bias|`, stays
below `2^(bits - 1)`; a float bias (one with no type of its own) counts in
steps of the smallest input scale times weight scale, where an integer
kernel adds it. `max|x - zx|` comes from the input type's storage
range and zero points. With constant weights the sum runs over each output
channel's own weights (the exact worst case: an input at the storage bounds
with the weights' signs reaches it); without them it is `K * max|w - zw|`
from the weight type, `K` the number of products per output
(`C/group * prod(kernel)` for Conv, the reduction dimension for MatMul and
Gemm, an upper bound for ConvTranspose). `bits` is the profile's
`accumulator_bits` (32 unless a profile says otherwise) when input and
weight are stored in 8 bits or fewer, and its `wide_accumulator_bits` (64
unless a profile says otherwise) when either is stored in more: integer
kernels for 16-bit activations accumulate in 64 bits, as TFLite's 16x8
reference kernels do
([`reference_integer_ops/conv.h`](sources.md#src-tflite-16x8-conv)), because
32 bits cannot hold 16-bit inputs times 8-bit weights over a real reduction
(`K * 65535 * 127` passes 2^31 at K = 259, on nearly every layer). Float
storage (float8, float4e2m1) is not accumulated in integers and is not
checked.

## Why
Integer kernels for 8-bit data accumulate in int32 (TFLite, ONNX
QLinearConv, gemmlowp). The semantics are defined on real values, so an
overflowing kernel is simply wrong (a runtime MUST accumulate wider or
refuse, `proposal/spec/semantics.md`); whether it overflows depends on data
the checker cannot see, hence a warning at the worst case the weights allow.
A target whose 16-bit kernels accumulate in 32 bits says so in its profile
(`wide_accumulator_bits: 32`), and then gets the warning where it applies.

## Invalid example
A MatMul with int8 input (zero point -128, so `|x - zx|` reaches 255), int8
weights whose column sums `sum|w|` reach 8.5 million (K = 70000 values of
about 121): `255 * 8.5e6 > 2^31`.

## Valid example
The same MatMul with K = 4096 (`255 * 4096 * 127 = 1.3e8`); or uint16
activations with int8 weights and K = 4096 under the generic profile (a
64-bit accumulator).

## Fix
Split the reduction, narrow the input range (reduce_range / 7-bit
activations), or use a target with a wider accumulator (set
`accumulator_bits` / `wide_accumulator_bits` in its profile).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.context import Context, NodeRef, storage_of, storage_range
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.weights import output_channel_axis, reduction_length, weighted
from onnx_qtypes.proto.qtype import QType


def _type_reach(qt: QType) -> int | None:
    """max |q - zero_point| over the storage range and every zero point (any zero point when dynamic)."""
    bounds = storage_range(qt)
    if bounds is None:
        return None
    lo, hi = bounds
    if qt.is_dynamic:
        return hi - lo
    zero_points = qt.zero_point or (0,)
    return max(max(zero_points) - lo, hi - min(zero_points))


def _channel_sums(ctx: Context, ref: NodeRef, name: str, qt: QType) -> int | None:
    """max over output channels of sum |w - zw| over what one output accumulates, from the constant data."""
    if qt.is_dynamic or qt.block_size is not None:
        return None  # (before the data is read: a blocked 4-bit weight of millions of values)
    data = ctx.constant_array(ref.scope, name)
    if data is None or data.size == 0 or data.ndim == 0:
        return None
    values = data.astype(np.int64)
    if qt.axis is not None:
        if not 0 <= qt.axis < values.ndim or values.shape[qt.axis] != len(qt.zero_point):
            return None  # an axis or a count that does not fit the data (QT107, QT108): the type's bound stands
        shape = [1] * values.ndim
        shape[qt.axis] = len(qt.zero_point)
        values = np.abs(values - np.asarray(qt.zero_point, np.int64).reshape(shape))
    else:
        values = np.abs(values - qt.zero_point[0])
    channel = output_channel_axis(ref, values.ndim)
    if channel is None:
        return int(values.sum())  # no output channel to tell apart: every product in one sum bounds them all
    if ref.op_type == "MatMul" and values.ndim > 2:  # [..., K, N]: each batch of weights is its own output
        return int(values.sum(axis=-2).max())
    return int(np.moveaxis(values, channel, 0).reshape(values.shape[channel], -1).sum(axis=1).max())


def _bias_reach(ctx: Context, ref: NodeRef, x: QType, w: QType) -> int:
    """max |bias| over the constant bias data in accumulator steps (0 without a constant bias): its integers, or a
    float bias (no type of its own) over the smallest product of the input's and the weight's scales, which an
    integer kernel adds it at."""
    if len(ref.inputs) <= 2 or not ref.inputs[2]:
        return 0
    extrema = ctx.constant_extrema(ref.scope, ref.inputs[2])  # integers of up to 32 bits: |int64| is exact
    if extrema is not None:
        return max(abs(extrema[0]), abs(extrema[1]))
    data = ctx.constant_array(ref.scope, ref.inputs[2])
    if data is None or not data.size:
        return 0
    if data.dtype.kind != "f":
        return int(np.abs(data.astype(np.int64)).max())
    step = float(np.abs(np.asarray(x.scale, np.float64)).min() * np.abs(np.asarray(w.scale, np.float64)).min())
    with np.errstate(all="ignore"):
        steps = float(np.abs(data.astype(np.float64)).max()) / step if step else math.inf
    return int(np.ceil(steps)) if math.isfinite(steps) else 2**64  # (past any accumulator)


@rule("QT407", "accumulator-overflow-risk", "warning")
def check(ctx: Context) -> Iterator[Finding]:
    for ref, x, w, _ in weighted(ctx):
        if len(ref.inputs) < 2 or x is None or w is None:
            continue
        if _float_storage(x) or _float_storage(w):
            continue  # float8 / float4 values are not accumulated in integers
        bits = ctx.profile.accumulator_bits
        if _bits(x) > 8 or _bits(w) > 8:
            bits = ctx.profile.wide_accumulator_bits
        limit = 2 ** (bits - 1)
        k = reduction_length(ctx, ref)
        x_reach, w_reach = _type_reach(x), _type_reach(w)
        if k is None or x_reach is None or w_reach is None:
            continue
        bias = _bias_reach(ctx, ref, x, w)
        if k * x_reach * w_reach + bias < limit:
            continue  # safe even at the weight type's worst case: no need to read the weights
        sums = _channel_sums(ctx, ref, ref.inputs[1], w)  # the data can only tighten the bound
        worst = (x_reach * sums if sums is not None else k * x_reach * w_reach) + bias
        if worst < limit:
            continue
        how = (f"max|x - zx| {x_reach} x max sum|w - zw| {sums} over an output's weights" if sums is not None
               else f"K {k} x max|x - zx| {x_reach} x max|w - zw| {w_reach}")
        yield Finding(
            ref.location(),
            f"worst-case accumulator |sum| = {how}" + (f" + max|bias| {bias}" if bias else "")
            + f" = {worst} reaches 2^{bits - 1}; a {bits}-bit accumulator may overflow",
        )


def _bits(qtype: QType) -> int:
    storage = storage_of(qtype)
    return storage.bits if storage is not None else 8


def _float_storage(qtype: QType) -> bool:
    storage = storage_of(qtype)
    return storage is not None and storage.is_float
