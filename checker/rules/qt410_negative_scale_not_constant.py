"""A tensor with negative scales is computed or fed at run time, not a constant.

## What it checks
A tensor whose type has a negative scale is a constant (an initializer or
a Constant node: a weight or a bias), or the output of data movement (other
than MaxPool, GlobalMaxPool, ReduceMax and ReduceMin) whose quantized inputs
are such tensors.

## Why
Negative scales are admitted for what producers write on purpose: NNCF's
symmetric weight compression gives each channel the sign that puts its
largest-magnitude weight at `storage_min`, one step more range
(proposal/spec/types.md#negative-scales). A tensor computed at run time with
a negative scale is quantized with a negative scale: `round(x / scale)`
reverses the saturation (a large positive real saturates to
`storage_min`), which ONNX QuantizeLinear and onnxruntime compute but the
quantizers of integer hardware, built for positive scales, do not; and the
producing operator's requantization multiplier turns negative. No quantizer
writes such activations, so the type admits none.

## Invalid example
A graph input, or the output of Conv or QuantizeLinear, typed
`int8:float32<scale -0.05>`.

## Valid example
An int8 weight initializer with per-axis scales `[0.02, -0.5]`, and its
Transpose.

## Fix
Quantize the activation with a positive scale (negate the scale and the
data's sign convention where it came from), or keep it in float.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.data_movement import data_indices
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.negative_scales import is_view, negative_channels, negative_tensors
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.qtype import QType


@rule("QT410", "negative-scale-not-constant", "error")
def check(ctx: Context) -> Iterator[Finding]:
    stored: dict[tuple[str, str], bool] = {}
    for scope, name, qtype in negative_tensors(ctx):
        if not _stored(ctx, scope, name, stored):
            made = ctx.producers.get((scope, name))
            how = f"computed by {made[0].op_type}" if made else "fed to the graph at run time"
            yield Finding(
                ctx.type_location(scope, name, "quantization", "scale", _first_negative(qtype)),
                f"tensor {name!r} has negative scales ({negative_channels(qtype)}) but is {how}: only constants "
                "(weights, biases) and their data-movement views may have negative scales, since quantizing "
                "with a negative scale reverses saturation",
            )


def _stored(ctx: Context, scope: str, name: str, memo: dict[tuple[str, str], bool]) -> bool:
    """A constant, or data movement of such tensors (iterative: a chain of views may be long)."""
    stack, visiting = [(scope, name)], set()
    while stack:
        top = stack[-1]
        if top in memo:
            stack.pop()
            continue
        verdict, sources = _direct(ctx, *top)
        waiting = [s for s in sources if s not in memo]
        if verdict is None and waiting and top not in visiting:
            visiting.add(top)
            stack.extend(waiting)
            continue
        memo[top] = verdict if verdict is not None else bool(sources) and all(memo.get(s, False) for s in sources)
        stack.pop()
    return memo[(scope, name)]


def _direct(ctx: Context, scope: str, name: str) -> tuple[bool | None, list[tuple[str, str]]]:
    """(True: a constant, False: computed or fed, None: a view of ``sources``, its quantized data inputs)."""
    if ctx.is_constant(scope, name):
        return True, []
    made = ctx.producers.get((scope, name))
    ref = made[0] if made else None
    if ref is None or not is_view(ref):
        return False, []
    return None, [(scope, ref.inputs[i]) for i in data_indices(ref, "input") if ctx.qtype(scope, ref.inputs[i])]


def _first_negative(qtype: QType) -> int:
    """The scale the message names first (negative_channels), so the location and the text agree."""
    return next(i for i, s in enumerate(qtype.scale) if s < 0)
