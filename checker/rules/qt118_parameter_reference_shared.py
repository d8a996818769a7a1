"""An initializer holding a type's parameters is also something else.

## What it checks
An initializer that a type names for its parameters (`scale_tensor`,
`zero_point_tensor`) belongs to that type: it is not a graph input, no type
of another tensor names it, and no node reads it except a QuantizeLinear or
DequantizeLinear of the same tensor, as its scale or zero point.

## Why
The type is the tensor's meaning, so whatever changes the initializer
changes the meaning. A graph input can be fed another value at run time;
another tensor's type naming the same array makes two types one, so that
requantizing one silently requantizes the other; a node reading it as data
(an Add, a Reshape) ties the meaning of a tensor to a computation.

## Invalid example
`w_scale` named by the types of `w1` and `w2`; or listed in `graph.input`;
or read by `Mul(w_scale, k)`.

## Valid example
`w_scale` named by `w`'s type and read only as input 1 of the
DequantizeLinear whose input 0 is `w`.

## Fix
Give each type its own parameter initializer (`onnx_qtypes.set_qtype` does),
and copy the values where a node needs them as data.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding, Location
from onnx_qtypes.checker.registry import rule

_BOUNDARY = {"QuantizeLinear": (0, "output"), "DequantizeLinear": (0, "input")}  # where the quantized tensor is


@rule("QT118", "parameter-reference-shared", "error")
def check(ctx: Context) -> Iterator[Finding]:
    owners: dict[str, tuple[str, object]] = {}  # initializer pointer -> (tensor, first declaration naming it)
    for decl in ctx.declarations:
        for field, pointer in (decl.parameters_at or {}).items():
            owner = owners.setdefault(pointer, (decl.name, decl))
            if owner[0] != decl.name:
                yield Finding(Location(pointer, tensor=_name(decl, field)),
                              f"{field}s of {decl.name!r} are named by the type of {owner[0]!r} too; two types "
                              "sharing parameters change together", (decl_location(owner[1]), decl_location(decl)))
    if not owners:
        return
    inputs = {vi.name for _, graph in ctx.graphs for vi in graph.input}
    for pointer, (tensor, decl) in owners.items():
        name = next(_name(decl, f) for f, p in decl.parameters_at.items() if p == pointer)
        if name in inputs:
            yield Finding(Location(pointer, tensor=name), f"parameter initializer {name!r} of {tensor!r} is also a "
                          "graph input, so a caller can replace the type's parameters at run time", (decl_location(decl),))
        for ref, k in ctx.consumers.get((decl.scope, name), []):
            side = _BOUNDARY.get(ref.op_type) if ref.is_onnx else None
            names = ref.outputs if side and side[1] == "output" else ref.inputs
            if side and k in (1, 2) and names and names[0] == tensor:
                continue
            yield Finding(ref.location("input", k), f"{ref.op_type} reads parameter initializer {name!r} of "
                          f"{tensor!r} as data; copy the values instead", (decl_location(decl),))


def _name(decl, field: str) -> str:
    return getattr(decl.quantization, f"{field}_tensor")
