"""The tensors only Relu nodes read: their values below a range that reaches 0 saturate to a real <= 0 that the
Relu makes 0 anyway, so QT208 and the HTML report do not count them as clipped. One definition for both."""

from __future__ import annotations

from onnx import ModelProto

from onnx_qtypes.proto import iter_graphs
from onnx_qtypes.proto.default_domain import STANDARD_DOMAINS

MAIN = ""  # the main graph and its subgraphs: one name space (a branch reads outer names)


def read_only_by_relu(model: ModelProto) -> set[tuple[str, str]]:
    """(scope, tensor) of every tensor that only Relu nodes read and no graph, subgraph or function returns;
    scope is MAIN or "/functions/<i>", the checker's scopes."""
    graphs = [g for _, g in iter_graphs(model)]
    scopes = [(MAIN, [n for g in graphs for n in g.node], {o.name for g in graphs for o in g.output})]
    scopes += [(f"/functions/{i}", f.node, set(f.output)) for i, f in enumerate(model.functions)]
    found = set()
    for scope, nodes, outputs in scopes:
        readers: dict[str, set[str]] = {}
        for node in nodes:
            for name in node.input:
                readers.setdefault(name, set()).add(node.op_type if node.domain in STANDARD_DOMAINS else "")
        found.update((scope, n) for n, ops in readers.items() if ops == {"Relu"} and n not in outputs)
    return found
