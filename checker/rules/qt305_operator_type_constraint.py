"""A node's inputs or outputs break the operator's type constraints.

## What it checks
Each input and output of every node satisfies the type constraints of the
operator's schema (from `onnx.defs`, at the opset the model imports), where a
quantized tensor stands for its expressed type — except on the integer side
of QuantizeLinear / DequantizeLinear, where it stands for its storage type.
A type variable (`T`) binds to one type across a node's inputs and outputs, so
quantized operands of one variable share one expressed type, a float tensor
beside them has that type, and a declared float output of the variable (the
float result of an operator with quantized inputs) is that expressed type.
Tensors whose element type is unknown, and ops without a registered schema,
are skipped.

## Why
Operators keep their existing definitions: an unmodified `Conv` on a
quantized input computes on the dequantized (expressed) values, so it needs
exactly the types a float `Conv` accepts. An int8 tensor without a quantized
type feeding `Conv`, or a float16-expressed input beside a float32 weight,
has no meaning under either the old or the new rules.

## Invalid example
`Conv(x_q, w)` where `x_q` is `int8:float32<...>` and `w` is a plain INT8
initializer (int8 is not in Conv's `T`); `Add(a, b)` with `a` expressed in
float16 and `b` in float32, or `b` a plain float32 tensor, or `a` and `b`
expressed in float16 and the output `c` declared float32.

## Valid example
`Conv(x_q, w)` with both quantized and expressed in float32; `MaxPool` on
int8 storage without a quantized type (MaxPool accepts int8).

## Fix
Declare the missing quantized type (`onnx_qtypes.set_qtype`), or make the
expressed types agree.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import BOUNDARY_INTEGER_SIDE, Context, NodeRef
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.schemas import formal, schema_for, tensor_constraint, type_string


def _what(ctx: Context, ref: NodeRef, kind: str, index: int, type_str: str) -> str:
    name = (ref.inputs if kind == "input" else ref.outputs)[index]
    qt = ctx.qtype(ref.scope, name)
    stands = type_str[len("tensor("):-1]
    if qt is None:
        return f"{kind} {index} {name!r} is {stands}"
    return f"{kind} {index} {name!r} ({qt}) stands for {stands}"


def _check_node(ctx: Context, ref: NodeRef) -> Iterator[Finding]:
    schema = schema_for(ref)
    if schema is None:
        return
    bound: dict[str, tuple[str, str, int]] = {}
    for kind, names in (("input", ref.inputs), ("output", ref.outputs)):
        for index, name in enumerate(names):
            found = tensor_constraint(schema, kind, index) if name else None
            if found is None:
                continue
            data_type = ctx.stands_for(ref, kind, index)
            if not data_type:
                continue
            type_str, allowed, binds = found
            actual = type_string(data_type)
            if actual not in allowed:
                what = _what(ctx, ref, kind, index, actual)
                shown = ", ".join(sorted(a[len("tensor("):-1] for a in allowed if a.startswith("tensor(")))
                param = formal(schema, kind, index)
                yield Finding(
                    ref.location(kind, index),
                    f"{what}, but {ref.op_type}-{schema.since_version} {param.name!r} ({type_str}) accepts {shown}",
                )
                continue
            if not binds:
                continue
            first = bound.setdefault(type_str, (actual, kind, index))
            if first[0] != actual:
                what = _what(ctx, ref, kind, index, actual)
                other = (ref.inputs if first[1] == "input" else ref.outputs)[first[2]]
                yield Finding(
                    ref.location(kind, index),
                    f"{what}, but {type_str} is already bound to {first[0][len('tensor('):-1]} by "
                    f"{first[1]} {first[2]} {other!r}; all {type_str} of {ref.op_type} must have one type",
                )


def _signature(ctx: Context, ref: NodeRef) -> tuple:
    """Everything _check_node decides on: which operands are present and the types they stand for."""
    if ref.is_onnx and ref.op_type in BOUNDARY_INTEGER_SIDE:  # an integer side: ask operand by operand
        return (
            ref.op_type, ref.is_onnx,
            tuple(ctx.stands_for(ref, "input", i) if name else _ABSENT for i, name in enumerate(ref.inputs)),
            tuple(ctx.stands_for(ref, "output", i) if name else _ABSENT for i, name in enumerate(ref.outputs)),
        )
    return ref.op_type, ref.is_onnx, _stand_for(ctx, ref.scope, ref.inputs), _stand_for(ctx, ref.scope, ref.outputs)


def _stand_for(ctx: Context, scope: str, names: tuple[str, ...]) -> tuple[int | None, ...]:
    """tensor_stands_for of each name (what stands_for answers away from an integer side), _ABSENT for ""."""
    known, ask = ctx.stands_for_known, ctx.tensor_stands_for
    return tuple([_ABSENT if not name else known[key] if (key := (scope, name)) in known else ask(scope, name)
                  for name in names])


_ABSENT = -1  # an omitted optional operand (no element type is negative)


@rule("QT305", "operator-type-constraint", "error")
def check(ctx: Context) -> Iterator[Finding]:
    # Nodes of one schema whose operands stand for the same types pass or fail alike: a model of
    # thousands of nodes has a few signatures, and only a signature not seen clean is checked in full.
    clean: set[tuple] = set()
    for ref in ctx.nodes:
        schema = schema_for(ref)
        if schema is None:
            continue
        signature = (schema, _signature(ctx, ref))
        if signature in clean:
            continue
        findings = list(_check_node(ctx, ref))
        if findings:
            yield from findings
        else:
            clean.add(signature)
