"""Find the quantization in a QDQ / QOperator graph and the type of every quantized tensor.

Each QuantizeLinear, DequantizeLinear and QLinear* node is *evidence*: it
writes or reads an integer tensor with given parameters. Operators that run
unchanged on stored integers (``passthrough``) join their input and output
into one class that must share a type. Then:

- a class whose evidence disagrees is a malformed model (an error naming
  both nodes): the same integers would mean two different things;
- a class touched by a node the lift does not understand (a Cast on the
  integers, an unknown contrib op, a subgraph) is *pinned*: it stays plain
  integers, and so does every quantization node around it, recursively —
  the lift never guesses what such a node means;
- every other class gets its type.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
from onnx import NodeProto

from onnx_qtypes.interop.errors import MalformedQDQError
from onnx_qtypes.interop.graph import MS_DOMAIN, QDQ_OPS, STANDARD_DOMAINS, GraphIndex, attributes
from onnx_qtypes.interop.parameter_screen import screen
from onnx_qtypes.interop.parameters import Unrecognized, read_parameters
from onnx_qtypes.interop.passthrough import PASS_THROUGH, links, typed_input_only
from onnx_qtypes.interop.qoperator import Context, Spec, bias_type, looks_quantized, operands, refusal, spec_for
from onnx_qtypes.proto.names import non_utf8_attribute
from onnx_qtypes.proto.qtype import QType

QDQ_DOMAINS = STANDARD_DOMAINS | {MS_DOMAIN}


class Evidence(NamedTuple):
    """Node ``node`` writes or reads integer tensor ``tensor`` as ``qtype`` (a tuple: made once per Q / DQ node)."""

    tensor: str
    qtype: QType
    node: int
    verb: str  # "writes" | "reads"
    op_type: str
    has_zero_point: bool = True


@dataclasses.dataclass
class QuantOp:
    """One node that handles integer tensors as quantized values."""

    node: int
    kind: str  # "q" | "dq" | "qlinear" | "pass" | "use"
    ports: dict[tuple[str, int], str]  # ("in"|"out", position) -> tensor name
    evidence: list[Evidence] = dataclasses.field(default_factory=list)
    spec: Spec | None = None


@dataclasses.dataclass
class Recognition:
    ops: dict[int, QuantOp]  # lifted nodes only
    types: dict[str, QType]  # every quantized tensor the lift types
    warnings: list[str]
    problems: list[MalformedQDQError] = dataclasses.field(default_factory=list)  # tolerant mode: all of them
    left: dict[int, str] = dataclasses.field(default_factory=dict)  # node index -> why it stays as it was


def is_quantize(node: NodeProto) -> bool:
    return node.op_type == "QuantizeLinear" and node.domain in QDQ_DOMAINS


def is_dequantize(node: NodeProto) -> bool:
    return node.op_type == "DequantizeLinear" and node.domain in QDQ_DOMAINS


def _input(node: NodeProto, position: int) -> str | None:
    return node.input[position] if len(node.input) > position and node.input[position] else None


def _qdq(ix: GraphIndex, i: int, node: NodeProto, quantize: bool) -> QuantOp:
    """A QuantizeLinear (``quantize``) or DequantizeLinear node's evidence (its fields read once: thousands of them)."""
    inputs, outputs = node.input[:], node.output[:]
    attrs = attributes(node) if node.attribute else {}
    if not inputs or not inputs[0]:
        raise Unrecognized(f"{ix.label(i)}: no data input")
    if len(inputs) < 2 or not inputs[1]:
        raise Unrecognized(f"{ix.label(i)}: no scale input")
    if not outputs or not outputs[0]:
        raise Unrecognized(f"{ix.label(i)}: no output")
    if len(inputs) > 3 or len(outputs) > 1:  # (the file's checker finding: QT412)
        raise Unrecognized(f"{ix.label(i)}: {len(inputs)} input(s) and {len(outputs)} output(s), where the operator "
                           "takes at most 3 and 1 (onnxruntime refuses the model)")
    if "precision" in attrs:
        raise Unrecognized(f"{ix.label(i)}: the 'precision' attribute changes the arithmetic of the division")
    if found := non_utf8_attribute(node):  # (a com.microsoft one: the reader refuses ONNX's) it keeps its domain
        raise Unrecognized(f"{ix.label(i)}: attribute {found[0]} holds {found[1][:40]!r}, which is not UTF-8")
    data = outputs[0] if quantize else inputs[0]
    axis = _int_attribute(ix, i, attrs, "axis", 1, data, "QT108")
    block = _int_attribute(ix, i, attrs, "block_size", 0, data, "QT110")
    zp = inputs[2] if len(inputs) > 2 and inputs[2] else None
    if quantize:
        storage = _int_attribute(ix, i, attrs, "output_dtype", 0, data, "QT305") or None
        if zp and storage and ix.constant_dtype(zp) not in (None, storage):
            raise MalformedQDQError(f"{ix.label(i)}: output_dtype {storage} differs from the zero point's type",
                                    rule="QT305", node=i, tensor=node.output[0], parameter="output_dtype")
        if not zp and storage is None:
            storage = 2  # UINT8, QuantizeLinear's default output type
        qtype = read_parameters(ix, i, data, inputs[1], zp, axis=axis, block_size=block, storage=storage,
                                data_type=ix.elem_type(data), real_type=ix.elem_type(inputs[0]))
        if qtype.storage_type.is_float and attrs.get("saturate", 1) == 0:  # checker: QT123
            raise Unrecognized(f"{ix.label(i)}: saturate=0 turns values beyond {qtype.storage}'s largest finite "
                               "one into NaN or infinity; a quantized type saturates")
        return _qdq_op(i, True, data, qtype, bool(zp))
    data_type = ix.elem_type(data)
    real_type = _int_attribute(ix, i, attrs, "output_dtype", 0, data, "QT305") or None  # (the float output's type)
    qtype = read_parameters(ix, i, data, inputs[1], zp, axis=axis, block_size=block, storage=data_type,
                            data_type=data_type, real_type=real_type)
    return _qdq_op(i, False, data, qtype, bool(zp))


def _qdq_op(i: int, quantize: bool, data: str, qtype: QType, has_zero_point: bool) -> QuantOp:
    """A QuantizeLinear (``quantize``) or DequantizeLinear node's evidence: it writes / reads ``data`` as ``qtype``."""
    if quantize:
        return QuantOp(i, "q", {("out", 0): data}, [Evidence(data, qtype, i, "writes", "QuantizeLinear", has_zero_point)])
    return QuantOp(i, "dq", {("in", 0): data}, [Evidence(data, qtype, i, "reads", "DequantizeLinear", has_zero_point)])


def _int_attribute(ix: GraphIndex, i: int, attrs: dict, name: str, default: int, tensor: str, rule: str) -> int:
    """An integer attribute of node ``i``; MalformedQDQError (the rule it breaks) when it holds another kind."""
    value = attrs.get(name, default)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise MalformedQDQError(f"{ix.label(i)}: attribute {name} is {value!r}, not an integer (the operator's "
                            f"schema types it INT)", rule=rule, node=i, tensor=tensor, parameter=name)


def _qlinear(ix: GraphIndex, i: int, node: NodeProto, spec: Spec) -> QuantOp:
    first = _input(node, operands(spec, node)[0].data) if operands(spec, node) else None
    first_shape = ix.shape(first) if first else None
    if reason := refusal(spec, node, Context(None if first_shape is None else len(first_shape), ix.opset)):
        raise Unrecognized(f"{ix.label(i)}: {reason}")
    if not node.output or not node.output[0]:
        raise Unrecognized(f"{ix.label(i)}: no output")
    attrs = attributes(node)
    op = QuantOp(i, "qlinear", {}, spec=spec)
    read: list[QType] = []
    found: list[MalformedQDQError] = []  # every operand's problems, raised together (a kept node has QT101 only)
    for operand in operands(spec, node):
        data = _input(node, operand.data)
        scale = _input(node, operand.scale)
        if data is None or scale is None:
            raise Unrecognized(f"{ix.label(i)}: input {operand.data} or its scale is missing")
        shape = ix.shape(data)
        axis = operand.axis(None if shape is None else len(shape), attrs) if operand.axis else None
        if operand.axis and axis is None and (values := ix.constant(scale)) is not None and values.size > 1:
            raise Unrecognized(f"{ix.label(i)}: per-axis scale on {data!r}, whose rank is unknown")
        zp = _input(node, operand.zero_point)
        storage = ix.elem_type(data) if not zp else None
        try:
            qtype = read_parameters(ix, i, data, scale, zp, axis=axis, storage=storage, data_type=ix.elem_type(data))
        except MalformedQDQError as exc:
            found.extend(exc.every())
            read.append(None)  # keeps the operand positions below
            continue
        if spec.scales_operand is not None and spec.scales_operand[1] == len(read):
            qtype = _scaled_by_attribute(ix, i, qtype, *spec.scales_operand)
        op.ports[("in", operand.data)] = data
        op.evidence.append(Evidence(data, qtype, i, "reads", node.op_type, bool(zp)))
        read.append(qtype)
    if not found and spec.bias is not None and (bias := _input(node, spec.bias.data)):
        op.ports[("in", spec.bias.data)] = bias
        op.evidence.append(Evidence(bias, _bias_type(ix, i, bias, spec, read), i, "reads", node.op_type))
    out_scale = _input(node, spec.output[0]) if spec.output else None
    if out_scale is not None and spec.output_optional and not _input(node, spec.output[1]):
        raise Unrecognized(f"{ix.label(i)}: an output scale without a zero point: onnxruntime writes float values "
                           "divided by that scale, which no quantized type holds")
    if out_scale is not None:
        out = node.output[0]
        zp = _input(node, spec.output[1])
        if zp or read[0] is not None:
            storage = None if zp else read[0].storage_type.data_type
            try:
                qtype = read_parameters(ix, i, out, out_scale, zp, axis=None, storage=storage,
                                        data_type=ix.elem_type(out))
                op.ports[("out", 0)] = out
                op.evidence.append(Evidence(out, qtype, i, "writes", node.op_type, bool(zp)))
            except MalformedQDQError as exc:
                found.extend(exc.every())
    elif not spec.output_optional or (spec.output and _input(node, spec.output[1])):
        raise Unrecognized(f"{ix.label(i)}: output scale missing")
    if found:
        found[0].also = found[1:]
        raise found[0]
    return op


def _scaled_by_attribute(ix: GraphIndex, i: int, qtype: QType, name: str, position: int) -> QType:
    """``qtype`` with its scales multiplied by attribute ``name`` of node ``i`` (QGemm's alpha, which scales A*B and
    the bias alike): the typed Gemm then reads the weight's reals times alpha and needs no alpha of its own. Only a
    power of two keeps every scale exact (and QT405's bias = input scale x weight scale); another value is left."""
    factor = attributes(ix.nodes[i]).get(name, 1.0)
    if factor == 1.0:
        return qtype
    mantissa, _ = np.frexp(factor) if isinstance(factor, float) and np.isfinite(factor) else (0.0, 0)
    if mantissa != 0.5 or qtype.scale_tensor is not None:
        raise Unrecognized(f"{ix.label(i)}: {name}={factor!r} is not a power of two, so it cannot be carried exactly "
                           f"by the scales of input {position} (QGemm's {name} also scales its int32 bias, Gemm's does not)")
    return qtype.replace(scale=[s * factor for s in qtype.scale])


def _bias_type(ix: GraphIndex, i: int, bias: str, spec: Spec, read: list[QType]) -> QType:
    assert spec.bias is not None
    a, b = (read[k] for k in spec.bias.factors)
    if ix.elem_type(bias) not in (None, 6):
        raise Unrecognized(f"{ix.label(i)}: bias {bias!r} is not int32")
    if not (len(a.scale) == 1 or len(a.scale) == len(b.scale)) or a.axis is not None:
        raise Unrecognized(f"{ix.label(i)}: bias scale of {bias!r} is not a per-channel product")
    per_axis = read[spec.bias.axis_from].axis is not None and max(len(a.scale), len(b.scale)) > 1
    shape = ix.shape(bias)
    axis = (len(shape) - 1 if shape else 0) if per_axis else None
    return bias_type(a, b, axis, expressed=a.expressed_type.data_type)


def recognise_node(ix: GraphIndex, i: int, node: NodeProto) -> QuantOp | None:
    """The quantization role of one node, None for an ordinary float op; Unrecognized when it cannot be typed."""
    op_type = node.op_type
    if op_type in QDQ_OPS and node.domain in QDQ_DOMAINS:
        return _qdq(ix, i, node, op_type == "QuantizeLinear")
    spec = spec_for(node)
    if spec is not None:
        return _qlinear(ix, i, node, spec)
    linked = links(node)
    if linked is not None:
        ports = {}
        ins, outs = PASS_THROUGH[node.op_type]
        for j, name in enumerate(node.input):
            if name and (ins is None or j in ins):
                ports[("in", j)] = name
        for k, name in enumerate(node.output):
            if name and (outs is None or k in outs):
                ports[("out", k)] = name
        return QuantOp(i, "pass", ports)
    if typed_input_only(node) and node.input:
        return QuantOp(i, "use", {("in", 0): node.input[0]})
    if looks_quantized(node):
        inside = next((o for o in node.output if o in ix.outer_refs), None)  # (the lift does not lift subgraphs)
        why = (f"its output {inside!r} is read inside a subgraph, which the lift does not lift" if inside
               else "an onnxruntime contrib operator the lift does not read" if node.domain == MS_DOMAIN
               else "not a quantization pattern the lift knows")
        raise Unrecognized(f"{ix.label(i)}: {why}")
    return None


class _Classes:
    """Union-find over tensor names."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        parent = self.parent.get(name, name)  # (a name never joined is its own root: not stored)
        if parent != name:
            root = self.find(parent)
            self.parent[name] = root
            return root
        return name

    def union(self, names: list[str]) -> None:
        if not names:
            return
        root = self.find(names[0])
        for name in names[1:]:
            other = self.find(name)
            if other != root:
                self.parent[other] = root


_UNTYPEABLE_SCALE = "QT101"  # a zero, infinite or NaN scale (proposal/spec/interop.md#lift-untypeable-scales)


def recognise(ix: GraphIndex, tolerant: bool = False) -> Recognition:
    """Every quantized tensor's type, the nodes to lift, and warnings for what stays; raises on malformed pairs.
    A node whose only fault is a zero, infinite or NaN scale stays as it was, with a warning naming it.

    ``tolerant``: collect every malformed node or pair in ``problems`` instead of raising on the first, and
    leave what it touches as it was (untyped), so that the rest of the model is still lifted.
    """
    ops: dict[int, QuantOp] = {}
    opaque: dict[int, str] = {}
    left: dict[int, str] = {}
    problems: list[MalformedQDQError] = []
    plain = screen(ix, QDQ_DOMAINS)  # the Q / DQ nodes of plain form, read in bulk
    for i, node in enumerate(ix.nodes):
        found = plain.get(i)
        if found is not None:
            ops[i] = _qdq_op(i, found.quantize, found.data, found.qtype, True)
            continue
        try:
            op = recognise_node(ix, i, node)
        except Unrecognized as exc:
            opaque[i] = str(exc)
            left[i] = _reason(ix, i, str(exc))
            continue
        except MalformedQDQError as exc:
            if not tolerant and all(p.rule == _UNTYPEABLE_SCALE for p in exc.every()):
                # runnable as written (onnxruntime divides by the scale), untypeable: kept, named, not refused
                opaque[i] = f"{str(exc)}, which no quantized type holds ({_UNTYPEABLE_SCALE})"
                left[i] = _reason(ix, i, opaque[i])
                continue
            if not tolerant:
                raise
            problems.extend(exc.every())  # the node's independent problems, each reported
            opaque[i] = ""  # reported as a problem, not as a warning
            left[i] = f"malformed ({exc.rule or 'QT307'}): {_reason(ix, i, str(exc))}"
            continue
        if op is not None:
            ops[i] = op

    classes = _Classes()
    passes_seen = False
    for op in ops.values():
        if op.kind == "pass":
            classes.union(list(op.ports.values()))
            passes_seen = True
    # An op takes part when it touches a quantized class: an op with evidence always does (each tensor it gives
    # evidence of is one of its ports), a "pass" / "use" op only when a class it touches is quantized (known once
    # every op's evidence is in). So each class's members include every tensor its evidence names.
    evidence: dict[str, list[Evidence]] = defaultdict(list)
    members: dict[str, set[str]] = defaultdict(set)
    ops_of: dict[str, set[int]] = defaultdict(set)
    active: dict[int, QuantOp] = {}
    without_evidence = []
    for i, op in ops.items():
        if not op.evidence:
            without_evidence.append((i, op))
            continue
        active[i] = op
        for ev in op.evidence:
            evidence[classes.find(ev.tensor)].append(ev)
        for t in op.ports.values():
            root = classes.find(t)
            members[root].add(t)
            ops_of[root].add(i)
    quantized = set(evidence)
    for i, op in without_evidence:
        ports = op.ports.values()
        roots = [classes.find(t) for t in ports]
        if not quantized.isdisjoint(roots):
            active[i] = op
            for t, root in zip(ports, roots):
                members[root].add(t)
                ops_of[root].add(i)

    warnings: list[str] = []
    pinned: set[str] = set()
    queue: list[str] = []

    cause: dict[str, str] = {}  # pinned class -> why its tensors stay plain integers

    def pin(root: str, why: str | None, because: str) -> None:
        if root in pinned:
            return
        pinned.add(root)
        queue.append(root)
        cause[root] = because
        if why:
            warnings.append(why)

    def uses(tensor: str) -> Iterator[tuple[int, tuple[str, int]]]:
        for c, j in ix.consumers.get(tensor, ()):
            yield c, ("in", j)
        p = ix.producer.get(tensor)
        if p is not None and not ix.is_constant(tensor):  # a Constant holds storage, like an initializer
            yield p, ("out", ix.node_outputs[p].index(tensor))

    warnings.extend(f"{reason}; left as it was" for reason in opaque.values() if reason)
    # model order, for stable reports (each class's evidence is appended in node order: its first is its earliest)
    roots = sorted(quantized, key=lambda r: evidence[r][0].node)
    for root in roots:
        try:
            _check_agreement(ix, evidence[root])
        except MalformedQDQError as exc:
            if not tolerant:
                raise
            problems.append(exc)
            pin(root, None, f"its parameters are malformed ({exc.rule or 'QT307'})")  # the problem is the report
    for root in roots:
        tensors = members[root]
        for t in sorted(tensors) if len(tensors) > 1 else tensors:
            if t in ix.outer_refs:
                pin(root, f"tensor {t!r} is used inside a subgraph; it and its quantization nodes are left as they were",
                    f"{t!r} is used inside a subgraph")
            for node_index, port in uses(t):
                op = active.get(node_index)
                if op is None or op.ports.get(port) != t:
                    culprit = None if node_index in opaque else (
                        f"{ix.label(node_index)} uses quantized tensor {t!r} as plain integers; "
                        f"{t!r} and the quantization nodes around it are left as they were"
                    )
                    pin(root, culprit, f"{ix.label(node_index)} "
                        + (f"is left ({left[node_index]})" if node_index in left else f"uses {t!r} as plain integers"))
        qtype = evidence[root][0].qtype
        passes = sorted(i for i in ops_of[root] if active[i].kind == "pass") if passes_seen else []
        if passes and qtype.axis is not None:
            pin(root, f"{ix.label(passes[0])} moves a {qtype.granularity} tensor; left as it was",
                f"{ix.label(passes[0])} moves a {qtype.granularity} tensor")

    while queue:
        root = queue.pop()
        for i in sorted(ops_of[root]):
            op = active.pop(i, None)
            if op is not None:
                t = next((t for t in op.ports.values() if classes.find(t) == root), root)
                left.setdefault(i, f"tensor {t!r} stays plain integers: {cause[root]}")
            if op is not None and op.kind in ("qlinear", "pass"):
                for t in op.ports.values():
                    if classes.find(t) in quantized:
                        pin(classes.find(t), None, cause[root])

    types: dict[str, QType] = {}
    for root in (r for r in roots if r not in pinned):
        qtype = evidence[root][0].qtype
        for t in members[root]:
            types[t] = qtype
    lifted = {i: op for i, op in active.items() if all(t in types for t in op.ports.values())}
    return Recognition(lifted, types, warnings, problems, left)


def _reason(ix: GraphIndex, i: int, message: str) -> str:
    """A message about node ``i`` without its leading label."""
    label = ix.label(i)
    for prefix in (f"{label}: ", f"{label}, "):
        if message.startswith(prefix):
            return message[len(prefix):]
    return message


def _check_agreement(ix: GraphIndex, evidence: list[Evidence]) -> None:
    """Raise when two nodes give one tensor (or one class) different parameters."""
    first = evidence[0]
    for ev in evidence[1:]:
        if ev.qtype is not first.qtype and ev.qtype != first.qtype:  # (a Q / DQ pair shares one QType)
            a, b = describe_difference(first.qtype, ev.qtype)
            same = ev.tensor == first.tensor
            raise MalformedQDQError(
                f"{ix.label(ev.node)} {ev.verb} tensor {ev.tensor!r} with {b}, but {ix.label(first.node)} "
                f"{first.verb} {'it' if same else repr(first.tensor)} with {a}; "
                + (
                    "a QuantizeLinear/DequantizeLinear pair must use the same parameters"
                    if same
                    else f"{first.tensor!r} and {ev.tensor!r} hold the same integers, so they need the same parameters"
                ),
                rule="QT307" if same else "QT401", node=ev.node, tensor=ev.tensor,
                parameter=_differing_input(ix, ev.node, first.qtype, ev.qtype),
            )
    writers = [ev for ev in evidence if ev.verb == "writes" and ev.op_type == "QuantizeLinear"]
    for w in writers:
        for ev in evidence:
            if ev.tensor == w.tensor and ev.op_type == "DequantizeLinear" and ev.has_zero_point != w.has_zero_point:
                missing, present = (ev, w) if not ev.has_zero_point else (w, ev)
                raise MalformedQDQError(
                    f"{ix.label(missing.node)} has no zero point for tensor {w.tensor!r}, but its partner "
                    f"{ix.label(present.node)} has one; give both the same zero point input",
                    rule="QT307", node=missing.node, tensor=w.tensor,
                )


def _differing_input(ix: GraphIndex, i: int, a: QType, b: QType) -> str | None:
    """The input of Q / DQ node ``i`` that holds the first parameter in which ``a`` and ``b`` differ."""
    node = ix.nodes[i]
    if not (is_quantize(node) or is_dequantize(node)):
        return None
    if a.scale != b.scale or a.expressed != b.expressed:
        return _input(node, 1)
    if a.zero_point != b.zero_point or a.storage != b.storage:
        return _input(node, 2)
    if a.axis != b.axis:
        return "axis"
    return "block_size" if a.block_size != b.block_size else None


def describe_difference(a: QType, b: QType) -> tuple[str, str]:
    """The first field in which two types differ, described for each of them."""
    fields = (
        ("storage", lambda q: f"storage {q.storage}"),
        ("expressed", lambda q: f"expressed type {q.expressed}"),
        ("axis", lambda q: "per-tensor parameters" if q.axis is None else f"axis {q.axis}"),
        ("block_size", lambda q: f"block_size {q.block_size}"),
        ("scale", lambda q: f"scale {_short(q.scale)}"),
        ("zero_point", lambda q: f"zero point {_short(q.zero_point)}"),
        ("storage_min", lambda q: f"storage range [{q.storage_min}, {q.storage_max}]"),
        ("storage_max", lambda q: f"storage range [{q.storage_min}, {q.storage_max}]"),
        ("schema", lambda q: f"schema {q.schema.name.lower()}"),
    )
    for name, text in fields:
        if getattr(a, name) != getattr(b, name):
            return text(a), text(b)
    return str(a), str(b)


def _short(values: tuple) -> str:
    shown = ", ".join(repr(v) for v in values[:4])
    return shown if len(values) == 1 else f"[{shown}{', ...' if len(values) > 4 else ''}]"
