"""Inline the model-local functions whose bodies declare quantized types, so that ``lower`` sees one graph.

A typed body computes on stored values (proposal/spec/semantics.md: the call passes storage in and out); its
declarations give every intermediate tensor its type. Standard QDQ has no typed functions, so each main-graph
call of such a function becomes the body's nodes, its formal inputs and outputs replaced by the call's
tensors and its other names made unique (``<call node>__<name>``), its declarations moved to the main graph
with them. A function with an untyped body is left as it is: the call reads and writes reals, which standard
ONNX runs as written. Bodies with subgraphs, attribute references or calls of other typed functions are
refused with the function's name.
"""

from __future__ import annotations

from onnx import ModelProto, NodeProto, helper

from onnx_qtypes.interop.errors import LowerError
from onnx_qtypes.interop.graph import Names, has_subgraph
from onnx_qtypes.proto.model import read_view


def typed_bodies(model: ModelProto) -> dict[tuple[str, str], object]:
    """(domain, name) -> FunctionProto of every model-local function declaring a quantized type."""
    out = {}
    for function in model.functions:
        if any(read_view(vi.type.tensor_type).HasField("quantization") for vi in function.value_info
               if vi.type.WhichOneof("value") == "tensor_type"):
            out[(function.domain, function.name)] = function
    return out


def inline_typed_functions(model: ModelProto) -> int:
    """Inline every main-graph call of a typed function in place; returns how many calls were inlined."""
    typed = typed_bodies(model)
    if not typed:
        return 0
    graph = model.graph
    taken = {vi.name for vi in (*graph.input, *graph.output, *graph.value_info)} | {t.name for t in graph.initializer}
    taken |= {n for node in graph.node for n in (*node.input, *node.output)}
    names = Names(taken)
    nodes, inlined = [], 0
    for k, node in enumerate(graph.node):
        function = typed.get((node.domain, node.op_type))
        if function is None:
            nodes.append(node)
            continue
        nodes.extend(_expand(model, node, function, names, f"{node.name or node.op_type}_{k}"))
        inlined += 1
    del graph.node[:]
    graph.node.extend(nodes)
    called = {(n.domain, n.op_type) for n in graph.node}
    kept = [f for f in model.functions if (f.domain, f.name) not in typed or (f.domain, f.name) in called]
    del model.functions[:]
    model.functions.extend(kept)
    return inlined


def _expand(model: ModelProto, call: NodeProto, function, names: Names, prefix: str) -> list[NodeProto]:
    where = f"function {function.domain + ':' if function.domain else ''}{function.name} (called by {prefix})"
    if call.attribute or function.attribute_proto:
        raise LowerError(f"{where}: a typed body with attributes is not inlined; call it without attributes")
    renamed = {formal: actual for formal, actual in zip(function.input, call.input)}
    renamed.update({formal: "" for formal in list(function.input)[len(call.input):]})
    renamed.update({formal: actual for formal, actual in zip(function.output, call.output)})
    typed = typed_bodies(model)
    out = []
    for j, inner in enumerate(function.node):
        if has_subgraph(inner) or any(a.ref_attr_name for a in inner.attribute):
            raise LowerError(f"{where}: node {j} ({inner.op_type}) has a subgraph or an attribute reference, which "
                             "lower does not inline")
        if (inner.domain, inner.op_type) in typed:
            raise LowerError(f"{where}: node {j} calls typed function {inner.op_type}, which lower does not inline")
        for name in (*inner.input, *inner.output):
            if name and name not in renamed:
                renamed[name] = names.fresh(f"{prefix}__{name}")
        copy = NodeProto()
        copy.CopyFrom(inner)
        copy.input[:] = [renamed.get(n, n) if n else "" for n in inner.input]
        copy.output[:] = [renamed[n] if n else "" for n in inner.output]
        copy.name = f"{prefix}__{inner.name or j}"
        out.append(copy)
    formal = {*function.input, *function.output}
    for vi in function.value_info:
        if vi.name in formal or vi.name not in renamed:
            continue  # the call's own tensors keep their main-graph declarations (QT314: the same types)
        copy = helper.make_empty_tensor_value_info(renamed[vi.name])
        copy.CopyFrom(vi)
        copy.name = renamed[vi.name]
        model.graph.value_info.append(copy)
    return out
