"""``calibrate(model, data, ...)``: statistics of a float model's tensors, and a typed model from them.

Parameter choice (proposal/spec/calibration.md). Float32 activations (graph
inputs and node outputs) take a per-tensor type over the range ``method``
picks (Softmax / Sigmoid / Tanh outputs: the range the operator guarantees;
a tensor only a Relu reads: the Relu output's range); tensors joined by a
data-movement operator (proto/data_movement.py's list, the ties QT401 checks)
or by one the profile lists under ``shared_parameters`` share one type over
the union of their ranges, and an operator with a profile's ``fixed_output``
gets exactly those parameters. Weights (input 1 of
Conv / ConvTranspose / Gemm / MatMul) take the observed min / max, per output
channel with ``per_channel``; other constants read by arithmetic operators
take the activation type. A Conv / Gemm bias is int32 with scale = input
scale · weight scale and zero point 0. The quantized model is built as
QuantizeLinear / DequantizeLinear pairs and lifted, so the typed model is
what ``lift`` makes of onnxruntime-style QDQ output; the schema and narrowed
storage range, which QDQ cannot say, are then set on the lifted types.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto, TensorProto, numpy_helper

from onnx_qtypes.calibration.collect import ENGINES, FLOAT_TYPES, collect, float_activations, weight_axes
from onnx_qtypes.calibration.errors import CalibrationError
from onnx_qtypes.calibration.parameters import SMALLEST_NORMAL, Storage, parameters, round_trip
from onnx_qtypes.calibration.qdq import insert_qdq
from onnx_qtypes.reference_ops.quant import _pow2_ceiling
from onnx_qtypes.calibration.ranges import DEFAULT_PERCENTILE, METHODS, choose_range
from onnx_qtypes.calibration.running import TensorAccumulator
from onnx_qtypes.proto.data_movement import DATA_MOVEMENT, moves_data
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.default_domain import STANDARD_DOMAINS
from onnx_qtypes.proto.errors import MalformedExtensionError, ModelLoadError
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.statistics import TensorStatistics
from onnx_qtypes.proto.storage_types import STORAGE_TYPES

ACTIVATION_STORAGE = ("int8", "uint8", "int16", "uint16")
WEIGHT_STORAGE = ("int8", "uint8", "int4", "uint4", "int16")
OUTPUT_RANGES = {"Softmax": (0.0, 1.0), "Sigmoid": (0.0, 1.0), "Tanh": (-1.0, 1.0)}
ARITHMETIC = frozenset({"Add", "Sub", "Mul", "Div", "MatMul", "Gemm", "Conv", "ConvTranspose", "Max", "Min"})


@dataclasses.dataclass(frozen=True)
class Settings:
    """The choices that turn statistics into parameters."""

    method: str = "minmax"
    schema: Schema = Schema.ASYMMETRIC
    activation: str = "uint8"
    weight: str = "int8"
    per_channel: bool = False
    percentile: float = DEFAULT_PERCENTILE
    profile: Any = None  # a checker Profile


@dataclasses.dataclass
class CalibrationResult:
    model: ModelProto
    statistics: dict[str, TensorStatistics]
    samples: int
    engine: str = ""
    typed: list[str] = dataclasses.field(default_factory=list)

    quantize: bool = True  # False for --stats-only
    notes: list[str] = dataclasses.field(default_factory=list)  # choices a profile overrode, tensors left float

    def summary(self) -> str:
        what = f"{len(self.typed)} quantized tensor(s), " if self.typed else ""
        if self.quantize and not self.typed:  # say it: the same command quantizes a float32 model
            what = "nothing quantized (only float32 tensors are; float16, bfloat16 and float64 ones keep their type), "
        return f"{what}statistics on {len(self.statistics)} tensor(s) from {self.samples} sample(s)"


class Statistics(Mapping):
    """Tensor name -> its TensorStatistics, made when asked for from the accumulators (no cache): thousands of
    2048-bin histograms as Python tuples at once cost far more than the counters and the model they go to."""

    def __init__(self, accs: dict[str, TensorAccumulator], method: str | None) -> None:
        self._accs = {name: acc for name, acc in accs.items() if acc.count}  # every sample empty: no statistics
        self._method = method

    def __getitem__(self, name: str) -> TensorStatistics:
        return statistics_of(self._accs[name], self._method)

    def __contains__(self, name: object) -> bool:  # Mapping's own would make the statistics to find out
        return name in self._accs

    def __iter__(self) -> Iterator[str]:
        return iter(self._accs)

    def __len__(self) -> int:
        return len(self._accs)


def statistics_of(acc: TensorAccumulator, method: str | None = None) -> TensorStatistics:
    """The accumulated statistics as the type system records them (per channel: min, max, mean, std, count)."""
    whole = acc.whole.statistics(0)
    whole = dataclasses.replace(whole, **acc.histogram.statistics_fields()) if acc.histogram.total else whole
    per = ()
    if acc.channels is not None and acc.channels.count:
        per = tuple(acc.channel_statistics(i) for i in range(acc.channels.mean.size))
    return TensorStatistics(tensor=whole, axis=acc.axis if per else None, per_axis=per, method=method)


def calibrate(model: ModelProto | str | os.PathLike | bytes, data: Any, *, method: str = "minmax",
              schema: Schema | str = Schema.ASYMMETRIC, activation: str | None = None, weight: str | None = None,
              per_channel: bool = False, percentile: float = DEFAULT_PERCENTILE, profile: Any = None,
              stats_only: bool = False, engine: str = "auto",
              progress: Callable[[int], None] | None = None) -> ModelProto:
    """The typed model (or with ``stats_only`` the float model annotated with statistics)."""
    return calibrate_model(model, data, method=method, schema=schema, activation=activation, weight=weight,
                           per_channel=per_channel, percentile=percentile, profile=profile, stats_only=stats_only,
                           engine=engine, progress=progress).model


def calibrate_model(model: Any, data: Any, *, method: str = "minmax", schema: Schema | str = Schema.ASYMMETRIC,
                    activation: str | None = None, weight: str | None = None, per_channel: bool = False,
                    percentile: float = DEFAULT_PERCENTILE, profile: Any = None, stats_only: bool = False,
                    engine: str = "auto", progress: Callable[[int], None] | None = None) -> CalibrationResult:
    """``calibrate`` with its report."""
    from onnx_qtypes.interop.source import read_copy
    from onnx_qtypes.proto.reader import placed_in_file

    settings = settings_for(method, schema, activation, weight, per_channel, percentile, profile)
    if engine not in ENGINES:
        raise CalibrationError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    source, where, orders = read_copy(model, "calibrate")
    try:
        return _calibrate(source, data, settings, activation, weight, stats_only, engine, progress)
    except (MalformedExtensionError, ModelLoadError) as exc:  # a part of the file: named, where the file has it
        raise placed_in_file(exc, where, orders) from None


def _calibrate(source: ModelProto, data: Any, settings: Settings, activation: str | None, weight: str | None,
               stats_only: bool, engine: str, progress: Callable[[int], None] | None) -> CalibrationResult:
    refuse_quantized(source)
    constants_are_not_inputs(source)
    constants_as_initializers(source)
    constants_read_directly(source)
    one_bias_per_operator(source)
    accs, samples, used, skipped = collect(source, data, engine=engine, progress=progress)
    # a tensor every sample left empty (a [0, 4] batch) has no statistics, and gets no type (choose_types)
    stats = Statistics(accs, settings.method)
    left = [f"tensor {name!r} stays float, without statistics: {where} (a quantized type holds finite values only)"
            for name, where in skipped.items()]
    if stats_only:
        return CalibrationResult(annotate(source, stats), stats, samples, engine=used, quantize=False, notes=left)
    coarser: list[str] = []  # weights whose scales their biases raised
    types = choose_types(source, accs, settings, coarser)
    raised = _opset_for(source, types)
    result = quantized_model(source, types, stats, samples)
    result.engine, result.notes = used, overridden(settings, activation, weight) + raised + coarser + left
    return result


def _opset_for(model: ModelProto, types: tuple[dict, dict]) -> list[str]:
    """Raise the model's opset, in place, to the first whose QuantizeLinear / DequantizeLinear hold every chosen
    type (per-axis: 13; 16-bit and 4-bit: 21), as lift does for what it writes: torch exports at opset 17, where
    an int16 activation's pairs are no valid ONNX. A note when raised; CalibrationError when the converter
    cannot."""
    from onnx_qtypes.interop.opset import qdq_opset, raise_opset

    chosen = [t for group in types for t in group.values()]
    needed = max((qdq_opset(t.storage_type.bits, t.axis is not None) for t in chosen), default=0)
    try:
        raised = raise_opset(model, needed)
    except ValueError as exc:
        raise CalibrationError(f"the types chosen {exc}") from None
    return [raised] if raised else []


def refuse_quantized(model: ModelProto) -> None:
    """Calibration starts from the float model: quantizing a quantized one would stack a second quantization."""
    from onnx_qtypes.interop.qoperator import spec_for
    from onnx_qtypes.interop.recognise import is_dequantize, is_quantize
    from onnx_qtypes.proto import quantized_tensors

    typed = sorted(quantized_tensors(model))
    if typed:
        raise CalibrationError(f"the model already has quantized types ({typed[0]!r} and {len(typed) - 1} more); "
                               "calibrate takes the float model")
    for node in model.graph.node:
        if is_quantize(node) or is_dequantize(node) or spec_for(node) is not None \
                or node.op_type in ("DynamicQuantizeLinear", "MatMulNBits"):
            raise CalibrationError(f"the model is already quantized (node {node.name or node.output[0]!r}, "
                                   f"{node.op_type}); calibrate takes the float model, `lift` reads this one's types")


def constants_are_not_inputs(model: ModelProto) -> None:
    """Drop initializers from the graph inputs (IR < 4 exporters list them there): calibration replaces a weight
    by its stored integers, and an input left under the old name would be a required input nobody feeds."""
    inits = {t.name for t in model.graph.initializer}
    kept = [i for i in model.graph.input if i.name not in inits]
    if len(kept) != len(model.graph.input):
        del model.graph.input[:]
        model.graph.input.extend(kept)


def constants_as_initializers(model: ModelProto) -> None:
    """Make each float ``Constant`` node of the main graph an initializer: exporters such as paddle2onnx (the
    PP-OCR models) write every weight that way, and a weight read from a node output would be calibrated as an
    activation (per tensor, asymmetric, over its min / max) instead of as a weight (symmetric, per channel with
    ``per_channel``), as onnxruntime's quantizer would not either."""
    outputs = {o.name for o in model.graph.output}
    kept, moved = [], []
    for node in model.graph.node:
        value = next((a.t for a in node.attribute if a.name == "value" and a.type == onnx.AttributeProto.TENSOR),
                     None) if node.op_type == "Constant" and node.domain in STANDARD_DOMAINS else None
        if value is None or value.data_type not in FLOAT_TYPES or node.output[0] in outputs:
            kept.append(node)
            continue
        init = TensorProto()
        init.CopyFrom(value)
        init.name = node.output[0]
        moved.append(init)
    if moved:
        del model.graph.node[:]
        model.graph.node.extend(kept)
        model.graph.initializer.extend(moved)


def constants_read_directly(model: ModelProto) -> None:
    """Let every node read a float initializer itself where the file passes it through an ``Identity``:
    torch.onnx.export writes one Identity per reader of a deduplicated initializer (equal biases, tied or
    cloned weights), and a weight or bias read from a node output would be calibrated as an activation (per
    tensor, asymmetric, over its min / max; a bias in uint8 where it must be int32 at input scale · weight
    scale). The Identity goes; a name a graph output or a subgraph reads keeps its Identity."""
    from onnx_qtypes.proto.model import iter_graphs

    inits = {t.name for t in model.graph.initializer if t.data_type in FLOAT_TYPES}
    kept = {o.name for o in model.graph.output} | {name for pointer, graph in iter_graphs(model) if pointer != "/graph"
                                                    for node in graph.node for name in node.input}
    source = {node.output[0]: node.input[0] for node in model.graph.node
              if node.op_type == "Identity" and node.domain in STANDARD_DOMAINS and len(node.input) == 1
              and len(node.output) == 1 and node.input[0] in inits and node.output[0] not in kept}
    if not source:
        return
    nodes = [node for node in model.graph.node if not (node.op_type == "Identity" and node.output[0] in source)]
    for node in nodes:
        for i, name in enumerate(node.input):
            if name in source:
                node.input[i] = source[name]
    del model.graph.node[:]
    model.graph.node.extend(nodes)


BIAS_OPERATORS = ("Conv", "ConvTranspose", "Gemm")


def one_bias_per_operator(model: ModelProto) -> None:
    """A bias read by more than one node gets a copy per bias reader: its int32 scale is its operator's input
    scale times weight scale (QT405), which differs between operators; the last bias reader keeps the original."""
    from onnx_qtypes.calibration.names import used_names
    from onnx_qtypes.interop.graph import Names

    readers: dict[str, int] = {}
    for node in model.graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    inits = {t.name: t for t in model.graph.initializer}
    fresh = Names(used_names(model)).fresh
    for node in model.graph.node:
        if node.op_type in BIAS_OPERATORS and len(node.input) > 2 and node.input[2] in inits \
                and readers[node.input[2]] > 1:
            copy = model.graph.initializer.add()
            copy.CopyFrom(inits[node.input[2]])
            copy.name = fresh(f"{node.input[2]}_{node.name or node.output[0]}")
            readers[node.input[2]] -= 1  # the last reader keeps the original: none is left unread
            node.input[2] = copy.name


def settings_for(method: str, schema: Schema | str, activation: str | None, weight: str | None, per_channel: bool,
                 percentile: float, profile: Any) -> Settings:
    if method not in METHODS:
        raise CalibrationError(f"unknown calibration method {method!r}; expected one of {', '.join(METHODS)}")
    if not 0.0 < percentile <= 100.0:
        raise CalibrationError(f"percentile {percentile} is outside (0, 100]")
    try:
        schema = Schema.parse(schema)
    except ValueError as exc:
        raise CalibrationError(str(exc)) from None
    if profile is not None and not hasattr(profile, "roles"):
        from onnx_qtypes.checker.profile import load_profile  # a name or file: the checker reads profiles

        profile = load_profile(profile)
    activation = activation or ("int8" if schema.symmetric else "uint8")
    for value, allowed, role in ((activation, ACTIVATION_STORAGE, "activation"), (weight or "int8", WEIGHT_STORAGE, "weight")):
        if value not in allowed:
            raise CalibrationError(f"{role} storage {value!r} is not supported; expected one of {', '.join(allowed)}")
    return Settings(method=method, schema=schema, activation=activation, weight=weight or "int8",
                    per_channel=per_channel, percentile=percentile, profile=profile)


def overridden(s: Settings, activation: str | None, weight: str | None) -> list[str]:
    """What the user asked for that the profile did not allow, said rather than silently changed."""
    if s.profile is None:
        return []
    name = getattr(s.profile, "name", "the profile")
    notes = []
    for asked, got, role in ((activation, activation_storage(s).type, "activation"),
                             (weight, weight_storage(s).type, "weight")):
        if asked and asked != got:
            notes.append(f"{role} storage {asked} is not among what profile {name} allows; used {got}")
    if s.per_channel and not weight_per_channel(s):
        notes.append(f"profile {name} allows no per-channel weights; weights are per tensor")
    return notes


# --- the storage each role gets -------------------------------------------------------------------------


def _profile_storage(role: Any, wanted: str, schema: Schema, signed_symmetric: Schema) -> Storage:
    """The profile role's storage (``wanted`` if it allows it), with the schema its zero points and scales allow."""
    allowed = role.storage or ()
    pick = next((a for a in allowed if a.type == wanted), allowed[0] if allowed else None)
    storage = pick.type if pick else wanted
    if role.zero_points is not None and 0 in role.zero_points and len(role.zero_points) == 1:
        schema = signed_symmetric
    if role.pow2_scale:
        schema = Schema.SYMMETRIC_POW2_SCALE if schema.symmetric else Schema.ASYMMETRIC_POW2_SCALE
    return Storage(storage, schema, pick.min if pick else None, pick.max if pick else None)


def activation_storage(s: Settings) -> Storage:
    if s.profile is not None and s.profile.role("activation") is not None:
        return _profile_storage(s.profile.role("activation"), s.activation, s.schema, Schema.SYMMETRIC)
    return Storage(s.activation, s.schema)


def weight_storage(s: Settings) -> Storage:
    if s.weight.startswith("u"):  # unsigned weights: asymmetric (symmetric unsigned storage has no negatives)
        schema = Schema.ASYMMETRIC_POW2_SCALE if s.schema.pow2 else Schema.ASYMMETRIC
    else:
        schema = Schema.SYMMETRIC_POW2_SCALE if s.schema.pow2 else Schema.SYMMETRIC
    if s.profile is not None and s.profile.role("weight") is not None:
        return _profile_storage(s.profile.role("weight"), s.weight, schema, Schema.SYMMETRIC)
    hi = STORAGE_TYPES[s.weight].max if s.weight in ("int8", "int4") else None
    return Storage(s.weight, schema, -hi if hi else None, hi)  # symmetric signed weights: [-127, 127] / [-7, 7]


def weight_per_channel(s: Settings) -> bool:
    role = s.profile.role("weight") if s.profile is not None else None
    return s.per_channel and (role is None or role.per_axis in (True, "output-channel"))


# --- parameter choice -----------------------------------------------------------------------------------


def choose_types(model: ModelProto, accs: dict[str, TensorAccumulator], s: Settings,
                 notes: list[str] | None = None) -> tuple[dict, dict]:
    """(activation name -> QType, initializer name -> QType); ``notes`` gets a line per weight whose scale its
    bias raised (``bias_fits``)."""
    act_storage, w_storage = activation_storage(s), weight_storage(s)
    acts = [n for n, vi in float_activations(model).items()  # float32 only: the QDQ scales are float32
            if vi.type.tensor_type.elem_type == TensorProto.FLOAT and n in accs and accs[n].count]
    ranges = {n: choose_range(accs[n], s.method, symmetric=act_storage.schema.symmetric, levels=act_storage.levels,
                              round_trip=round_trip(act_storage), percentile=s.percentile) for n in acts}
    for node in model.graph.node:  # an output range the operator guarantees: unseen inputs cannot exceed it
        if node.op_type in OUTPUT_RANGES and node.output and node.output[0] in ranges:
            ranges[node.output[0]] = OUTPUT_RANGES[node.op_type]
    _fold_relu(model, ranges)
    groups = shared_groups(model, set(acts), s.profile)
    merged: dict[str, tuple[float, float]] = {}
    for members in groups:
        lo = min(ranges[m][0] for m in members)
        hi = max(ranges[m][1] for m in members)
        merged.update({m: (lo, hi) for m in members})
    act_types = {n: parameters(*merged.get(n, ranges[n]), act_storage) for n in acts}
    _fixed_outputs(model, act_types, act_storage, s.profile)
    init_types = _initializer_types(model, accs, act_types, w_storage, act_storage, weight_per_channel(s), notes)
    return act_types, init_types


def _fold_relu(model: ModelProto, ranges: dict[str, tuple[float, float]]) -> None:
    """A tensor only a Relu reads takes the Relu output's range: its negative part is dropped anyway, so the
    levels go where values survive (onnxruntime removes such a Relu's QDQ pair to the same effect)."""
    readers: dict[str, int] = {}
    for node in model.graph.node:
        for i in node.input:
            readers[i] = readers.get(i, 0) + 1
    outputs = {o.name for o in model.graph.output}
    for node in model.graph.node:
        t = node.input[0] if node.input else ""
        if node.op_type == "Relu" and t in ranges and node.output[0] in ranges and readers[t] == 1 and t not in outputs:
            ranges[t] = ranges[node.output[0]]


def shared_groups(model: ModelProto, acts: set[str], profile: Any) -> list[set[str]]:
    """Sets of activations that must share parameters (union-find over data-movement operators)."""
    extra = profile.shared_parameters if profile is not None else frozenset()
    parent = {n: n for n in acts}

    def root(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for node in model.graph.node:
        mode = next((a.s for a in node.attribute if a.name == "mode"), b"nearest")
        if node.domain not in STANDARD_DOMAINS:
            continue
        if moves_data(node.op_type, mode):  # the one list (proto/data_movement.py): QT401 checks the same ties
            ins, outs = DATA_MOVEMENT[node.op_type]
            tied = [*_at(node.input, ins), *_at(node.output, outs)]
        elif node.op_type in extra:
            tied = [*node.input, *node.output[:1]]
        else:
            continue
        tied = [t for t in tied if t in acts]
        for t in tied[1:]:
            parent[root(t)] = root(tied[0])
    groups: dict[str, set[str]] = {}
    for n in acts:
        groups.setdefault(root(n), set()).add(n)
    return [g for g in groups.values() if len(g) > 1]


def _at(names: Any, positions: tuple[int, ...] | None) -> list[str]:
    return list(names) if positions is None else [names[i] for i in positions if i < len(names) and names[i]]


def _fixed_outputs(model: ModelProto, types: dict[str, QType], storage: Storage, profile: Any) -> None:
    if profile is None:
        return
    for node in model.graph.node:
        for fixed in profile.fixed_output.get(node.op_type, ()):
            if node.output and node.output[0] in types and fixed.storage == storage.type:
                # the profile's parameters win over the schema: TFLite's Softmax output has zero point -128 also
                # when the other activations are symmetric
                keeps = not storage.schema.symmetric or not np.any(fixed.zero_point)
                types[node.output[0]] = QType(fixed.storage, fixed.scale, fixed.zero_point,
                                              schema=storage.schema if keeps else Schema.ASYMMETRIC,
                                              storage_min=storage.min if keeps else None,
                                              storage_max=storage.max if keeps else None)
                break


def _initializer_types(model: ModelProto, accs: dict[str, TensorAccumulator], acts: dict[str, QType],
                       storage: Storage, constant: Storage, per_channel: bool,
                       notes: list[str] | None = None) -> dict[str, QType]:
    """Weights (input 1 of Conv / ConvTranspose / Gemm / MatMul) in ``storage``; other constants read by
    arithmetic operators (an Add's bias, a Mul's factor) are activations to the checker and to onnxruntime,
    and take the activation ``constant`` storage over their min / max; biases in int32."""
    inits = {t.name: t for t in model.graph.initializer if t.data_type == TensorProto.FLOAT}
    readers: dict[str, set[str]] = {}
    for node in model.graph.node:
        for i in node.input:
            readers.setdefault(i, set()).add(node.op_type)
    axes = weight_axes(model)
    types: dict[str, QType] = {}
    biases = _biases(model, inits)
    for name, acc in accs.items():
        if name not in inits or name in biases or not readers.get(name) or not readers[name] <= ARITHMETIC:
            continue
        if name not in axes:
            types[name] = parameters(acc.whole.min[0], acc.whole.max[0], constant)
            continue
        axis = axes.get(name) if per_channel and inits[name].dims else None
        if axis is not None and acc.channels is not None:
            types[name] = parameters(acc.channels.min, acc.channels.max, storage, axis)
        else:
            types[name] = parameters(acc.whole.min[0], acc.whole.max[0], storage)
    typed = {bias: (x, w) for bias, (x, w) in biases.items()  # (a bias holding NaN or inf has no statistics)
             if x in acts and w in types and bias in accs and _one_per_channel(inits[bias], types[w])}
    for bias, (x, w) in list(typed.items()):  # every bias a weight serves first (tied weights serve several) ...
        chosen = types[w]
        fitted = bias_fits(chosen, acts[x], numpy_helper.to_array(inits[bias]))
        if fitted is None:  # no float32 weight scale holds it: the bias stays float, its weight as chosen
            del typed[bias]
            if notes is not None:
                notes.append(f"bias {bias!r} stays float: int32 at a normal scale would need weight {w!r} scales "
                             "beyond float32's range")
        elif fitted is not chosen:
            types[w] = fitted
            if notes is not None:
                notes.append(_coarser(w, bias, chosen, fitted))
    for bias, (x, w) in typed.items():  # ... then each bias at its weight's final scale (QT405)
        types[bias] = bias_type(acts[x], types[w], storage)
    return types


def _one_per_channel(bias: TensorProto, w: QType) -> bool:
    """Whether ``bias`` can take its weight's granularity: one value per scale of a per-channel weight (a Gemm
    bias of shape [1], broadcast over N channels, cannot: it stays float)."""
    return w.axis is None or int(np.prod(bias.dims)) == len(w.scale)


_BIAS_HEADROOM = 2**30  # half of int32: the accumulator adds the products to the bias (QT407)


def bias_fits(w: QType, x: QType, bias: np.ndarray) -> QType | None:
    """``w`` with each scale raised, where needed, so that its bias has a normal float32 scale (input scale ·
    weight scale, QT102) and fits half of int32 (max|bias| <= 2^30 · x.scale · w.scale, QT407). A trained
    model's dead channel (weights of 1e-33, a bias of 1e-30) got a bias scale of 1e-39: subnormal, and its int32
    bias saturated; its weights quantize coarser instead, as onnxruntime's quantizer adjusts a weight scale for
    its bias. A power-of-2 schema gets the next power of 2. None when the scale needed, or the bias scale it makes,
    is beyond float32 (a bias of 1e38 over inputs of 1e-30)."""
    x_scale = float(np.float32(x.scale[0]))
    scales = np.asarray(w.scale, np.float64)
    reach = np.abs(np.asarray(bias, np.float64)).reshape(-1)
    if w.axis is None:  # (per channel, the caller gives one bias value per scale: _one_per_channel)
        reach = np.array([reach.max(initial=0.0)])
    needed = np.maximum(reach / (x_scale * _BIAS_HEADROOM), SMALLEST_NORMAL / x_scale) * (1 + 2.0**-20)  # (> 0)
    if w.schema.pow2:
        needed = _pow2_ceiling(needed)  # quant's own rounding of a scale up to a power of 2
    if not np.any(scales < needed):
        return w
    with np.errstate(over="ignore"):
        raised = np.maximum(scales, needed).astype(np.float32).astype(np.float64)
        bias_scales = np.float32(x_scale) * raised.astype(np.float32)
    if not (np.all(np.isfinite(raised)) and np.all(np.isfinite(bias_scales))):
        return None
    if np.array_equal(raised, scales):  # within float32's rounding of what it was: nothing to raise
        return w
    return w.replace(scale=raised.tolist() if w.axis is not None else float(raised[0]))


def _coarser(weight: str, bias: str, chosen: QType, raised: QType) -> str:
    """The note on a weight ``bias_fits`` raised: how many scales, by how much at most."""
    pairs = [(a, b) for a, b in zip(chosen.scale, raised.scale) if b != a]
    factor = max(b / a for a, b in pairs)  # (a type's scales are never 0, and the caller saw one change)
    where = f"{len(pairs)} of {len(chosen.scale)} channel(s)" if chosen.axis is not None else "its scale"
    return (f"weight {weight!r}: {where} raised (up to {factor:.3g}x) so that bias {bias!r} fits int32 at a normal "
            "scale (input scale x weight scale; QT102, QT407): those weights quantize coarser")


def _biases(model: ModelProto, inits: dict) -> dict[str, tuple[str, str]]:
    """Bias initializer -> (its operator's input, its weight), for Conv, ConvTranspose and Gemm with a 1-D bias."""
    out = {}
    for node in model.graph.node:
        if node.op_type in BIAS_OPERATORS and len(node.input) > 2 and node.input[2] in inits \
                and len(inits[node.input[2]].dims) == 1:
            out[node.input[2]] = (node.input[0], node.input[1])
    return out


def bias_type(x: QType, w: QType, weight: Storage) -> QType:
    """int32, scale = input scale · weight scale (per channel as the weight is), zero point 0 (QT405)."""
    scales = np.float32(x.scale[0]) * np.asarray(w.scale, np.float32)
    schema = Schema.SYMMETRIC_POW2_SCALE if weight.schema.pow2 and x.schema.pow2 else Schema.SYMMETRIC
    return QType("int32", scales.astype(np.float32).tolist(), [0] * scales.size,
                 axis=0 if w.axis is not None else None, schema=schema)


# --- the output models -----------------------------------------------------------------------------------


def annotate(model: ModelProto, stats: Mapping[str, TensorStatistics]) -> ModelProto:
    """The float model with statistics recorded on its float tensors (value_info added where missing)."""
    from onnx_qtypes.proto.model import write_statistics

    out = ModelProto()
    out.CopyFrom(model)
    g = out.graph
    declared = {vi.name: vi for vi in (*g.input, *g.output, *g.value_info)}
    inferred = float_activations(out)
    inits = {t.name: t for t in g.initializer}
    for name in stats:
        vi = declared.get(name)
        if vi is None:
            vi = g.value_info.add()
            if name in inferred:
                vi.CopyFrom(inferred[name])
            else:
                from onnx import helper

                vi.CopyFrom(helper.make_tensor_value_info(name, inits[name].data_type, list(inits[name].dims)))
            declared[name] = vi
        write_statistics(vi, stats[name])  # one tensor's statistics as Python objects at a time
    return out


def quantized_model(model: ModelProto, types: tuple[dict, dict], stats: Mapping[str, TensorStatistics],
                    samples: int) -> CalibrationResult:
    from onnx_qtypes.interop.lift import lift_model

    act_types, init_types = types
    qdq, aliases = insert_qdq(model, act_types, init_types)
    lifted = lift_model(qdq).model
    typed = _declare(lifted, {**act_types, **init_types}, stats, aliases)
    return CalibrationResult(lifted, stats, samples, typed=typed)


def _declare(lifted: ModelProto, types: dict[str, QType], stats: Mapping[str, TensorStatistics],
             aliases: dict[str, tuple[str, ...]]) -> list[str]:
    """Give each lifted tensor the chosen schema and storage range (QDQ cannot say them) and its statistics.

    ``lift`` keeps an activation's name, except a graph input's quantized copy, a graph output's quantized
    producer and a quantized initializer, which have the names ``insert_qdq`` gave them (``aliases``).
    """
    from onnx_qtypes.proto.model import quantized_tensors, set_qtypes, write_statistics

    updates: dict[str, QType] = {}
    source: dict[str, str] = {}  # lifted name -> the calibrated tensor whose statistics it records
    lifted_types = quantized_tensors(lifted)  # one pass: a lookup per tensor made calibration quadratic
    for name, chosen in types.items():
        for candidate in aliases.get(name, (name,)):
            current = lifted_types.get(candidate)
            if current is not None:
                updates[candidate] = current.replace(schema=chosen.schema, storage_min=chosen.storage_min,
                                                     storage_max=chosen.storage_max, statistics=None)
                source[candidate] = name
                break
    set_qtypes(lifted, updates)
    # then the statistics, one tensor at a time (set_qtypes keeps what is recorded when a type has none)
    g = lifted.graph
    declared: dict[str, list] = {}
    for vi in (*g.input, *g.output, *g.value_info):
        declared.setdefault(vi.name, []).append(vi)
    for candidate, name in source.items():
        if name in stats:
            value = stats[name]
            for vi in declared.get(candidate, ()):
                write_statistics(vi, value)
    for name in stats:  # float tensors left float (graph inputs and outputs) keep theirs too
        for vi in declared.get(name, ()):
            if name not in updates and vi.type.tensor_type.elem_type in FLOAT_TYPES:
                write_statistics(vi, stats[name])
    return sorted(updates)
