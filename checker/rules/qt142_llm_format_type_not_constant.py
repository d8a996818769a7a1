"""A version-3 type declares something other than a constant.

## What it checks
A type of extension version 3 (offsets, a codebook, or parameters read from
a quantized or narrower-float parameter tensor: the LLM weight formats)
declares an initializer or a Constant's output, never a graph input, a
node's output or a value inside a function.

## Why
Version 3 defines what such values mean, not how to produce them: there is
no quantize onto a codebook's non-uniform grid, a K-quant's scales are a
product of two quantized levels that no requantization chooses, and a
zero scale (GGUF's block of zeros, valid in version 3) has no inverse. A
runtime asked to write such a tensor would have to invent an encoder; one
reading it as a graph input would have to trust parameters a caller can
change. Weights are what these formats quantize, and weights are constants.

## Invalid example
`MatMul(x, w) -> y` with `y` declared with a codebook; a graph input
declared as a Q4_K weight.

## Valid example
The initializers `lift` writes from a GGUF file, read by `Identity` or
`MatMul` into float outputs.

## Fix
Declare the version-3 type on the weight initializer only, and give the
values computed from it a float (or a version-1/2 quantized) type.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context, decl_location
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.versions import LLM_FORMATS_VERSION


@rule("QT142", "llm-format-type-not-constant", "error")
def check(ctx: Context) -> Iterator[Finding]:
    for decl in ctx.declarations:
        qt = decl.qtype
        if qt is None or qt.version != LLM_FORMATS_VERSION or (decl.scope, decl.name) in ctx.constants:
            continue
        what = "a graph input" if decl.kind == "input" else "a function's value" if decl.pointer.startswith(
            "/functions/") else "a computed value"
        field = ("quantization", "version") if decl.quantization is not None and decl.quantization.HasField(
            "version") else ("quantization",)
        yield Finding(decl_location(decl, *field),
                      f"{decl.name!r} is {what} but has a version-{qt.version} type ({qt}), which declares constants "
                      "only: nothing defines how to quantize into offsets, codebooks or quantized parameters; "
                      "declare it on the weight initializer and give computed values a float type")
