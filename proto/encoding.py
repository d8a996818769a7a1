"""The fail-closed marker: how a quantized tensor is written so that stock tools refuse it instead of misreading it.

A quantized tensor's declaration has ``elem_type = 1000 + storage type`` (INT8 -> 1003) beside field 1000, and
every tensor holding its stored integers (an initializer, a Constant's value, the zero point of a boundary
QuantizeLinear / DequantizeLinear) has that number as ``data_type``, the integers in ``raw_data`` exactly as
the storage type lays them out. No stock tool knows these numbers, so none can re-derive a plain integer type
for the tensor: shape inference, the version converter, optimizers and runtimes refuse the model or leave it
closed (measured by proposal/experiments/encodings_vs_tools.py: no fail-open pair). Version 1 of the
extension marked declarations with ``elem_type = UNDEFINED`` only, which onnx.shape_inference overwrites with
INT8; such models are still read, and ``save`` writes them in this form.

Inside onnx-qtypes, code that hands a model to onnx.reference or writes standard ONNX works on ``plain_copy``:
markers replaced by the storage types, declarations by UNDEFINED.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np
import onnx
from onnx import GraphProto, ModelProto, NodeProto, TensorProto, ValueInfoProto, numpy_helper

from onnx_qtypes.proto import external
from onnx_qtypes.proto.default_domain import STANDARD_DOMAINS
from onnx_qtypes.proto.errors import ModelLoadError
from onnx_qtypes.proto.parameter_tensors import unique_name
from onnx_qtypes.proto.storage_types import STORAGE_BY_DATA_TYPE, byte_dtype

MARKER_BASE = 1000
_BOUNDARY = ("QuantizeLinear", "DequantizeLinear")

# TensorProto's value fields besides raw_data
TYPED_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")


def marker(storage_data_type: int) -> int:
    """The element / data type number marking a tensor quantized with this storage type (INT8 -> 1003)."""
    return MARKER_BASE + storage_data_type


def marked_storage(value: int) -> int | None:
    """The storage data type a marker stands for, or None when ``value`` is not a marker."""
    storage = value - MARKER_BASE
    return storage if storage in STORAGE_BY_DATA_TYPE else None


def plain_data_type(value: int) -> int:
    """``value`` with a marker replaced by its storage data type."""
    storage = marked_storage(value)
    return value if storage is None else storage


def tensor_array(tensor: TensorProto) -> np.ndarray:
    """numpy_helper.to_array, reading a marked tensor as its storage type, and a tensor left in its external file
    (``proto.external``) where it lies: byte-aligned types mapped from the file, others read as once loaded."""
    if external.is_lazy(tensor):
        return _lazy_array(tensor)
    dtype = byte_dtype(plain_data_type(tensor.data_type))
    if (dtype is not None and tensor.HasField("raw_data") and not tensor.HasField("segment")
            and tensor.data_location != TensorProto.EXTERNAL):
        return np.frombuffer(tensor.raw_data, dtype=dtype).reshape(tensor.dims)
    storage = marked_storage(tensor.data_type)
    if storage is None:
        return _to_array(tensor)
    tensor.data_type = storage  # in place and back: a copy would duplicate the data of a large weight
    try:
        return _to_array(tensor)
    finally:
        tensor.data_type = marker(storage)


def _to_array(tensor: TensorProto) -> np.ndarray:
    """numpy_helper.to_array; external data it cannot read (a model given in memory, its file missing) is a
    ModelLoadError naming the tensor, not onnx's ValidationError."""
    if tensor.data_location != TensorProto.EXTERNAL:
        return numpy_helper.to_array(tensor)
    try:
        return numpy_helper.to_array(tensor)
    except (onnx.checker.ValidationError, OSError) as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ModelLoadError(f"tensor {tensor.name!r}: its external data cannot be read: {reason}") from None


def _lazy_array(tensor: TensorProto) -> np.ndarray:
    data = external.tensor_bytes(tensor)
    dtype = byte_dtype(plain_data_type(tensor.data_type))
    if dtype is not None and not tensor.HasField("segment") and data.size % dtype.itemsize == 0:
        return data.view(dtype).reshape(tensor.dims)  # as np.frombuffer(raw_data) would give it, without the read
    loaded = TensorProto()  # the tensor as loading it would have made it
    loaded.CopyFrom(tensor)
    loaded.ClearField("data_location")
    del loaded.external_data[:]
    loaded.raw_data = data.tobytes()
    return tensor_array(loaded)


def mark_tensor(tensor: TensorProto, storage: int) -> None:
    """Give a tensor holding storage integers the marker ``data_type`` (its integers moved to ``raw_data``)."""
    if tensor.data_type == marker(storage):
        return
    if tensor.data_location != TensorProto.EXTERNAL and not tensor.HasField("raw_data"):
        tensor.data_type = storage
        try:
            data = numpy_helper.from_array(numpy_helper.to_array(tensor)).raw_data  # packs 4- and 2-bit values
        except (ValueError, TypeError, KeyError) as exc:  # data unlike its dims: nothing to mark
            from onnx_qtypes.proto.errors import ModelLoadError  # noqa: PLC0415

            raise ModelLoadError(f"tensor {tensor.name!r}: its data does not match its dims {list(tensor.dims)} "
                                 f"({' '.join(str(exc).split())[:120]}); it cannot be stored marked") from None
        for field in TYPED_FIELDS:
            tensor.ClearField(field)
        tensor.raw_data = data
    tensor.data_type = marker(storage)  # external data is the raw layout already


def unmark_tensor(tensor: TensorProto) -> None:
    """The storage type back in place of a marker (``raw_data`` is already laid out for it)."""
    storage = marked_storage(tensor.data_type)
    if storage is not None:
        tensor.data_type = storage


def is_marked(elem_type: int) -> bool:
    return marked_storage(elem_type) is not None


# --- whole models ---------------------------------------------------------------------------------------


def _scopes(model: ModelProto) -> Iterator[tuple[list[GraphProto | object], list[ValueInfoProto]]]:
    """(graphs or functions sharing one name space, their declarations): the main graph with its subgraphs,
    then each function body."""
    from onnx_qtypes.proto.model import iter_graphs

    graphs = [g for _, g in iter_graphs(model)]
    yield graphs, [vi for g in graphs for vi in (*g.input, *g.output, *g.value_info)]
    for function in model.functions:
        yield [function], list(function.value_info)


def _storage_of(value_info: ValueInfoProto) -> int | None:
    """The storage data type of a quantized declaration, None when it is not one (or does not decode)."""
    from onnx_qtypes.proto.errors import MalformedExtensionError
    from onnx_qtypes.proto.model import read_view

    if value_info.type.WhichOneof("value") != "tensor_type":
        return None
    try:
        view = read_view(value_info.type.tensor_type)
    except MalformedExtensionError:
        return None  # readers report it; nothing to mark
    if not view.HasField("quantization") or view.quantization.storage_type not in STORAGE_BY_DATA_TYPE:
        return None
    return view.quantization.storage_type


def _constants(graph: GraphProto | object) -> dict[str, TensorProto]:
    found = {t.name: t for t in getattr(graph, "initializer", ())}
    for node in graph.node:  # type: ignore[attr-defined]
        if node.op_type == "Constant" and node.domain in STANDARD_DOMAINS and node.output:
            for attribute in node.attribute:
                if attribute.name == "value":
                    found.setdefault(node.output[0], attribute.t)
    return found


def to_wire_form(model: ModelProto, names: set[str] | None = None, *,
                 main_graph_storage: dict[str, int] | None = None) -> ModelProto:
    """Mark every quantized tensor of ``model`` in place (idempotent): declarations, constants and the zero
    points of boundary QuantizeLinear / DequantizeLinear nodes; a boundary QuantizeLinear without a zero point
    gets one (all zeros, marked) instead of ``output_dtype``. ``names``: only these tensors (set_qtype's).
    ``main_graph_storage``: the storage data type of every tensor the main graph's own declarations type (each
    name declared once there), when the caller wrote them (the lift), so that they are not decoded again; None:
    each declaration is read.
    Returns ``model``."""
    _wire_changes(model, apply=True, names=names, main_graph_storage=main_graph_storage)
    return model


def _wire_changes(model: ModelProto, apply: bool, names: set[str] | None = None,
                  main_graph_storage: dict[str, int] | None = None) -> int:
    """How many tensors ``to_wire_form`` marks (or, with ``apply``, marked)."""
    changes = 0
    graph = model.graph
    for s, (graphs, declarations) in enumerate(_scopes(model)):
        # the first scope lists the main graph's own declarations first: those the caller says
        known = len(graph.input) + len(graph.output) + len(graph.value_info) \
            if s == 0 and main_graph_storage is not None else 0
        storage: dict[str, int] = {}
        for k, vi in enumerate(declarations):
            if names is not None and vi.name not in names:
                continue
            found = main_graph_storage.get(vi.name) if k < known else _storage_of(vi)  # type: ignore[union-attr]
            if found is not None:
                storage.setdefault(vi.name, found)
                if vi.type.tensor_type.elem_type != marker(found):
                    changes += 1
                    if apply:
                        vi.type.tensor_type.elem_type = marker(found)
        if not storage:
            continue
        constants: dict[str, TensorProto] = {}
        for graph in graphs:
            constants.update(_constants(graph))
        for name, tensor in constants.items():
            if name in storage and tensor.data_type == storage[name]:
                changes += 1
                if apply:
                    mark_tensor(tensor, storage[name])
        scope = _Scope(graphs)
        for graph in graphs:
            for node in list(graph.node):  # type: ignore[attr-defined]
                changes += _mark_boundary(graph, node, storage, constants, scope, apply)
    return changes


class _Scope:
    """The readers of every name of one scope, and every name in use, built when a boundary node asks."""

    def __init__(self, graphs: list) -> None:
        self.graphs = graphs

    @functools.cached_property
    def readers(self) -> dict[str, list[NodeProto]]:
        readers: dict[str, list[NodeProto]] = {}
        for graph in self.graphs:
            for node in graph.node:  # type: ignore[attr-defined]
                for name in node.input:
                    readers.setdefault(name, []).append(node)
        return readers

    @functools.cached_property
    def taken(self) -> set[str]:
        return _names_in(self.graphs)  # a zero point's marked copy needs a name no tensor of the scope has


def _names_in(graphs: list) -> set[str]:
    """Every name the graphs (or function bodies) of one scope use: values, constants and declarations."""
    names: set[str] = set()
    for graph in graphs:
        for node in graph.node:
            names.update(node.input)
            names.update(node.output)
        names.update(t.name for t in getattr(graph, "initializer", ()))
        for kind in ("input", "output", "value_info"):
            names.update(v if isinstance(v, str) else v.name for v in getattr(graph, kind, ()))
    return names


def _mark_boundary(graph, node: NodeProto, storage: dict[str, int], constants: dict[str, TensorProto],
                   scope: _Scope, apply: bool) -> int:
    if node.op_type not in _BOUNDARY or node.domain not in STANDARD_DOMAINS:
        return 0
    ports = node.output if node.op_type == "QuantizeLinear" else node.input
    quantized = ports[0] if ports else ""  # a node without one (malformed, left as it was) marks nothing
    st = storage.get(quantized)
    if st is None:
        return 0
    if len(node.input) > 2 and node.input[2]:
        zp = constants.get(node.input[2])
        if zp is None or zp.data_type != st:
            return 0
        if apply:
            if all(_typed_boundary_zero_point(r, node.input[2], storage) for r in scope.readers.get(node.input[2], [])):
                mark_tensor(zp, st)
            elif hasattr(graph, "initializer"):  # read as plain integers elsewhere: this node gets a marked copy
                copy = TensorProto()
                copy.CopyFrom(zp)
                copy.name = unique_name(f"{node.input[2]}_{quantized}", scope.taken)
                scope.taken.add(copy.name)
                mark_tensor(copy, st)
                graph.initializer.append(copy)
                constants[copy.name] = graph.initializer[-1]
                node.input[2] = copy.name
            else:
                return 0  # a function body: no initializer to hold a copy (QT311 reports the zero point)
        return 1
    if node.op_type != "QuantizeLinear" or len(node.input) < 2 or node.input[1] not in constants:
        return 0
    if not hasattr(graph, "initializer"):
        return 0  # a function body has no initializers to hold the zero point
    if not apply:
        return 1
    scale = constants[node.input[1]]
    zeros = np.zeros(tuple(scale.dims), STORAGE_BY_DATA_TYPE[st].np_dtype)
    name = unique_name(f"{quantized}_zero_point", scope.taken)
    scope.taken.add(name)
    zp = numpy_helper.from_array(zeros, name)
    mark_tensor(zp, st)
    graph.initializer.append(zp)
    constants[name] = graph.initializer[-1]
    while len(node.input) < 2:
        node.input.append("")
    node.input.append(name)
    kept = [a for a in node.attribute if a.name != "output_dtype"]
    del node.attribute[:]
    node.attribute.extend(kept)
    return 1


def in_wire_form(model: ModelProto) -> bool:
    """True when ``to_wire_form`` would change nothing."""
    return not _wire_changes(model, apply=False)


def _typed_boundary_zero_point(reader: NodeProto, name: str, storage: dict[str, int]) -> bool:
    """Whether ``reader`` reads ``name`` only as the zero point of a QuantizeLinear / DequantizeLinear whose
    quantized side is a quantized tensor (so that marking it changes no plain computation)."""
    if reader.op_type not in _BOUNDARY or [i for i, n in enumerate(reader.input) if n == name] != [2]:
        return False
    ports = reader.output if reader.op_type == "QuantizeLinear" else reader.input
    return bool(ports) and ports[0] in storage


def has_markers(model: ModelProto) -> bool:
    """True when any declaration or constant of ``model`` carries a marker."""
    for graphs, declarations in _scopes(model):
        if any(vi.type.WhichOneof("value") == "tensor_type" and is_marked(vi.type.tensor_type.elem_type)
               for vi in declarations):
            return True
        if any(is_marked(t.data_type) for graph in graphs for t in _constants(graph).values()):
            return True
    return False


def to_plain_form(model: ModelProto) -> ModelProto:
    """Replace every marker of ``model`` in place: constants get their storage type, quantized declarations
    elem_type UNDEFINED (the form onnx.reference and standard writers need). Returns ``model``."""
    for graphs, declarations in _scopes(model):
        for vi in declarations:
            if vi.type.WhichOneof("value") == "tensor_type" and is_marked(vi.type.tensor_type.elem_type):
                vi.type.tensor_type.elem_type = TensorProto.UNDEFINED
        for graph in graphs:
            for tensor in _constants(graph).values():
                unmark_tensor(tensor)
    return model


def unmark_names(model: ModelProto, names: set[str]) -> None:
    """Plain storage types again for the constants of ``names`` and the zero points of their boundary
    QuantizeLinear / DequantizeLinear (set_qtype with None: the tensors are plain integers now)."""
    for graphs, _ in _scopes(model):
        constants: dict[str, TensorProto] = {}
        for graph in graphs:
            constants.update(_constants(graph))
        for graph in graphs:
            for node in graph.node:  # type: ignore[attr-defined]
                if node.op_type in _BOUNDARY and len(node.input) > 2 and node.input[2] in constants:
                    side = node.output[0] if node.op_type == "QuantizeLinear" else node.input[0]
                    if side in names:
                        unmark_tensor(constants[node.input[2]])
        for name in names & constants.keys():
            unmark_tensor(constants[name])


def plain_copy(model: ModelProto) -> ModelProto:
    """``model`` itself when nothing is marked, else ``to_plain_form`` of a copy."""
    if not has_markers(model):
        return model
    copy = ModelProto()
    copy.CopyFrom(model)
    return to_plain_form(copy)


def stored_outside_type(tensor: TensorProto) -> tuple[int, int] | None:
    """(index, value) of the first integer a TensorProto of an 8- or 16-bit type holds outside its type's range,
    or None. Such values sit in ``int32_data`` (raw_data cannot hold them); numpy and runtimes read them
    wrapped (a uint8 300 becomes 44), so what the model means differs from what its producer wrote."""
    st = STORAGE_BY_DATA_TYPE.get(tensor.data_type)
    if st is None or st.bits not in (8, 16) or not tensor.int32_data:
        return None
    values = np.asarray(tensor.int32_data, np.int64)
    outside = np.flatnonzero((values < st.min) | (values > st.max))
    return (int(outside[0]), int(values[outside[0]])) if outside.size else None
