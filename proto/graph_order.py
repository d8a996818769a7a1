"""Put every graph's nodes in topological order, or say where it cannot be.

ONNX requires each graph's nodes in topological order, yet some producers
write them out of order (AMD Quark's XINT8 models): onnx.checker then
refuses the file, onnx.reference cannot run it and shape inference types
nothing after the first misplaced node. The shared reader calls
``sort_graphs`` once, so that every command treats such a file the same
way: the nodes are reordered (stable: a node moves only when it must), and
a cycle, which no order resolves, is a ModelLoadError naming the node.

A node depends on the node of its own graph that writes each of its inputs,
and on those that write a name one of its subgraphs reads (If, Loop and Scan
bodies see the enclosing scopes). A name no node of the graph writes (a
graph input, an initializer, an outer-scope name, or nothing at all) adds no
dependency. ``order`` maps each place back to the file: the checker reports
findings where the file has them.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator
from itertools import chain, repeat

import numpy as np
import onnx
from onnx import AttributeProto, GraphProto, ModelProto

from onnx_qtypes.proto.errors import ModelLoadError

Order = dict[str, list[int]]  # graph pointer in the sorted model -> the file's index of each of its nodes


def _label(node: onnx.NodeProto) -> str:
    return f"{node.op_type} {node.name!r}" if node.name else node.op_type


def _subgraphs(node: onnx.NodeProto) -> Iterator[GraphProto]:
    return (graph for _, graph in _attribute_graphs(node))


def _attribute_graphs(node: onnx.NodeProto) -> list[tuple[str, GraphProto]]:
    """(the pointer's tail after the node's, graph) of each graph in ``node``'s attributes."""
    found = []
    for a, attribute in enumerate(node.attribute):
        if attribute.type == AttributeProto.GRAPH:
            found.append((f"/attribute/{a}/g", attribute.g))
        elif attribute.type == AttributeProto.GRAPHS:
            found += [(f"/attribute/{a}/graphs/{k}", g) for k, g in enumerate(attribute.graphs)]
    return found


def _subgraph_reads(node: onnx.NodeProto) -> set[str]:
    """Names a node's subgraphs read from the graphs around them (inputs of their nodes and their outputs, at any
    depth), leaving out what a subgraph defines itself: a name a branch writes is no dependency on the outer node
    that writes it too (onnx.checker allows that when the outer node comes after)."""
    names: set[str] = set()
    stack = [(graph, frozenset()) for graph in _subgraphs(node)]
    while stack:
        graph, around = stack.pop()
        here = around | _given(graph) | {name for inner in graph.node for name in inner.output}
        names.update(o.name for o in graph.output if o.name not in here)
        for inner in graph.node:
            names.update(name for name in inner.input if name not in here)
            if inner.attribute:
                stack.extend((sub, here) for sub in _subgraphs(inner))
    return names


def _has_subgraph(node: onnx.NodeProto) -> bool:
    return any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute) \
        if node.attribute else False


def node_names(graph: GraphProto | onnx.FunctionProto) -> tuple[list, list]:
    """(inputs, outputs) of every node of ``graph``, each a list of names (read once: callers share them)."""
    nodes = graph.node
    return [n.input[:] for n in nodes], [n.output[:] for n in nodes]


def topological_order(graph: GraphProto | onnx.FunctionProto, pointer: str,
                      names: tuple[list, list] | None = None,
                      with_subgraphs: list[int] | None = None) -> list[int] | None:
    """None when ``graph``'s nodes are in topological order already; else the stable order (file indices).

    ModelLoadError naming a node on a cycle when there is none, and naming a node that writes a name another node
    writes too, or the graph's input or initializer (not single static assignment: every step after assumes one
    writer).
    ``names``: ``node_names(graph)`` when the caller has read them already; ``with_subgraphs``: the indices of
    the nodes with a subgraph, when the caller knows them.
    """
    inputs, outputs = names or node_names(graph)
    declared = _inputs(graph)
    if len(set(declared)) != len(declared):  # (a graph input that is also an initializer is its default, not twice)
        first: dict[str, int] = {}
        second = next(j for j, name in enumerate(declared) if first.setdefault(name, j) != j)  # (one pass)
        raise ModelLoadError(f"{pointer}/input/{second}: input {declared[second]!r} is declared twice, as "
                             f"{pointer}/input/{first[declared[second]]} is; {_body(graph, 'a')} defines each name "
                             "once (single static assignment, as onnx.checker requires)")
    given = _given(graph)
    producer: dict[str, int] = {}
    for i, produced in enumerate(outputs):
        for name in produced:
            if name not in producer:
                producer[name] = i
            elif name:  # (an omitted optional output is "", as often as a node has one)
                raise _written_twice(graph, pointer, name, producer[name], i)
    producer.pop("", None)
    shadowed = given.intersection(producer)
    if shadowed:  # the first node in the file that writes one
        name = min(shadowed, key=lambda n: (producer[n], outputs[producer[n]].index(n)))
        what = next(kind for kind, names in _given_kinds(graph) if name in names)
        raise _written_twice(graph, pointer, name, producer[name], producer[name], f"{_body(graph)}'s {what}")
    nodes = graph.node
    if with_subgraphs is None:
        with_subgraphs = [i for i, node in enumerate(nodes) if node.attribute and _has_subgraph(node)]
    reads = list(inputs)
    for i in with_subgraphs:
        reads[i] = _subgraph_reads(nodes[i]) | set(inputs[i])
    # in order when every name read is written by an earlier node (or by none): one vector comparison
    written_at = np.fromiter(map(producer.get, chain.from_iterable(reads), repeat(-1)), dtype=np.int64)
    read_at = np.repeat(np.arange(len(reads), dtype=np.int64), list(map(len, reads)))
    if bool(np.all(written_at < read_at)):
        return None
    waiting = [0] * len(reads)
    readers: list[list[int]] = [[] for _ in reads]
    for i, names in enumerate(reads):
        for p in {producer[n] for n in names if n in producer}:
            waiting[i] += 1
            readers[p].append(i)
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for r in readers[i]:
            waiting[r] -= 1
            if waiting[r] == 0:
                heapq.heappush(ready, r)
    if len(order) < len(reads):
        raise _cycle(list(nodes), reads, producer, set(range(len(reads))) - set(order), pointer)
    return order


def _written_twice(graph: GraphProto | onnx.FunctionProto, pointer: str, name: str, first: int, second: int,
                   already: str = "") -> ModelLoadError:
    """The error naming the second node that writes ``name`` (every lift and run step assumes one writer), or the
    node that writes a name the graph has ``already`` (an input, an initializer)."""
    def label(at: int) -> str:
        return _label(graph.node[at])

    where = (f", which is {already}" if already else "twice" if first == second
             else f"as {pointer}/node/{first} ({label(first)}) does")
    return ModelLoadError(f"{pointer}/node/{second} ({label(second)}): writes {name!r}{' ' if not already else ''}"
                          f"{where}; {_body(graph, 'a')} defines each name once (single static assignment, as "
                          "onnx.checker requires)")


def require_defined_reads(graph: GraphProto | onnx.FunctionProto, pointer: str, outer: tuple[set[str], ...] = (), *,
                          names: tuple[list, list] | None = None, initializers: list[str] | None = None,
                          with_subgraphs: list[int] | None = None) -> None:
    """ModelLoadError naming the first node that reads a name, or the first graph output, that nothing defines: no
    input, initializer or node of the graph, nor of an enclosing graph (``outer``: the names each enclosing graph
    defines, outermost first). Such a file is not ONNX (onnx.checker refuses it) and no command could run it; a name
    defined further down the graph is no fault here (the reader sorts the nodes). ``names``, ``initializers`` (their
    names) and ``with_subgraphs`` (the indices of the nodes holding a subgraph): what the caller has read already."""
    inputs, outputs = names or node_names(graph)
    defined = _given(graph, initializers)
    defined.update(chain.from_iterable(outputs))

    def undefined(name: str) -> bool:
        return bool(name) and name not in defined and not any(name in scope for scope in outer)

    where = "this graph or an enclosing one" if outer else _body(graph)
    sources = "input or node" if isinstance(graph, onnx.FunctionProto) else "input, initializer or node"
    read = set(chain.from_iterable(inputs))
    if not read <= defined and any(undefined(name) for name in read - defined):  # (the node only for a file that fails)
        n, name = next((n, name) for n, node_inputs in enumerate(inputs) for name in node_inputs if undefined(name))
        node = graph.node[n]
        label = _label(node)
        raise ModelLoadError(f"{pointer}/node/{n} ({label}): reads {name!r}, which no {sources} of {where} defines; "
                             "connect it (onnx.checker requires every name a node reads to be defined)")
    for i, vi in enumerate(graph.output):
        if undefined(name := vi if isinstance(vi, str) else vi.name):
            raise ModelLoadError(f"{pointer}/output/{i}: output {name!r} is written by no {sources} of {where}; "
                                 "connect it")
    if with_subgraphs is None:
        with_subgraphs = [n for n, node in enumerate(graph.node) if node.attribute and _has_subgraph(node)]
    for n in with_subgraphs:
        for tail, sub in _attribute_graphs(graph.node[n]):
            require_defined_reads(sub, f"{pointer}/node/{n}{tail}", (*outer, defined))


def require_outer_names_kept(graph: GraphProto | onnx.FunctionProto, pointer: str,
                             outer: tuple[dict[str, str], ...] = ()) -> None:
    """ModelLoadError naming the first node of a subgraph (If, Loop and Scan bodies, at any depth, inside
    ``graph``) that writes a name an enclosing graph defined before the node holding the subgraph, as onnx.checker
    refuses it: the name would stand for two tensors. A subgraph's own inputs and initializers may reuse outer names
    (they hide them in the subgraph), as onnx.checker allows. ``outer``: for each enclosing graph, outermost first,
    the names it defines before the subgraph, with where."""
    scope: dict[str, str] = {}
    for kind, names in _given_kinds(graph):
        for i, name in enumerate(names):
            scope.setdefault(name, f"{pointer}/{kind.replace(' ', '_')}/{i}")
    hidden = set(scope)  # (a name the graph itself writes twice is topological_order's finding)
    for n, node in enumerate(graph.node):
        here = f"{pointer}/node/{n}"
        for name in node.output:
            if name and name not in hidden and (at := next((s[name] for s in reversed(outer) if name in s), None)):
                label = _label(node)
                raise ModelLoadError(f"{here} ({label}): writes {name!r}, which an enclosing graph defines before this "
                                     f"subgraph ({at}); a name stands for one tensor in a graph and in every graph "
                                     "inside it (single static assignment, as onnx.checker requires)")
        if node.attribute and _has_subgraph(node):
            for tail, sub in _attribute_graphs(node):  # (the scope as it is now: the names defined before the node)
                require_outer_names_kept(sub, f"{here}{tail}", (*outer, scope))
        for o, name in enumerate(node.output):
            if name:
                scope.setdefault(name, f"{here}/output/{o}")


def _inputs(graph: GraphProto | onnx.FunctionProto) -> list[str]:
    return [name if isinstance(name, (str, bytes)) else name.name for name in graph.input]  # (bytes: not UTF-8)


def _given_kinds(graph: GraphProto | onnx.FunctionProto, initializers: list[str] | None = None
                 ) -> list[tuple[str, list[str]]]:
    """The names a graph has before any node runs, by kind, in the order of its fields (a function body: its inputs).
    ``initializers``: the initializers' names, when the caller has read them."""
    if initializers is None:
        initializers = [t.name for t in getattr(graph, "initializer", ())]
    return [("input", _inputs(graph)), ("initializer", initializers),
            ("sparse initializer", [t.values.name for t in getattr(graph, "sparse_initializer", ())])]


def _body(graph: GraphProto | onnx.FunctionProto, article: str = "the") -> str:
    """What a message calls ``graph``: a function's body is no graph to the reader of the file."""
    return f"{article} function body" if isinstance(graph, onnx.FunctionProto) else f"{article} graph"


def _given(graph: GraphProto | onnx.FunctionProto, initializers: list[str] | None = None) -> set[str]:
    return set(chain.from_iterable(names for _, names in _given_kinds(graph, initializers)))


def _cycle(nodes: list[onnx.NodeProto], reads: list, producer: dict[str, int], left: set[int],
           pointer: str) -> ModelLoadError:
    """The error naming a node on a cycle among the nodes ``left`` unordered (not merely one downstream)."""
    at, path, seen = min(left), [], {}
    while at not in seen:
        seen[at] = len(path)
        via = min(n for n in reads[at] if producer.get(n) in left)  # some input is written by an unordered node
        path.append((at, via))
        at = producer[via]
    loop = path[seen[at]:]
    node = nodes[at]
    label = _label(node)
    through = " -> ".join(repr(via) for _, via in loop)
    return ModelLoadError(f"{pointer}/node/{at} ({label}): reads what it computes itself, through the cycle "
                          f"{through}; no order of the nodes computes it")


def sort_graphs(model: ModelProto) -> Order:
    """Reorder, in place, every graph of ``model`` (main graph, subgraphs, function bodies) that is out of
    topological order; the orders applied (empty when every graph was in order). ModelLoadError on a cycle."""
    orders: Order = {}
    pending: list[tuple[str, GraphProto | onnx.FunctionProto]] = [("/graph", model.graph)]
    pending += [(f"/functions/{f}", function) for f, function in enumerate(model.functions)]
    while pending:
        pointer, graph = pending.pop()
        order = topological_order(graph, pointer)
        if order is not None:
            nodes = [graph.node[i] for i in order]
            copies = []
            for node in nodes:  # copy first: the list holds the graph's own elements
                copy = onnx.NodeProto()
                copy.CopyFrom(node)
                copies.append(copy)
            del graph.node[:]
            graph.node.extend(copies)
            orders[pointer] = order
        for n, node in enumerate(graph.node):
            if node.attribute and _has_subgraph(node):
                for a, attr in enumerate(node.attribute):
                    if attr.type == AttributeProto.GRAPH:
                        pending.append((f"{pointer}/node/{n}/attribute/{a}/g", attr.g))
                    elif attr.type == AttributeProto.GRAPHS:
                        pending.extend((f"{pointer}/node/{n}/attribute/{a}/graphs/{k}", g)
                                       for k, g in enumerate(attr.graphs))
    return orders


_NODE = re.compile(r"/node/(\d+)")


def file_pointer(pointer: str, orders: Order) -> str:
    """A JSON pointer into the sorted model -> the same place in the file as it was read."""
    if not orders or "/node/" not in pointer:
        return pointer
    out, at = [], 0
    for m in _NODE.finditer(pointer):
        order = orders.get(pointer[:m.start()])  # keys are the sorted model's pointers
        k = int(m.group(1))
        index = order[k] if order is not None and k < len(order) else k
        out.append(pointer[at:m.start()] + f"/node/{index}")
        at = m.end()
    return "".join(out) + pointer[at:]


def file_text(text: str, orders: Order) -> str:
    """A message naming places of the sorted model ("Conv 'c' (/graph/node/3)", "/graph/node/3/input/1: ..."),
    naming them in the file; a quoted name is left as it is, whatever it holds."""
    if not orders:
        return text
    parts = _QUOTED.split(text)  # every other part a quoted name (a name's repr)
    return "".join(part if k % 2 else _PLACE.sub(lambda m: file_pointer(m.group(0), orders), part)
                   for k, part in enumerate(parts))


_QUOTED = re.compile(r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")
# a JSON pointer into a graph or a function body where a message puts one: at the start, after a space or "("
_PLACE = re.compile(r"(?<![^\s(])/(?:graph|functions/\d{1,9})(?:/[\w.-]{1,64})*(?![\w.-])")


__all__ = ["Order", "file_pointer", "file_text", "node_names", "sort_graphs", "topological_order"]
