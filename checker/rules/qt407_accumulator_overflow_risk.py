"""The integer accumulator of a Conv / ConvTranspose / MatMul / Gemm may overflow.

## What it checks
For a node whose input and weight are quantized, the worst-case accumulator
magnitude `K * max|x - zx| * max|w - zw| + max|bias|` stays below
`2^(bits - 1)`, with `bits` the profile's accumulator width (32 unless a
profile says otherwise). `K` is the number of products per output
(`C/group * prod(kernel)` for Conv, the reduction dimension for MatMul and
Gemm; an upper bound for ConvTranspose). `max|x - zx|` comes from the input
type's storage range and zero points; `max|w - zw|` and `max|bias|` from the
constant data when available, else from the types. Float storage (float8,
float4e2m1) is not accumulated in integers and is not checked.

## Why
Integer kernels accumulate in int32 (TFLite, ONNX QLinearConv, gemmlowp).
The semantics are defined on real values, so an overflowing kernel is simply
wrong; whether it overflows depends on data the checker cannot see, hence a
warning at the worst case. Reduced-range or 16-bit inputs, smaller weights
or a split reduction remove the risk.

## Invalid example
A MatMul with int8 input (zero point -128, so `|x - zx|` reaches 255), int8
weights reaching 127 and K = 70000: `70000 * 255 * 127 > 2^31`.

## Valid example
The same MatMul with K = 4096 (`4096 * 255 * 127 = 1.3e8`).

## Fix
Split the reduction, narrow the input range (reduce_range / 7-bit
activations), or use a target with a wider accumulator (set
`accumulator_bits` in its profile).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from onnx_qtypes.checker.context import Context, NodeRef, storage_of, storage_range
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.weights import reduction_length, weighted
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


def _data_reach(ctx: Context, ref: NodeRef, name: str, qt: QType) -> int | None:
    """max |w - zw| over the constant data, per channel when the type is per-axis."""
    data = ctx.constant_array(ref.scope, name)
    if data is None or data.size == 0 or qt.is_dynamic or qt.block_size is not None:
        return None
    values = data.astype(np.int64)
    if qt.axis is None:
        return int(np.abs(values - qt.zero_point[0]).max())
    if not 0 <= qt.axis < values.ndim or values.shape[qt.axis] != len(qt.zero_point):
        return None  # an axis or a count that does not fit the data (QT107, QT108): the type's bound stands
    shape = [1] * values.ndim
    shape[qt.axis] = len(qt.zero_point)
    return int(np.abs(values - np.asarray(qt.zero_point).reshape(shape)).max())


def _bias_reach(ctx: Context, ref: NodeRef) -> int:
    """max |bias| over the constant bias data (0 without a constant bias)."""
    if len(ref.inputs) <= 2 or not ref.inputs[2]:
        return 0
    extrema = ctx.constant_extrema(ref.scope, ref.inputs[2])  # integers of up to 32 bits: |int64| is exact
    if extrema is not None:
        return max(abs(extrema[0]), abs(extrema[1]))
    data = ctx.constant_array(ref.scope, ref.inputs[2])
    return int(np.abs(data.astype(np.int64)).max()) if data is not None and data.size else 0


@rule("QT407", "accumulator-overflow-risk", "warning")
def check(ctx: Context) -> Iterator[Finding]:
    limit = 2 ** (ctx.profile.accumulator_bits - 1)
    for ref, x, w, _ in weighted(ctx):
        if len(ref.inputs) < 2 or x is None or w is None:
            continue
        if _float_storage(x) or _float_storage(w):
            continue  # float8 / float4 values are not accumulated in integers
        k = reduction_length(ctx, ref)
        x_reach, w_reach = _type_reach(x), _type_reach(w)
        if k is None or x_reach is None or w_reach is None:
            continue
        bias = _bias_reach(ctx, ref)
        if k * x_reach * w_reach + bias < limit:
            continue  # safe even at the weight type's worst case: no need to read the weights
        w_name = ref.inputs[1]
        w_reach = min(w_reach, _data_reach(ctx, ref, w_name, w) or w_reach)  # the data can only tighten the bound
        worst = k * x_reach * w_reach + bias
        if worst >= limit:
            yield Finding(
                ref.location(),
                f"worst-case accumulator |sum| = K {k} x max|x - zx| {x_reach} x max|w - zw| {w_reach}"
                + (f" + max|bias| {bias}" if bias else "")
                + f" = {worst} reaches 2^{ctx.profile.accumulator_bits - 1}; a {ctx.profile.accumulator_bits}-bit "
                "accumulator may overflow",
            )


def _float_storage(qtype: QType) -> bool:
    storage = storage_of(qtype)
    return storage is not None and storage.is_float
