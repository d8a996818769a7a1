"""A QuantizeLinear / DequantizeLinear uses what ONNX allows it only at a later opset.

## What it checks
Every QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear of the
default domain, against that operator's schema at the opset the model
imports (`onnx.defs`): each attribute exists in that version (`axis` from
opset 13, `saturate` from 19, `block_size` and `output_dtype` from 21,
`precision` from 23); a scale with more than one value (per-axis
parameters) has an `axis` to go with it (opset 13); the stored type (the
integer side: QuantizeLinear's output and zero point, DequantizeLinear's
input and zero point) is one the version takes (float8 from 19; int16,
uint16, int4, uint4 from 21; float4e2m1 from 23; int2, uint2 from 25); the
scale's type too (float16 and bfloat16 from 19, float8e8m0 from 24); and
the node has as many inputs and outputs as the version takes (a
QuantizeLinear of four inputs is no version's). In a QDQ or QOperator file
these are the nodes as written, located there.

## Why
The meaning of the parameters is not in question; the file is simply not
valid ONNX at the version it declares. onnx.checker rejects it and
onnxruntime refuses to load it ("Unrecognized attribute: axis for operator
DequantizeLinear", a 1-D scale of a version-10 DequantizeLinear), yet
quantizers write such files: onnxruntime's own quantizer wrote per-channel
DequantizeLinear at opset 11 for the PP-OCR models, which then fail on the
next tool in the chain.

## Invalid example
A model importing opset 11 with `DequantizeLinear(w_q, w_scale, w_zp, axis=0)`,
`w_scale` holding 16 values; or `QuantizeLinear` writing int4 at opset 19.

## Valid example
The same nodes with the model's default-domain opset raised to 13 (per-axis)
or 21 (int4): the message names the first opset that allows each use.

## Fix
Raise the model's default-domain opset to the one the message names (and
convert the other nodes with `onnx.version_converter`), or export again at
that opset; `onnx-qtypes lift` then `lower` writes opset 21 or later.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding, Location
from onnx_qtypes.checker.op_versions import OPS, opset_of, problems
from onnx_qtypes.checker.registry import rule


@rule("QT412", "quantization-op-not-in-opset", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for ref in ctx.nodes_of(*OPS):
        def elem_type(kind: str, index: int, ref=ref) -> int | None:  # noqa: ANN001 - bound per node
            return ctx.stands_for(ref, kind, index)

        def element_count(name: str, ref=ref) -> int | None:  # noqa: ANN001
            shape = ctx.shape(ref.scope, name)
            return None if shape is None or None in shape else math.prod(shape)

        for p in problems(ref.node, opset_of(ref.node, ref.opsets), elem_type, element_count):
            yield Finding(Location(ref.pointer + p.where, node=ref.name, tensor=p.tensor, op_type=ref.op_type),
                          p.message)
