"""Refuse models whose tensor names are assigned more than once (not SSA), or read before any definition.

ONNX graphs are in single static assignment form: every value name is
defined once — as a graph input, an initializer or a node output — and a
node output of a subgraph does not reuse a name of an enclosing graph. A
model that breaks this has no single answer (which of two ``b``s does a
consumer read?), so the evaluator refuses it instead of picking one. A name
read before anything defines it (a dangling or unsorted graph) and an
attribute without a type are refused here too, naming the node, rather than
failing inside onnx.reference.

An initializer may share its name with a graph input: that is the input's
default value (IR version 4 and later), not a second definition.
"""

from __future__ import annotations

from collections.abc import Iterator

import onnx

from onnx_qtypes.proto.node_schema import node_problem
from onnx_qtypes.reference_ops.errors import EvaluationError

__all__ = ["check_single_assignment", "single_assignment_problems"]

_RULE = "each name must be defined once (single static assignment), or the model's result is ambiguous"


def _node_label(node: onnx.NodeProto) -> str:
    return f"node {node.name!r} ({node.op_type})" if node.name else f"a {node.op_type} node"


def _subgraphs(node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.name, attr.g
        elif attr.type == onnx.AttributeProto.GRAPHS:
            for k, graph in enumerate(attr.graphs):
                yield f"{attr.name}[{k}]", graph


def _graph_problems(graph: onnx.GraphProto, where: str, outer: dict[str, str], model: onnx.ModelProto
                    ) -> Iterator[str]:
    defined: dict[str, str] = {}
    prefix = f"{where}: " if where else ""
    for vi in graph.input:
        if vi.name in defined:
            yield f"{prefix}graph input {vi.name!r} is declared twice; {_RULE}"
        defined[vi.name] = "a graph input"
    inputs = set(defined)
    initializers = [i.name for i in graph.initializer] + [s.values.name for s in graph.sparse_initializer]
    seen: set[str] = set()
    for name in initializers:
        if name in seen:
            yield f"{prefix}initializer {name!r} is defined twice; {_RULE}"
        seen.add(name)
        if name not in inputs:
            defined[name] = "an initializer"
    opsets = {o.domain or "": o.version for o in model.opset_import}
    for node in graph.node:
        yield from _untyped_attributes(node, prefix)
        if problem := node_problem(node, opsets, model.ir_version):  # too few inputs, unknown attributes, ...
            yield f"{prefix}{_node_label(node)}: {problem}"
        for name in node.input:
            if name and name not in defined and name not in outer:  # onnx.reference fails only when it runs
                yield (f"{prefix}{_node_label(node)} reads {name!r}, which no graph input, initializer or "
                       "earlier node defines; connect it, or sort the nodes so it is written first")
        # as onnx.checker: a node's subgraphs see the names defined before the node
        for attribute, subgraph in _subgraphs(node):
            inner = f"{where + ', ' if where else ''}in the {attribute} graph of {_node_label(node)}"
            yield from _graph_problems(subgraph, inner, {**outer, **defined}, model)
        for name in node.output:
            if not name:
                continue  # an absent optional output
            earlier = defined.get(name) or outer.get(name)
            if earlier is not None:
                scope = "" if name in defined else " of an enclosing graph"
                yield (f"{prefix}tensor {name!r} is written by {_node_label(node)} and is already {earlier}{scope}; "
                       f"{_RULE}")
            defined[name] = f"the output of {_node_label(node)}"
    for vi in graph.output:
        if vi.name and vi.name not in defined and vi.name not in outer:
            yield f"{prefix}graph output {vi.name!r} is written by no node, input or initializer; connect it"


def _untyped_attributes(node: onnx.NodeProto, prefix: str) -> Iterator[str]:
    """Attributes without a type on ``node`` and on the nodes of its subgraphs (an If / Loop in a function body)."""
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.UNDEFINED:  # onnx.reference cannot read it (KeyError 0)
            yield f"{prefix}{_node_label(node)}: attribute {attr.name!r} has no type; set AttributeProto.type"
    for name, graph in _subgraphs(node):
        for inner in graph.node:
            yield from _untyped_attributes(inner, f"{prefix}{_node_label(node)} {name}: ")


def single_assignment_problems(model: onnx.ModelProto) -> list[str]:
    """One message per name defined more than once, in the main graph and in subgraphs; and the attributes without a
    type, there and in model-local functions (onnx.reference prepares every function before it runs)."""
    problems = list(_graph_problems(model.graph, "", {}, model))
    for function in model.functions:
        for node in function.node:
            problems += _untyped_attributes(node, f"in function {function.domain}.{function.name}: ")
    return problems


def check_single_assignment(model: onnx.ModelProto) -> None:
    """EvaluationError naming the first name defined twice."""
    problems = single_assignment_problems(model)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise EvaluationError(problems[0] + more)
