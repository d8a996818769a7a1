"""ONNX's operator domains: the default one's two spellings and the version a model or function imports of it, and
the words for a domain used without its import."""

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


def not_imported(domain: str, others: int) -> str:
    """What a node using ``domain`` without its import is told (QT313), ``others`` more nodes of its graph using it
    too: the lift's and the rule's one wording."""
    more = f" ({others} more node{'s use' if others > 1 else ' uses'} it too)" if others else ""
    return f"uses domain {domain!r}{more}, which is not in opset_import"
