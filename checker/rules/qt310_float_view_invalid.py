"""The model is not a valid ONNX model once its quantized types are read as float.

## What it checks
`onnx.checker.check_model` (structure: IR and opset versions, node
attributes and arity, topological order, single assignment, initializer
sizes) accepts the float view of the model: every quantized tensor replaced
by its expressed type, quantized constants by graph inputs of that type,
boundary QuantizeLinear / DequantizeLinear by Identity in the node's own
domain (one with more or fewer inputs or outputs than its operator takes
stays as written, so that onnx.checker names it; one of domain "ai.onnx",
which onnx.checker reads as no domain, stays a fault). A QDQ or QOperator
file is checked so through its lifted form: what onnx.checker refuses in the
file is found at the same node as in the typed file `lift` writes (and
`run` and `lower` refuse that file). An initializer such a file defines twice
with one value is reported at its second definition: the lift keeps one copy,
as onnxruntime does, so only the file shows what onnx.checker refuses.

## Why
The extension changes element types, nothing else: a typed model must be a
valid ONNX graph in every other respect. Stock onnx.checker refuses the
typed model itself (by design, the fail-closed marker), so without this rule
the structural checks would never run on it.

## Invalid example
A `Conv` node with an unknown attribute `padz`; a `Relu` with two inputs;
IR version 2, which has no opset_import, with one. (A name nothing defines, or one defined twice,
is refused when the file is read, by every command, before any rule.)

## Valid example
The same model with `pads`, with one input to the `Relu`, with IR version 10.

## Fix
Fix the structural error onnx.checker names (run it on
`onnx_qtypes.lower(model)` to see it in a plain ONNX model too).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import onnx

from onnx_qtypes.checker.context import MAIN, Context
from onnx_qtypes.checker.diagnostics import Finding, Location
from onnx_qtypes.checker.registry import rule

_NODE = re.compile(r"Node \(([^)]*)\)|node\. Name: (\S+) OpType")


@rule("QT310", "float-view-invalid", "error")
def check(ctx: Context) -> Iterator[Finding]:
    try:
        onnx.checker.check_model(ctx.view)
    except onnx.checker.ValidationError as exc:
        text = " ".join(str(exc).split())
        location = Location("/graph")
        named = _NODE.search(text)
        if named:
            name = named.group(1) or named.group(2)
            ref = next((r for r in ctx.nodes if r.scope == MAIN and r.name == name), None)
            if ref is not None:
                location = ref.location()
        yield Finding(location, f"onnx.checker rejects the float view: {text}")
