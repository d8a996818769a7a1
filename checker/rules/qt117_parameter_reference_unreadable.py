"""A type names initializers for its parameters that do not hold them.

## What it checks
A type that keeps its parameters by reference (`scale_tensor`,
`zero_point_tensor`) names an initializer of the graph that declares the
tensor or encloses it (a function body has none, so its types list their
parameters), and that initializer holds them: `data_type` is the expressed
type for scales and the storage type or its marker for zero points; `dims` are the parameter shape (`[]`
or `[1]` per-tensor, `[dim(axis)]` per-axis, the tensor's shape with
`dim(axis)` replaced by `ceil(dim(axis) / block_size)` blocked); scales and
zero points count alike; and each parameter is given in one form only, by
reference or listed, not both.

## Why
A reference lets millions of blocked parameters live in external data like
the weight they belong to, but the type is only as good as what it names: a
missing initializer leaves the tensor without a meaning, a float16 array
read as float32 scales or a `[4096, 128]` array read as `[128, 4096]` blocks
gives every value another scale, silently.

## Invalid example
`w: int4:float16<scale_tensor "w_scale", axis=0, block=32>` on a `[4096,
4096]` weight, with `w_scale` of dims `[4096, 128]`, or of data type FLOAT.

## Valid example
The same type with `w_scale` a FLOAT16 initializer of dims `[128, 4096]`.

## Fix
Write the parameters with `onnx_qtypes.set_qtype`, which creates the
initializer in the right type and shape, or correct the name, type or dims.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


@rule("QT117", "parameter-reference-unreadable", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl in ctx.declarations:
        if decl.reference_problem is None:
            continue
        field = next((f for f in ("zero_point_tensor", "offset_tensor") if decl.reference_problem.startswith(f)),
                     "scale_tensor")
        yield Finding(decl_location(decl, "quantization", field),
                      f"{decl.reference_problem}; the type's parameters cannot be read")
