"""An index over one graph: producers, consumers, constants, inferred types.

Lift and lower both rewrite a graph by name; this index answers the
questions they ask in constant time, so that both run in time linear in the
model's size. Types and shapes come from onnx.shape_inference, never from
hand-written rules.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import numpy as np
import onnx
from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto

from onnx_qtypes.interop.inference import DeferredInference, Inferred, declared_types, infer  # noqa: F401 - re-exported
from onnx_qtypes.proto.default_domain import STANDARD_DOMAINS, default_opset as _default_opset
from onnx_qtypes.proto.encoding import plain_data_type, tensor_array
from onnx_qtypes.proto.errors import ModelLoadError
from onnx_qtypes.proto.external import is_lazy

FLOAT_TYPES = frozenset({TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE})
MS_DOMAIN = "com.microsoft"
QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")  # the quantization pair, in either domain
QONNX_DOMAINS = ("qonnx.custom_op.general", "onnx.brevitas")  # qonnx reads the second as an alias


PASSED_CONSTANT_OPS = ("Identity", "Cast")  # a constant through these is still a constant (parameters, weights)
_CASTABLE = frozenset({TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8, TensorProto.UINT8,
                       TensorProto.INT16, TensorProto.UINT16, TensorProto.INT32, TensorProto.INT64})
_CAST_LIMIT = 1 << 16  # parameters, not weights: a Cast of a large constant is left to the runtime
ORIGIN_KEY = "onnx_qtypes.lift.origin"  # on a main-graph node while the lift runs: its position in the file


def node_label(node: NodeProto, index: int, graph: str = "/graph") -> str:
    """How messages name a node: op type, name and JSON pointer (``graph``: its graph's pointer). A main-graph node
    the lift marked with its position in the file is named at that position, wherever the lift moved it."""
    if graph == "/graph":
        index = next((int(p.value) for p in node.metadata_props if p.key == ORIGIN_KEY), index)
    domain = "" if node.domain in STANDARD_DOMAINS else f"{node.domain}."
    name = f" {node.name!r}" if node.name else ""
    return f"{domain}{node.op_type}{name} ({graph}/node/{index})"


def attributes(node: NodeProto) -> dict[str, object]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def int_attribute(node: NodeProto, name: str) -> int | None:
    """The node's INT attribute ``name``; None when it has none, or one of another kind (a pattern that reads it
    then leaves the node: a mistyped file is named by the check of its node)."""
    for a in node.attribute:
        if a.name == name:
            return a.i if a.type == AttributeProto.INT else None
    return None


def node_with_attributes(op_type: str, inputs: list[str], outputs: list[str], source: NodeProto, *, name: str = "",
                         drop: tuple[str, ...] = ()) -> NodeProto:
    """A node of ``op_type`` with ``source``'s attributes (but ``drop``), copied as they are: helper.make_node
    cannot give an empty list a type."""
    node = onnx.helper.make_node(op_type, inputs, outputs, name=name)
    node.attribute.extend(a for a in source.attribute if a.name not in drop)
    return node


_SUBGRAPH_TYPES = (AttributeProto.GRAPH, AttributeProto.GRAPHS)


def has_subgraph(node: NodeProto) -> bool:
    attributes = node.attribute
    return bool(attributes) and any(a.type in _SUBGRAPH_TYPES for a in attributes)


def _subgraph_names(node: NodeProto) -> Iterator[str]:
    """Every tensor name a node's subgraphs mention (a superset of outer-scope references)."""
    for attr in node.attribute:
        graphs = [attr.g] if attr.type == AttributeProto.GRAPH else list(attr.graphs)
        for sub in graphs:
            for inner in sub.node:
                yield from inner.input
                yield from _subgraph_names(inner)
            for out in sub.output:
                yield out.name


class GraphIndex:
    """Producers, consumers and constants of one graph, by tensor name. ``pointer``: the graph's JSON pointer
    (a subgraph's, e.g. ``/graph/node/3/attribute/0/g``), as messages name its nodes."""

    def __init__(self, graph: GraphProto, inferred: Inferred | DeferredInference | None = None, pointer: str = "/graph",
                 opset: int | None = None, positions: list[int] | None = None) -> None:
        self.graph = graph
        self.pointer = pointer
        self.opset = opset  # the model's default-domain opset, when the caller knows it
        self.positions = positions  # each node's position in its file's graph, when ``graph`` holds some of them
        nodes = self.nodes = list(graph.node)
        # each node's fields as read here, the state producer and consumers describe (a step that rewrites a node reads
        # the node itself): every protobuf field read once, in one pass per field, for the steps reading them again
        self.op_types: list[str] = [node.op_type for node in nodes]
        self.domains: list[str] = [node.domain for node in nodes]
        self.node_inputs: list[list[str]] = [node.input[:] for node in nodes]
        self.node_outputs: list[list[str]] = [node.output[:] for node in nodes]
        self.initializers: dict[str, TensorProto] = {t.name: t for t in graph.initializer}
        self.inputs = [vi.name for vi in graph.input]
        self.outputs = [vi.name for vi in graph.output]
        self.input_set = set(self.inputs)
        self.output_set = set(self.outputs)
        self.producer: dict[str, int] = {}
        self.consumers: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.outer_refs: set[str] = set()
        self.has_subgraphs = False  # whether a node holds a graph (If, Loop, Scan)
        self._constant_nodes: dict[str, NodeProto] = {}
        consumers, producer = self.consumers, self.producer
        for i, inputs in enumerate(self.node_inputs):
            for j, name in enumerate(inputs):
                if name:
                    consumers[name].append((i, j))
        for i, outputs in enumerate(self.node_outputs):
            for name in outputs:
                if name:
                    producer[name] = i
        for i, op_type in enumerate(self.op_types):
            if op_type == "Constant" and self.node_outputs[i] and self.domains[i] in STANDARD_DOMAINS:
                self._constant_nodes[self.node_outputs[i][0]] = nodes[i]
        for node in nodes:
            attributes = node.attribute
            if attributes and any(a.type in _SUBGRAPH_TYPES for a in attributes):  # has_subgraph, its fields read once
                self.outer_refs.update(_subgraph_names(node))
                self.has_subgraphs = True
        self._deferred = inferred if isinstance(inferred, DeferredInference) else None
        self._types_from(inferred)
        self._arrays: dict[str, np.ndarray | None] = {}
        self._derived: dict[str, TensorProto | None] = {}
        self._tensor_names: set[str] | None = None
        self.memo: dict[tuple, object] = {}  # answers that depend only on this graph, shared by the steps reading it

    def _types_from(self, inferred: Inferred | DeferredInference | None) -> None:
        self.elem_types = dict(inferred.elem_types) if inferred else {}
        self.shapes = dict(inferred.shapes) if inferred else {}
        for name in self.input_set.intersection(self.initializers):  # the others answer as constants (below)
            init = self.initializers[name]
            self.elem_types[name] = plain_data_type(init.data_type)
            self.shapes[name] = tuple(init.dims[:])

    def _settle(self, name: str) -> None:
        """``name``'s type from a DeferredInference: from its node alone when that tells, else the whole inference."""
        found = self._deferred.node_answer(self, name)
        if found is not None:
            self.elem_types[name], self.shapes[name] = found
        else:
            deferred, self._deferred = self._deferred, None
            self._types_from(deferred.full())

    def inferred(self) -> Inferred:
        """Every type and shape the index knows (a deferred inference run first)."""
        if self._deferred is not None:
            deferred, self._deferred = self._deferred, None
            self._types_from(deferred.full())
        return Inferred(self.elem_types, self.shapes)

    # -- constants
    def constant_tensor(self, name: str) -> TensorProto | None:
        """The TensorProto of a constant: an initializer that is not a graph input, a Constant, or an Identity or an
        exact Cast of a constant (exporters write zero points so: torch.onnx passes them through Identity)."""
        if name in self.initializers and name not in self.input_set:
            return self.initializers[name]
        node = self._constant_nodes.get(name)
        if node is not None:
            for attr in node.attribute:
                if attr.name == "value" and attr.type == AttributeProto.TENSOR:
                    return attr.t
            return None
        if name in self._derived:
            return self._derived[name]
        self._derived[name] = None  # a cycle in a malformed graph ends here
        self._derived[name] = self._passed_constant(name)
        return self._derived[name]

    def _passed_constant(self, name: str) -> TensorProto | None:
        """The value an Identity or Cast of a constant writes, when the Cast changes no value."""
        p = self.producer.get(name)
        if p is None or self.domains[p] not in STANDARD_DOMAINS or self.op_types[p] not in PASSED_CONSTANT_OPS:
            return None
        node = self.nodes[p]
        if not node.input or not node.input[0] or list(node.output) != [name] or name in self.outer_refs:
            return None
        source = self.constant_tensor(node.input[0])
        if source is None or node.op_type == "Identity":
            return source
        to = next((a.i for a in node.attribute if a.name == "to"), None)
        try:
            target = onnx.helper.tensor_dtype_to_np_dtype(to) if to in _CASTABLE else None
            values = tensor_array(source) if plain_data_type(source.data_type) in _CASTABLE else None
        except (ValueError, TypeError, KeyError, MemoryError):
            return None
        if target is None or values is None or values.size > _CAST_LIMIT:
            return None
        cast = values.astype(target)
        with np.errstate(invalid="ignore", over="ignore"):
            exact = np.array_equal(cast.astype(np.float64), values.astype(np.float64), equal_nan=values.dtype.kind == "f")
        return onnx.numpy_helper.from_array(cast, name) if exact else None

    def constant(self, name: str) -> np.ndarray | None:
        """The value of a constant as a numpy array, or None when ``name`` is not constant."""
        if name not in self._arrays:
            tensor = self.constant_tensor(name)
            try:
                value = None if tensor is None else tensor_array(tensor)
            except (ValueError, TypeError, KeyError, MemoryError) as exc:  # data unlike dims, an undefined data_type
                raise ModelLoadError(f"constant {name!r}: its data does not match data_type "
                                     f"{tensor.data_type} and dims {list(tensor.dims)} ({exc})") from None
            if tensor is not None and is_lazy(tensor):
                return value  # left in its file: read there again when asked (never all weights held at once)
            self._arrays[name] = value
        return self._arrays[name]

    def is_constant(self, name: str) -> bool:
        return self.constant_tensor(name) is not None

    def constant_dtype(self, name: str) -> int | None:
        tensor = self.constant_tensor(name)
        return None if tensor is None else plain_data_type(tensor.data_type)

    # -- types
    def elem_type(self, name: str) -> int | None:
        tensor = self.constant_tensor(name)
        if tensor is not None:
            return plain_data_type(tensor.data_type)
        if self._deferred is not None and name not in self.elem_types:
            self._settle(name)
        return self.elem_types.get(name)

    def declares(self, name: str) -> bool:
        """Whether a declaration of the graph may state ``name``'s type (False: what the index knows of it comes
        from initializers, Constants and inference alone)."""
        if self._deferred is not None:
            return name in self._deferred.declared
        return True

    def shape(self, name: str) -> tuple[int | None, ...] | None:
        tensor = self.constant_tensor(name)
        if tensor is not None:
            return tuple(tensor.dims)
        if self._deferred is not None and name not in self.shapes:
            self._settle(name)
        return self.shapes.get(name)

    def is_float(self, name: str) -> bool | None:
        """True / False when the element type is known, None when it is not."""
        et = self.elem_type(name)
        return None if not et else et in FLOAT_TYPES

    def label(self, index: int) -> str:
        return node_label(self.nodes[index], index if self.positions is None else self.positions[index], self.pointer)

    def tensor_names(self) -> set[str]:
        """Every tensor the graph computes or reads (declarations alone do not count)."""
        if self._tensor_names is None:
            names = set(self.initializers) | self.input_set | self.output_set | set(self.producer)
            names.update(self.consumers)
            names.update(self.outer_refs)
            self._tensor_names = names
        return self._tensor_names

    def all_names(self) -> set[str]:
        """Every name in use, declarations included (what a new name must avoid)."""
        return self.tensor_names() | {vi.name for vi in self.graph.value_info}


def replace_nodes(graph: GraphProto, nodes: list[NodeProto]) -> None:
    """Make ``nodes`` the graph's nodes, in order (copied first: the list may hold the graph's own elements)."""
    copies = []
    for node in nodes:
        copy = NodeProto()
        copy.CopyFrom(node)
        copies.append(copy)
    del graph.node[:]
    graph.node.extend(copies)


def default_opset(model: ModelProto) -> int | None:
    """The version of the default domain the model imports (None when it imports none; ``proto.default_domain``)."""
    return _default_opset(model.opset_import)


class Names:
    """Fresh, unique tensor or node names derived from a base name."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.taken:
            name = f"{base}_{k}"
            k += 1
        self.taken.add(name)
        return name
