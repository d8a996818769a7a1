"""The typed-model view: load and save models, read and write quantized types.

A typed model is a plain ``onnx.ModelProto``. Its quantized types live in
``TypeProto.Tensor`` fields 1000 (quantization) and 1001 (statistics), which
onnx's generated classes keep as unknown fields. This module reads and
writes them through ``TensorTypeView`` (see onnx_qtypes.proto).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import pathlib
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import onnx
from google.protobuf.message import DecodeError, EncodeError
from onnx import ModelProto, TensorProto, ValueInfoProto
from onnx_qtypes.proto import external as in_files, onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.errors import (
    MalformedExtensionError,
    ModelLoadError,
    ParameterReferenceError,
    QTypesError,
    UnknownTensorError,
)
from onnx_qtypes.proto.files import (
    NOT_REGULAR,
    atomic_write,
    cannot_write,
    is_special,
    is_stream,
    read_file_bytes,
    writable_target,
)
from onnx_qtypes.proto.encoding import MARKER_BASE, in_wire_form, marker, plain_data_type, to_wire_form, unmark_names
from onnx_qtypes.proto.parameter_tensors import (
    Placement,
    drop_unreferenced,
    named_parameters,
    plan_parameters,
    wants_reference,
)
from onnx_qtypes.proto.parameter_references import has_references, read_references
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.statistics import TensorStatistics
from onnx_qtypes.proto.versions import unknown_field_problem

QUANTIZATION_FIELD = 1000
STATISTICS_FIELD = 1001
PROTOBUF_LIMIT = 2**31 - 1  # a serialized ModelProto must stay below 2 GiB


# --- reading and writing one TypeProto.Tensor --------------------------------


def read_view(tensor_type: onnx.TypeProto.Tensor, where: str = "") -> pb.TensorTypeView:
    """Parse a TypeProto.Tensor's bytes as the extended view."""
    return parse_view(tensor_type.SerializeToString(), where)


def parse_view(data: bytes, where: str = "") -> pb.TensorTypeView:
    """Parse the serialized bytes of a TypeProto.Tensor as the extended view (what read_view does)."""
    view = pb.TensorTypeView()
    try:
        view.ParseFromString(data)
    except DecodeError:
        raise MalformedExtensionError(
            f"{where or 'tensor type'}: the onnx-qtypes extension (field 1000 quantization, 1001 statistics) "
            "does not decode as a protobuf message (truncated or corrupt bytes)"
        ) from None
    if view.HasField("quantization") or view.HasField("statistics"):
        return view
    # A field 1000/1001 with the wrong wire type parses as unknown: report it.
    from google.protobuf.unknown_fields import UnknownFieldSet

    for field in UnknownFieldSet(view):
        if field.field_number in (QUANTIZATION_FIELD, STATISTICS_FIELD):
            raise MalformedExtensionError(
                f"{where or 'tensor type'}: onnx-qtypes field {field.field_number} has wire type "
                f"{field.wire_type}, expected 2 (length-delimited message)"
            )
    return view


def write_view(tensor_type: onnx.TypeProto.Tensor, view: pb.TensorTypeView) -> None:
    """Replace a TypeProto.Tensor's content with the view's bytes."""
    tensor_type.Clear()
    tensor_type.MergeFromString(view.SerializeToString())


ParameterLookup = Callable[[str], "TensorProto | None"]


def read_qtype(
    value_info: ValueInfoProto, where: str = "", *, validate: bool = False, parameters: ParameterLookup | None = None
) -> QType | None:
    """The quantized type declared by ``value_info`` (statistics attached), or None.

    ``parameters`` finds an initializer by name: a type with parameters by reference reads them through it
    (ParameterReferenceError when they cannot be read; ``model_parameters`` makes one for a model).
    """
    if value_info.type.WhichOneof("value") != "tensor_type":
        return None
    where = where or f"value {value_info.name!r}"
    view = read_view(value_info.type.tensor_type, where)
    if not view.HasField("quantization"):
        return None
    require_known_fields(view, where)
    stats = TensorStatistics.from_proto(view.statistics) if view.HasField("statistics") else None
    values = referenced_values(view.quantization, parameters, static_shape(value_info), where)
    return QType.from_proto(view.quantization, stats, validate=validate, values=values)


def model_parameters(model: ModelProto) -> ParameterLookup:
    """Initializers by name, for parameters by reference: the main graph's and its subgraphs' (one name space).
    Its ``declared`` attribute gives the QuantizedType declared for a quantized initializer (a version-3
    quantized parameter tensor), None for any other name."""
    found: dict[str, TensorProto] | None = None

    def lookup(name: str) -> TensorProto | None:
        nonlocal found
        if found is None:  # built on the first reference: most models have none
            found = {}
            for _, graph in iter_graphs(model):
                for init in graph.initializer:
                    found.setdefault(init.name, init)
        return found.get(name)

    lookup.declared = quantized_declarations(model)  # type: ignore[attr-defined]
    return lookup


def quantized_declarations(model: ModelProto) -> Callable[[str], pb.QuantizedType | None]:
    """name -> the QuantizedType its first quantized declaration carries in the main graph or a subgraph (None:
    none); the declarations are read on the first call (most models never ask)."""
    found: dict[str, pb.QuantizedType] | None = None

    def declared(name: str) -> pb.QuantizedType | None:
        nonlocal found
        if found is None:
            found = {}
            for _, graph in iter_graphs(model):
                for vi in (*graph.value_info, *graph.input, *graph.output):
                    if vi.name in found or vi.type.WhichOneof("value") != "tensor_type" or \
                            0 < vi.type.tensor_type.elem_type < MARKER_BASE:  # marked, or UNDEFINED (a plain copy)
                        continue
                    view = read_view(vi.type.tensor_type, f"value {vi.name!r}")
                    if view.HasField("quantization"):
                        found[vi.name] = view.quantization
        return found.get(name)

    return declared


def referenced_values(
    msg: pb.QuantizedType, parameters: ParameterLookup | None, shape: tuple[int | None, ...] | None, where: str
) -> dict[str, Sequence] | None:
    """The parameters ``msg`` names by reference, by field, for ``QType.from_proto(msg, values=...)``: held as their
    initializers hold them (``proto.parameter_values``), never listed; None when ``msg`` lists them.
    ParameterReferenceError naming the declaration when they cannot be read."""
    if not has_references(msg):
        return None
    if parameters is None:
        raise ParameterReferenceError(f"{where}: the type names its parameters by reference; read it with the model")
    refs = read_references(msg, parameters, shape, getattr(parameters, "declared", None))
    if refs.problem:
        raise ParameterReferenceError(f"{where}: {refs.problem}")
    return dict(refs.values)


def require_known_fields(view: pb.TensorTypeView, where: str) -> None:
    """MalformedExtensionError after ``where`` when the view holds a field or schema value this version does
    not define: protobuf would read the default (schema 9 as asymmetric). The checker reads such types
    leniently instead and reports them as QT115."""
    problem = (view.HasField("quantization") and unknown_field_problem(view.quantization)) or (
        view.HasField("statistics") and unknown_field_problem(view.statistics, "statistics"))
    if problem:
        raise MalformedExtensionError(f"{where}: {problem}")


def read_statistics(value_info: ValueInfoProto, where: str = "") -> TensorStatistics | None:
    """The statistics recorded on ``value_info``, or None."""
    if value_info.type.WhichOneof("value") != "tensor_type":
        return None
    where = where or f"value {value_info.name!r}"
    view = read_view(value_info.type.tensor_type, where)
    require_known_fields(view, where)
    return TensorStatistics.from_proto(view.statistics) if view.HasField("statistics") else None


def write_qtype(value_info: ValueInfoProto, qtype: QType | None) -> None:
    """Declare ``qtype`` on ``value_info`` (None: make it plain storage integers).

    The element type becomes the marker of the storage type (``encoding``:
    1000 + storage type, the fail-closed marker) and the statistics of
    ``qtype`` replace any recorded ones; with None the element type becomes
    the old storage type and the statistics are kept.
    """
    tensor_type = value_info.type.tensor_type
    view = read_view(tensor_type, f"value {value_info.name!r}")
    if qtype is None:
        if view.HasField("quantization"):
            view.elem_type = view.quantization.storage_type
            view.ClearField("quantization")
    else:
        view.elem_type = marker(qtype.storage_type.data_type)
        view.quantization.CopyFrom(qtype.to_proto())
        if qtype.statistics is not None:
            view.statistics.CopyFrom(qtype.statistics.to_proto())
    write_view(tensor_type, view)


def write_statistics(value_info: ValueInfoProto, statistics: TensorStatistics | None) -> None:
    """Record (or with None, remove) statistics on ``value_info``."""
    view = read_view(value_info.type.tensor_type, f"value {value_info.name!r}")
    if statistics is None:
        view.ClearField("statistics")
    else:
        view.statistics.CopyFrom(statistics.to_proto())
    write_view(value_info.type.tensor_type, view)


def static_shape(value_info: ValueInfoProto) -> tuple[int | None, ...] | None:
    """Declared shape with unknown dimensions as None; None when rank is unknown."""
    tensor_type = value_info.type.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim)


# --- walking every declaration -------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Declaration:
    """One ValueInfoProto that declares a tensor's type."""

    pointer: str  # JSON pointer into the ModelProto, e.g. /graph/value_info/3
    kind: str  # input | output | value_info
    graph: onnx.GraphProto | onnx.FunctionProto
    value_info: ValueInfoProto

    @property
    def name(self) -> str:
        return self.value_info.name


def iter_graphs(model: ModelProto, attributes: dict[str, list] | None = None) -> Iterator[tuple[str, onnx.GraphProto]]:
    """Every graph of the model with its JSON pointer: main graph, then subgraphs (a graph, then the subgraphs of
    its nodes in order). ``attributes``, when given, gets each graph's nodes' attribute lists by its pointer: the
    walk reads them anyway, and the reader reads their names next."""
    yield from _walk("/graph", model.graph, attributes)


_GRAPH, _GRAPHS = onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS


def _walk(pointer: str, graph: onnx.GraphProto, attributes: dict[str, list] | None = None
          ) -> Iterator[tuple[str, onnx.GraphProto]]:
    # A module-level function, not a closure that calls itself: that closure is a reference cycle per call.
    yield pointer, graph
    lists = [node.attribute for node in graph.node]
    if attributes is not None:
        attributes[pointer] = lists
    for n, node_attributes in enumerate(lists):
        if not node_attributes:  # most nodes: no pointer to build, no generator to start
            continue
        for a, attr in enumerate(node_attributes):
            kind = attr.type
            if kind == _GRAPH:
                yield from _walk(f"{pointer}/node/{n}/attribute/{a}/g", attr.g, attributes)
            elif kind == _GRAPHS:
                for k, sub in enumerate(attr.graphs):
                    yield from _walk(f"{pointer}/node/{n}/attribute/{a}/graphs/{k}", sub, attributes)


def iter_node_graphs(pointer: str, node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    """Every graph in ``node``'s attributes (If branches, Loop and Scan bodies) and every graph inside those."""
    for a, attr in enumerate(node.attribute):
        if attr.type == onnx.AttributeProto.GRAPH:
            yield from _walk(f"{pointer}/attribute/{a}/g", attr.g)
        elif attr.type == onnx.AttributeProto.GRAPHS:
            for k, sub in enumerate(attr.graphs):
                yield from _walk(f"{pointer}/attribute/{a}/graphs/{k}", sub)


def iter_declarations(model: ModelProto) -> Iterator[Declaration]:
    """Every ValueInfoProto of the model: graphs, subgraphs and functions."""
    for pointer, graph in iter_graphs(model):
        for kind in ("input", "output", "value_info"):
            for i, vi in enumerate(getattr(graph, kind)):
                yield Declaration(f"{pointer}/{kind}/{i}", kind, graph, vi)
    for f, function in enumerate(model.functions):
        for i, vi in enumerate(function.value_info):
            yield Declaration(f"/functions/{f}/value_info/{i}", "value_info", function, vi)


def _function(model: ModelProto, function: str) -> onnx.FunctionProto:
    """The model-local function named ``function`` ("name" or "domain:name")."""
    domain, _, name = function.rpartition(":")
    found = [f for f in model.functions if f.name == name and (not domain or f.domain == domain)]
    if len(found) != 1:
        known = ", ".join(f"{f.domain}:{f.name}" if f.domain else f.name for f in model.functions) or "none"
        what = "no" if not found else "more than one"
        raise UnknownTensorError(f"model has {what} function named {function!r} (functions: {known})")
    return found[0]


class _Index:
    """Declarations and definitions of every tensor name of one scope, built in one pass.

    The scope is the main graph with its subgraphs (which share its names), or with ``function`` one
    model-local function's body: a function's names are its own, so ``x`` there is not the graph's ``x``.
    """

    def __init__(self, model: ModelProto, function: str | None = None) -> None:
        self.declarations: dict[str, list[Declaration]] = {}
        # name -> (graph, initializer or None); the first definition wins, as in get_qtype's search order
        self.definitions: dict[str, tuple[onnx.GraphProto | onnx.FunctionProto, TensorProto | None]] = {}
        if function is not None:
            body = _function(model, function)
            f = list(model.functions).index(body)
            for i, vi in enumerate(body.value_info):
                self.declarations.setdefault(vi.name, []).append(
                    Declaration(f"/functions/{f}/value_info/{i}", "value_info", body, vi))
            for name in [*body.input, *(out for node in body.node for out in node.output)]:
                if name:
                    self.definitions.setdefault(name, (body, None))
            return
        for decl in iter_declarations(model):
            if not decl.pointer.startswith("/functions/"):
                self.declarations.setdefault(decl.name, []).append(decl)
        for _, graph in iter_graphs(model):
            for init in graph.initializer:
                self.definitions.setdefault(init.name, (graph, init))
            for node in graph.node:
                for out in node.output:
                    if out:
                        self.definitions.setdefault(out, (graph, None))

    def known(self, name: str) -> bool:
        return name in self.declarations or name in self.definitions

    def targets(self, name: str) -> list[ValueInfoProto]:
        """The declarations of ``name``; a new value_info in its defining graph when there are none."""
        if name in self.declarations:
            return [d.value_info for d in self.declarations[name]]
        if name not in self.definitions:
            raise UnknownTensorError(f"model has no tensor named {name!r}")
        graph, init = self.definitions[name]
        if init is not None:
            vi = onnx.helper.make_tensor_value_info(name, init.data_type, list(init.dims))
        else:
            vi = onnx.helper.make_empty_tensor_value_info(name)
            vi.type.tensor_type.elem_type = TensorProto.UNDEFINED
        graph.value_info.append(vi)
        added = graph.value_info[-1]
        self.declarations[name] = [Declaration("", "value_info", graph, added)]
        return [added]


# --- public API ---------------------------------------------------------------


def get_qtype(model: ModelProto, name: str, *, function: str | None = None) -> QType | None:
    """The quantized type of tensor ``name`` (with its statistics), or None.

    None means the tensor exists but is not quantized. Raises
    UnknownTensorError when the model has no tensor of that name. Names are
    the main graph's (subgraphs included); ``function`` ("name" or
    "domain:name") reads a model-local function's own names instead.
    """
    index = _Index(model, function)
    if not index.known(name):
        raise UnknownTensorError(f"model has no tensor named {name!r}")
    parameters = model_parameters(model)
    for decl in index.declarations.get(name, ()):
        qtype = read_qtype(decl.value_info, decl.pointer, parameters=parameters)
        if qtype is not None:
            return qtype
    return None


def get_statistics(model: ModelProto, name: str, *, function: str | None = None) -> TensorStatistics | None:
    """The statistics recorded for tensor ``name``, or None (``function``: as in get_qtype).

    Raises UnknownTensorError when the model has no tensor of that name."""
    index = _Index(model, function)
    if not index.known(name):
        raise UnknownTensorError(f"model has no tensor named {name!r}")
    for decl in index.declarations.get(name, ()):
        stats = read_statistics(decl.value_info, decl.pointer)
        if stats is not None:
            return stats
    return None


def set_qtype(model: ModelProto, name: str, qtype: QType | None, *, function: str | None = None) -> ModelProto:
    """Declare ``qtype`` on every declaration of tensor ``name``, in place.

    When the tensor has no declaration yet (an initializer, a node output), a
    ``value_info`` entry is added in the graph that defines it. The
    parameters are checked against the declared or initializer shape. With
    None the tensor goes back to plain storage integers. Returns ``model``.
    ``function`` ("name" or "domain:name") writes inside a model-local
    function's body, whose names are its own.
    """
    return set_qtypes(model, {name: qtype}, function=function)


def set_qtypes(model: ModelProto, qtypes: Mapping[str, QType | None], *, function: str | None = None) -> ModelProto:
    """``set_qtype`` for many tensors in one pass over the model (linear, not quadratic).

    Every type is checked before any is written: on error the model is unchanged.
    """
    index = _Index(model, function)
    for name, qtype in qtypes.items():
        if qtype is not None and not isinstance(qtype, QType):
            raise QTypesError(f"set_qtype({name!r}): expected a QType or None, got {type(qtype).__name__}")
        if not index.known(name):
            raise UnknownTensorError(f"model has no tensor named {name!r}")
        if qtype is None:
            continue
        for decl in index.declarations.get(name, ()):
            shape = static_shape(decl.value_info)
            if shape is not None:
                qtype.check_shape(shape, name)
        init = index.definitions.get(name, (None, None))[1]
        if init is not None:
            qtype.check_shape(tuple(init.dims), name)
            if plain_data_type(init.data_type) != qtype.storage_type.data_type:
                raise QTypesError(
                    f"set_qtype({name!r}): initializer holds {TensorProto.DataType.Name(init.data_type)}, "
                    f"but the type stores {qtype.storage}; convert the data first"
                )
    claimed: set[str] = set()
    plans = {name: _plan(model, index, name, qtype, function, claimed) for name, qtype in qtypes.items()}
    placed = {}
    for name, (qtype, placement, graph) in plans.items():  # every type fits: now write
        if placement is not None:
            placement.apply(graph)
        placed[name] = qtype
    for name, qtype in placed.items():
        _drop_replaced_parameters(model, index, name, qtype)
    for name, qtype in placed.items():
        for vi in index.targets(name):
            write_qtype(vi, qtype)
    unmark_names(model, {name for name, qtype in placed.items() if qtype is None})  # plain integers again
    return to_wire_form(model, {name for name, qtype in placed.items() if qtype is not None})


def _declared_references(index: _Index, name: str) -> QType | None:
    """The type ``name`` declares now, read for the initializer names only (the values are not resolved)."""
    for decl in index.declarations.get(name, ()):
        if decl.value_info.type.WhichOneof("value") != "tensor_type":
            continue
        view = read_view(decl.value_info.type.tensor_type, decl.pointer)
        if view.HasField("quantization"):
            return QType.from_proto(view.quantization, validate=False)
    return None


def _plan(model: ModelProto, index: _Index, name: str, qtype: QType | None, function: str | None,
          claimed: set[str]) -> tuple[QType | None, Placement | None, onnx.GraphProto | None]:
    """``qtype`` with its parameters where they belong (listed, or in initializers: parameter_tensors), and
    the initializers to write there; nothing is written yet."""
    if qtype is None or not wants_reference(qtype):
        return qtype, None, None
    if function is not None:
        if named_parameters(qtype):
            raise QTypesError(f"set_qtype({name!r}): a function body has no initializers to hold parameters")
        return qtype, None, None
    graph, init = index.definitions.get(name, (model.graph, None))
    graph = graph if isinstance(graph, onnx.GraphProto) else model.graph
    shape = tuple(init.dims) if init is not None else next(
        (s for d in index.declarations.get(name, ()) if (s := static_shape(d.value_info)) is not None), None)
    taken = {n for n, (_, i) in index.definitions.items() if i is None} | {vi.name for vi in graph.input}
    placement = plan_parameters(graph, name, qtype, shape, _declared_references(index, name), taken, claimed)
    return placement.qtype, placement, graph


def _drop_replaced_parameters(model: ModelProto, index: _Index, name: str, qtype: QType | None) -> None:
    """Remove the initializers the tensor's previous type named and its new type does not, when unread."""
    previous = _declared_references(index, name)
    named_before = named_parameters(previous)
    if named_before:
        still = named_parameters(qtype)
        for _, graph in iter_graphs(model):
            drop_unreferenced(graph, named_before, still)


def set_statistics(model: ModelProto, name: str, statistics: TensorStatistics | None, *,
                   function: str | None = None) -> ModelProto:
    """Record statistics on every declaration of tensor ``name``, in place (``function``: as in set_qtype)."""
    targets = _Index(model, function).targets(name)
    for vi in targets:
        if vi.type.tensor_type.elem_type == TensorProto.UNDEFINED and not read_view(vi.type.tensor_type).HasField(
                "quantization"):
            raise QTypesError(f"set_statistics({name!r}): the tensor's element type is unknown; declare it first")
    for vi in targets:
        write_statistics(vi, statistics)
    return model


def quantized_tensors(model: ModelProto, *, function: str | None = None) -> dict[str, QType]:
    """Every quantized tensor name with its (first declared) type, in model order (``function``: as in get_qtype)."""
    if function is None and not may_declare_extension(model):
        return {}  # no declaration holds field 1000 or 1001: nothing to decode (a QDQ or float model)
    out: dict[str, QType] = {}
    parameters = model_parameters(model)
    for decl in (d for decls in _Index(model, function).declarations.values() for d in decls):
        if decl.name not in out:
            qtype = read_qtype(decl.value_info, decl.pointer, parameters=parameters)
            if qtype is not None:
                out[decl.name] = qtype
    return out


# Any tag of TypeProto.Tensor field 1000 or 1001 (numbers 8000-8015 as a varint: the shortest form, or one padded
# with continuation bytes, which protobuf also reads): a declaration without such bytes has neither field.
_EXTENSION_TAG = re.compile(rb"[\xc0-\xcf](?:\x3e|\xbe[\x80-\xff]*\x00)")


def may_declare_extension(model: ModelProto, *, functions: bool = False,
                          graphs: Iterable[tuple[str, onnx.GraphProto]] | None = None) -> bool:
    """False when no declaration of the main graph or its subgraphs (and with ``functions`` of the model's
    functions) holds the extension (field 1000 or 1001), read from the declarations' bytes in one search; True
    when one may (then decoding decides). ``graphs``: ``iter_graphs(model)`` when the caller has it."""
    lists = [declarations for _, graph in (iter_graphs(model) if graphs is None else graphs)
             for declarations in (graph.input, graph.output, graph.value_info)]
    if functions:
        lists += [function.value_info for function in model.functions]
    for declarations in lists:
        if declarations and _EXTENSION_TAG.search(b"".join([vi.SerializeToString() for vi in declarations])):
            return True  # (a match across two declarations' bytes only costs the decoding)
    return False


# --- loading and saving --------------------------------------------------------


def _check_external_location(location: str, base_dir: pathlib.Path, tensor: str, source: str = "") -> None:
    """Refuse external-data paths that leave the model's folder or are not regular files."""
    where = f"{source + ': ' if source else ''}tensor {tensor!r}: external data location {location!r}"
    if not location:
        raise ModelLoadError(f"{where} is empty")
    if "\0" in location:  # the OS refuses such a name (ValueError): say so here
        raise ModelLoadError(f"{where} contains a NUL byte; it must be a file name")
    if os.path.isabs(location) or pathlib.PureWindowsPath(location).is_absolute() or location.startswith(("/", "\\")):
        raise ModelLoadError(f"{where} is absolute; it must be relative to the model's folder")
    parts = pathlib.PurePath(location.replace("\\", "/")).parts
    if ".." in parts:
        raise ModelLoadError(f"{where} contains '..'; it must stay inside the model's folder")
    root = base_dir.resolve()
    target = (base_dir / location).resolve()
    if root != target and root not in target.parents:
        raise ModelLoadError(f"{where} resolves to {target}, outside the model's folder {root} (symlink?)")
    if target.is_dir():
        raise ModelLoadError(f"{where} is a directory, expected a data file")
    if is_special(target):  # reading a FIFO blocks, a device may never end
        raise ModelLoadError(f"{where}: {target}: {NOT_REGULAR}; give a data file")
    if not target.is_file():
        raise ModelLoadError(f"{where}: no such file {target}")


def _external_tensors(model: ModelProto) -> Iterator[TensorProto]:
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    for tensor in _get_all_tensors(model):
        if uses_external_data(tensor):
            yield tensor


def load(path_or_bytes: str | os.PathLike | bytes, *, load_external_data: bool | str = True) -> ModelProto:
    """Read a model from a path or bytes, with its external data.

    ``load_external_data``: True reads every external tensor into memory; "lazy" leaves the data in its files,
    checked the same way and readable where it lies (``proto.external``: a model of billions of weights);
    False leaves it unread and unchecked.

    Raises ModelLoadError (one line, naming the file) for anything that is not
    a readable ONNX model, and for external data outside the model's folder.
    """
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return _parse(bytes(path_or_bytes), "<bytes>")
    path = pathlib.Path(os.fspath(path_or_bytes))
    # a symlink loop, a folder, a FIFO (opening blocks), a device (/dev/zero never ends), an unreadable file
    data = read_file_bytes(path, "a model file", ModelLoadError)
    model = _parse(data, str(path))
    external = list(_external_tensors(model))
    if external and load_external_data:
        from onnx.external_data_helper import ExternalDataInfo, load_external_data_for_tensor

        base = path.parent
        for tensor in external:
            try:
                info = ExternalDataInfo(tensor)
            except ValueError as exc:
                raise ModelLoadError(f"{path}: tensor {tensor.name!r}: {exc}") from None
            _check_external_location(info.location, base, tensor.name, str(path))
            try:
                if load_external_data == "lazy":
                    if problem := in_files.extent_problem(tensor, base / info.location):
                        raise ValueError(problem)
                    in_files.attach(tensor, base)
                else:
                    load_external_data_for_tensor(tensor, str(base))
            except (OSError, ValueError, RuntimeError) as exc:
                raise ModelLoadError(f"{path}: tensor {tensor.name!r}: cannot read external data ({exc})") from None
    return model


GGUF_MAGIC = b"GGUF"  # a GGUF file's first bytes (interop/gguf.py reads the file; this only tells it apart)


def _parse(data: bytes, source: str) -> ModelProto:
    if not data:
        raise ModelLoadError(f"{source}: empty file, expected an ONNX model")
    if data[:4] == GGUF_MAGIC:  # (0x47 is no protobuf tag, wire type 7: no ONNX file starts so)
        lift = "onnx_qtypes.interop.gguf.lift_gguf(PATH, OUT)" if source == "<bytes>" else \
            f"`onnx-qtypes lift {shlex.quote(source)} OUT.onnx`"
        raise ModelLoadError(f"{source}: a GGUF file, not an ONNX model: {lift} writes its typed ONNX model, which "
                             "this reads")
    model = ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise ModelLoadError(f"{source}: not an ONNX model (protobuf decode failed: {exc})") from None
    if not model.HasField("graph") or model.ir_version <= 0:
        raise ModelLoadError(f"{source}: not an ONNX model (no graph or ir_version)")
    return model


def save(
    model: ModelProto,
    path: str | os.PathLike,
    *,
    external_data: bool | None = None,
    location: str | None = None,
    size_threshold: int = 1024,
    as_loaded: bool = False,
) -> None:
    """Write ``model`` to ``path`` atomically (never a half-written file).

    Quantized tensors are written with the fail-closed markers of ``encoding``
    (a model read in the version-1 form is converted on the way out).
    ``external_data`` None means: only when the model would exceed the 2 GiB
    protobuf limit, or holds tensors still in the files it was read from
    (``load(..., load_external_data="lazy")``: those are copied into the new
    data file in chunks, never all in memory). External data goes to ``location``
    (default ``<file name>.data``) beside the model. ``model`` itself is not modified.
    ``as_loaded``: the file is what it would be had the tensors left in their files been loaded (one file under
    the 2 GiB limit, their data streamed into it; else external data laid out alike), never all in memory.
    """
    if not isinstance(model, ModelProto):
        raise QTypesError(f"save: expected an onnx.ModelProto, got {type(model).__name__}")
    if not in_wire_form(model):  # a version-1 model (UNDEFINED marker): written with today's markers
        copy = ModelProto()
        copy.CopyFrom(model)
        model = to_wire_form(copy)
    target, folder = writable_target(path)
    lazy = any(in_files.is_lazy(t) for t in _all_tensors(model))
    if as_loaded and lazy and external_data is None:
        size = in_files.loaded_size(model)
        if size is None:  # a lazy tensor elsewhere than among the main graph's initializers: read them all in
            model = _loaded_copy(model, as_loaded=True)
            lazy = False
        elif size < PROTOBUF_LIMIT:
            with atomic_write(target) as fh:
                in_files.write_loaded(model, fh)
            return
        else:
            external_data = True
    if external_data is None:
        external_data = lazy or _too_big_for_protobuf(model)
    if not external_data and lazy:  # asked for one file: the data read in (a copy of the model holds it)
        model = _loaded_copy(model)
    if not external_data:
        with atomic_write(target) as fh:
            fh.write(model.SerializeToString())
        return
    from onnx.external_data_helper import convert_model_to_external_data

    if is_stream(target):  # no folder to put the data file beside a device, FIFO or /dev/stdout
        raise QTypesError(
            f"{target}: not a regular file (a device, FIFO or descriptor); a model with external data needs a file"
        )
    location = location or f"{target.name}.data"
    _check_relative(location)
    work = ModelProto()
    work.CopyFrom(model)
    if as_loaded:  # a tensor too small for the data file is loaded, and kept in the model, as before
        for tensor in _all_tensors(work):
            if in_files.is_lazy(tensor) and sys.getsizeof(b"") + in_files.stored_length(tensor) < size_threshold:
                _load_lazy(tensor, as_loaded=True)
    convert_model_to_external_data(work, all_tensors_to_one_file=True, location=location, size_threshold=size_threshold)
    staging = pathlib.Path(tempfile.mkdtemp(prefix=".qtypes-", dir=folder))
    try:
        _write_held(work, staging, location, as_loaded)
        _write_lazy(work, staging / location, location)
        with atomic_write(target) as fh:
            fh.write(work.SerializeToString())
            data = staging / location
            if data.exists():  # the data file lands just before the model that points at it
                os.replace(data, folder / location)
    except OSError as exc:
        raise cannot_write(target, exc) from None
    except ValueError as exc:
        raise QTypesError(f"{target}: cannot write: {exc}") from None
    finally:
        for child in staging.iterdir():
            child.unlink()
        staging.rmdir()


def _all_tensors(model: ModelProto) -> Iterator[TensorProto]:
    from onnx.external_data_helper import _get_all_tensors

    return _get_all_tensors(model)


def _load_lazy(tensor: TensorProto, as_loaded: bool = False) -> None:
    """A tensor left in its file (``proto.external``) read into raw_data, as loading it would have (``as_loaded``:
    with data_location DEFAULT written, as onnx's loader leaves it, unless a step computed and spilled it)."""
    data = in_files.tensor_bytes(tensor).tobytes()
    computed = in_files.in_order(tensor)  # spilled by a step, never loaded: as it would have been held in memory
    tensor.ClearField("data_location")
    if as_loaded and not computed:
        tensor.data_location = TensorProto.DEFAULT
    del tensor.external_data[:]
    tensor.raw_data = data


def _loaded_copy(model: ModelProto, as_loaded: bool = False) -> ModelProto:
    copy = ModelProto()
    copy.CopyFrom(model)
    for tensor in _all_tensors(copy):
        if in_files.is_lazy(tensor):
            _load_lazy(tensor, as_loaded)
    return copy


def _write_held(model: ModelProto, staging: pathlib.Path, location: str, as_loaded: bool = False) -> None:
    """onnx's write_external_data_tensors (the tensors held in memory, in model order, one after the other), with a
    tensor spilled ``in_order`` (proto.external), or with ``as_loaded`` any left in its file, copied from its
    file where it would have been written."""
    from onnx.external_data_helper import save_external_data, uses_external_data

    for tensor in _all_tensors(model):
        if uses_external_data(tensor) and tensor.HasField("raw_data"):
            save_external_data(tensor, str(staging))
            tensor.ClearField("raw_data")
        elif in_files.in_order(tensor) or (as_loaded and in_files.is_lazy(tensor)):
            with open(staging / location, "ab") as out:
                offset = out.tell()
                length = in_files.copy_into(tensor, out)
            del tensor.external_data[:]
            for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
                tensor.external_data.add(key=key, value=value)  # as set_external_data writes them


_ALIGNMENT = 4096  # each copied tensor starts on a page, as onnx aligns large tensors


def _write_lazy(model: ModelProto, data_file: pathlib.Path, location: str) -> None:
    """Append every tensor still in the file it was read from to ``data_file`` (chunk by chunk) and point the
    tensor at it; nothing else of the model changes."""
    lazy = [t for t in _all_tensors(model) if in_files.is_lazy(t)]
    if not lazy:
        return
    with open(data_file, "ab") as out:
        for tensor in lazy:
            out.write(b"\0" * (-out.tell() % _ALIGNMENT))
            offset = out.tell()
            length = in_files.copy_into(tensor, out)
            del tensor.external_data[:]
            for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
                tensor.external_data.add(key=key, value=value)


def _too_big_for_protobuf(model: ModelProto) -> bool:
    try:
        return model.ByteSize() >= PROTOBUF_LIMIT
    except EncodeError:  # upb refuses to size messages over 2 GiB
        return True


def _check_relative(location: str) -> None:
    if os.path.isabs(location) or ".." in pathlib.PurePath(location).parts or "/" in location or "\\" in location:
        raise QTypesError(f"external data location {location!r} must be a plain file name beside the model")
