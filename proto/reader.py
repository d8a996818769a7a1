"""The one way every command reads a model: check, show, lift, lower, run, calibrate, compare.

    read = read_model("model.onnx")      # or bytes, or an onnx.ModelProto (never changed)
    read.model                           # what the command works on
    read.file_pointer("/graph/node/3")   # the same place in the file as it was read

A model that one command refuses, every command refuses, in the same words:
the file must be a readable regular file (``load``: a symlink loop, a folder,
a FIFO or an unreadable file is one line naming it), every name UTF-8 text
(``names``), every stored tensor exactly as large as its dims say
(``tensor_sizes``: an initializer shorter than its dims, or one claiming
2^40 elements over a few bytes, is refused before anything allocates), and
every graph in topological order (``graph_order``: a file written out of
order is sorted, a cycle refused, naming the node), an attribute refers to a
function's attribute only inside a function body, and a negative declared
dimension (-1: "any size") is read as unknown. The caller's
ModelProto is never changed: a model that needs sorting is copied first.
"""

from __future__ import annotations

import dataclasses
import os
from itertools import chain
from typing import TYPE_CHECKING, NamedTuple, TypeVar

import onnx
from onnx import AttributeProto, ModelProto, TensorProto

from onnx_qtypes.proto import declared_bytes
from onnx_qtypes.proto.errors import ModelLoadError, QTypesError
from onnx_qtypes.proto.graph_order import (Order, file_pointer, file_text, node_names, require_defined_reads,
                                           require_outer_names_kept, sort_graphs, topological_order)
from onnx_qtypes.proto.model import iter_graphs, iter_node_graphs, load
from onnx_qtypes.proto.default_domain import STANDARD_DOMAINS
from onnx_qtypes.proto.names import (MODEL_TEXT_FIELDS, first_non_utf8_element, first_non_utf8_string,
                                     first_non_utf8_value, not_utf8_error, require_utf8_names)
from onnx_qtypes.proto.tensor_sizes import fits, size_problem

if TYPE_CHECKING:
    from onnx_qtypes.proto.qtype import QType


class WrittenTypes(dict):
    """The typed declarations a lift wrote, as the checker's index of the lifted model takes them (``ReadModel.qtypes``):
    the QType of each by its QuantizedType's bytes (the dict), and in ``declared`` the decoded fields of each whose
    type holds no statistics and names no parameter tensors (element type, shape, QType, QuantizedType bytes), by
    its whole TypeProto's bytes: the index finds such a declaration there by the bytes it reads and parses only the
    QuantizedType (its bytes stand in the tuple: the lift keeps no message alive)."""

    def __init__(self) -> None:
        super().__init__()
        self.declared: dict[bytes, tuple] = {}


class NodeReads(NamedTuple):
    """What the reader read of one graph's nodes and initializers, for later passes over the same graph (on a
    file of thousands of nodes, reading a field through protobuf costs more than most of what a pass does with
    it)."""

    op_types: list[str]
    inputs: list[list[str]]  # per node, as node_names reads them
    outputs: list[list[str]]
    attributes: list[tuple[str, ...]]  # per node, its attributes' names
    initializers: list[str]  # names, in order (a function body has none)
    initializer_types: list[int]  # their data_type fields, as written
    domains: list[str]  # per node


@dataclasses.dataclass(frozen=True)
class ReadModel:
    """A model as the shared reader hands it to a command, and the way back to the file's places."""

    model: ModelProto
    source: str  # the path as given, "<bytes>" or "<model>"
    orders: Order = dataclasses.field(default_factory=dict)  # graphs put in topological order (sorted -> file)
    # every graph of ``model`` (main graph, then subgraphs) with its JSON pointer, as the reader walked them;
    # None when not walked. Valid while the model's graphs are not rewritten (the commands change copies).
    walked: tuple[tuple[str, onnx.GraphProto], ...] | None = None
    # QTypes of declarations ``model`` holds, by their QuantizedType's bytes, as the lift that wrote them made them
    # (LiftResult.written): the checker takes these instead of decoding those bytes again
    qtypes: dict[bytes, QType] | None = None
    # what the reader read of each graph of ``walked`` and of each function body, by pointer; None when not
    # read. Valid as ``walked`` is.
    reads: dict[str, NodeReads] | None = None

    def graphs(self) -> list[tuple[str, onnx.GraphProto]]:
        """``iter_graphs(self.model)``, without walking the nodes again when the reader did."""
        return list(iter_graphs(self.model) if self.walked is None else self.walked)

    @property
    def path(self) -> str:
        """The file's path, or "" for bytes and objects."""
        return "" if self.source.startswith("<") else self.source

    def file_pointer(self, pointer: str) -> str:
        return file_pointer(pointer, self.orders)

    def file_text(self, text: str) -> str:
        """A message naming places of the model as read, e.g. "Conv 'c' (/graph/node/3)", naming them in the file."""
        return file_text(text, self.orders)

    def located(self, exc: QTypesErrorT) -> QTypesErrorT:
        """``exc`` naming the places of the model as read where the file has them (``placed_in_file``); the file's
        path is left in front when there, and not added (an error may be of another file, or of the output)."""
        named = bool(self.path) and str(exc).startswith(f"{self.path}: ")
        return placed_in_file(exc, self.path if named else "", self.orders)


QTypesErrorT = TypeVar("QTypesErrorT", bound=QTypesError)


def placed_in_file(exc: QTypesErrorT, where: str, orders: Order) -> QTypesErrorT:
    """``exc`` with ``where`` (the file; "" for none) once in front of its message, and the places the rest names in a
    graph the reader sorted moved to where the file has them (``file_text``). The message is set, not made again:
    some errors put words in front of what they are given."""
    text = str(exc)
    if where and text.startswith(f"{where}: "):
        text = text[len(where) + 2:]
    exc.args = (f"{where}: " * bool(where) + file_text(text, orders),)
    return exc


def read_model(model: ReadModel | ModelProto | str | os.PathLike | bytes | bytearray | memoryview,
               who: str = "", *, external_data: bool | str = True) -> ReadModel:
    """Read ``model`` (a path, bytes, a ModelProto, or a ReadModel as returned before) the one shared way.

    ``external_data``: a file's external data read into memory (True), or left in its files, checked alike and
    read where it lies ("lazy", ``proto.external``: what check, lift and lower do, so that a model of billions
    of weights never has them all in memory).
    Raises ModelLoadError naming the file (or ``who`` for objects and bytes) and the field at fault.
    """
    if isinstance(model, ReadModel):
        return model
    if isinstance(model, ModelProto):
        proto, source = model, "<model>"
    elif isinstance(model, (bytes, bytearray, memoryview)):
        proto, source = load(bytes(model)), "<bytes>"
    elif isinstance(model, (str, os.PathLike)):
        proto, source = load(model, load_external_data=external_data), os.fspath(model)
    else:
        raise QTypesError(f"{who or 'read'}: expected a path, bytes or onnx.ModelProto, got {type(model).__name__}")
    where = source if not source.startswith("<") else who
    try:
        require_versions(proto)
        attributes: dict[str, list] = {}  # each graph's nodes' attribute lists, read by the walk for _scan
        graphs = list(iter_graphs(proto, attributes))  # walked once for the checks below
        # every node's op type read once, for the Constants require_sizes reads and the names _scan checks
        op_types = {pointer: [node.op_type for node in graph.node] for pointer, graph in every_graph(proto, graphs)}
        initializers: dict[str, tuple[list[str], list[int]]] = {}  # names and data types, read once for all passes
        require_sizes(proto, graphs, op_types, initializers)
        reads: dict[str, NodeReads] = {}
        unsorted = _scan(proto, graphs, op_types, reads, initializers, attributes)
        if (found := first_non_utf8_string(proto)) is not None:  # any other string field (doc strings, metadata,
            raise not_utf8_error("", found)  # quantization annotations): what lift and lower copy and rewrite
        negative = _has_negative_dims(proto, graphs)
        if unsorted or negative:
            if proto is model:  # the caller's object stays as it was
                copy = ModelProto()
                copy.CopyFrom(proto)
                proto = copy
            for dim in _negative_dims(proto):
                dim.ClearField("dim_value")
            return ReadModel(proto, source, sort_graphs(proto) if unsorted else {})
    except ModelLoadError as exc:
        raise ModelLoadError(f"{where}: {exc}" if where else str(exc)) from None
    return ReadModel(proto, source, walked=tuple(graphs), reads=reads)


def require_versions(model: ModelProto) -> None:
    """ModelLoadError naming the field when the IR version or an opset version is not a 32-bit integer of the
    right sign: onnx's own C++ (schemas, checker, inference) takes an int and would fail with a TypeError."""
    entries = [(f"/opset_import/{k}", o) for k, o in enumerate(model.opset_import)]
    entries += [(f"/functions/{f}/opset_import/{k}", o) for f, function in enumerate(model.functions)
                for k, o in enumerate(function.opset_import)]
    if not 0 < model.ir_version < 2**31:
        raise ModelLoadError(f"/ir_version: {model.ir_version} is not an IR version (a positive 32-bit integer)")
    for pointer, entry in entries:
        if not 0 <= entry.version < 2**31:
            domain = entry.domain if isinstance(entry.domain, str) else repr(entry.domain)
            raise ModelLoadError(f"{pointer}: domain {domain or 'ai.onnx'!r} version {entry.version} is not an "
                                 "opset version (a non-negative 32-bit integer)")


_STRING_TENSORS = "onnx.proto holds each element of a STRING tensor as UTF-8 text"


def require_sizes(model: ModelProto, graphs: list[tuple[str, onnx.GraphProto]] | None = None,
                  op_types: dict[str, list[str]] | None = None,
                  initializers: dict[str, tuple[list[str], list[int]]] | None = None) -> None:
    """ModelLoadError naming the tensor when a stored tensor does not hold what its dims say (``size_problem``),
    or a STRING tensor (initializer or Constant) holds an element that is not UTF-8.
    ``graphs``: ``list(iter_graphs(model))`` when the caller has it; ``op_types``: each graph's node op types by
    its pointer, when the caller has read them; ``initializers``: filled with each graph's initializer names and
    data types, by its pointer (read here anyway: later passes take them from there)."""
    graphs = list(iter_graphs(model)) if graphs is None else list(graphs)
    graphs += [(f"/functions/{f}", function) for f, function in enumerate(model.functions)]
    for pointer, graph in graphs:
        tensors = getattr(graph, "initializer", ())
        data_types = [t.data_type for t in tensors]
        if initializers is not None:
            initializers[pointer] = ([t.name for t in tensors], data_types)
        for i, tensor in enumerate(tensors):
            if not fits(tensor) and (problem := size_problem(tensor)):
                raise ModelLoadError(f"{pointer}/initializer/{i}: tensor {tensor.name!r}: {problem}")
        for i in [i for i, data_type in enumerate(data_types) if data_type == TensorProto.STRING]:
            if found := first_non_utf8_element(f"{pointer}/initializer/{i}", tensors[i]):
                raise not_utf8_error("", found, fix=_STRING_TENSORS)
        ops = op_types[pointer] if op_types is not None else [node.op_type for node in graph.node]
        constants = [n for n, op_type in enumerate(ops) if op_type == "Constant"]
        for n in constants:
            for a, attr in enumerate(graph.node[n].attribute):
                if attr.type == AttributeProto.TENSOR and (problem := size_problem(attr.t)):
                    raise ModelLoadError(f"{pointer}/node/{n}/attribute/{a}/t: tensor {attr.t.name!r}: {problem}")
                if attr.type == AttributeProto.TENSOR and attr.t.data_type == TensorProto.STRING and (
                        found := first_non_utf8_element(f"{pointer}/node/{n}/attribute/{a}/t", attr.t)):
                    raise not_utf8_error("", found, fix=_STRING_TENSORS)


def every_graph(model: ModelProto, main: list[tuple[str, onnx.GraphProto]] | None = None
                ) -> list[tuple[str, onnx.GraphProto | onnx.FunctionProto]]:
    """``main`` (``iter_graphs(model)``, walked here when not given), then each function body and the If / Loop /
    Scan bodies inside it: every list of nodes of the model, with its JSON pointer."""
    graphs: list[tuple[str, onnx.GraphProto | onnx.FunctionProto]] = list(iter_graphs(model) if main is None else main)
    for f, function in enumerate(model.functions):
        graphs.append((f"/functions/{f}", function))
        graphs += [g for n, node in enumerate(function.node) if node.attribute
                   for g in iter_node_graphs(f"/functions/{f}/node/{n}", node)]
    return graphs


# each value field of an AttributeProto and the type it belongs to
_FIELD_TYPES = {"f": AttributeProto.FLOAT, "i": AttributeProto.INT, "s": AttributeProto.STRING,
                "t": AttributeProto.TENSOR, "g": AttributeProto.GRAPH, "sparse_tensor": AttributeProto.SPARSE_TENSOR,
                "tp": AttributeProto.TYPE_PROTO, "floats": AttributeProto.FLOATS, "ints": AttributeProto.INTS,
                "strings": AttributeProto.STRINGS, "tensors": AttributeProto.TENSORS, "graphs": AttributeProto.GRAPHS,
                "sparse_tensors": AttributeProto.SPARSE_TENSORS, "type_protos": AttributeProto.TYPE_PROTOS}


def attribute_field_problem(attribute: AttributeProto) -> str | None:
    """What is wrong when ``attribute`` holds a value in a field of another kind than its type says (a lift or a
    runtime reading the field of its type would read another value than the one the file holds): onnx.checker and
    onnxruntime refuse it ("type field and data field mismatch"). None when each field it holds is of its type."""
    kind = attribute.type
    for field, _ in attribute.ListFields():  # (no type at all: onnx.checker takes the field it finds)
        if _BY_FIELD.get(field, kind) != kind and attribute.HasField("type"):
            shown = AttributeProto.AttributeType.Name(kind) if kind in _TYPE_NAMES else str(kind)
            return (f"attribute {attribute.name!r} is of type {shown} but holds a value in field {field.name!r}; an "
                    "attribute holds its value in the one field of its type (onnx.checker and onnxruntime refuse any "
                    "other)")
    return None


_BY_FIELD = {AttributeProto.DESCRIPTOR.fields_by_name[name]: kind for name, kind in _FIELD_TYPES.items()}
_TYPE_NAMES = frozenset(AttributeProto.AttributeType.values())
_TEXT_ATTRIBUTES = (AttributeProto.STRING, AttributeProto.STRINGS)  # bytes in onnx.proto, "UTF-8 string" by its word


def _scan(model: ModelProto, graphs: list[tuple[str, onnx.GraphProto]] | None = None,
          op_types: dict[str, list[str]] | None = None, reads: dict[str, NodeReads] | None = None,
          initializers: dict[str, tuple[list[str], list[int]]] | None = None,
          attributes: dict[str, list] | None = None) -> bool:
    """One pass over every graph's nodes: True when one is out of topological order; ModelLoadError on a
    cycle, or naming the field when a name is not UTF-8 (protobuf hands such a string over as bytes), or a
    string attribute of an ONNX operator (bytes to protobuf: an enum such as Resize's mode, read as text).
    ``graphs``: ``list(iter_graphs(model))`` when the caller has it; ``op_types``: every graph's node op types
    by its pointer (``every_graph``), when the caller has read them; ``reads``: filled with what was read of
    each graph, by its pointer; ``initializers``: each graph's initializer names and data types (``require_sizes``),
    and ``attributes``: each graph's nodes' attribute lists (``iter_graphs(model, attributes)``), when the
    caller has read them."""
    kinds: set[type] = set()
    unsorted = nested = False
    read_names: dict[str, tuple[tuple[list, list], list[int]]] = {}  # per graph: its node names, nodes with subgraphs
    main = list(iter_graphs(model)) if graphs is None else graphs
    for pointer, graph in every_graph(model, main):
        names = node_names(graph)
        for lists in names:
            kinds.update(map(type, chain.from_iterable(lists)))
        nodes = graph.node
        ops = op_types[pointer] if op_types is not None else [n.op_type for n in nodes]
        kinds.update(map(type, ops))
        kinds.update(map(type, [n.name for n in nodes]))
        domains = [n.domain for n in nodes]
        kinds.update(map(type, domains))
        with_subgraphs = []
        attribute_names: list[tuple[str, ...]] = []
        walked = attributes.get(pointer) if attributes is not None else None
        for n, node_attributes in enumerate([n.attribute for n in nodes] if walked is None else walked):
            if not node_attributes:
                attribute_names.append(())
                continue
            attribute_names.append(tuple([attribute.name for attribute in node_attributes]))
            kinds.update(map(type, attribute_names[-1]))
            for a, attribute in enumerate(node_attributes):
                if problem := attribute_field_problem(attribute):
                    raise ModelLoadError(f"{pointer}/node/{n}/attribute/{a}: {problem}")
                if attribute.type in _TEXT_ATTRIBUTES and domains[n] in STANDARD_DOMAINS and (
                        found := first_non_utf8_value(f"{pointer}/node/{n}/attribute/{a}", attribute)):
                    raise not_utf8_error("", found, fix="ONNX's operators read their string attributes as text")
                if attribute.ref_attr_name and not pointer.startswith("/functions/"):
                    raise ModelLoadError(
                        f"{pointer}/node/{n}/attribute/{a}: attribute {attribute.name!r} refers to "
                        f"{attribute.ref_attr_name!r}, an attribute of a calling function, but the node is in a "
                        "graph, not in a function body; give the attribute its value")
                if attribute.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) and (
                        not with_subgraphs or with_subgraphs[-1] != n):
                    with_subgraphs.append(n)
        read = initializers.get(pointer) if initializers is not None else None
        if read is None:
            tensors = getattr(graph, "initializer", ())
            read = ([t.name for t in tensors], [t.data_type for t in tensors])
        kinds.update(map(type, read[0]))
        if reads is not None:
            reads[pointer] = NodeReads(ops, *names, attribute_names, *read, domains)
        unsorted = topological_order(graph, pointer, names, with_subgraphs) is not None or unsorted
        read_names[pointer] = (names, with_subgraphs)
        nested = nested or bool(with_subgraphs)
    if bytes in kinds or _other_names_not_text(model, main, initializers=False):
        require_utf8_names(model, "")  # the walk that locates it
    scopes = [(model.graph, "/graph"), *((function, f"/functions/{f}") for f, function in enumerate(model.functions))]
    for graph, pointer in scopes:  # each outermost scope, and the subgraphs inside it
        names, subgraph_nodes = read_names.get(pointer, (None, None))
        require_defined_reads(graph, pointer, names=names, with_subgraphs=subgraph_nodes,
                              initializers=initializers[pointer][0] if initializers and pointer in initializers else None)
        if nested:  # a subgraph's node may write a name of an enclosing graph
            require_outer_names_kept(graph, pointer)
    return unsorted


def _negative_dims(model: ModelProto, graphs: list[tuple[str, onnx.GraphProto]] | None = None
                   ) -> list[onnx.TensorShapeProto.Dimension]:
    """Declared dimensions with a negative dim_value (PaddleOCR writes -1 for "any size").

    ONNX has no negative sizes: such a dimension is read as unknown, as onnxruntime reads it. Left as it is,
    onnx.shape_inference aborts the process on some of them (a Slice over a -1 dimension fails a C++ assertion).
    """
    found = []
    for vi in _declarations(model, graphs):
        found.extend(_negative_in(vi.type))
    return found


def _has_negative_dims(model: ModelProto, graphs: list[tuple[str, onnx.GraphProto]] | None = None) -> bool:
    """Whether ``_negative_dims`` finds any, each distinct declared type read once (a graph's declarations
    repeat a few types: one parse of them all, ``declared_bytes``, then one per distinct type)."""
    lists = [declared_bytes.read({kind: getattr(graph, kind) for kind in ("input", "output", "value_info")})
             for _, graph in (iter_graphs(model) if graphs is None else graphs)]
    lists += [declared_bytes.read({"value_info": function.value_info}) for function in model.functions]
    distinct = {type_bytes for kinds in lists for declared in kinds.values() for _, type_bytes in declared}
    return any(_negative_in(onnx.TypeProto.FromString(type_bytes)) for type_bytes in distinct)


def _declarations(model: ModelProto, graphs: list[tuple[str, onnx.GraphProto]] | None = None
                  ) -> list[onnx.ValueInfoProto]:
    declarations = [vi for _, graph in (iter_graphs(model) if graphs is None else graphs)
                    for kind in ("input", "output", "value_info") for vi in getattr(graph, kind)]
    return declarations + [vi for function in model.functions for vi in function.value_info]


def _negative_in(type_proto: onnx.TypeProto) -> list[onnx.TensorShapeProto.Dimension]:
    """The negative dimensions of a type and of the types inside it (sequences, optionals, maps)."""
    found = []
    types = [type_proto]
    while types:
        t = types.pop()
        which = t.WhichOneof("value")
        if which in ("tensor_type", "sparse_tensor_type"):
            shaped = getattr(t, which)
            if shaped.HasField("shape"):
                found.extend(d for d in shaped.shape.dim if d.dim_value < 0)
        elif which in ("sequence_type", "optional_type"):
            types.append(getattr(t, which).elem_type)
        elif which == "map_type":
            types.append(t.map_type.value_type)
    return found


def _other_names_not_text(model: ModelProto, graphs: list[tuple[str, onnx.GraphProto]] | None = None, *,
                          initializers: bool = True) -> bool:
    """Whether a name outside the nodes (declarations, initializers, functions, the model's text) is bytes.
    ``initializers``: False when the caller has tested the initializers' names."""
    kinds = {type(getattr(model, f)) for f in MODEL_TEXT_FIELDS} | {type(o.domain) for o in model.opset_import}
    for _, graph in iter_graphs(model) if graphs is None else graphs:
        kinds.update((type(graph.name), type(graph.doc_string)))
        for kind in ("input", "output", "value_info", "initializer")[:None if initializers else 3]:
            kinds.update(map(type, [v.name for v in getattr(graph, kind)]))
        kinds.update(type(v.values.name) for v in graph.sparse_initializer)
    for function in model.functions:
        kinds.update(map(type, (function.name, function.domain, *function.input, *function.output)))
        kinds.update(type(v.name) for v in function.value_info)
    return bytes in kinds


__all__ = ["NodeReads", "ReadModel", "WrittenTypes", "every_graph", "placed_in_file", "read_model", "require_sizes",
           "require_versions"]
