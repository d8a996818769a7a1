"""One tensor is declared with different quantized types.

## What it checks
Every declaration of a tensor — graph input or output, `value_info`, the
same lists in subgraphs (outer-scope references included: the main graph and
its subgraphs share one name space) and in a function body — carries an
identical quantized type: storage and expressed type, scales (bitwise), zero
points, axis, block size, schema and storage range. Statistics are excluded.
A declaration without the quantized type is a disagreement too, unless it
states no element type at all (merely incomplete).

## Why
A tensor has one real-value representation. In QDQ form nothing ties the
QuantizeLinear that produces an int8 tensor to the DequantizeLinear that
reads it; both run with different scales and return garbage (measured:
values off by 25x, accepted by onnx.checker). In typed form the type is the
single source of truth, so two types for one tensor are a contradiction.

## Invalid example
`value_info x_q: int8:float32<0.02:0>` and `graph.output x_q:
int8:float32<0.05:0>`; or `value_info w: int8` (plain) beside a quantized
declaration of `w`.

## Valid example
Both declarations `int8:float32<0.02:0>`, one with statistics and one
without.

## Fix
Decide which parameters the tensor has and write them in every declaration
(`onnx_qtypes.set_qtype` updates them all).
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx import helper

from onnx_qtypes.checker.context import Context, Declared, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


def _describe(decl: Declared) -> str:
    if decl.qtype is not None:
        return str(decl.qtype)
    return helper.tensor_dtype_to_string(decl.elem_type) if decl.elem_type in helper.get_all_tensor_dtypes() \
        else f"elem_type {decl.elem_type}"


@rule("QT301", "declarations-disagree", "error", typed_only=True)
def check(ctx: Context) -> Iterator[Finding]:
    for key in ctx.repeated_names():
        decls = ctx.declarations_of(*key)
        first = next((d for d in decls if d.qtype is not None), None)
        if first is None:
            continue
        for decl in decls:
            if decl is first or (decl.qtype is None and not decl.elem_type):
                continue
            if decl.qtype != first.qtype:
                yield Finding(
                    decl_location(decl),
                    f"declared {_describe(decl)} here but {_describe(first)} at {first.pointer}; every declaration "
                    "of a tensor must carry the identical quantized type (statistics may differ)",
                    related=(decl_location(first),),
                )
