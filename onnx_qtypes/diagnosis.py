"""Check the model a user has, typed or as a quantizer wrote it.

    result = onnx_qtypes.diagnose("model.qdq.onnx", profile="tflite-int8")

A typed model goes to the checker as it is. A model with QuantizeLinear /
DequantizeLinear or QOperator quantization but no quantized types is lifted
in memory, tolerantly: every node or pair the lift finds malformed (a scale
of 0, a DequantizeLinear disagreeing with its QuantizeLinear, ...) becomes a
finding of the rule it breaks, and what is well formed is typed and checked
by every rule that a QDQ file can break (``Rule.typed_only`` rules stay
quiet). Each finding is located in the user's file, never in the in-memory
lifted form: a type's scale is the scale input of the node that applies it,
a node is the node it was lifted from. Subgraphs (If branches, Loop and Scan
bodies) are not lifted, but the parameters of their quantization nodes are
read all the same, and each malformed one is a finding located in the
subgraph. A typed model's quantization nodes that no type covers (a lift
keeps one whose scale no type holds as written) have their parameters read
the same way. The user's file is never written.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Iterator
from typing import Any

import onnx
from onnx import GraphProto, ModelProto, NodeProto

from onnx_qtypes.checker import Diagnostic, Location, Rule, Severity, all_rules, get_rule, iter_diagnostics, load_profile
from onnx_qtypes.checker.op_versions import file_problems
from onnx_qtypes.checker.engine import ModelLike, ProfileLike, as_model, collector_paused, in_file, in_read_file
from onnx_qtypes.interop.duplicate_initializers import repeated_names
from onnx_qtypes.interop.errors import MalformedQDQError
from onnx_qtypes.interop.graph import ORIGIN_KEY, GraphIndex, declared_types, default_opset
from onnx_qtypes.interop.left import summary as summary_of_left
from onnx_qtypes.interop.lift import LiftResult, lift_model
from onnx_qtypes.interop.qoperator import operands, spec_for
from onnx_qtypes.interop.recognise import is_dequantize, is_quantize, recognise
from onnx_qtypes.proto import iter_declarations, iter_graphs
from onnx_qtypes.proto.errors import MalformedExtensionError, ModelLoadError
from onnx_qtypes.proto.encoding import marked_storage
from onnx_qtypes.proto.external import spill_folder
from onnx_qtypes.proto.model import may_declare_extension, read_view
from onnx_qtypes.proto.reader import ReadModel

_NODE = re.compile(r"^/graph/node/(\d+)(/.*)?$")
_DECLARATION = re.compile(r"^/graph/(input|output|value_info)/(\d+)(/type/tensor_type/(.*))?$")
_INITIALIZER = re.compile(r"^/graph/initializer/(\d+)(/.*)?$")


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    """Every finding of one model, located in the file as given, and what the reader should know besides."""

    diagnostics: tuple[Diagnostic, ...]
    notes: tuple[str, ...] = ()
    form: str = "typed"  # "typed", or "qdq" for a model checked through its lifted form

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]


def diagnose(model: ModelLike, profile: ProfileLike = None, *, rules: Iterable[Rule] | None = None) -> Diagnosis:
    """Every finding of ``rules`` (None: all) in ``model`` (a path, bytes or ModelProto), typed or QDQ alike.

    Raises QTypesError when the model cannot be read (not a finding).
    """
    # tens of thousands of small objects and no cycles (checker.engine); weights the in-memory lift computes
    # (MatMulNBits repacked) wait in a temporary folder while they are checked
    with collector_paused(), spill_folder():
        read = as_model(model)
        try:
            found = _diagnose(read, load_profile(profile), None if rules is None else list(rules))
        except (ModelLoadError, MalformedExtensionError, MalformedQDQError) as exc:  # found while reading a part
            raise in_file(read.located(exc), read.source) from None
    if read.orders:  # a graph the reader sorted: every place back where the file has it
        found = dataclasses.replace(found, diagnostics=tuple(in_read_file(d, read) for d in found.diagnostics),
                                    notes=tuple(read.file_text(n) for n in found.notes))
    return found


def _diagnose(read: ReadModel, profile: Any, chosen: list[Rule] | None) -> Diagnosis:
    view = quantizer_view(read.model, graphs=read.graphs())  # the reader's walk of the graphs, not another
    if view is None:  # typed, or nothing quantized: located in the model as read, relocated by the caller
        as_read = ReadModel(read.model, read.source, walked=read.walked)
        found = list(iter_diagnostics(as_read, profile, rules=chosen)) if chosen != [] else []
        active = {r.id for r in (chosen if chosen is not None else all_rules())}
        found.extend(_problem_diagnostics(_untyped_node_problems(read.model, read.graphs()), profile, active))
        return Diagnosis(tuple(_unique(found)))
    result, where = view.result, view.locator
    active = [r for r in (chosen if chosen is not None else all_rules()) if not r.typed_only]
    problems = [(p, where) for p in result.problems] + list(view.subgraph_problems)
    found = list(_problem_diagnostics(problems, profile, {r.id for r in active}))
    if any(r.id == OPSET_RULE for r in active):  # the quantization nodes as the file writes them, not as lifted
        found.extend(_opset_diagnostics(read, profile))
        active = [r for r in active if r.id != OPSET_RULE]
    if result.typed_tensors or result.warnings:  # a node left as it was may still break a node rule (QT123)
        lifted = ReadModel(result.model, "<model>", qtypes=result.written)  # made by the lift from a model read already
        found.extend(where.relocate(d) for d in iter_diagnostics(lifted, profile, rules=active))
    if any(r.id == FLOAT_VIEW_RULE for r in active):
        found.extend(_merged_initializers(read, profile))
    return Diagnosis(tuple(_unique(found)), tuple(view.notes()), "qdq")


FLOAT_VIEW_RULE = "QT310"


def _merged_initializers(read: ReadModel, profile: Any) -> Iterator[Diagnostic]:
    """QT310 at each initializer the file defines twice with one value: the lift keeps one copy (as onnxruntime
    does), so the float view has nothing left for onnx.checker to refuse; onnx.checker, ``run`` and ``lower`` refuse
    the file itself."""
    rule = get_rule(FLOAT_VIEW_RULE)
    severity = profile.severity_of(rule.id, rule.severity)
    for name, where in repeated_names(read.model.graph).items():
        places = ", ".join(f"/graph/initializer/{k}" for k in where)
        message = (f"onnx.checker rejects the file: initializer {name!r} is defined {len(where)} times ({places}), "
                   "with one value; the lift and onnxruntime keep one copy, `run` refuses the file: define it once")
        yield Diagnostic(rule.id, rule.name, severity, message, Location(f"/graph/initializer/{where[1]}", tensor=name),
                         rule.help)


OPSET_RULE = "QT412"


def _opset_diagnostics(read: ReadModel, profile: Any) -> Iterator[Diagnostic]:
    """QT412 on every quantization node of the file as written (the lift folds most of them away)."""
    rule = get_rule(OPSET_RULE)
    severity = profile.severity_of(rule.id, rule.severity)
    for pointer, node, p in file_problems(read.model, read.graphs(), read.reads):
        location = Location(pointer + p.where, node=node.name or None, tensor=p.tensor, op_type=node.op_type)
        yield Diagnostic(rule.id, rule.name, severity, p.message, location, rule.help)


@dataclasses.dataclass(frozen=True)
class QuantizerView:
    """A QDQ / QOperator model's lifted form (``result.model``), and the way back to the file's places."""

    result: LiftResult
    locator: _Locator
    subgraph_problems: tuple[tuple[MalformedQDQError, _Locator], ...] = ()  # each with its subgraph's locator

    def other_warnings(self) -> list[str]:
        """The lift's warnings on anything but the nodes it left (those it names in ``result.left``)."""
        named = {n.label for n in self.result.left}
        return [w for w in self.result.warnings if not w.startswith(tuple(named))] if named else self.result.warnings

    def notes(self) -> list[str]:
        notes = [f"checked as its lifted form (in memory, the file is not changed): {self.result.summary()}"]
        if self.result.left:  # each node named, counted exactly by op type
            notes.append(f"the lift {summary_of_left(self.result.left)}, so no rule on types looks at them:")
            notes.extend(f"  {n.line()}" for n in self.result.left)
        others = self.other_warnings()
        if others:
            notes.append(f"the lift also says ({len(others)}; the parameters of quantization nodes inside subgraphs "
                         "are still checked):")
            notes.extend(f"  {w}" for w in others)
        return notes


def quantizer_view(model: ModelProto, *, graphs: list[tuple[str, GraphProto]] | None = None) -> QuantizerView | None:
    """The tolerant lift of a model with QDQ / QOperator quantization and no quantized types; None for a typed
    model or one with nothing quantized. ``model`` is not changed. ``graphs``: ``iter_graphs(model)`` when the
    caller has it (the reader's walk)."""
    graphs = list(iter_graphs(model)) if graphs is None else graphs
    if _is_typed(model, graphs):
        return None
    # read already: not again; lifted nodes keep the mark of their place in the file, for the locator
    result = lift_model(ReadModel(model, "<model>", walked=tuple(graphs)), tolerant=True, keep_origins=True)
    if not result.typed_tensors and not result.problems and not result.warnings and not result.left:  # a float model
        return None
    return QuantizerView(result, _Locator(model, result.model), tuple(_subgraph_problems(model, graphs)))


def _subgraph_problems(model: ModelProto, graphs: list[tuple[str, GraphProto]]
                       ) -> list[tuple[MalformedQDQError, _Locator]]:
    """The malformed parameters of the quantization nodes in every subgraph (which the lift leaves as they
    were), each with the locator of its subgraph. A parameter may be an initializer of an enclosing graph
    (the names are one scope): those the subgraph's quantization nodes read are visible to it."""
    subgraphs = [(pointer, graph) for pointer, graph in graphs if pointer != "/graph"
                 and any(is_quantize(n) or is_dequantize(n) or spec_for(n) for n in graph.node)]
    if not subgraphs:
        return []
    inferred = dict(iter_graphs(_inferred(model)))
    by_pointer = dict(graphs)
    found: list[tuple[MalformedQDQError, _Locator]] = []
    for pointer, graph in subgraphs:
        typed = inferred.get(pointer)
        ix = GraphIndex(_with_outer_parameters(graph, pointer, by_pointer),
                        declared_types(typed if typed is not None else graph), pointer, default_opset(model))
        problems = recognise(ix, tolerant=True).problems
        if problems:
            where = _Locator(model, None, graph=graph, root=pointer)
            found.extend((p, where) for p in problems)
    return found


def _untyped_node_problems(model: ModelProto, graphs: list[tuple[str, GraphProto]]
                           ) -> list[tuple[MalformedQDQError, _Locator]]:
    """The malformed parameters of a typed model's quantization nodes that no quantized type covers, read as a QDQ
    file's are (``recognise``), each with its graph's locator. A lift leaves such nodes where no type can stand
    (a scale of 0, infinity or NaN: proposal/spec/interop.md#lift-untypeable-scales), and they still run; a node
    writing or reading a typed tensor, or reading an initializer marked as typed storage (a boundary zero point
    in wire form), is a boundary, which the type rules check (QT307, QT301)."""
    picked = untyped_quantization_nodes(graphs)
    if not picked:
        return []
    inferred = dict(iter_graphs(_inferred(model)))
    by_pointer = dict(graphs)
    found: list[tuple[MalformedQDQError, _Locator]] = []
    opset = default_opset(model)
    for pointer, graph, chosen in picked:
        part = onnx.GraphProto()  # the nodes read, named at their places in the file; a graph input stays one
        part.node.extend(graph.node[i] for i in chosen)
        wanted = {name for i in chosen for name in graph.node[i].input}
        constants = [k for k, n in enumerate(graph.node) if n.op_type == "Constant" and not wanted.isdisjoint(n.output)]
        part.node.extend(graph.node[k] for k in constants)
        part.initializer.extend(t for t in graph.initializer if t.name in wanted)
        part.input.extend(vi for vi in graph.input if vi.name in wanted)
        typed = inferred.get(pointer)
        ix = GraphIndex(_with_outer_parameters(part, pointer, by_pointer),
                        declared_types(typed if typed is not None else graph), pointer, opset, chosen + constants)
        where = _Locator(model, None, graph=graph, root=pointer)
        for problem in recognise(ix, tolerant=True).problems:
            if problem.node is not None and problem.node < len(chosen):
                problem.node = chosen[problem.node]  # the node's place in its graph, not in the part read
                found.append((problem, where))
    return found


def untyped_quantization_nodes(graphs: list[tuple[str, GraphProto]]) -> list[tuple[str, GraphProto, list[int]]]:
    """(pointer, graph, node positions) of each graph of a typed model with quantization nodes that no quantized
    type covers (``_untyped_node_problems``): not writing or reading a typed tensor, nor reading an initializer
    marked as typed storage."""
    picked = []
    for pointer, graph in graphs:
        nodes = graph.node
        chosen = [i for i, n in enumerate(nodes) if is_quantize(n) or is_dequantize(n) or spec_for(n)]
        if chosen:
            ports = {i: _Locator.parameterized(nodes[i]) for i in chosen}
            typed = _quantized_declarations(graph, {name for names in ports.values() for name in names})
            typed.update(t.name for t in graph.initializer if marked_storage(t.data_type) is not None)
            chosen = [i for i in chosen if typed.isdisjoint(ports[i]) and typed.isdisjoint(nodes[i].input)]
        if chosen:
            picked.append((pointer, graph, chosen))
    return picked


def _quantized_declarations(graph: GraphProto, names: set[str]) -> set[str]:
    """Those of ``names`` that ``graph`` declares with a quantized type (a malformed extension counts: the checker
    reports it)."""
    typed = set()
    for vi in (*graph.input, *graph.output, *graph.value_info):
        if vi.name in names and vi.type.WhichOneof("value") == "tensor_type":
            try:
                if read_view(vi.type.tensor_type).HasField("quantization"):
                    typed.add(vi.name)
            except MalformedExtensionError:
                typed.add(vi.name)
    return typed


def _with_outer_parameters(graph: onnx.GraphProto, pointer: str, graphs: dict[str, onnx.GraphProto]
                           ) -> onnx.GraphProto:
    """``graph``, or a copy of it holding the initializers of its enclosing graphs that its quantization nodes
    read and that it does not define itself (a subgraph sees its enclosing scopes' names)."""
    wanted = {name for n in graph.node if is_quantize(n) or is_dequantize(n) or spec_for(n) for name in n.input[1:]}
    own = {t.name for t in graph.initializer} | {o for n in graph.node for o in n.output} | {i.name for i in graph.input}
    wanted -= own
    outer = [t for p, g in graphs.items() if pointer.startswith(p + "/") for t in g.initializer if t.name in wanted]
    if not outer:
        return graph
    copy = onnx.GraphProto()
    copy.CopyFrom(graph)
    seen: set[str] = set()
    for t in reversed(outer):  # the innermost enclosing graph's definition wins
        if t.name not in seen:
            seen.add(t.name)
            copy.initializer.append(t)
    return copy


def _inferred(model: ModelProto) -> ModelProto:
    """``model`` with the types and shapes onnx infers, in subgraphs too (the model itself when it cannot)."""
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception:  # an inference failure only costs shapes
        return model


def _is_typed(model: ModelProto, graphs: list[tuple[str, GraphProto]]) -> bool:
    """True when any declaration carries the extension (a quantized type or statistics), even a malformed one.
    ``graphs``: ``iter_graphs(model)``."""
    if not may_declare_extension(model, functions=True, graphs=graphs):
        return False
    for decl in iter_declarations(model):
        if decl.value_info.type.WhichOneof("value") != "tensor_type":
            continue
        try:
            view = read_view(decl.value_info.type.tensor_type)
        except MalformedExtensionError:
            return True  # the checker reports it, located
        if view.HasField("quantization") or view.HasField("statistics"):
            return True
    return False


def _unique(found: list[Diagnostic]) -> list[Diagnostic]:
    """One finding per rule, location and message: a shared scale read by several nodes is one fault."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for d in found:
        key = (d.rule, d.location.pointer, d.message)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def _problem_diagnostics(
    problems: list[tuple[MalformedQDQError, _Locator]], profile: Any, active: set[str]
) -> Iterable[Diagnostic]:
    """The lift's problems, each with the locator of its graph, as findings: one per rule, graph and parameter,
    the other nodes applying it related."""
    groups: dict[tuple[str, str, str], list[tuple[MalformedQDQError, _Locator]]] = {}
    for p, where in problems:
        rule = p.rule or "QT307"
        parameter = p.parameter if p.parameter and p.parameter not in _ATTRIBUTES else f"{p.tensor}@{p.node}"
        groups.setdefault((rule, where.root, parameter), []).append((p, where))
    for (rule_id, _, _), group in groups.items():
        if rule_id not in active:
            continue
        rule = get_rule(rule_id)
        (first, where), *others = group
        location = where.at_problem(first)
        related = tuple(w.at_problem(p) for p, w in others)
        severity = profile.severity_of(rule.id, rule.severity)
        yield Diagnostic(rule.id, rule.name, severity, _message(first, location.tensor), location, rule.help, related)


_ATTRIBUTES = ("axis", "block_size", "output_dtype")
_LABEL = re.compile(r"^[^(]*\(/graph(/node/\d+/attribute/\d+/(g|graphs/\d+))*/node/\d+\), ")


def _message(problem: MalformedQDQError, located: str | None) -> str:
    """The lift's message less the node label in front, and less the tensor when the location names that one
    (``located``; a scale input's location names the scale)."""
    text = _LABEL.sub("", str(problem), count=1)
    named = f"tensor {problem.tensor!r}: " if problem.tensor and problem.tensor == located else None
    return text[len(named):] if named and text.startswith(named) else text


class _Locator:
    """Maps places in the lifted form back to the user's file; or, for a subgraph (``graph`` at JSON pointer
    ``root``, not lifted: ``lifted`` None), the problems found in it to its places."""

    def __init__(self, original: ModelProto, lifted: ModelProto | None, *, graph: GraphProto | None = None,
                 root: str = "/graph") -> None:
        # The maps below are built on the first finding to place (a clean model has none); neither model changes
        # while it is checked.
        self.graph = original.graph if graph is None else graph
        self.root = root
        self.lifted_graph = GraphProto() if lifted is None else lifted.graph

    @functools.cached_property
    def nodes(self) -> list[NodeProto]:
        return list(self.graph.node)

    @functools.cached_property
    def lifted_nodes(self) -> list[NodeProto]:
        return list(self.lifted_graph.node)

    @functools.cached_property
    def lifted_declarations(self) -> dict[str, list[str]]:
        return {kind: [vi.name for vi in getattr(self.lifted_graph, kind)] for kind in ("input", "output", "value_info")}

    @functools.cached_property
    def lifted_initializers(self) -> list[str]:
        return [t.name for t in self.lifted_graph.initializer]

    @functools.cached_property
    def declarations(self) -> dict[str, str]:
        declarations: dict[str, str] = {}
        for kind in ("value_info", "output", "input"):  # the interface wins
            for k, vi in enumerate(getattr(self.graph, kind)):
                declarations[vi.name] = f"{self.root}/{kind}/{k}"
        return declarations

    @functools.cached_property
    def initializers(self) -> dict[str, str]:
        return {t.name: f"{self.root}/initializer/{k}" for k, t in enumerate(self.graph.initializer)}

    @functools.cached_property
    def producer(self) -> dict[str, int]:
        return {name: i for i, n in enumerate(self.nodes) for name in n.output if name}

    @functools.cached_property
    def names(self) -> set[str]:
        names = set(self.producer) | set(self.initializers) | set(self.declarations)
        names.update(name for n in self.nodes for name in n.input if name)
        return names

    @functools.cached_property
    def appliers(self) -> dict[str, list[int]]:
        """Tensor -> the nodes that apply its parameters: its QuantizeLinear first, then readers."""
        appliers: dict[str, list[int]] = {}
        for i, node in enumerate(self.nodes):
            for name in self.parameterized(node):
                appliers.setdefault(name, []).append(i)
        return appliers

    @staticmethod
    def parameterized(node: NodeProto) -> list[str]:
        """Tensors whose quantization parameters ``node`` applies (integer names, and the float names a folded
        tensor may take: the QuantizeLinear's input, the DequantizeLinear's output)."""
        if is_quantize(node) or is_dequantize(node):  # a node missing its input or output names none of them
            return [n for n in (*node.input[:1], *node.output[:1]) if n]
        spec = spec_for(node)
        if spec is None:
            return []
        names = [node.input[o.data] for o in operands(spec, node) if len(node.input) > o.data]
        if spec.output and node.output:
            names.append(node.output[0])
        return [n for n in names if n]

    def _parameter_input(self, i: int, tensor: str, field: str) -> int | None:
        """The input of node ``i`` that holds ``field`` ("scale" / "zero_point") of ``tensor``'s parameters."""
        node = self.nodes[i]
        if is_quantize(node) or is_dequantize(node):
            position = {"scale": 1, "zero_point": 2}[field]
            return position if len(node.input) > position and node.input[position] else None
        spec = spec_for(node)
        if spec is None:
            return None
        for o in operands(spec, node):
            if len(node.input) > o.data and node.input[o.data] == tensor:
                position = o.scale if field == "scale" else o.zero_point
                return position if len(node.input) > position and node.input[position] else None
        if spec.output and node.output and node.output[0] == tensor:
            position = spec.output[0 if field == "scale" else 1]
            return position if len(node.input) > position and node.input[position] else None
        return None

    # -- places ----------------------------------------------------------------------------------------
    def node(self, i: int, rest: str = "") -> Location:
        node = self.nodes[i]
        pointer = f"{self.root}/node/{i}{rest}"
        tensor = None
        if m := re.fullmatch(r"/(input|output)/(\d+)", rest):
            names = node.input if m.group(1) == "input" else node.output
            k = int(m.group(2))
            tensor = names[k] if k < len(names) else None
        return Location(pointer, node=node.name or None, tensor=tensor, op_type=node.op_type)

    def parameter(self, i: int, tensor: str | None, parameter: str | None) -> Location:
        """Node ``i`` at the input or attribute holding ``parameter`` (a tensor name or an attribute name)."""
        node = self.nodes[i]
        if parameter:
            if parameter in node.input:  # QLinearConcat reads its output's scale first
                return self.node(i, f"/input/{list(node.input).index(parameter)}")
            for a, attribute in enumerate(node.attribute):
                if attribute.name == parameter:
                    return dataclasses.replace(self.node(i, f"/attribute/{a}"), tensor=tensor)
        return dataclasses.replace(self.node(i), tensor=tensor)

    def at_problem(self, problem: MalformedQDQError) -> Location:
        if problem.node is None or problem.node >= len(self.nodes):
            return Location(self.root, tensor=problem.tensor)
        return self.parameter(problem.node, problem.tensor, problem.parameter)

    def _origin(self, k: int) -> int | None:
        node = self.lifted_nodes[k]
        for entry in node.metadata_props:
            if entry.key == ORIGIN_KEY:
                return int(entry.value)
        for name in node.output:  # made by the lift (a QOperator node expanded): the node writing its outputs
            if name in self.producer:
                return self.producer[name]
        return None

    def place(self, location: Location) -> Location:
        """``location`` in the lifted form -> the same place in the user's file."""
        pointer = location.pointer
        if m := _NODE.match(pointer):
            origin = self._origin(int(m.group(1)))
            if origin is not None:
                rest = m.group(2) or ""
                stamped = any(e.key == ORIGIN_KEY for e in self.lifted_nodes[int(m.group(1))].metadata_props)
                if not stamped and re.fullmatch(r"/(input|output)/\d+", rest):
                    rest = ""  # an expanded node's positions are not its QOperator node's
                if "/node/" in rest:  # a node of a subgraph, which the lift copies as it is: the rule named it
                    return dataclasses.replace(location, pointer=f"{self.root}/node/{origin}{rest}")
                return self.node(origin, rest)
        elif m := _DECLARATION.match(pointer):
            kind, k, field = m.group(1), int(m.group(2)), m.group(4) or ""
            names = self.lifted_declarations[kind]
            tensor = names[k] if k < len(names) else location.tensor
            if tensor is not None:
                return self._declared(tensor, field)
        elif m := _INITIALIZER.match(pointer):
            k = int(m.group(1))
            name = self.lifted_initializers[k] if k < len(self.lifted_initializers) else None
            if name in self.initializers:
                return Location(self.initializers[name] + (m.group(2) or ""), tensor=name)
        return self._fallback(location)

    def _declared(self, tensor: str, field: str) -> Location:
        """A field of lifted tensor ``tensor``'s type -> the node input or attribute that states it in the file."""
        appliers = self.appliers.get(tensor, [])
        writers = [i for i in appliers if is_quantize(self.nodes[i]) or self.nodes[i].output[:1] == [tensor]]
        if appliers:
            i = (writers or appliers)[0]
            part = field.split("/")[1] if field.startswith("quantization/") and "/" in field else ""
            if part in ("scale", "zero_point"):
                position = self._parameter_input(i, tensor, part)
                if position is not None:
                    return self.node(i, f"/input/{position}")
            if part in ("axis", "block_size"):
                return self.parameter(i, tensor, part)
            return dataclasses.replace(self.node(i), tensor=tensor if tensor in self.names else None)
        if tensor in self.declarations:
            return Location(self.declarations[tensor], tensor=tensor)
        return self._fallback(Location("", tensor=tensor))

    def stored_as(self, tensor: str) -> tuple[str, Location]:
        """Lifted tensor ``tensor`` as the file holds it: its integer tensor's name and the node applying its
        parameters (the QuantizeLinear writing it, else its first reader)."""
        location = self._declared(tensor, "")
        node = self.nodes[int(location.pointer.split("/")[3])] if _NODE.match(location.pointer) else None
        if node is not None and is_quantize(node):
            return node.output[0], location
        if node is not None and is_dequantize(node):
            return node.input[0], location
        return tensor, location

    def _fallback(self, location: Location) -> Location:
        tensor = location.tensor if location.tensor in self.names else None
        if tensor is not None and tensor in self.producer:
            return dataclasses.replace(self.node(self.producer[tensor]), tensor=tensor)
        if tensor is not None and tensor in self.initializers:
            return Location(self.initializers[tensor], tensor=tensor)
        return Location("/graph", tensor=tensor)

    def relocate(self, d: Diagnostic) -> Diagnostic:
        location = self.place(d.location)
        related = tuple(self.place(r) for r in d.related)
        if d.rule in _BIAS_PARAMETER:
            at_parameter = self._bias_parameter(location, _BIAS_PARAMETER[d.rule])
            if at_parameter is not None:  # the value to fix; the node reading the bias stays in view
                location, related = at_parameter, (location, *related)
        return dataclasses.replace(d, location=location, related=related)

    def _bias_parameter(self, location: Location, position: int) -> Location | None:
        """A bias finding at a node input that a DequantizeLinear writes (QDQ form) -> that DequantizeLinear's
        input ``position`` (1: scale, 2: zero point), the parameter to fix; None when there is no such input."""
        m = _NODE.match(location.pointer)
        k = re.fullmatch(r"/input/(\d+)", m.group(2) or "") if m else None
        if m is None or k is None:
            return None
        inputs = self.nodes[int(m.group(1))].input
        writer = self.producer.get(inputs[int(k.group(1))]) if int(k.group(1)) < len(inputs) else None
        if writer is None or not is_dequantize(self.nodes[writer]):
            return None
        dq = self.nodes[writer]
        if len(dq.input) <= position or not dq.input[position]:
            return None
        return self.node(writer, f"/input/{position}")


# Bias rules (zero point, scale, granularity): the bias DequantizeLinear's input that holds the parameter at fault.
_BIAS_PARAMETER = {"QT404": 2, "QT405": 1, "QT406": 1}


__all__ = ["Diagnosis", "QuantizerView", "diagnose", "quantizer_view"]
