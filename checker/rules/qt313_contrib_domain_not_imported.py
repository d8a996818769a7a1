"""A node uses an operator domain the model does not import.

## What it checks
Every node outside the default ONNX domain (`com.microsoft.MatMulNBits`,
`com.microsoft.QLinearAdd`, ...) has its domain in the `opset_import` in
force where it sits (the model's, or its function's).

## Why
A node's meaning is its domain's operator at the imported version: without
the import there is no version, so no meaning. onnx.checker rejects the node
("No opset import for domain 'com.microsoft'"), and so does `onnx-qtypes
run`; onnxruntime 1.32 loads and runs such a model anyway (its contrib
operators have one version), so a file can pass onnxruntime and fail every
tool that follows the standard. NNCF has written 4-bit LLM weights as
MatMulNBits nodes without importing `com.microsoft`; `onnx-qtypes lift`
reads such a model, and a com.microsoft QuantizeLinear / DequantizeLinear,
as if the import were there (and says so in a note).

## Invalid example
A model importing only the default domain, opset 21, with one node
`MatMulNBits(A, B, scales)` of domain `com.microsoft`.

## Valid example
The same model with `opset_import {domain: "com.microsoft", version: 1}`.

## Fix
Add the import: `model.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))`
(onnxruntime's contrib operators are version 1), or run `onnx-qtypes lift`,
which adds it.
"""

from __future__ import annotations

from collections.abc import Iterator

from onnx_qtypes.checker.context import Context
from onnx_qtypes.checker.diagnostics import Finding
from onnx_qtypes.checker.registry import rule
from onnx_qtypes.proto.default_domain import not_imported


@rule("QT313", "contrib-domain-not-imported", "error")
def check(ctx: Context) -> Iterator[Finding]:
    missing: dict[tuple[str, str], list] = {}  # (scope, domain) -> nodes, in model order
    for ref in ctx.nodes:
        if not ref.is_onnx and ref.domain not in ref.opsets:
            missing.setdefault((ref.scope, ref.domain), []).append(ref)
    for (_, domain), refs in missing.items():
        first, *others = refs
        yield Finding(first.location(), f"{domain}.{first.op_type} {not_imported(domain, len(others))}; add "
                      f"{{domain: {domain!r}, version: 1}}", tuple(r.location() for r in others))
