"""The target does not accept this storage type or storage range (profile).

## What it checks
Under a profile that lists storage types for a tensor's role (activation,
weight, bias), the type's storage type is one of them, and its declared
`[storage_min, storage_max]` lies inside the bounds the entry gives — or,
for an initializer or Constant, its stored values do (the data is what the
target reads; a full-range declaration of weights that never use -128 is
accepted).

## Why
Targets support a few integer widths per role, and some reserve values:
TFLite and TensorRT int8 weights use `[-127, 127]` so that the range is
symmetric. A model declaring the full int8 range for weights may hold -128,
which such targets reject or misinterpret.

## Invalid example
Under `tflite-int8`: a Conv weight holding -128; an activation stored as
uint8; an activation type narrowed to nothing the entry allows.

## Valid example
Under `tflite-int8`: the weight `int8<-127:127>:float32:axis=0<...>`, or a
full-range int8 weight whose values stay in [-127, 127]; int8 activations.

## Fix
Requantize to a storage type and range the target accepts (for weights:
`storage_min = -127`).
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import constrained, profile_label


def _describe(allowance) -> str:  # noqa: ANN001
    if allowance.min is None and allowance.max is None:
        return allowance.type
    return f"{allowance.type} in [{'*' if allowance.min is None else allowance.min}, " \
           f"{'*' if allowance.max is None else allowance.max}]"


@rule("QT501", "storage-not-supported", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl, role, rc in constrained(ctx):
        if rc.storage is None:
            continue
        qt = decl.qtype
        entries = [a for a in rc.storage if a.type == qt.storage]
        accepted = ", ".join(_describe(a) for a in rc.storage)
        if not entries:
            yield Finding(
                decl_location(decl, "quantization", "storage_type"),
                f"{profile_label(ctx, role)} accepts storage {accepted}, found {qt.storage}",
            )
            continue
        fits = [a for a in entries if _inside(a, qt.storage_min, qt.storage_max)]
        if fits:
            continue
        data = ctx.constant_array(decl.scope, decl.name)
        if data is not None and data.size and data.dtype.kind in "iu":
            # A constant only needs its stored values inside the accepted range.
            lo, hi = int(data.min()), int(data.max())
            if any(_inside(a, lo, hi) for a in entries):
                continue
            yield Finding(
                ctx.constants[(decl.scope, decl.name)].location(),
                f"{profile_label(ctx, role)} accepts storage {accepted}, but the stored values span [{lo}, {hi}]",
            )
            continue
        field = "storage_min" if entries[0].min is not None and qt.storage_min < entries[0].min else "storage_max"
        yield Finding(
            decl_location(decl, "quantization", field),
            f"{profile_label(ctx, role)} accepts storage {accepted}, but the type declares "
            f"{qt.storage} [{qt.storage_min}, {qt.storage_max}]; narrow the declared storage range",
        )


def _inside(allowance, lo: int | None, hi: int | None) -> bool:  # noqa: ANN001
    return (allowance.min is None or (lo is not None and lo >= allowance.min)) and (
        allowance.max is None or (hi is not None and hi <= allowance.max)
    )
