"""The two models ``compare`` runs, with every quantized intermediate tensor under one name on both sides.

- The reference side is a typed model: the user's, or the in-memory lift of a QDQ / QOperator file (the one
  ``check`` reads, ``diagnosis.quantizer_view``).
- The backend side is the standard-ONNX model a QDQ backend runs: a QDQ / QOperator file exactly as the user
  has it, or the QDQ lowering of a typed model. There a quantized tensor's storage is the integer tensor its
  QuantizeLinear (or QLinear* node) writes.

Each watched tensor gets the user's file's name for it: in a QDQ file the integer tensor's name (e.g.
``r1_QuantizeLinear_Output``, which the lifted model calls ``r1``), in a typed model the typed name. The
lifted model, or the lowered one, is renamed to match, so one list of output names serves both models.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

import onnx
from onnx import ModelProto, ValueInfoProto, helper

from onnx_qtypes.checker import Location
from onnx_qtypes.diagnosis import quantizer_view
from onnx_qtypes.interop.errors import LowerError
from onnx_qtypes.interop.graph import Names
from onnx_qtypes.interop.lower import lower_model
from onnx_qtypes.proto.encoding import plain_data_type
from onnx_qtypes.proto import QType, iter_graphs, quantized_tensors
from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.proto.reader import ReadModel


class NothingToCompare(QTypesError):
    """The model has no quantized tensor to compare."""


QUANTIZED, DYNAMIC, PLAIN = "quantized", "dynamic", "plain"


@dataclasses.dataclass(frozen=True)
class Watched:
    """One tensor a node of the main graph writes, under one name on both sides: a static quantized tensor (its
    storage compared in steps), a dynamic one (compared by real value, with the parameters the backend bound:
    ``parameters`` names the backend's scale and zero-point tensors), or a plain tensor (a float value, or a
    graph output / an output of a node with quantized inputs of another type)."""

    name: str
    kind: str  # QUANTIZED, DYNAMIC or PLAIN
    qtype: QType | None
    node: int  # the producer's index in ``Sides.typed``'s main graph
    parameters: tuple[str, str] = ("", "")  # DYNAMIC: the backend's scale / zero-point tensor for it

    def exposes(self, constants: Mapping[str, object]) -> list[str]:
        """The names the backend must return for this tensor to be compared (constant parameters are read from
        the backend's model)."""
        return [self.name, *(p for p in self.parameters if p and p not in constants)]


@dataclasses.dataclass
class Sides:
    form: str  # "typed", or "qdq" for a QDQ / QOperator file
    typed: ModelProto  # the reference's model, tensors renamed to the user's names
    standard: ModelProto | None  # the backend's standard-ONNX model (None: it cannot be written, see below)
    standard_unavailable: str
    watched: list[Watched]
    places: list[tuple[str, str]]  # per node of ``typed``: (its name, its op type) in the user's file
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def backend_constants(self) -> dict[str, onnx.TensorProto]:
        """The initializers of the model the backend runs."""
        model = self.standard if self.standard is not None else self.typed
        return {t.name: t for t in model.graph.initializer}

    @property
    def outputs(self) -> list[str]:
        """The graph outputs as the user's model declares them (both sides keep them)."""
        return [o.name for o in self.typed.graph.output]


def for_form(sides: Sides, form: str | None) -> Sides:
    """``sides`` for a backend that runs ``form``: one running the typed model names a dynamic tensor's parameters
    by the calling convention, ``<name>.scale`` / ``<name>.zero_point``."""
    if form == "typed":
        sides.watched = [dataclasses.replace(w, parameters=(f"{w.name}.scale", f"{w.name}.zero_point"))
                         if w.kind == DYNAMIC else w for w in sides.watched]
    return sides


def build(read: ReadModel) -> Sides:
    """Both sides of the model ``read`` (a typed model, or a QDQ / QOperator one as quantizers write it), as the
    shared reader read it: a graph it sorted runs sorted, and its nodes are named by their places in the file."""
    model = read.model
    view = quantizer_view(model, graphs=read.graphs())
    if view is None:
        if not quantized_tensors(model):
            raise NothingToCompare("the model has no quantized type and no QuantizeLinear / DequantizeLinear or "
                                   "QOperator quantization: nothing to compare")
        return _typed_sides(read)
    typed = view.result.model
    names = {t: view.locator.stored_as(t)[0] for t in quantized_tensors(typed)}
    taken = all_names(typed)
    mapping = {t: s for t, s in names.items() if s != t and s not in taken}
    _rename(typed, mapping)
    places = []
    for k in range(len(typed.graph.node)):
        where = view.locator.place(Location(f"/graph/node/{k}"))
        node = typed.graph.node[k]
        places.append((where.node or node.name or _unnamed(read, where.pointer, k), where.op_type or node.op_type))
    notes = [f"the reference runs its lifted form (in memory; the file is not changed): {view.result.summary()}"]
    notes.extend(f"the lift left this as it was: {read.file_text(w)}" for w in view.result.warnings)
    if view.result.problems:
        notes.append(f"the lift left {len(view.result.problems)} malformed quantization node(s) as they were "
                     "(`onnx-qtypes check` names them); the reference runs them as written (onnxruntime's "
                     "com.microsoft QOperator nodes as their schemas describe them)")
    standard = ModelProto()
    standard.CopyFrom(model)
    return _finish(Sides("qdq", typed, standard, "", [], places, notes))


def _unnamed(read: ReadModel, pointer: str, k: int) -> str:
    """Unnamed node ``k`` of the model compared, by its place in the file (``pointer``: in the model as read)."""
    at_node = re.fullmatch(r"/graph/node/\d+", pointer)
    return f"node {read.file_pointer(pointer).rsplit('/', 1)[1] if at_node else k}"


def _typed_sides(read: ReadModel) -> Sides:
    typed = ModelProto()
    typed.CopyFrom(read.model)
    places = [(n.name or _unnamed(read, f"/graph/node/{k}", k), n.op_type) for k, n in enumerate(typed.graph.node)]
    try:
        result = lower_model(typed, "qdq")
    except LowerError as exc:
        why = f"lower cannot write it as standard ONNX: {read.file_text(str(exc))}"
        return _finish(Sides("typed", typed, None, why, [], places))
    standard = result.model
    mapping = _storage_names(standard, quantized_tensors(typed))
    _rename(standard, mapping)
    notes = [f"backend model: the QDQ form `onnx-qtypes lower` writes ({read.file_text(w)})" for w in result.warnings]
    return _finish(Sides("typed", typed, standard, "", [], places, notes))


def _storage_names(lowered: ModelProto, qtypes: Mapping[str, QType]) -> dict[str, str]:
    """Renames that give each typed tensor's storage in ``lowered`` the typed name: lower keeps the name for the
    float value where a QuantizeLinear writes the integers, so the two swap (the float one gets a fresh name)."""
    fresh = Names(all_names(lowered))
    writer = {n.input[0]: n.output[0] for n in lowered.graph.node
              if n.op_type == "QuantizeLinear" and n.input and n.output}
    integer = _elem_types(lowered)
    mapping: dict[str, str] = {}
    for name, qtype in qtypes.items():
        if integer.get(name) == qtype.storage_type.data_type or name not in writer:
            continue
        mapping[name] = fresh.fresh(f"{name}_float")
        mapping[writer[name]] = name
    return mapping


def _finish(sides: Sides) -> Sides:
    """Choose the watched tensors, in node order: every static quantized tensor a main-graph node writes that the
    backend's model also holds as storage of that type; every dynamic one whose parameters the backend's model
    names; every other tensor a node writes that the backend's model also has (which of these are compared is
    decided on their values: floats, and graph outputs or outputs of nodes reading quantized tensors)."""
    graph = sides.typed.graph
    qtypes = quantized_tensors(sides.typed)
    constant = {t.name for t in graph.initializer} | {i.name for i in graph.input}
    storage = _elem_types(sides.standard) if sides.standard is not None else {}
    present = all_names(sides.standard) if sides.standard is not None else None
    unbound, absent = [], []
    for k, node in enumerate(graph.node):
        for name in node.output:
            qtype = qtypes.get(name)
            if not name or name in constant:
                continue
            if qtype is None:
                if present is None or name in present:
                    sides.watched.append(Watched(name, PLAIN, None, k))
            elif qtype.is_dynamic:
                parameters = _dynamic_parameters(sides, name)
                if parameters is None:
                    unbound.append(name)
                else:
                    sides.watched.append(Watched(name, DYNAMIC, qtype, k, parameters))
            elif sides.standard is not None and storage.get(name, qtype.storage_type.data_type) != \
                    qtype.storage_type.data_type:
                absent.append(name)
            else:
                sides.watched.append(Watched(name, QUANTIZED, qtype, k))
    if unbound:
        sides.notes.append(f"{len(unbound)} tensor(s) with a dynamic type are not compared: the backend's model reads "
                           f"them with no DequantizeLinear naming the parameters it bound: {_few(unbound)}")
    if absent:
        sides.notes.append(f"{len(absent)} quantized tensor(s) have no storage of their type in the backend's model, "
                           f"so are not compared: {_few(absent)}")
    if not sides.watched:
        raise NothingToCompare("no tensor that a node writes is held on both sides: nothing to compare")
    return sides


def _few(names: list[str]) -> str:
    return f"{', '.join(names[:5])}{' ...' if len(names) > 5 else ''}"


def _dynamic_parameters(sides: Sides, name: str) -> tuple[str, str] | None:
    """The backend's names for the scale and zero point it binds to dynamic tensor ``name``: the operands of a
    DequantizeLinear reading it in the standard model, or of the QuantizeLinear writing it, the other outputs of the
    DynamicQuantizeLinear writing it, or the calling convention's ``<name>.scale`` / ``<name>.zero_point``
    (semantics.md#calling-convention), which a backend running the typed model always answers."""
    if sides.standard is None:
        return f"{name}.scale", f"{name}.zero_point"
    nodes = sides.standard.graph.node
    for node in nodes:
        if node.op_type == "DequantizeLinear" and node.input and node.input[0] == name and len(node.input) > 1:
            return node.input[1], node.input[2] if len(node.input) > 2 else ""
    for node in nodes:
        if node.output and node.output[0] == name:
            if node.op_type == "QuantizeLinear" and len(node.input) > 1:
                return node.input[1], node.input[2] if len(node.input) > 2 else ""
            if node.op_type == "DynamicQuantizeLinear" and len(node.output) == 3:
                return node.output[1], node.output[2]
    convention = (f"{name}.scale", f"{name}.zero_point")
    names = all_names(sides.standard)
    return convention if convention[0] in names else None


def exposed(model: ModelProto, names: list[str]) -> ModelProto:
    """A copy of ``model`` with ``names`` also graph outputs (typed declarations move to the output list)."""
    copy = ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    present = {o.name for o in graph.output}
    wanted = [n for n in names if n not in present]
    if not wanted:
        return copy
    declared = {vi.name: vi for vi in graph.value_info}
    inferred = _inferred_values(copy)
    keep = [vi for vi in graph.value_info if vi.name not in wanted]
    outputs = []
    quantizers = None
    for name in wanted:
        vi = declared.get(name) or inferred.get(name)
        if vi is None or not vi.type.tensor_type.elem_type:
            quantizers = _quantizer_output_types(graph) if quantizers is None else quantizers
            if name in quantizers:  # a runtime returns a 4-bit or float8 output only when told its type
                vi = helper.make_tensor_value_info(name, quantizers[name], None)
        outputs.append(_output_info(name, vi))
    del graph.value_info[:]
    graph.value_info.extend(keep)
    graph.output.extend(outputs)
    return copy


def _quantizer_output_types(graph: onnx.GraphProto) -> dict[str, int]:
    """The element type of each QuantizeLinear / DequantizeLinear output that onnx's inference cannot give (the
    com.microsoft ones onnxruntime's quantizer writes for 4- and 16-bit storage before opset 21): a
    QuantizeLinear writes its zero point's type, a DequantizeLinear its scale's, an initializer or a Constant."""
    stored = {t.name: plain_data_type(t.data_type) for t in graph.initializer}
    stored.update((node.output[0], plain_data_type(a.t.data_type)) for node in graph.node  # torch's Constant nodes
                  if node.op_type == "Constant" and node.output for a in node.attribute if a.name == "value")
    out = {}
    for node in graph.node:
        at = {"QuantizeLinear": 2, "DequantizeLinear": 1}.get(node.op_type)
        if at is not None and len(node.input) > at and node.input[at] in stored and node.output:
            out[node.output[0]] = stored[node.input[at]]
    return out


def _output_info(name: str, vi: ValueInfoProto | None) -> ValueInfoProto:
    out = ValueInfoProto()
    if vi is not None:
        out.CopyFrom(vi)
    else:
        out.CopyFrom(helper.make_empty_tensor_value_info(name))
    out.name = name
    return out


def _inferred_values(model: ModelProto) -> dict[str, ValueInfoProto]:
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception:  # without inference an output is declared without a type; runtimes still return it
        return {}
    graph = inferred.graph
    return {vi.name: vi for vi in (*graph.value_info, *graph.output, *graph.input)}


def _elem_types(model: ModelProto) -> dict[str, int]:
    """Every main-graph tensor's element type, declared or inferred."""
    return {name: vi.type.tensor_type.elem_type for name, vi in _inferred_values(model).items()
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type} | \
        {t.name: t.data_type for t in model.graph.initializer}


def all_names(model: ModelProto) -> set[str]:
    """Every tensor name of ``model`` and its subgraphs."""
    names: set[str] = set()
    for _, graph in iter_graphs(model):
        names.update(t.name for t in graph.initializer)
        for kind in ("input", "output", "value_info"):
            names.update(vi.name for vi in getattr(graph, kind))
        for node in graph.node:
            names.update(node.input)
            names.update(node.output)
    names.discard("")
    return names


def _rename(model: ModelProto, mapping: Mapping[str, str]) -> None:
    """Rename tensors everywhere at once (a swap is two entries); subgraphs read outer names, so they follow."""
    if not mapping:
        return
    for _, graph in iter_graphs(model):
        for node in graph.node:
            for k, name in enumerate(node.input):
                if name in mapping:
                    node.input[k] = mapping[name]
            for k, name in enumerate(node.output):
                if name in mapping:
                    node.output[k] = mapping[name]
        for kind in ("input", "output", "value_info"):
            for vi in getattr(graph, kind):
                if vi.name in mapping:
                    vi.name = mapping[vi.name]
