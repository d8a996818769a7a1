"""A quantized bias's scale is not input scale x weight scale.

## What it checks
For a Conv, ConvTranspose or Gemm whose input, weight and bias have static
types with matching granularity (QT406), every bias scale equals the input
scale times the weight scale of the same output channel, within a relative
tolerance of 1e-6: `|b - x*w| <= 1e-6 * min(b, x*w)`, the product taken in
double precision. Only per-tensor inputs are compared.

## Why
The bias is added to the accumulator, whose unit is `x_scale * w_scale[c]`.
A bias in other units adds a wrong offset that no later rescaling can undo.
Exact equality fails on real files because tools multiply in float32; 1e-6
is TFLite's tolerance (`GetQuantizedConvolutionMultipler`), and onnxruntime's
quantizer lands within about 4e-8.

## Invalid example
Input `0.02`, weight `0.01`, bias scale `0.0003` (should be `0.0002`).

## Valid example
Bias scale `0.0002` (or the float32 product 0.00019999999494757503).

## Fix
Requantize the bias with `scale = x_scale * w_scale` (per output channel for
per-axis weights).
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.bias import bias_uses
from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import fmt

RELATIVE_TOLERANCE = 1e-6


@rule("QT405", "bias-scale-mismatch", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for use in bias_uses(ctx):
        b, x, w = use.qtype, use.x, use.w
        if x is None or w is None or b.is_dynamic or x.is_dynamic or w.is_dynamic or x.axis is not None:
            continue
        if (b.axis is None) != (w.axis is None) or len(b.scale) != len(w.scale) or w.block_size is not None:
            continue  # QT406
        bad = []
        for c, (bs, ws) in enumerate(zip(b.scale, w.scale)):
            product = x.scale[0] * ws
            if not (bs > 0 and product > 0) or abs(bs - product) > RELATIVE_TOLERANCE * min(bs, product):
                bad.append((c, bs, product))
        if bad:
            c, bs, product = bad[0]
            channel = f"[{c}]" if b.axis is not None else ""
            more = f" ({len(bad) - 1} more channels differ)" if len(bad) > 1 else ""
            yield Finding(
                use.ref.location("input", 2),
                f"bias {use.bias!r} scale{channel} {fmt(bs)} must equal input scale {fmt(x.scale[0])} x weight "
                f"scale{channel} {fmt(w.scale[c])} = {fmt(product)} (relative tolerance 1e-6){more}",
            )
