"""Context: one model indexed once, for every rule.

Rules never walk the raw ModelProto themselves; they ask the context for
declarations, nodes, constants, shapes and roles, and build locations with
its helpers so that every report points the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import NamedTuple, TypeVar

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import ModelProto, TensorProto

from onnx_qtypes.checker import float_view
from onnx_qtypes.proto import declared_bytes
from onnx_qtypes.checker.diagnostics import Location
from onnx_qtypes.checker.profile import Profile
from onnx_qtypes.proto import iter_graphs, onnx_qtypes_pb2 as pb, static_shape
from onnx_qtypes.proto.default_domain import STANDARD_DOMAINS
from onnx_qtypes.proto.encoding import plain_data_type, tensor_array
from onnx_qtypes.proto.external import is_lazy
from onnx_qtypes.proto.errors import ModelLoadError
from onnx_qtypes.proto.model import parse_view, quantized_declarations
from onnx_qtypes.proto.parameter_references import FIELDS, has_references, read_references
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.statistics import TensorStatistics
from onnx_qtypes.proto.storage_types import STORAGE_TYPES, StorageType, byte_dtype

T = TypeVar("T")
MAIN = ""  # scope of the main graph and its subgraphs (one SSA name space)

# Boundary ops: the inputs / outputs that hold storage integers when they are quantized.
BOUNDARY_INTEGER_SIDE: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "QuantizeLinear": ((2,), (0,)),
    "DequantizeLinear": ((0, 2), ()),
    "DynamicQuantizeLinear": ((), (0, 2)),
}
# Ops with weights and bias: op -> (weight input, bias input or None).
WEIGHTED_OPS: dict[str, tuple[int, int | None]] = {
    "Conv": (1, 2),
    "ConvTranspose": (1, 2),
    "Gemm": (1, 2),
    "MatMul": (1, None),
}


class Declared(NamedTuple):
    """One ValueInfoProto of the model, with its extension fields decoded (a tuple: built by the thousand)."""

    pointer: str
    kind: str  # input | output | value_info
    scope: str
    name: str
    elem_type: int
    shape: tuple[int | None, ...] | None
    qtype: QType | None
    quantization: pb.QuantizedType | None  # raw message, for presence and unknown fields
    statistics: TensorStatistics | None
    raw_statistics: pb.TensorStatistics | None
    # parameters by reference: "scale" / "zero_point" -> the initializer's pointer (None: listed in the type),
    # and why they cannot be read (QT117), None when they can
    parameters_at: dict[str, str] | None = None
    reference_problem: str | None = None

    def field(self, *parts: object) -> str:
        """JSON pointer to a field of this declaration's type; a referenced scale or zero point is its
        initializer (the values live there)."""
        if self.parameters_at and len(parts) >= 2 and parts[0] == "quantization" and parts[1] in self.parameters_at:
            return self.parameters_at[parts[1]]  # type: ignore[index]
        return "/".join([self.pointer, "type", "tensor_type", *map(str, parts)])


class NodeRef(NamedTuple):
    """One node with its pointer, scope and the opsets in force there (a tuple: built by the thousand)."""

    pointer: str
    node: onnx.NodeProto
    scope: str
    opsets: dict[str, int]
    op_type: str  # copied out of the node: read by every rule
    name: str | None
    is_onnx: bool  # default domain ("" or "ai.onnx")
    inputs: tuple[str, ...]  # node.input, read once ("" for an omitted optional input)
    outputs: tuple[str, ...]
    domain: str

    @classmethod
    def of(cls, pointer: str, node: onnx.NodeProto, scope: str, opsets: dict[str, int]) -> NodeRef:
        domain = node.domain
        return cls(pointer, node, scope, opsets, node.op_type, node.name or None, domain in STANDARD_DOMAINS,
                   tuple(node.input[:]), tuple(node.output[:]), domain)

    @property
    def opset(self) -> int:
        return self.opsets.get(self.domain or "", 0)

    def attr(self, name: str, default: object = None) -> object:
        """The attribute's value; ``default`` when absent, a reference, or not of ``default``'s kind."""
        for attribute in self.node.attribute:
            if attribute.name == name:
                if attribute.ref_attr_name:  # a function body's reference: the value comes with the call
                    return default
                try:
                    value = onnx.helper.get_attribute_value(attribute)
                except ValueError:  # an attribute type onnx does not define: as good as absent
                    return default
                if default is not None and not isinstance(value, type(default)):
                    return default  # the wrong kind (a string axis, a float group): the schema's problem, not ours
                return value
        return default

    def location(self, kind: str | None = None, index: int | None = None) -> Location:
        """The node itself, or one of its inputs / outputs."""
        if kind is None:
            return Location(self.pointer, node=self.name, op_type=self.op_type)
        names = self.inputs if kind == "input" else self.outputs
        return Location(f"{self.pointer}/{kind}/{index}", node=self.name, tensor=names[index], op_type=self.op_type)


class ConstantRef:
    """An initializer or a Constant node's value."""

    __slots__ = ("attribute", "data_type", "dims", "external", "marked", "name", "node", "pointer", "tensor")

    def __init__(self, pointer: str, name: str, tensor: TensorProto | None, node: NodeRef | None = None,
                 attribute: onnx.AttributeProto | None = None) -> None:
        self.pointer, self.name, self.tensor, self.node, self.attribute = pointer, name, tensor, node, attribute
        # read once: rules ask for these again and again, and every protobuf read costs a call
        self.dims: tuple[int, ...]
        self.data_type: int
        self.external = False  # data in an external file (not read)
        self.marked = False  # data_type is a fail-closed marker; data_type below is the storage type it stands for
        if tensor is not None:
            self.dims, self.data_type = tuple(tensor.dims[:]), plain_data_type(tensor.data_type)
            self.marked = self.data_type != tensor.data_type
            # external data the reader left unread (a ModelProto given as it is); data left in its file by the
            # reader (proto.external) is read where it lies, as if loaded
            self.external = tensor.data_location == TensorProto.EXTERNAL and not is_lazy(tensor)
        else:
            self.dims = (len(onnx.helper.get_attribute_value(attribute)),) \
                if attribute is not None and attribute.name.endswith("s") else ()
            self.data_type = TensorProto.FLOAT if attribute is not None and "float" in attribute.name \
                else TensorProto.INT64

    def location(self) -> Location:
        if self.node is not None:
            return Location(self.pointer, node=self.node.name, tensor=self.name, op_type="Constant")
        return Location(self.pointer, tensor=self.name)


def _scope_of(pointer: str) -> str:
    return MAIN if pointer.startswith("/graph") else "/".join(pointer.split("/")[:3])


def _decode(data: bytes, where: str, qtypes: dict[bytes, QType],
            shapes: dict[bytes | None, tuple[int | None, ...] | None],
            parameters: Callable[[str], tuple[str, TensorProto] | None],
            declared: Callable[[str], pb.QuantizedType | None] | None = None,
            known: dict[bytes, QType] | None = None) -> tuple | None:
    """The Declared fields after the name, from a declaration's serialized TypeProto; None if not a tensor.

    ``where`` (pointer and tensor name) starts the message of a MalformedExtensionError. ``known``: QTypes
    made already (the lift's), by their QuantizedType's bytes.
    """
    try:
        view = declared_bytes.tensor_type_view(data)
    except DecodeError:  # field 1000 or 1001 does not decode: read_view's error, in its words
        view = parse_view(onnx.TypeProto.FromString(data).tensor_type.SerializeToString(), where)
    if view is None:
        return None
    if not (view.HasField("quantization") or view.HasField("statistics")):
        view = parse_view(view.SerializeToString(), where)  # read_view's test for a 1000/1001 of the wrong wire type
    quantization = view.quantization if view.HasField("quantization") else None
    raw_stats = view.statistics if view.HasField("statistics") else None
    stats = TensorStatistics.from_proto(raw_stats) if raw_stats is not None else None
    shape_key = view.shape if view.HasField("shape") else None  # the TensorShapeProto's bytes
    if shape_key not in shapes:  # most declarations share a few shapes
        vi = onnx.ValueInfoProto()
        vi.type.ParseFromString(data)
        shapes[shape_key] = static_shape(vi)
    shape = shapes[shape_key]
    values, parameters_at, problem = None, None, None
    if quantization is not None and has_references(quantization):
        values, parameters_at, problem = _referenced(quantization, shape, parameters, declared)
    qtype = None
    if quantization is not None and stats is None:
        type_key = data if parameters_at else quantization.SerializeToString()  # data-movement ops share a type
        qtype = qtypes.get(type_key)
        if qtype is None and not parameters_at and known:
            qtype = known.get(type_key)
            if qtype is not None:
                qtypes[type_key] = qtype
        if qtype is None:
            qtype = qtypes[type_key] = QType.from_proto(quantization, validate=False, values=values)
    elif quantization is not None:
        qtype = QType.from_proto(quantization, stats, validate=False, values=values)
    return view.elem_type, shape, qtype, quantization, stats, raw_stats, parameters_at, problem


def _referenced(msg: pb.QuantizedType, shape: tuple[int | None, ...] | None,
                parameters: Callable[[str], tuple[str, TensorProto] | None],
                declared: Callable[[str], pb.QuantizedType | None] | None = None) -> tuple:
    """(the referenced values by field, held as their initializers hold them, {field: initializer pointer},
    problem) of a type that names its parameters; no values when they cannot be read (QT117 says why).
    ``declared`` gives the type of a quantized parameter tensor (version 3)."""
    at = {}
    for field in FIELDS:
        if msg.HasField(f"{field}_tensor") and (hit := parameters(getattr(msg, f"{field}_tensor"))) is not None:
            at[field] = hit[0]
    refs = read_references(msg, lambda name: (hit := parameters(name)) and hit[1], shape, declared)
    if refs.problem:
        return None, at or None, refs.problem
    return dict(refs.values), at, None


def _no_initializers(name: str) -> None:
    """A function body's parameter lookup: it has no initializers, and the caller's are not its to read
    (proposal/spec/types.md#references), so a type there must list its parameters (QT117)."""
    return None


# Constant's attributes that hold its value, with the attribute type each must have.
_CONSTANT_ATTRIBUTES = {"value": onnx.AttributeProto.TENSOR, "value_float": onnx.AttributeProto.FLOAT,
                        "value_floats": onnx.AttributeProto.FLOATS, "value_int": onnx.AttributeProto.INT,
                        "value_ints": onnx.AttributeProto.INTS}


class Context:
    """Everything the rules need to know about one model."""

    def __init__(self, model: ModelProto, profile: Profile, source: str = "<model>", *,
                 qtypes: dict[bytes, QType] | None = None) -> None:
        """``qtypes``: QTypes already made for declarations of ``model``, by their QuantizedType's bytes (those the
        lift wrote), taken as they are instead of decoded again."""
        self.model = model
        self.profile = profile
        self.source = source
        self.declarations: list[Declared] = []
        # the first declaration of each distinct TypeProto: the others share its decoded fields (the same objects)
        self.distinct_declarations: list[Declared] = []
        self.other_types: list[tuple[str, str, bytes]] = []  # (pointer, name, TypeProto bytes) of non-tensor types
        self._by_name: dict[tuple[str, str], list[Declared]] = {}
        self._qtypes: dict[tuple[str, str], QType] = {}
        self.nodes: list[NodeRef] = []
        self.constants: dict[tuple[str, str], ConstantRef] = {}
        self.initializers: list[ConstantRef] = []  # the main graph's, in order (duplicate names too)
        self._arrays: dict[tuple[str, str], np.ndarray | None] = {}
        self._memo: dict[str, object] = {}
        self._known_qtypes = qtypes or {}
        # whole declarations the lift wrote, decoded already (proto.reader.WrittenTypes), by TypeProto bytes
        self._known_declared: dict[bytes, tuple] = getattr(qtypes, "declared", None) or {}
        self.graphs: list[tuple[str, onnx.GraphProto]] = list(iter_graphs(model))  # main graph, then subgraphs
        self._index_declarations()
        self._index_nodes()

    # -- indexing -------------------------------------------------------------
    def _parameter_initializer(self, name: str) -> tuple[str, TensorProto] | None:
        """(pointer, initializer) of a name a type gives for its parameters: the main graph and its subgraphs."""
        if "parameters" not in self._memo:
            found: dict[str, tuple[str, TensorProto]] = {}
            for pointer, graph in self.graphs:
                for i, init in enumerate(graph.initializer):
                    found.setdefault(init.name, (f"{pointer}/initializer/{i}", init))
            self._memo["parameters"] = found
        return self._memo["parameters"].get(name)  # type: ignore[attr-defined]

    def _parameter_declaration(self, name: str) -> pb.QuantizedType | None:
        """The QuantizedType declared for a quantized initializer a type names (version 3), or None."""
        if "declarations" not in self._memo:
            self._memo["declarations"] = quantized_declarations(self.model)
        return self._memo["declarations"](name)  # type: ignore[operator]

    def _index_declarations(self) -> None:
        """Every ValueInfoProto in iter_declarations order, decoded once per distinct TypeProto."""
        decoded: dict[bytes, tuple | None] = {}  # most declarations repeat a few types (activations, data movement)
        qtypes: dict[bytes, QType] = {}
        shapes: dict[bytes | None, tuple[int | None, ...] | None] = {}
        lists = [(pointer, {kind: getattr(graph, kind) for kind in ("input", "output", "value_info")})
                 for pointer, graph in self.graphs]
        lists += [(f"/functions/{f}", {"value_info": function.value_info})
                  for f, function in enumerate(self.model.functions)]
        declarations, by_name, first_qtype = self.declarations, self._by_name, self._qtypes
        make_declared = Declared._make
        in_functions: dict[bytes, tuple | None] = {}  # a function body has no initializers: its own decodings
        for graph_pointer, kinds in lists:
            scope = _scope_of(graph_pointer)
            function = graph_pointer.startswith("/functions/")
            cache, lookup = (in_functions, _no_initializers) if function else (decoded, self._parameter_initializer)
            for kind, values in declared_bytes.read(kinds).items():
                for i, (name, key) in enumerate(values):
                    fields = cache.get(key, cache)
                    new = fields is cache
                    if new:
                        known = None if function else self._known_declared.get(key)
                        if known is not None:  # what _decode gives these bytes: no statistics, no references
                            elem_type, shape, qtype, quantization = known
                            fields = cache[key] = (elem_type, shape, qtype, pb.QuantizedType.FromString(quantization),
                                                   None, None, None, None)
                        else:
                            where = f"{graph_pointer}/{kind}/{i} (tensor {name!r})"
                            fields = cache[key] = _decode(key, where, qtypes, shapes, lookup,
                                                          None if function else self._parameter_declaration,
                                                          self._known_qtypes)
                    if fields is None:  # not a tensor type; QT116 looks inside sequences, optionals and maps
                        if key:
                            self.other_types.append((f"{graph_pointer}/{kind}/{i}", name, key))
                        continue
                    declared = make_declared((f"{graph_pointer}/{kind}/{i}", kind, scope, name, *fields))
                    declarations.append(declared)
                    if new:
                        self.distinct_declarations.append(declared)
                    name_key = (scope, name)
                    same = by_name.get(name_key)
                    if same is None:
                        by_name[name_key] = [declared]
                    else:
                        same.append(declared)
                    if fields[2] is not None and name_key not in first_qtype:
                        first_qtype[name_key] = fields[2]

    def _index_nodes(self) -> None:
        model_opsets = {o.domain or "": o.version for o in self.model.opset_import}
        graphs: list[tuple[str, str, onnx.GraphProto | onnx.FunctionProto, dict[str, int]]] = [
            (pointer, MAIN, graph, model_opsets) for pointer, graph in self.graphs
        ]
        for f, function in enumerate(self.model.functions):
            opsets = {**model_opsets, **{o.domain or "": o.version for o in function.opset_import}}
            graphs.append((f"/functions/{f}", f"/functions/{f}", function, opsets))
        nodes, constants = self.nodes, self.constants
        for pointer, scope, graph, opsets in graphs:
            for i, init in enumerate(getattr(graph, "initializer", ())):
                const = ConstantRef(f"{pointer}/initializer/{i}", init.name, init)  # sizes: proto.reader
                constants[(scope, const.name)] = const
                if pointer == "/graph":
                    self.initializers.append(const)
            for n, node in enumerate(graph.node):
                ref = NodeRef.of(f"{pointer}/node/{n}", node, scope, opsets)
                nodes.append(ref)
                if ref.op_type == "Constant" and ref.is_onnx and ref.outputs:
                    self._index_constant(ref)

    @functools.cached_property
    def producers(self) -> dict[tuple[str, str], tuple[NodeRef, int]]:
        """(scope, tensor) -> (the node writing it, output index)."""
        producers: dict[tuple[str, str], tuple[NodeRef, int]] = {}
        for ref in self.nodes:
            for k, name in enumerate(ref.outputs):
                if name:
                    producers[(ref.scope, name)] = (ref, k)
        return producers

    @functools.cached_property
    def consumers(self) -> dict[tuple[str, str], list[tuple[NodeRef, int]]]:
        """(scope, tensor) -> every (node reading it, input index), in model order."""
        consumers: dict[tuple[str, str], list[tuple[NodeRef, int]]] = {}
        for ref in self.nodes:
            for k, name in enumerate(ref.inputs):
                if name:
                    consumers.setdefault((ref.scope, name), []).append((ref, k))
        return consumers

    def _index_constant(self, ref: NodeRef) -> None:
        for a, attribute in enumerate(ref.node.attribute):
            if attribute.ref_attr_name or attribute.type != _CONSTANT_ATTRIBUTES.get(attribute.name):
                continue  # its value comes with a function call, or is not of the type its name says
            if attribute.name == "value":
                const = ConstantRef(f"{ref.pointer}/attribute/{a}/t", ref.outputs[0], attribute.t, ref)
                self.constants[(ref.scope, ref.outputs[0])] = const
            elif attribute.name in ("value_float", "value_floats", "value_int", "value_ints"):
                self.constants[(ref.scope, ref.outputs[0])] = ConstantRef(
                    f"{ref.pointer}/attribute/{a}", ref.outputs[0], None, ref, attribute)

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """A value computed once per model and shared between rules (e.g. every bias use)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]  # type: ignore[return-value]

    def nodes_of(self, *op_types: str) -> list[NodeRef]:
        """The default-domain nodes of these op types, in model order (shared between rules)."""
        key = "nodes:" + ",".join(sorted(op_types))
        return self.memo(key, lambda: [r for r in self.nodes if r.is_onnx and r.op_type in op_types])

    # -- declarations ------------------------------------------------------------
    def declarations_of(self, scope: str, name: str) -> list[Declared]:
        return self._by_name.get((scope, name), [])

    def is_declared(self, scope: str, name: str) -> bool:
        return (scope, name) in self._by_name

    def names(self) -> Iterator[tuple[str, str]]:
        return iter(self._by_name)

    def repeated_names(self) -> list[tuple[str, str]]:
        """The (scope, name) of tensors declared more than once, in names() order."""
        return self.memo("repeated_names", lambda: [key for key, decls in self._by_name.items() if len(decls) > 1])

    def quantized_declarations(self, unique: bool = True) -> Iterator[Declared]:
        """Declarations carrying a quantized type; with ``unique``, one per distinct (tensor, type, shape)."""
        if not unique:
            return (d for d in self.declarations if d.quantization is not None)
        return iter(self._unique_quantized)

    @functools.cached_property
    def _unique_quantized(self) -> list[Declared]:
        seen: dict[tuple, list[pb.QuantizedType]] = {}
        out = []
        by_name = self._by_name
        for decl in self.declarations:
            if decl.quantization is None:
                continue
            if len(by_name[(decl.scope, decl.name)]) == 1:
                out.append(decl)  # the tensor's only declaration (most are)
                continue
            same = seen.setdefault((decl.scope, decl.name, decl.shape), [])
            if not any(decl.quantization == other for other in same):  # message equality, unknown fields too
                same.append(decl.quantization)
                out.append(decl)
        return out

    def statistics_declarations(self) -> Iterator[Declared]:
        """Declarations carrying statistics, one per distinct (tensor, statistics, type, shape)."""
        return iter(self._unique_statistics)

    @functools.cached_property
    def _unique_statistics(self) -> list[Declared]:
        seen: set[tuple] = set()
        out = []
        for decl in self.declarations:
            if decl.raw_statistics is None:
                continue
            quantization = decl.quantization.SerializeToString() if decl.quantization is not None else b""
            key = (decl.scope, decl.name, decl.raw_statistics.SerializeToString(), quantization, decl.shape)
            if key not in seen:
                seen.add(key)
                out.append(decl)
        return out

    def declared(self, scope: str, name: str) -> Declared | None:
        """The first quantized declaration of a tensor, else its first declaration."""
        decls = self.declarations_of(scope, name)
        return next((d for d in decls if d.quantization is not None), decls[0] if decls else None)

    def qtype(self, scope: str, name: str) -> QType | None:
        """The tensor's (first declared) quantized type, or None."""
        return self._qtypes.get((scope, name))

    # -- shapes and element types ------------------------------------------------------
    @functools.cached_property
    def view(self) -> ModelProto:
        """The float view (see float_view.py)."""
        return float_view.build(self)

    @functools.cached_property
    def inferred(self) -> float_view.Inferred:
        return float_view.infer(self.view)

    def declared_shape(self, scope: str, name: str) -> tuple[int | None, ...] | None:
        """The shape a declaration states, else the constant's dims."""
        for decl in self.declarations_of(scope, name):
            if decl.shape is not None:
                return decl.shape
        return self.constant_dims(scope, name)

    def shape(self, scope: str, name: str) -> tuple[int | None, ...] | None:
        """Best known shape: declared, constant dims, then inferred on the float view."""
        shape = self.declared_shape(scope, name)
        if shape is None and scope == MAIN:
            shape = self.inferred.shapes.get(name)
        return shape

    def elem_type(self, scope: str, name: str) -> int | None:
        """Element type of a tensor that is not quantized (declared, constant, inferred); None if unknown."""
        for decl in self.declarations_of(scope, name):
            if decl.quantization is None and decl.elem_type:
                return decl.elem_type
        const = self.constants.get((scope, name))
        if const is not None:
            return const.data_type
        if scope == MAIN:
            return self.inferred.elem_types.get(name)
        return None

    def stands_for(self, ref: NodeRef, kind: str, index: int) -> int | None:
        """The element type a node input/output has for the operator's type constraints.

        A quantized tensor stands for its expressed type, except on the
        integer side of a boundary op, where it stands for its storage type.
        """
        name = (ref.inputs if kind == "input" else ref.outputs)[index]
        side = BOUNDARY_INTEGER_SIDE.get(ref.op_type) if ref.is_onnx else None
        if side is not None and index in side[0 if kind == "input" else 1]:
            qtype = self.qtype(ref.scope, name)
            if qtype is not None:
                found = STORAGE_TYPES.get(qtype.storage)
                return found.data_type if found else None
        return self.tensor_stands_for(ref.scope, name)

    @functools.cached_property
    def stands_for_known(self) -> dict[tuple[str, str], int | None]:
        """tensor_stands_for's answers so far: from the start, every quantized tensor's (its expressed type)."""
        by_expressed: dict[str, int] = {}  # QType.expressed -> its data type
        for qt in self._qtypes.values():
            if qt.expressed not in by_expressed:
                by_expressed[qt.expressed] = float_view.expressed_data_type(qt)
        return {key: by_expressed[qt.expressed] for key, qt in self._qtypes.items()}

    def tensor_stands_for(self, scope: str, name: str) -> int | None:
        """A tensor's element type, or a quantized tensor's expressed type (away from a boundary's integer side)."""
        key = (scope, name)
        found = self.stands_for_known.get(key, self)  # self: not asked yet (None is an answer)
        if found is self:
            qtype = self._qtypes.get(key)
            found = self.elem_type(scope, name) if qtype is None else float_view.expressed_data_type(qtype)
            self.stands_for_known[key] = found
        return found

    # -- constants ------------------------------------------------------------------
    def constant_dims(self, scope: str, name: str) -> tuple[int, ...] | None:
        const = self.constants.get((scope, name))
        return None if const is None else const.dims

    def constant_array(self, scope: str, name: str) -> np.ndarray | None:
        """The value of an initializer or Constant, or None when it is not a constant.

        External data that was not loaded is not read (None). Data that does
        not fit its dims is an unreadable model (ModelLoadError, exit 2).
        """
        key = (scope, name)
        if key in self._arrays:
            return self._arrays[key]
        const = self.constants.get(key)
        array = None
        if const is not None:
            if const.tensor is None:
                array = np.asarray(onnx.helper.get_attribute_value(const.attribute))
            elif not const.external:
                array = _tensor_to_array(const)
        if array is None or const is None or const.tensor is None or not is_lazy(const.tensor) \
                or (array.nbytes < _KEPT_BYTES and not _mapped(array)):
            self._arrays[key] = array  # (a weight in its file is mapped, or read, again when asked again: never all)
        return array

    def is_constant(self, scope: str, name: str) -> bool:
        return (scope, name) in self.constants

    def quantized_constants(self) -> list[tuple[tuple[str, str], ConstantRef, QType]]:
        """((scope, name), constant, its quantized type) for every quantized constant, in ``constants`` order."""
        return self.memo("quantized_constants", lambda: [
            (key, const, qtype) for key, const in self.constants.items() if (qtype := self._qtypes.get(key)) is not None
        ])

    def constant_extrema(self, scope: str, name: str) -> tuple[int, int] | None:
        """(min, max) of an integer constant of up to 32 bits, as constant_array's min() and max() give them.

        None when the constant has no such values (not a constant, external, empty, float or 64-bit).
        Quantized constants stored as raw data are reduced together, a few vector operations for all.
        """
        table = self.memo("constant_extrema", self._raw_extrema)
        key = (scope, name)
        if key not in table:
            data = self.constant_array(scope, name)
            small_int = data is not None and data.size > 0 and data.dtype.kind in "iu" and data.dtype.itemsize <= 4
            table[key] = (int(data.min()), int(data.max())) if small_int else None
        return table[key]

    def _raw_extrema(self) -> dict[tuple[str, str], tuple[int, int] | None]:
        groups: dict[np.dtype, list[tuple[tuple[str, str], bytes]]] = {}
        for key, const, _ in self.quantized_constants():
            dtype = _small_int_dtype(const.data_type)
            if dtype is None or const.tensor is None or const.external:
                continue
            if raw := const.tensor.raw_data:  # its size was checked against the dims when indexed
                groups.setdefault(dtype, []).append((key, raw))  # (values outside raw_data: one by one)
        table: dict[tuple[str, str], tuple[int, int] | None] = {}
        for dtype, items in groups.items():
            values = np.frombuffer(b"".join(raw for _, raw in items), dtype)
            starts = np.cumsum([0] + [len(raw) // dtype.itemsize for _, raw in items[:-1]])
            lows, highs = np.minimum.reduceat(values, starts).tolist(), np.maximum.reduceat(values, starts).tolist()
            table.update(((key, (lo, hi)) for (key, _), lo, hi in zip(items, lows, highs)))
        return table

    # -- roles -------------------------------------------------------------------------
    @functools.cached_property
    def _roles(self) -> dict[tuple[str, str], str]:
        roles: dict[tuple[str, str], str] = {}
        for ref in self.nodes:
            spec = WEIGHTED_OPS.get(ref.op_type) if ref.is_onnx else None
            if spec is None:
                continue
            weight, bias = spec
            inputs = ref.inputs
            if bias is not None and len(inputs) > bias and inputs[bias]:
                roles[(ref.scope, inputs[bias])] = "bias"
            if len(inputs) > weight and self.is_constant(ref.scope, inputs[weight]):
                roles.setdefault((ref.scope, inputs[weight]), "weight")
        return roles

    def role(self, scope: str, name: str) -> str:
        """activation, weight (constant input 1 of Conv/ConvTranspose/Gemm/MatMul) or bias (their input 2)."""
        return self._roles.get((scope, name), "activation")

    def is_boundary(self, ref: NodeRef) -> bool:
        """A QuantizeLinear / DequantizeLinear whose integer side is a quantized tensor."""
        side = BOUNDARY_INTEGER_SIDE.get(ref.op_type) if ref.is_onnx else None
        if side is None:
            return False
        names = [ref.inputs[i] for i in side[0][:1] if i < len(ref.inputs)]
        names += [ref.outputs[i] for i in side[1][:1] if i < len(ref.outputs)]
        return any(name and self.qtype(ref.scope, name) is not None for name in names)

    # -- locations ---------------------------------------------------------------------------
    def type_location(self, scope: str, name: str, *field: object) -> Location:
        """Where a tensor's quantized type is declared (first declaration)."""
        decl = self.declared(scope, name)
        if decl is None:
            return Location(scope or "/graph", tensor=name)
        return Location(decl.field(*field) if field else decl.pointer, tensor=name)


def decl_location(decl: Declared, *field: object) -> Location:
    """A declaration, or a field of its type."""
    return Location(decl.field(*field) if field else decl.pointer, tensor=decl.name)


def derived(qtype: QType, **changes: object) -> QType:
    """``qtype`` without statistics and with ``changes``: neither validated nor converted again.

    Rules derive the type a tensor must have from another tensor's declared type (a data-movement op's output
    from its input) and compare it with what is declared. A declared type may be invalid in any field (QT1xx
    reports that) and may hold millions of scales: QType.replace() would validate the copy (an exception instead
    of findings) and convert every scale again one by one, and even with ``validate=False`` it renames a storage
    or expressed type it does not know. A derived type keeps every field as read, changed fields as given.
    """
    copy = qtype.with_statistics(None)  # a copy that is never revalidated
    object.__getattribute__(copy, "__dict__").update(changes)
    return copy


def storage_of(qtype: QType) -> StorageType | None:
    """The storage type, or None when it is not one the extension allows (QT104 reports it)."""
    return STORAGE_TYPES.get(qtype.storage)


def storage_range(qtype: QType) -> tuple[int, int] | None:
    """[storage_min, storage_max] when the storage type is known."""
    if storage_of(qtype) is None or qtype.storage_min is None or qtype.storage_max is None:
        return None
    return qtype.storage_min, qtype.storage_max


def _tensor_to_array(const: ConstantRef) -> np.ndarray:
    tensor = const.tensor  # its size was checked by the shared reader (proto.reader)
    dtype = byte_dtype(const.data_type)
    if dtype is not None and tensor.HasField("raw_data"):  # byte-aligned raw data: a view, no copy
        return np.frombuffer(tensor.raw_data, dtype=dtype).reshape(const.dims)
    if const.data_type not in TensorProto.DataType.values():
        raise ModelLoadError(f"{const.pointer}: tensor {const.name!r}: data_type {tensor.data_type} is not an ONNX "
                             "data type")
    try:
        return tensor_array(const.tensor)
    except (ValueError, TypeError, MemoryError) as exc:
        dims = list(const.dims)
        raise ModelLoadError(f"{const.pointer}: tensor {const.name!r}: data does not match dims {dims} ({exc})") from None


def _mapped(array: np.ndarray) -> bool:
    """Whether ``array`` is a view of a mapped file (its pages stay resident while it is kept)."""
    while array is not None:
        if isinstance(array, np.memmap):
            return True
        array = array.base if isinstance(array.base, np.ndarray) else None
    return False


def _small_int_dtype(data_type: int) -> np.dtype | None:
    """The dtype of an integer type of up to 32 bits whose stored bytes numpy reads as they are, else None."""
    dtype = byte_dtype(data_type)
    return dtype if dtype is not None and dtype.kind in "iu" and dtype.itemsize <= 4 else None


_KEPT_BYTES = 16 << 20  # constant_array keeps arrays below this; larger ones read from their file are not kept
