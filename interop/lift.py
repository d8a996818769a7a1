"""Lift a QDQ or QOperator model into typed form.

    typed = onnx_qtypes.lift("model.qdq.onnx")

Steps (each its own module): ``recognise`` finds every quantized tensor and
its type (and reports malformed pairs); ``expand`` rewrites QOperator nodes
as QDQ; ``fold`` removes the QuantizeLinear / DequantizeLinear pairs around
every float operator that is quantized on all sides; this module then
declares the types, restores what ``lower`` kept in metadata, attaches
calibration statistics and drops parameter tensors nothing reads any more.
Float graph inputs and outputs stay float, with QuantizeLinear /
DequantizeLinear at the edges. Nothing that is not understood is changed:
it stays as it was and a warning names the node.
"""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from collections.abc import Mapping
from typing import Any, Union

import numpy as np
from onnx import GraphProto, ModelProto, NodeProto, TensorProto, TensorShapeProto, ValueInfoProto, helper, numpy_helper

from onnx_qtypes.interop import duplicate_initializers, left, metadata, passed_constants, qonnx
from onnx_qtypes.interop.contrib_qdq import to_standard_domain
from onnx_qtypes.interop.dynamic import INTEGER_OPS, DynamicLift, lift_dynamic, owned
from onnx_qtypes.interop.errors import LowerError, MalformedQDQError, StatisticsImportError
from onnx_qtypes.interop.expand import Expanded, expand
from onnx_qtypes.interop.fold import Folded, fold
from onnx_qtypes.interop.graph import (MS_DOMAIN, PASSED_CONSTANT_OPS, QDQ_OPS, QONNX_DOMAINS, GraphIndex, Inferred, default_opset,
                                      infer, node_label, replace_nodes)
from onnx_qtypes.interop.inference import DeferredInference
from onnx_qtypes.interop.integer_clips import Narrowed, narrow_integer_clips
from onnx_qtypes.interop.integer_ops import FLOAT_OP as INTEGER_FLOAT_OP, IntegerLift, lift_integer_ops
from onnx_qtypes.interop.matmul_nbits import ContribRead, ensure_domain, from_contrib_op, read_contrib_weights
from onnx_qtypes.interop.lower import RANGE_ROLE, RANGE_ROLE_KEY, range_bounds
from onnx_qtypes.interop.ort_statistics import load_calibration_cache, statistics_from_tensors_data
from onnx_qtypes.interop.qoperator import MICROSOFT as QOPERATOR_MICROSOFT, STANDARD as QOPERATOR_STANDARD, spec_for
from onnx_qtypes.interop.recognise import QDQ_DOMAINS, is_dequantize, is_quantize, recognise
from onnx_qtypes.interop.pad_constants import own_pad_constants
from onnx_qtypes.interop.shared_bias import split_shared_biases
from onnx_qtypes.interop.source import read_copy
from onnx_qtypes.proto import iter_graphs, quantized_tensors, static_shape, write_qtype
from onnx_qtypes.proto.model import iter_node_graphs
from onnx_qtypes.proto.default_domain import STANDARD_DOMAINS
from onnx_qtypes.proto.encoding import marker, to_wire_form
from onnx_qtypes.proto.external import varint
from onnx_qtypes.proto.graph_order import Order, file_text
from onnx_qtypes.proto.errors import MalformedExtensionError, ModelLoadError, QTypeError
from onnx_qtypes.proto.model import may_declare_extension, write_statistics
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.reader import ReadModel, WrittenTypes, placed_in_file
from onnx_qtypes.proto.statistics import TensorStatistics


class LiftWarning(UserWarning):
    """Something the lift left as it was (the message names the node)."""


@dataclasses.dataclass
class LiftResult:
    model: ModelProto
    notes: list[str] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    typed_tensors: int = 0
    removed_quantize: int = 0
    removed_dequantize: int = 0
    qoperator_nodes: int = 0
    statistics: int = 0
    problems: list[MalformedQDQError] = dataclasses.field(default_factory=list)  # tolerant lifts only
    left: list[left.LeftNode] = dataclasses.field(default_factory=list)  # quantization nodes of the file still there
    # the QType of each typed declaration the lift wrote without statistics, by its QuantizedType's bytes, and those
    # declarations decoded (WrittenTypes.declared): the checker's index of the lifted model takes these instead of
    # decoding them again (checker/context.py)
    written: WrittenTypes = dataclasses.field(default_factory=WrittenTypes, repr=False, compare=False)

    def summary(self) -> str:
        if not self.typed_tensors:
            return f"nothing lifted; {left.summary(self.left)}" if self.left else "no quantization lifted"
        parts = [
            f"{self.typed_tensors} quantized tensor(s) typed",
            f"{self.removed_quantize} QuantizeLinear and {self.removed_dequantize} DequantizeLinear folded",
        ]
        if self.qoperator_nodes:
            parts.append(f"{self.qoperator_nodes} QOperator node(s) lifted")
        if self.statistics:
            parts.append(f"statistics on {self.statistics} tensor(s)")
        return ", ".join(parts)


# a mapping of tensor names to TensorStatistics, a calibration JSON path, or an onnxruntime TensorsData
StatisticsSource = Union[Mapping[str, TensorStatistics], str, os.PathLike, Any]


def lift(model: ModelProto | str | os.PathLike | bytes, *, statistics: StatisticsSource | None = None) -> ModelProto:
    """The typed form of a QDQ / QOperator model (a new ModelProto; ``model`` is not changed).

    ``statistics``: onnxruntime calibration results to attach — a path to its
    calibration JSON, a ``TensorsData``, or a mapping of tensor names to
    TensorStatistics. Warnings (nodes left as they were) are issued as
    LiftWarning; ``lift_model`` returns them instead.
    """
    result = lift_model(model, statistics=statistics)
    for message in result.warnings:
        warnings.warn(message, LiftWarning, stacklevel=2)
    return result.model


def _statistics(source: StatisticsSource | None) -> dict[str, TensorStatistics]:
    if source is None:
        return {}
    if isinstance(source, (str, os.PathLike)):
        return load_calibration_cache(source)
    return statistics_from_tensors_data(source)


def _has_values(stats: TensorStatistics) -> bool:
    """Whether ``stats`` records anything (onnxruntime's Percentile output keeps only two bin counts: nothing)."""
    empty = TensorStatistics().tensor
    return bool(stats.per_axis) or (stats.tensor is not None and stats.tensor != empty and any(
        v not in (None, ()) for v in dataclasses.astuple(stats.tensor)))


def lift_model(
    model: ModelProto | str | os.PathLike | bytes,
    *,
    statistics: StatisticsSource | None = None,
    tolerant: bool = False,
    keep_origins: bool = False,
) -> LiftResult:
    """``lift`` with its report: notes, warnings and counts.

    ``tolerant``: every malformed node or pair goes into ``problems`` (each a MalformedQDQError naming its
    rule, node, tensor and parameter) and is left as it was, instead of the first one being raised; what is
    well formed is lifted. ``check`` reads a QDQ model so.
    ``keep_origins``: every main-graph node of the lifted model that comes from the file keeps the mark of its
    position there (``interop.graph.ORIGIN_KEY``), by which ``check`` places its findings in the file.
    """
    # a model the reader walked and found without subgraphs: its copy has none either
    flat = isinstance(model, ReadModel) and model.walked is not None and len(model.walked) == 1
    source, where, orders = read_copy(model, "lift")
    # where the reader sorted a graph, every place the report names is put back where the file has it (``check``,
    # which keeps the origins, places its findings and notes itself)
    placed = {} if keep_origins else orders
    try:
        result, declared = _lift(source, _statistics(statistics), tolerant, keep_origins, flat)
        # the typed model carries the fail-closed markers (the declarations the lift wrote are not read again,
        # unless a name is declared twice: then which of them is typed is for each declaration to say)
        graph = result.model.graph
        names = [vi.name for vi in (*graph.input, *graph.output, *graph.value_info)]
        to_wire_form(result.model, main_graph_storage=declared if len(set(names)) == len(names) else None)
        return _at_file_places(result, placed)
    except (MalformedQDQError, StatisticsImportError, LowerError, MalformedExtensionError, ModelLoadError) as exc:
        raise placed_in_file(exc, where, placed) from None  # (a MalformedQDQError keeps what it locates)


def _at_file_places(result: LiftResult, orders: Order) -> LiftResult:
    """``result`` naming the nodes of a graph the reader sorted at their places in the file."""
    if not orders:
        return result
    main = orders.get("/graph")
    result.notes = [file_text(n, orders) for n in result.notes]
    result.warnings = [file_text(w, orders) for w in result.warnings]
    left = [dataclasses.replace(n, index=main[n.index] if main else n.index, reason=file_text(n.reason, orders))
            for n in result.left]
    result.left = sorted(left, key=lambda n: n.index)  # in file order
    return result  # (``problems``, for ``check``: in the graph as read, as their node indices are)


def _lift(model: ModelProto, stats: dict[str, TensorStatistics], tolerant: bool = False, keep_origins: bool = False,
          flat: bool = False) -> tuple[LiftResult, dict[str, int] | None]:
    """The lift, and the storage type of every tensor it declared quantized (None for a model typed already).
    ``flat``: the model is known to have no subgraphs (its graphs are not walked again to find them)."""
    result = LiftResult(model)
    # (quantized_tensors decodes nothing when no declaration may hold the extension: asked here of the main graph,
    # without the walk for subgraphs it makes first)
    if (not flat or may_declare_extension(model, graphs=[("/graph", model.graph)])) and quantized_tensors(model):
        result.notes.append("the model is already typed; nothing to lift")
        return result, None
    carried = left.stamp(model.graph)  # every node's place in the file, for the report of what stays
    reasons: dict[int, str] = {}
    try:
        typed = _lift_body(model, stats, tolerant, result, reasons, carried)  # the quantized types now declared
        result.left = left.collect(model.graph, set(typed), {**_named(result.warnings), **reasons})
    finally:
        if not keep_origins:
            left.strip(model.graph)
    if result.left:
        result.notes.append(left.summary(result.left))
    elif not result.warnings and not result.typed_tensors and not result.statistics:
        result.notes.append("the model has no quantization; it lifts to itself")
    return result, typed


_NAMED = re.compile(r"^(?:[\w.]+ )?(?:'.*' )?\(/graph/node/(\d+)\): (.*?)(?:; left as it was)?$", re.S)


def _named(messages: list[str]) -> dict[int, str]:
    """Node position in the file -> the reason a warning gives for leaving it (warnings name nodes by label)."""
    found: dict[int, str] = {}
    for message in messages:
        if (m := _NAMED.match(message)) is not None:
            found.setdefault(int(m.group(1)), m.group(2))
    return found


def _lift_body(model: ModelProto, stats: dict[str, TensorStatistics], tolerant: bool, result: LiftResult,
               reasons: dict[int, str], carried: bool = True) -> dict[str, int]:
    """The lift's steps, in place; returns the tensors it declared quantized, with their storage data types.
    ``carried``: whether a node of the file carried metadata of its own (``left.stamp``).

    A step runs only when the graph holds what it rewrites (``_Kinds``): every other step would leave the graph as
    it is and say nothing, and a QDQ file of thousands of nodes would be walked once per step to find that out."""
    kinds = _Kinds(model)
    names = [t.name for t in model.graph.initializer]
    if len(set(names)) != len(names):  # onnx-neural-compressor's shared biases
        result.notes.extend(duplicate_initializers.merge_duplicates(model.graph))
    # com.microsoft used without its import (QT313): read as version 1, before a step reads such a node as another
    missing = ensure_domain(model) if kinds.any(lambda op, domain: domain == MS_DOMAIN) else None
    if missing is not None:
        result.notes.append(str(missing))
    if kinds.any(lambda op, domain: domain == MS_DOMAIN and op in QDQ_OPS):
        result.notes.extend(to_standard_domain(model))  # com.microsoft Q / DQ: the standard ones, as run executes them
    if kinds.any(lambda op, domain: domain in QONNX_DOMAINS):
        from_qonnx = qonnx.rewrite(model)  # QONNX Quant nodes -> their QDQ form, lifted below like any other
        result.warnings.extend(from_qonnx.warnings)
        result.notes.extend(from_qonnx.notes)
        if from_qonnx.quant_nodes:
            result.notes.append(f"{from_qonnx.quant_nodes} QONNX Quant node(s) read as quantized types")
    graph = model.graph
    contrib = ContribRead([], [], [], 0)  # what read_contrib_weights says of a graph without com.microsoft nodes
    if kinds.any(lambda op, domain: domain == MS_DOMAIN):
        contrib = read_contrib_weights(model)  # MatMulNBits -> blocked DequantizeLinear + MatMul
        result.notes.extend(contrib.notes)
        result.warnings.extend(contrib.warnings)
    if kinds.any(lambda op, domain: op in QOPERATOR_STANDARD or op in QOPERATOR_MICROSOFT):  # (spec_for's tables)
        result.notes.extend(split_shared_biases(model))  # one int32 bias read at several scales: a copy per scale
    if kinds.any(lambda op, domain: op == "Pad"):
        result.notes.extend(own_pad_constants(model))  # a Pad padding with a zero point other nodes read: a copy
    declared = _metadata(graph)
    clip_bounds = _drop_range_clips(graph, declared) if kinds.any(lambda op, domain: op == "Clip") else set()
    narrowed = Narrowed()
    if kinds.any(lambda op, domain: op in ("Clip", "Cast")):
        narrowed = narrow_integer_clips(model)  # QCDQ: Clip / widening Cast on the stored integers
        result.notes.extend(narrowed.notes)
    dynamic = DynamicLift()
    if kinds.any(lambda op, domain: op in INTEGER_OPS or op == "DynamicQuantizeLinear"):
        dynamic = lift_dynamic(model)  # quantize_dynamic's integer ops -> float ops on dynamic types
    integer = IntegerLift()
    if kinds.any(lambda op, domain: op in INTEGER_FLOAT_OP):
        integer = lift_integer_ops(model, skip=set(dynamic.types))  # ConvInteger / MatMulInteger, static zero points
    dynamic.types.update(integer.types)
    dynamic.parameters |= integer.parameters
    dynamic.lifted += integer.lifted
    ix = GraphIndex(graph, DeferredInference(model), opset=default_opset(model))
    left_integer = {ix.label(i): why for i, why in integer.left} if integer.left else {}
    reasons.update((left.origin(ix.nodes[i]), why) for i, why in integer.left if left.origin(ix.nodes[i]) is not None)
    rec = recognise(ix, tolerant)
    for i, why in rec.left.items():  # a step before recognise (integer_ops) may have said more precisely why
        if (at := left.origin(ix.nodes[i])) is not None:
            reasons.setdefault(at, why)
    result.problems = ([missing] if tolerant and missing else []) + (contrib.problems if tolerant else [])
    result.problems += rec.problems
    kept = tuple(f"{label}:" for label in (*owned(ix, dynamic), *left_integer))
    result.warnings.extend(f"{label}: {why}; left as it was" for label, why in left_integer.items())
    result.warnings.extend(w for w in rec.warnings if not (kept and w.startswith(kept)))
    if ix.has_subgraphs:  # (the index has seen every node: without subgraphs, nothing to walk)
        result.warnings.extend(_subgraph_warnings(model))
    if not rec.types and not dynamic.types:
        _attach_float_statistics(graph, stats, result)
        return {}
    expanded = expand(ix, rec)
    parameter_names = (_parameter_names(ix) | {t.name for t in expanded.initializers} | clip_bounds | dynamic.parameters
                       | narrowed.unread)
    if _unchanged(expanded, ix):  # plain QDQ: nothing was expanded, the index of the graph still holds
        work = ix
    else:
        replace_nodes(graph, expanded.nodes)
        graph.initializer.extend(expanded.initializers)
        work = GraphIndex(graph, infer(model) if expanded.qlinear or expanded.synthetic else _reuse(ix))
    folded = fold(work, expanded.roles, expanded.keep_output_name, rec.types)
    folded.aliases.update(expanded.synthetic)
    replace_nodes(graph, folded.nodes)

    final = GraphIndex(graph)
    types = {name: qtype for name, qtype in {**dynamic.types, **folded.types}.items() if name in final.tensor_names()}
    types = _restore_declared(types, folded, declared, result)
    types = _narrow(types, folded, narrowed.ranges)
    targets = _statistics_targets(final, types, folded, stats, declared, result)
    declared = _declare(graph, final, work, types, folded, targets, result.written)
    named = {n for t in types.values() for n in (t.scale_tensor, t.zero_point_tensor) if n}  # by reference
    passed_constants.materialise(graph, final)  # kept Q / DQ read torch.onnx's Identity(Constant) parameters plainly
    _drop_unused(model, final, parameter_names - named)

    result.typed_tensors = len(types)
    source_nodes = folded.removed - expanded.invented
    if carried or contrib.unfused:  # (only unfuse marks a node from_contrib_op, unless the file's nodes carry marks)
        source_nodes = {i for i in source_nodes if not from_contrib_op(work.nodes[i])}
    result.removed_quantize = sum(1 for i in source_nodes if expanded.roles[i] == "q")
    result.removed_dequantize = len(source_nodes) - result.removed_quantize + dynamic.dequantize_removed
    result.qoperator_nodes = expanded.qlinear + contrib.unfused + dynamic.lifted
    result.statistics = len(targets)
    forms = [f for f, n in (("qoperator", expanded.qlinear + dynamic.lifted), ("matmulnbits", contrib.unfused)) if n]
    metadata.record_form(model, forms[0] if len(forms) == 1 else None)  # lower's default form: the original's
    return declared


class _Kinds:
    """The (op type, domain) pairs of the main graph's nodes, read again only after a step that ran (it may have changed
    them)."""

    def __init__(self, model: ModelProto) -> None:
        self.model = model
        self.pairs: set[tuple[str, str]] | None = None

    def any(self, test) -> bool:  # noqa: ANN001 - (op_type, domain) -> bool
        """Whether a node passes ``test``; when one does, the caller runs its step and the pairs are read again."""
        if self.pairs is None:
            self.pairs = {(n.op_type, n.domain) for n in self.model.graph.node}
        found = any(test(op, domain) for op, domain in self.pairs)
        if found:
            self.pairs = None
        return found


def _narrow(types: dict[str, QType], folded: Folded, ranges: dict[str, tuple[int, int]]) -> dict[str, QType]:
    """The storage ranges the integer Clips said, on the types of their tensors (under their names after the fold)."""
    out = dict(types)
    for name, (lo, hi) in ranges.items():
        target = folded.aliases.get(name, name)
        if target in out:
            try:
                out[target] = out[target].replace(storage_min=lo, storage_max=hi)
            except QTypeError:  # a zero point outside [lo, hi]: typed as written, the checker reports it
                out[target] = out[target].replace(storage_min=lo, storage_max=hi, validate=False)
    return out


def _reuse(ix: GraphIndex) -> Inferred:
    return ix.inferred()


def _unchanged(expanded: Expanded, ix: GraphIndex) -> bool:
    """Whether ``expand`` kept every node of the indexed graph as it was (and added no parameters)."""
    return (not expanded.initializers and len(expanded.nodes) == len(ix.nodes)
            and all(a is b for a, b in zip(expanded.nodes, ix.nodes)))


def _subgraph_warnings(model: ModelProto) -> list[str]:
    """Each quantization node inside an If / Loop / Scan body, named (its main-graph node at its place in the file)."""
    found = []
    for k, node in enumerate(model.graph.node):
        if not node.attribute:
            continue
        at = left.origin(node)
        for pointer, graph in iter_node_graphs(f"/graph/node/{k if at is None else at}", node):
            found.extend(f"{node_label(n, j, pointer)}: in a subgraph, which the lift does not lift; left as it was"
                         for j, n in enumerate(graph.node) if left.is_quantization_node(n, set()))
    return found


def _parameter_names(ix: GraphIndex) -> set[str]:
    """Scale / zero-point inputs of every quantization node (candidates for removal once unread)."""
    names: set[str] = set()
    for node in ix.nodes:
        if node.op_type in QDQ_OPS and node.domain in QDQ_DOMAINS:  # is_quantize or is_dequantize, the fields read once
            names.update(node.input[1:3])
        elif (spec := spec_for(node)) is not None:
            positions = {p for o in spec.operands for p in (o.scale, o.zero_point)}
            if spec.variadic:
                positions = {p for p in range(len(node.input)) if p < 2 or (p - 2) % 3}
            if spec.output:
                positions.update(spec.output)
            names.update(n for p, n in enumerate(node.input) if p in positions)
    names.discard("")
    return names


def _declarations(graph: GraphProto) -> list[ValueInfoProto]:
    return [*graph.input, *graph.output, *graph.value_info]


def _metadata(graph: GraphProto) -> dict[str, dict[str, str]]:
    """onnx_qtypes metadata left by ``lower``, per tensor name."""
    found: dict[str, dict[str, str]] = {}
    for vi in _declarations(graph):
        entries = metadata.read(vi)
        if entries:
            found.setdefault(vi.name, {}).update(entries)
    return found


def _drop_range_clips(graph: GraphProto, declared: dict[str, dict[str, str]]) -> set[str]:
    """Remove the Clips ``lower`` put before a QuantizeLinear to saturate at a narrowed storage range.

    Only when the QuantizeLinear's metadata still declares that range and the
    Clip's bounds are exactly its real bounds; the narrowed type then
    saturates there itself. Returns the names of the bound tensors.
    """
    if not any(node.op_type == "Clip" for node in graph.node):
        return set()  # nothing lower could have added: no index to build
    readers: dict[str, list[NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    constants = {t.name: t for t in graph.initializer}
    dropped: list[NodeProto] = []
    bounds: set[str] = set()
    for node in graph.node:
        role = {p.key: p.value for p in node.metadata_props}.get(RANGE_ROLE_KEY)
        if node.op_type != "Clip" or role != RANGE_ROLE or len(node.input) != 3:
            continue
        after = readers.get(node.output[0], [])
        if len(after) != 1 or not is_quantize(after[0]) or after[0].input[0] != node.output[0]:
            continue
        text = declared.get(after[0].output[0], {}).get(metadata.QTYPE_KEY)
        try:
            qtype = metadata.decode_qtype(text) if text else None
        except metadata.MetadataError:
            qtype = None
        if qtype is None or qtype.axis is not None or any(n not in constants for n in node.input[1:]):
            continue
        expected = range_bounds(qtype)
        found = [numpy_helper.to_array(constants[n]) for n in node.input[1:]]
        if not all(e.dtype == f.dtype and np.array_equal(e, f) for e, f in zip(expected, found)):
            continue
        after[0].input[0] = node.input[0]
        dropped.append(node)
        bounds.update(node.input[1:])
    if dropped:
        replace_nodes(graph, [n for n in graph.node if not any(n.name == d.name and n.output == d.output for d in dropped)])
    return bounds


def _decoded(name: str, entries: dict[str, str], key: str, decode, result: LiftResult):
    """The decoded metadata value under ``key``, or None (with a warning when it does not decode)."""
    text = entries.get(key)
    if text is None:
        return None
    try:
        return decode(text)
    except metadata.MetadataError as exc:
        result.warnings.append(f"tensor {name!r}: metadata {key} does not decode ({exc}); ignored")
        return None


def _restore_declared(
    types: dict[str, QType], folded: Folded, declared: dict[str, dict[str, str]], result: LiftResult
) -> dict[str, QType]:
    """Take schema and storage range from ``lower``'s metadata when the QDQ parameters agree with it."""
    out = dict(types)
    for name, qtype in types.items():
        origin = next((o for o in [name, *folded.origins.get(name, [])] if metadata.QTYPE_KEY in declared.get(o, {})), None)
        if origin is None:
            continue
        kept = _decoded(name, declared[origin], metadata.QTYPE_KEY, metadata.decode_qtype, result)
        if kept is None:
            continue
        if metadata.same_parameters(kept, qtype):
            out[name] = qtype.replace(schema=kept.schema, storage_min=kept.storage_min, storage_max=kept.storage_max)
        else:
            result.warnings.append(
                f"tensor {name!r}: metadata {metadata.QTYPE_KEY} says {kept} but its QuantizeLinear/"
                f"DequantizeLinear parameters say {qtype}; the nodes win, the metadata is ignored"
            )
    return out


def _statistics_targets(
    final: GraphIndex,
    types: dict[str, QType],
    folded: Folded,
    stats: dict[str, TensorStatistics],
    declared: dict[str, dict[str, str]],
    result: LiftResult,
) -> dict[str, TensorStatistics]:
    """Tensor name in the lifted model -> statistics to record there."""
    targets: dict[str, TensorStatistics] = {}
    for name, entries in declared.items():  # statistics kept by lower
        decoded = _decoded(name, entries, metadata.STATISTICS_KEY, metadata.decode_statistics, result)
        if decoded is None:
            continue
        target = folded.aliases.get(name, name)
        if target in types or target in final.tensor_names():
            targets[target] = decoded
    missing = []
    empty = [name for name, value in stats.items() if not _has_values(value)]
    if empty:
        shown = ", ".join(repr(m) for m in empty[:8]) + (", ..." if len(empty) > 8 else "")
        result.notes.append(f"statistics of {len(empty)} tensor(s) left out, the calibration data records no value "
                            f"for them (onnxruntime's Percentile result keeps only two bin counts): {shown}")
    for name, value in stats.items():
        if name in empty:
            continue
        target = _resolve(final, types, folded, name)
        if target is None:
            missing.append(name)
        else:
            targets[target] = value
    if missing:
        shown = ", ".join(repr(m) for m in missing[:8]) + (", ..." if len(missing) > 8 else "")
        result.notes.append(
            f"statistics of {len(missing)} tensor(s) not attached, the model has no such tensor "
            f"(the quantizer removed them): {shown}"
        )
    return targets


def _resolve(final: GraphIndex, types: dict[str, QType], folded: Folded, name: str) -> str | None:
    """Where statistics calibrated on float tensor ``name`` belong in the lifted model."""
    for _ in range(3):
        if name not in folded.aliases:
            break
        name = folded.aliases[name]
    if name in types:
        return name
    if name not in final.tensor_names():
        return None
    for c, j in final.consumers.get(name, []):  # a boundary QuantizeLinear reads it: its typed output
        node = final.nodes[c]
        if j == 0 and is_quantize(node) and node.output[0] in types:
            return node.output[0]
    p = final.producer.get(name)
    if p is not None and is_dequantize(final.nodes[p]) and final.nodes[p].input[0] in types:
        return final.nodes[p].input[0]
    return name


def _declare(
    graph: GraphProto,
    final: GraphIndex,
    work: GraphIndex,
    types: dict[str, QType],
    folded: Folded,
    statistics: dict[str, TensorStatistics],
    written: WrittenTypes,
) -> dict[str, int]:
    """Typed declarations for quantized tensors, statistics, and no stale entries; returns the tensors declared
    quantized, with their storage data types."""
    names = final.tensor_names()
    interface = {vi.name: vi for vi in (*graph.input, *graph.output)}
    kept = [_copy(vi) for vi in graph.value_info if vi.name in names and vi.name not in types and vi.name not in interface]
    docs = {vi.name: vi.doc_string for vi in graph.value_info if vi.doc_string}
    del graph.value_info[:]
    graph.value_info.extend(kept)
    for vi in _declarations(graph):
        metadata.strip(vi)
    order = [*final.initializers, *final.producer]  # the graph's names in order (its index holds them already)
    declared: dict[str, int] = {}
    shapes: dict[tuple[int | None, ...] | None, tuple[bytes, tuple | None]] = {}  # per shape: its bytes, as read
    typed = []
    for name in dict.fromkeys(n for n in order if n in types and n not in interface):
        typed.append(_typed_value_info(name, types[name], _shape(name, work, folded), docs.get(name, ""), shapes,
                                       written))
        declared[name] = types[name].storage_type.data_type
    graph.MergeFromString(b"".join(typed))  # appended in that order, in one parse
    for name, vi in interface.items():
        if name in types:
            write_qtype(vi, types[name])
            declared[name] = types[name].storage_type.data_type
    by_name = {vi.name: vi for vi in _declarations(graph)}
    for name, stats in statistics.items():
        vi = by_name.get(name)
        if vi is None:
            vi = graph.value_info.add()
            vi.CopyFrom(_float_value_info(name, work))
            by_name[name] = vi
        _fits_statistics(name, stats, _shape(name, work, folded) or static_shape(vi))
        if name in types:
            write_qtype(vi, types[name].with_statistics(stats))
            declared[name] = types[name].storage_type.data_type
        elif vi.type.tensor_type.elem_type != TensorProto.UNDEFINED:
            write_statistics(vi, stats)
    return declared


def _shape(name: str, work: GraphIndex, folded: Folded) -> tuple[int | None, ...] | None:
    for candidate in [name, *folded.origins.get(name, [])]:
        shape = work.shape(candidate)
        if shape is not None:
            return shape
    return None


def _typed_value_info(name: str, qtype: QType, shape: tuple[int | None, ...] | None, doc: str,
                      shapes: dict[tuple[int | None, ...] | None, tuple[bytes, tuple | None]],
                      written: WrittenTypes) -> bytes:
    """The declaration ``write_qtype`` makes of ``helper.make_tensor_value_info(name, storage, shape, doc)``, as the
    bytes of a GraphProto holding it alone (its type a TensorTypeView's fields, in their order: the marker, the
    shape, the quantization, the statistics); and, for the checker's index, its QType and decoded fields
    (``written``)."""
    if shape not in shapes:
        made = helper.make_tensor_type_proto(TensorProto.FLOAT, None if shape is None else list(shape)).tensor_type
        data = made.shape.SerializeToString()
        dims = TensorShapeProto.FromString(data).dim  # the shape as the checker reads it back (proto.static_shape)
        shapes[shape] = data, tuple(d.dim_value if d.HasField("dim_value") else None for d in dims)
    quantization = qtype.to_proto().SerializeToString()
    elem_type = marker(qtype.storage_type.data_type)
    parts = [_ELEM_TYPE_TAG, varint(elem_type)]
    if shape is not None:
        parts += (_SHAPE_TAG, varint(len(shapes[shape][0])), shapes[shape][0])
    parts += (_QUANTIZATION_TAG, varint(len(quantization)), quantization)
    if qtype.statistics is not None:
        statistics = qtype.statistics.to_proto().SerializeToString()
        parts += (_STATISTICS_TAG, varint(len(statistics)), statistics)
    tensor_type = b"".join(parts)
    type_bytes = b"".join((_TENSOR_TYPE_TAG, varint(len(tensor_type)), tensor_type))  # the TypeProto
    if qtype.statistics is None:
        known = written.setdefault(quantization, qtype)
        if (qtype.scale_tensor is None and qtype.zero_point_tensor is None and qtype.offset_tensor is None
                and type_bytes not in written.declared):  # names no parameter tensor (to_proto writes a *_tensor
            # field for each); equal types: the first QType, as the index would take it from ``written``
            written.declared[type_bytes] = (elem_type, None if shape is None else shapes[shape][1], known, quantization)
    encoded = name.encode()
    parts = [_NAME_TAG, varint(len(encoded)), encoded, _TYPE_TAG, varint(len(type_bytes)), type_bytes]
    if doc:
        encoded = doc.encode()
        parts += (_DOC_TAG, varint(len(encoded)), encoded)
    value_info = b"".join(parts)
    return b"".join((_VALUE_INFO_TAG, varint(len(value_info)), value_info))


# the tags of the length-delimited fields _typed_value_info writes (protobuf's field number << 3 | 2):
# GraphProto.value_info (13); ValueInfoProto's name (1), type (2) and doc_string (3); TypeProto.tensor_type (1);
# TensorTypeView's shape (2), quantization (1000) and statistics (1001); and of TensorTypeView.elem_type (1, a varint)
_VALUE_INFO_TAG, _NAME_TAG, _TYPE_TAG, _DOC_TAG, _TENSOR_TYPE_TAG = (varint(f << 3 | 2) for f in (13, 1, 2, 3, 1))
_SHAPE_TAG, _QUANTIZATION_TAG, _STATISTICS_TAG = (varint(f << 3 | 2) for f in (2, 1000, 1001))
_ELEM_TYPE_TAG = varint(1 << 3)


def _copy(vi: ValueInfoProto) -> ValueInfoProto:
    out = ValueInfoProto()
    out.CopyFrom(vi)
    return out


def _float_value_info(name: str, work: GraphIndex) -> ValueInfoProto:
    shape = work.shape(name)
    elem = work.elem_type(name) or TensorProto.FLOAT
    return helper.make_tensor_value_info(name, elem, None if shape is None else list(shape))


def _attach_float_statistics(graph: GraphProto, stats: dict[str, TensorStatistics], result: LiftResult) -> None:
    if not stats:
        return
    ix = GraphIndex(graph)
    by_name = {vi.name: vi for vi in _declarations(graph)}
    names = ix.tensor_names()
    for name, value in stats.items():
        if name not in names:
            continue
        vi = by_name.get(name)
        _fits_statistics(name, value, ix.shape(name) or (static_shape(vi) if vi is not None else None))
        if vi is None:
            vi = graph.value_info.add()
            vi.CopyFrom(helper.make_tensor_value_info(name, ix.elem_type(name) or TensorProto.FLOAT, None))
        write_statistics(vi, value)
        result.statistics += 1


def _fits_statistics(name: str, stats: TensorStatistics, shape: tuple[int | None, ...] | None) -> None:
    """StatisticsImportError when per-channel statistics do not have one entry per slice of the tensor."""
    if not stats.per_axis or shape is None or stats.axis is None:
        return
    if not 0 <= stats.axis < len(shape):
        raise StatisticsImportError(f"tensor {name!r}: per-channel statistics on axis {stats.axis}, but the tensor "
                                    f"has rank {len(shape)}")
    slices = shape[stats.axis]
    if slices is not None and slices != len(stats.per_axis):
        raise StatisticsImportError(f"tensor {name!r}: the calibration data gives {len(stats.per_axis)} per-channel "
                                    f"statistics, but axis {stats.axis} of shape {list(shape)} has {slices} slices")


def _drop_unused(model: ModelProto, final: GraphIndex, parameters: set[str]) -> None:
    """Remove scale / zero-point tensors and contrib-op imports that nothing uses any more."""
    graph = model.graph
    read = set(final.consumers) | final.outer_refs | final.output_set
    parameters = set(parameters)

    def dead(node: NodeProto) -> bool:  # a parameter's producer nothing reads any more (Identity / Cast chains too)
        passes = node.op_type in PASSED_CONSTANT_OPS and len(node.output) == 1
        return ((node.op_type == "Constant" or passes) and node.domain in STANDARD_DOMAINS and bool(node.output)
                and node.output[0] in parameters and node.output[0] not in read)

    while any(dead(n) for n in graph.node):
        gone = [n for n in graph.node if dead(n)]
        replace_nodes(graph, [n for n in graph.node if not dead(n)])
        read = {name for n in graph.node for name in n.input} | final.outer_refs | final.output_set
        parameters |= {name for n in gone for name in n.input if name}  # what fed them may be unread now
    unused = {name for name in final.initializers if name in parameters and name not in read}  # (unchanged since)
    if unused:  # delete in place: the kept initializers may be large, so they are not copied
        for field in (graph.initializer, graph.input):
            for i in reversed([i for i, t in enumerate(field) if t.name in unused]):
                del field[i]
    imports = [i for i, o in enumerate(model.opset_import) if o.domain == MS_DOMAIN]
    if imports and not any(n.domain == MS_DOMAIN for _, g in iter_graphs(model) for n in g.node):
        for i in reversed(imports):
            del model.opset_import[i]


__all__ = ["LiftResult", "LiftWarning", "lift", "lift_model"]
