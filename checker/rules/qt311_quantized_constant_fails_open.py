"""A quantized constant reaches stock runtimes as plain integers.

## What it checks
A quantized initializer or `Constant` read by an operator whose outputs do
not take their element type from it (in the schema, no output shares that
input's type variable: `Cast`, comparisons, `ArgMax`, `NonZero`,
`MatMulInteger`, …; `Shape` and `Size`, which ignore values, excepted),
in a model with no quantized graph input, graph output or node output.

## Why
Stock runtimes do not read `value_info` of initializer names: they see the
storage integers and their `data_type`. Every other path fails closed (a
quantized graph input, output or node output makes onnxruntime refuse the
model), but this one runs: `Cast(w)` returns `[100.0, 100.0]` where the
extension means `[50.0, 50.0]` (measured, RFC 0001). The model is valid; the
hazard is in tools that do not implement the extension, hence a warning.

## Invalid example
`y = Cast<to=FLOAT>(w)` with `w` an INT8 initializer declared
`int8:float32<0.5:0>`, and no other quantized tensor.

## Valid example
The same with `w` also listed in `graph.input` (onnxruntime then refuses the
model), or with a quantized node output anywhere in the graph.

## Fix
Run the model through `onnx-qtypes lower` before giving it to a runtime
without the extension, or add a quantized declaration that fails closed.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import MAIN, Context, storage_of
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.checker.schemas import allowed_types, formal, is_type_variable, schema_for, type_string
from onnx_qtypes.proto.qtype import StorageType

VALUE_AGNOSTIC = frozenset({"Shape", "Size"})  # read only the shape, never the values


def _fails_closed(ctx: Context) -> bool:
    """Whether a stock runtime refuses the model: a quantized graph input, graph output or computed node output."""
    for decl in ctx.quantized_declarations(unique=False):
        if decl.scope != MAIN:
            continue
        if decl.kind in ("input", "output"):
            return True
        if (MAIN, decl.name) in ctx.producers and not ctx.is_constant(MAIN, decl.name):
            return True
    return False


def _accepts_storage(schema, type_str: str, storage: StorageType | None) -> bool:  # noqa: ANN001
    """Whether a stock runtime would accept the raw integers here (else it refuses: fails closed)."""
    return storage is not None and type_string(storage.data_type) in allowed_types(schema, type_str)


@rule("QT311", "quantized-constant-fails-open", "warning", typed_only=True)
def check(ctx: Context) -> Iterator[Finding]:
    constants = [key for key, _, _ in ctx.quantized_constants() if key[0] == MAIN]
    if not constants or _fails_closed(ctx):
        return
    for key in constants:
        for ref, index in ctx.consumers.get(key, []):
            schema = schema_for(ref)
            if schema is None or ref.op_type in VALUE_AGNOSTIC or ctx.is_boundary(ref):
                continue
            param = formal(schema, "input", index)
            if param is None or not is_type_variable(schema, param.type_str):
                continue
            follows = any(p.type_str == param.type_str for p in schema.outputs)
            if not follows and _accepts_storage(schema, param.type_str, storage_of(ctx.qtype(*key))):
                yield Finding(
                    ref.location("input", index),
                    f"{ref.op_type} reads the quantized constant {key[1]!r} ({ctx.qtype(*key)}) and its outputs do "
                    "not take their type from it; runtimes without the extension will compute on the raw "
                    "integers instead of refusing the model",
                )
