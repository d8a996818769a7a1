"""A QuantizeLinear to float storage does not saturate.

## What it checks
A QuantizeLinear whose output is float8 (from its zero point's type, its
`output_dtype` or the output's quantized type) keeps the default
`saturate=1`.

## Why
With `saturate=0` a value beyond the type's largest finite value becomes
NaN (float8e4m3fn, and both fnuz types) or infinity (float8e5m2) instead of
the largest value: one outlier activation turns into a NaN that every
following MatMul spreads over a whole row. A quantized type saturates, as
integer storage always does, so the lift leaves such a QuantizeLinear
untyped (float4e2m1 has neither NaN nor infinity and saturates anyway).

## Invalid example
`QuantizeLinear(x, 0.1, float8e4m3fn 0)` with `saturate=0`: x = 50.0 gives
NaN.

## Valid example
The same node without the attribute (or `saturate=1`): x = 50.0 gives 448,
i.e. 44.8.

## Fix
Drop `saturate=0`. When overflow must be visible, check the range of the
input instead (a statistics rule, QT208), not through NaN in the output.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, NodeRef
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.storage_types import STORAGE_BY_DATA_TYPE, STORAGE_TYPES, StorageType


@rule("QT123", "float-quantize-not-saturating", "warning")
def check(ctx: Context) -> Iterator[Finding]:
    for ref in ctx.nodes_of("QuantizeLinear"):
        if ref.attr("saturate", 1) != 0:  # nodes_of yields default-domain nodes only
            continue
        storage = _storage(ctx, ref)
        if storage is not None and storage.is_float and storage.name != "float4e2m1":
            yield Finding(ref.location(), f"saturate=0: values beyond {storage.name}'s largest finite value "
                                          f"(±{storage.max}) become NaN or infinity instead of saturating")


def _storage(ctx: Context, ref: NodeRef) -> StorageType | None:
    """The storage type of the node's output: its quantized type, else output_dtype, else its zero point's type."""
    qtype = ctx.qtype(ref.scope, ref.outputs[0]) if ref.outputs else None
    if qtype is not None:
        return STORAGE_TYPES.get(qtype.storage)
    data_type = ref.attr("output_dtype", 0)
    if not data_type and len(ref.inputs) > 2 and ref.inputs[2]:
        data_type = ctx.elem_type(ref.scope, ref.inputs[2])
    return STORAGE_BY_DATA_TYPE.get(data_type)
