"""What ONNX itself allows in its quantization operators at each opset, read from onnx.defs.

QuantizeLinear / DequantizeLinear grew version by version: per-axis
parameters (the ``axis`` attribute, a 1-D scale) from opset 13, float8
storage and float16 / bfloat16 scales from 19, int16 / uint16 / int4 / uint4
storage and blocked parameters from 21, float4e2m1 from 23, a float8e8m0
scale from 24, int2 / uint2 from 25. A file that uses any of them at an
older opset is not valid ONNX (onnx.checker and onnxruntime refuse it),
whatever its numbers mean. ``problems`` judges one node against the
schema of the opset in force, taking nothing from a hand-written table; the
checker (QT318) calls it on the nodes of a typed model and ``diagnose`` on
the nodes of a QDQ file as written.
"""

from __future__ import annotations

import functools
import math
from itertools import chain
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto, TypeProto, defs

from onnx_qtypes.checker.schemas import type_string
from onnx_qtypes.proto import declared_bytes, iter_graphs
from onnx_qtypes.proto.default_domain import STANDARD_DOMAINS, default_opset
from onnx_qtypes.proto.encoding import plain_data_type
from onnx_qtypes.proto.reader import NodeReads

OPS = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear")
# The integer (stored) side of each operator: (input positions, output positions)
_STORED = {"QuantizeLinear": ((2,), (0,)), "DequantizeLinear": ((0, 2), ()), "DynamicQuantizeLinear": ((), (0, 2))}
_SCALES = {"QuantizeLinear": ("input", 1), "DequantizeLinear": ("input", 1), "DynamicQuantizeLinear": ("output", 1)}


_DATA_TYPES = frozenset(TensorProto.DataType.values())


class Problem(NamedTuple):
    where: str  # the rest of the node's JSON pointer ("/attribute/0", "/input/1"), "" for the node itself
    tensor: str | None
    message: str


@functools.cache
def op_schema(op: str, opset: int) -> defs.OpSchema | None:
    try:
        return defs.get_schema(op, opset, "")
    except defs.SchemaError:
        return None


@functools.cache
def _first(op: str, opset: int, test: Callable[[defs.OpSchema], bool]) -> int | None:
    """The first opset after ``opset`` whose schema of ``op`` passes ``test`` (None: none onnx knows yet)."""
    for version in range(opset + 1, defs.onnx_opset_version() + 1):
        schema = op_schema(op, version)
        if schema is not None and schema.since_version == version and test(schema):
            return version
    return None


def _allowed(schema: defs.OpSchema, kind: str, index: int) -> frozenset[str] | None:
    params = schema.inputs if kind == "input" else schema.outputs
    if index >= len(params):
        return None
    type_str = params[index].type_str
    for c in schema.type_constraints:
        if c.type_param_str == type_str:
            return frozenset(c.allowed_type_strs)
    return frozenset({type_str})


@functools.cache
def _accepts(op: str, kind: str, index: int, type_str: str) -> Callable[[defs.OpSchema], bool]:
    return lambda schema: type_str in (_allowed(schema, kind, index) or ())


@functools.cache
def _has_attribute(name: str) -> Callable[[defs.OpSchema], bool]:
    return lambda schema: name in schema.attributes


def _since(op: str, version: int | None) -> str:
    return f"{op}-{version} (opset {version})" if version is not None else "no opset onnx knows yet"


def problems(node: NodeProto, opset: int, elem_type: Callable[[str, int], int | None],
             element_count: Callable[[str], int | None]) -> list[Problem]:
    """What ONNX forbids in quantization node ``node`` at ``opset`` (of the default domain).

    ``elem_type(kind, index)`` is the element type of the node's input or output ``index`` as ONNX sees it
    (a quantized tensor: its storage type),
    ``element_count(name)`` the number of elements of a constant or declared tensor; None when unknown.
    """
    op = node.op_type
    schema = op_schema(op, opset)
    if schema is None:
        first = _first(op, 0, lambda s: True)
        return [Problem("", None, f"{op} does not exist at opset {opset}; it needs {_since(op, first)}")]
    label = f"{op}-{schema.since_version} (the version at opset {opset})"
    found = []
    for kind, names, low, high in (("input", node.input, schema.min_input, schema.max_input),
                                   ("output", node.output, schema.min_output, schema.max_output)):
        if not low <= len(names) <= high:  # (onnx.checker counts an empty name as one)
            found.append(Problem("", None, f"{label} takes {low}{f' to {high}' if high != low else ''} "
                                 f"{kind}(s); the node has {len(names)}"))
    for k, attribute in enumerate(node.attribute):
        if attribute.name not in schema.attributes:
            first = _first(op, opset, _has_attribute(attribute.name))
            what = {"axis": "per-axis parameters", "block_size": "blocked parameters"}.get(attribute.name, "it")
            found.append(Problem(f"/attribute/{k}", None, f"{label} has no attribute {attribute.name!r}; "
                                 f"{what} need{'s' if what == 'it' else ''} {_since(op, first)}"))
    side = _SCALES[op]
    names = node.input if side[0] == "input" else node.output
    axis_reported = any(a.name == "axis" for a in node.attribute)  # one finding for one cause
    if "axis" not in schema.attributes and not axis_reported and len(names) > side[1] and names[side[1]]:
        scale = names[side[1]]
        count = element_count(scale)
        if count is not None and count > 1:
            first = _first(op, opset, _has_attribute("axis"))
            found.append(Problem(f"/{side[0]}/{side[1]}", scale,
                                 f"scale {scale!r} holds {count} values (per-axis parameters), but the scale of "
                                 f"{label} is a scalar; per-axis parameters need {_since(op, first)}"))
    for kind, positions in (("input", range(len(node.input))), ("output", range(len(node.output)))):
        names = node.input if kind == "input" else node.output
        for index in positions:
            name = names[index]
            allowed = _allowed(schema, kind, index) if name else None
            data_type = elem_type(kind, index) if allowed is not None else None
            if data_type is None or data_type == TensorProto.UNDEFINED or data_type not in _DATA_TYPES:
                continue  # unknown, or no ONNX type at all (the operator's type constraint, QT305, says so)
            type_str = type_string(data_type)
            if type_str in allowed:
                continue
            if index in _STORED[op][0 if kind == "input" else 1]:
                role = "stored type"
            elif (kind, index) == side:
                role = "scale type"
            else:
                continue  # the float side: the operator's type constraint (QT305) judges it
            first = _first(op, opset, _accepts(op, kind, index, type_str))
            shown = ", ".join(sorted(t[7:-1] for t in allowed))
            found.append(Problem(f"/{kind}/{index}", name,
                                 f"the {role} {TensorProto.DataType.Name(data_type)} of {name!r} is not allowed "
                                 f"by {label}, which takes {shown}; it needs {_since(op, first)}"))
    return found


def file_problems(model: ModelProto, graphs: Iterable[tuple[str, GraphProto]] | None = None,
                  reads: dict[str, NodeReads] | None = None) -> Iterator[tuple[str, NodeProto, Problem]]:
    """(node pointer, node, problem) for every quantization node of ``model`` as a QDQ / QOperator file holds it
    (every graph, subgraphs too), element types read from the file itself: initializers, Constants,
    declarations, and what a QuantizeLinear writes (its zero point's type, else output_dtype, else uint8).
    ``graphs``: ``iter_graphs(model)`` when the caller has it; ``reads``: what the reader read of them
    (``ReadModel.reads``), when the caller has it."""
    opsets = {o.domain or "": o.version for o in model.opset_import}
    opset = _default_opset(opsets)  # every node judged is of the default domain
    schemas = {op: op_schema(op, opset) for op in OPS}
    # the scale's element count matters only to a version without per-axis parameters
    counted = {op: schema is not None and "axis" not in schema.attributes for op, schema in schemas.items()}
    for pointer, graph in iter_graphs(model) if graphs is None else graphs:
        read = reads.get(pointer) if reads is not None else None
        all_nodes = list(graph.node)
        # read once (or by the reader): the type pass below needs them too
        op_types = read.op_types if read is not None else [node.op_type for node in all_nodes]
        candidates = [n for n, op in enumerate(op_types) if op in OPS]
        domains = read.domains if read is not None else {n: all_nodes[n].domain for n in candidates}
        nodes = [(n, all_nodes[n]) for n in candidates if domains[n] in STANDARD_DOMAINS]
        if not nodes:
            continue
        # each node's names read once, for the types a QuantizeLinear implies and for the node itself
        if read is not None:
            rows = [(n, node, read.inputs[n], read.outputs[n], read.attributes[n]) for n, node in nodes]
        else:
            rows = [(n, node, node.input[:], node.output[:], tuple([a.name for a in node.attribute]))
                    for n, node in nodes]
        types = _file_types(graph, op_types, [row for row in rows if op_types[row[0]] == "QuantizeLinear"],
                            (read.initializers, read.initializer_types) if read is not None else None)
        counts = _Counts(graph, op_types)
        clean: set[tuple] = set()  # signatures already judged clean: a QDQ file repeats a few thousand times
        for n, node, inputs, outputs, attributes in rows:
            op = op_types[n]
            many = None
            if counted[op]:
                scale = (inputs if op != "DynamicQuantizeLinear" else outputs)[1:2]
                many = bool(scale) and (counts.get(scale[0]) or 0) > 1
            signature = (op, many, attributes, len(inputs), *map(types.get, inputs), *map(types.get, outputs))
            if signature in clean:
                continue

            def elem_type(kind: str, index: int, names=(inputs, outputs)) -> int | None:  # noqa: ANN001
                return types.get(names[0 if kind == "input" else 1][index])

            found = problems(node, opset, elem_type, counts.get)
            if not found:
                clean.add(signature)
            for p in found:
                yield f"{pointer}/node/{n}", node, p


def _file_types(graph: GraphProto, op_types: list[str], quantizers: list[tuple],
                initializers: tuple[list[str], list[int]] | None = None) -> dict[str, int]:
    """Element type of every tensor of ``graph`` the file states or a QuantizeLinear implies (``op_types``: of
    its nodes; ``quantizers``: (index, node, inputs, outputs, attribute names) of its default-domain
    QuantizeLinear nodes; ``initializers``: their names and data types, when the caller has read them). A later
    statement of a name wins: declarations, then initializers, then Constants."""
    types: dict[str, int] = {}
    lists = declared_bytes.read({kind: getattr(graph, kind) for kind in ("input", "output", "value_info")})
    elem_types: dict[bytes, int] = {}  # a file declares a few distinct types
    for name, type_bytes in chain(lists["input"], lists["output"], lists["value_info"]):
        if type_bytes not in elem_types:
            type_proto = TypeProto.FromString(type_bytes)
            elem_types[type_bytes] = type_proto.tensor_type.elem_type \
                if type_proto.WhichOneof("value") == "tensor_type" else 0
        if elem_type := elem_types[type_bytes]:
            types[name] = elem_type
    if initializers is None:
        initializers = [t.name for t in graph.initializer], [t.data_type for t in graph.initializer]
    names, data_types = initializers
    plain = {d: plain_data_type(d) for d in set(data_types)}  # a file has a few distinct data types
    types.update(zip(names, map(plain.__getitem__, data_types)))
    nodes = graph.node
    for n in [n for n, op in enumerate(op_types) if op == "Constant"]:
        node = nodes[n]
        if node.output:
            for attribute in node.attribute:
                if attribute.name == "value" and attribute.type == AttributeProto.TENSOR:
                    types[node.output[0]] = plain_data_type(attribute.t.data_type)
    for _, node, inputs, outputs, _ in quantizers:
        if outputs and outputs[0] not in types:
            zero_point = inputs[2] if len(inputs) > 2 and inputs[2] else None
            found = types.get(zero_point) if zero_point else None
            types[outputs[0]] = found or _output_dtype(node) or TensorProto.UINT8
    return types


def _output_dtype(node: NodeProto) -> int | None:
    return {a.name: a.i for a in node.attribute if a.type == AttributeProto.INT}.get("output_dtype")


class _Counts:
    """Element count of every tensor of a graph whose shape the file states (declarations, then initializers,
    then Constants: a later statement of a name wins), read on the first question: only a version without
    per-axis parameters asks."""

    def __init__(self, graph: GraphProto, op_types: list[str]) -> None:
        self.graph, self.op_types = graph, op_types
        self.counts: dict[str, int] | None = None

    def get(self, name: str) -> int | None:
        if self.counts is None:
            self.counts = self._read()
        return self.counts.get(name)

    def _read(self) -> dict[str, int]:
        graph = self.graph
        counts: dict[str, int] = {}
        for vi in (*graph.input, *graph.output, *graph.value_info):
            if vi.type.WhichOneof("value") != "tensor_type":
                continue
            tensor_type = vi.type.tensor_type
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim]
            if tensor_type.HasField("shape") and None not in dims:
                counts[vi.name] = math.prod(dims)
        for tensor in graph.initializer:
            counts[tensor.name] = math.prod(tensor.dims[:])
        for n in [n for n, op in enumerate(self.op_types) if op == "Constant"]:
            node = graph.node[n]
            if node.output:
                for attribute in node.attribute:
                    if attribute.name == "value" and attribute.type == AttributeProto.TENSOR:
                        counts[node.output[0]] = math.prod(attribute.t.dims)
        return counts


def opset_of(node: NodeProto, opsets: dict[str, int]) -> int:
    """The default domain's opset in force for ``node`` (its domain "" or "ai.onnx"), 0 when none is imported."""
    return _default_opset(opsets) if node.domain in STANDARD_DOMAINS else 0


def _default_opset(opsets: dict[str, int]) -> int:
    return default_opset(opsets) or 0


__all__ = ["OPS", "Problem", "file_problems", "opset_of", "problems"]
