"""The target does not accept the declared schema (profile).

## What it checks
Under a profile that lists schemas for a tensor's role, the type declares
one of them.

## Why
A target that is built around a predicate (symmetric weights, power-of-two
scales) reads the declared schema to pick its kernels. QT111 / QT112
already guarantee that a declared schema holds; this rule guarantees the
declaration is one the target understands.

## Invalid example
Under a profile whose weights accept `["symmetric"]`: a weight declared
`asymmetric`, even if its zero points happen to be 0.

## Valid example
The weight declared `symmetric` with zero points 0.

## Fix
Declare the schema the target expects (after making the parameters satisfy
it).
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.walk import constrained, profile_label


@rule("QT502", "schema-not-supported", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl, role, rc in constrained(ctx):
        schema = decl.qtype.schema.name.lower()
        if rc.schemas is not None and schema not in rc.schemas:
            yield Finding(
                decl_location(decl, "quantization", "schema"),
                f"{profile_label(ctx, role)} accepts schema {', '.join(rc.schemas)}, found {schema}",
            )
