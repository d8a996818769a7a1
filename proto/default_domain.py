"""ONNX's default operator domain: its two spellings, and the version a model or function imports of it."""

from __future__ import annotations

from collections.abc import Iterable

from onnx import OperatorSetIdProto

STANDARD_DOMAINS = frozenset({"", "ai.onnx"})


def default_opset(opset_import: Iterable[OperatorSetIdProto] | dict[str, int]) -> int | None:
    """The default domain's version in ``opset_import`` (a model's or function's list, or domain -> version);
    None when it is not imported. A domain imported twice counts at its last import, as onnx's shape inference
    reads it, and "" before "ai.onnx"."""
    versions = opset_import if isinstance(opset_import, dict) else {o.domain: o.version for o in opset_import}
    return versions.get("", versions.get("ai.onnx"))
