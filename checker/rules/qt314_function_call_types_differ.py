"""A call of a model-local function hands a value to a typed body under another type.

## What it checks
For each call of a model-local function whose body declares a quantized type
for at least one of its formal inputs or outputs: every operand of the call
(input k and the body's input k, output k and the body's output k) carries
the same quantized type as the formal parameter, or neither is quantized
(statistics excluded). A body that declares no type for any formal parameter
is not checked: its call is one operator, which dequantizes its operands and
quantizes its results (proposal/spec/semantics.md §4).

## Why
A typed body computes on storage integers, so its call passes them through
as control flow does: nothing at the call can requantize, and a body that
declares another scale would read the caller's integers at that scale. The
reference evaluator refuses such a call rather than compute a wrong result.

## Invalid example
`c_q = local.QAdd(a_q, a_q)` with `a_q: int8:float32<0.1:0>` and the body's
input `a: int8:float32<0.5:0>`.

## Valid example
The body's `a: int8:float32<0.1:0>`, or a body that declares no types (the
call then dequantizes `a_q` and runs the body in float).

## Fix
Declare the body's formal parameters with the types of the call's operands,
or drop the body's declarations so the call runs it in the expressed type.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.columns import valid_type
from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule


@rule("QT314", "function-call-types-differ", "error", typed_only=True)
def check(ctx: Context) -> Iterator[Finding]:
    bodies = {(f.domain, f.name): (f"/functions/{i}", f) for i, f in enumerate(ctx.model.functions)}
    for ref in ctx.nodes:
        found = bodies.get((ref.node.domain, ref.op_type))
        if found is None:
            continue
        scope, body = found
        pairs = [("input", k, outer, inner) for k, (outer, inner) in enumerate(zip(ref.node.input, body.input))]
        pairs += [("output", k, outer, inner) for k, (outer, inner) in enumerate(zip(ref.node.output, body.output))]
        if not any(ctx.qtype(scope, inner) is not None for *_, inner in pairs):
            continue  # an untyped body: the call dequantizes and quantizes like any operator
        for kind, k, outer, inner in pairs:
            if not outer:
                continue
            mine, theirs = ctx.qtype(ref.scope, outer), ctx.qtype(scope, inner)
            if (mine is not None and valid_type(ctx, ref.scope, outer) is None) or \
                    (theirs is not None and valid_type(ctx, scope, inner) is None):
                continue  # an invalid type says nothing about the other side (QT1xx reports it)
            if _bare(mine) != _bare(theirs):
                yield Finding(ref.location(kind, k), (
                    f"{kind} {k} {outer!r} is {_show(mine)}, but the body of {body.domain}:{body.name} declares "
                    f"{inner!r} as {_show(theirs)}; storage crosses into a typed body unchanged, so both need one type"))


def _bare(qtype):
    return None if qtype is None else qtype.with_statistics(None)


def _show(qtype) -> str:
    return "not quantized" if qtype is None else str(qtype.with_statistics(None))
