"""Is a node what its ONNX operator schema allows: input and output counts, attribute types?

Tools that walk a graph index ``node.input[1]`` and the like; a node with
too few inputs must be refused by name before that, not end in an
IndexError. onnx.checker's own ``check_node`` knows every schema; it runs
here per node of the default domain (custom domains have no schema to hold
them to) and not on nodes with subgraphs, whose typed declarations it would
refuse (their nodes are checked where the subgraphs are walked).
"""

from __future__ import annotations

import onnx
from onnx import checker

from onnx_qtypes.proto.default_domain import STANDARD_DOMAINS


def node_problem(node: onnx.NodeProto, opsets: dict[str, int], ir_version: int) -> str | None:
    """What onnx.checker says is wrong with ``node`` under ``opsets`` ({domain: version}), or None."""
    if node.domain not in STANDARD_DOMAINS or any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                                                 for a in node.attribute):
        return None
    context = checker.C.CheckerContext()
    context.ir_version = ir_version
    context.opset_imports = opsets
    try:
        checker.check_node(node, context, checker.C.LexicalScopeContext())
    except checker.ValidationError as exc:
        return str(exc).strip().splitlines()[0]
    return None


__all__ = ["node_problem"]
