"""A node computes on quantized inputs, but its output's type is not declared.

## What it checks
In the main graph, every output of a node (other than a QuantizeLinear /
DequantizeLinear boundary) whose type follows a quantized input — the same
type variable in the operator's schema — has a declaration (graph output or
`value_info`) saying whether it is quantized or float. Only where the node
computes in the quantized domain: every input bound to that type variable is
quantized and at least one of them is not a constant. A node that also reads
a float operand of that variable (`MatMul(x_float, w_int4)`), or whose
quantized operands are all constants (`Gather(embedding_int8, ids)`), is
weight-only quantization: its output is float by the semantics, which is
what `onnx-qtypes lift` writes for MatMulNBits and weight-only QDQ files,
declared or not.

## Why
The semantics quantize an output only when it is declared quantized; an
undeclared output is its expressed float type. That is well defined, but
after an edit it is more often a forgotten declaration than an intended
float, and the next boundary op then fails or silently changes meaning.
This is a warning.

## Invalid example
`relu_q = Relu(conv_q)` with `conv_q` quantized and no declaration of
`relu_q`.

## Valid example
`value_info relu_q: int8:float32<0.05:-10>`, or `value_info relu_q: float`
when a float output is intended.

## Fix
Declare the output: its quantized type, or its float type.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import MAIN, Context, NodeRef
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.schemas import formal, is_type_variable, schema_for


@rule("QT309", "output-type-undeclared", "warning", typed_only=True)
def check(ctx: Context) -> Iterator[Finding]:
    declared = ctx.is_declared
    for ref in ctx.nodes:
        if ref.scope != MAIN or all(not n or declared(MAIN, n) for n in ref.outputs):
            continue  # every output declared: nothing to ask
        if ctx.is_boundary(ref):
            continue
        quantized = [i for i, name in enumerate(ref.inputs) if name and ctx.qtype(ref.scope, name) is not None]
        if not quantized:
            continue
        schema = schema_for(ref)
        if schema is None:
            continue
        variables = {p.type_str for i in quantized if (p := formal(schema, "input", i)) is not None}
        variables = {v for v in variables if is_type_variable(schema, v) and _quantized_domain(ctx, ref, schema, v)}
        for index, name in enumerate(ref.outputs):
            param = formal(schema, "output", index) if name else None
            if param is None or param.type_str not in variables or ctx.declarations_of(ref.scope, name):
                continue
            source = ref.inputs[quantized[0]]
            yield Finding(
                ref.location("output", index),
                f"output {name!r} follows the quantized input {source!r} ({param.type_str}) but is not declared; "
                "declare its quantized type, or its float type if a float output is intended",
            )


def _quantized_domain(ctx: Context, ref: NodeRef, schema, variable: str) -> bool:  # noqa: ANN001
    """Every input bound to ``variable`` is quantized, and not all of them are constants (weight-only)."""
    bound = [name for i, name in enumerate(ref.inputs)
             if name and (p := formal(schema, "input", i)) is not None and p.type_str == variable]
    if any(ctx.qtype(ref.scope, name) is None for name in bound):
        return False  # a float operand: the node computes in float, its output is float
    return not all(ctx.is_constant(ref.scope, name) for name in bound)
