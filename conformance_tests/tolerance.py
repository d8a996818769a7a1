"""How far an execution case's output may be from the definition: the operator class and the chain rule.

The one home of the suite's tolerances (decisions A.2-A.4, proposal/spec/semantics.md#one-step); every case
generator calls ``tolerances``.

- An operator's own tolerance ``e`` is its class: **exact** (0 steps) when every output real is one of the
  input reals under equal parameters (the data-movement list, MaxPool / GlobalMaxPool / ReduceMax / ReduceMin,
  Relu and Clip, with the output's type equal to the input's), for DequantizeLinear and for QuantizeLinear of
  a float input; **one step** for every operator that computes a new real value (requantization included),
  in any expressed type and in integer kernels alike.
- QuantizeLinear of a float input is exact except on *near-tie* elements, where ``|x/s - (k + 1/2)| <=
  |x/s| * 2^-p`` (p: significand bits of the expressed type): a runtime dividing in the expressed type may
  land one step off there (A.3). A case whose data holds one gets 1 step and says why.
- Chains (A.4): an input ``x`` within ``t_x`` steps of the definition reaches ``y`` within
  ``t_y = e + (0 if every t_x == 0 else floor(sum_i L_i t_i s_i / s_y) + 1)``, with ``L_i`` the operator's
  Lipschitz bound from input i to y (``LIPSCHITZ``, or computed from a constant weight). An exact copy or
  select with equal parameters passes ``t_y = max t_x`` on. Float tensors carry their error bound in reals.

Steps on per-axis and blocked tensors use the largest input scale and the smallest output scale (|s|: a
negative scale is a reflection), so the bound holds for every channel. Arithmetic is exact (Fraction): the
scales are binary floats, the bounds rational.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto, NodeProto, helper, numpy_helper

from onnx_qtypes.proto import iter_declarations, read_qtype
from onnx_qtypes.proto.control_flow import CONTROL_FLOW
from onnx_qtypes.proto.data_movement import ORDER_SELECTING, moves_data
from onnx_qtypes.proto.encoding import plain_copy
from onnx_qtypes.proto.model import model_parameters
from onnx_qtypes.proto.qtype import QType

__all__ = ["EXACT_REASONS", "LIPSCHITZ", "Tolerance", "near_ties", "operator_tolerance", "tolerances"]

SPEC = "semantics.md#one-step"
ONE_STEP_REASON = ("{op} computes a new real value: an implementation (an integer kernel, or a float kernel in any "
                   "expressed type) may land one storage step from the exact result ({spec})")
NEAR_TIE_REASON = ("{count} element(s) of x are near-ties (|x/s - (k + 1/2)| <= |x/s| 2^-{p}): a runtime dividing in "
                   "{expressed}, as ONNX's QuantizeLinear permits, may round them one step off; exact ties and the "
                   "other elements are exact ({spec})")
CHAIN_REASON = ("a chain: each operator's own tolerance (0 exact, 1 where it computes a new value) plus what it "
                "carries from its inputs, t_y = e + floor(sum L_i t_i s_i / s_y) + 1 when some t_i > 0 ({spec}); "
                "here {path}")
EXACT_REASONS = ("data movement with equal parameters", "DequantizeLinear", "QuantizeLinear of a float input")
SIGNIFICAND = {"float32": 24, "float16": 11, "bfloat16": 8, "float64": 53}

# Lipschitz bound (in reals, max-norm) from each quantized input to the output, where it does not depend on data
LIPSCHITZ: dict[str, Fraction] = {
    "Relu": Fraction(1), "Clip": Fraction(1), "Add": Fraction(1), "Sub": Fraction(1), "AveragePool": Fraction(1),
    "GlobalAveragePool": Fraction(1), "ReduceMean": Fraction(1), "Tanh": Fraction(1), "Sigmoid": Fraction(1, 4),
    "HardSwish": Fraction(3, 2), "Softmax": Fraction(1, 2), "Max": Fraction(1), "Min": Fraction(1),
    "Resize": Fraction(1),  # nearest moves values; linear interpolates with weights summing to 1
}
EXACT_WHEN_EQUAL = frozenset({"Relu", "Clip", "Max", "Min"})  # exact with equal parameters (besides data movement)
BOUNDARY = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"})


@dataclasses.dataclass(frozen=True)
class Tolerance:
    steps: int
    reason: str = ""  # empty when steps == 0


@dataclasses.dataclass
class _Bound:
    """What is known of one tensor: its error bound in steps (quantized) and in reals."""

    steps: int = 0
    real: Fraction = Fraction(0)
    path: tuple[str, ...] = ()  # the operators that added to the bound, "Op t" each
    causes: tuple[str, ...] = ()  # why each of them did


def near_ties(x: np.ndarray, scale: np.ndarray, expressed: str) -> np.ndarray:
    """Which elements of float ``x`` are near-ties for QuantizeLinear with ``scale`` (broadcast to x): the exact
    quotient is a non-half-integer within the expressed type's rounding error of a half-integer (A.3)."""
    p = SIGNIFICAND[expressed]
    x, scale = np.asarray(x, np.float64), np.asarray(scale, np.float64)
    with np.errstate(all="ignore"):
        q = np.array([Fraction(float(a)) / Fraction(float(b)) if math.isfinite(a) else Fraction(0)
                      for a, b in zip(*(v.ravel() for v in np.broadcast_arrays(x, scale)))], dtype=object)
    out = np.zeros(q.size, bool)
    for i, v in enumerate(q):
        half = Fraction(math.floor(v)) + Fraction(1, 2)
        if v != half and abs(v - half) <= abs(v) * Fraction(1, 2 ** p):
            out[i] = True
    return out.reshape(np.broadcast_shapes(x.shape, scale.shape))


def _scale(qtype: QType, largest: bool) -> Fraction:
    values = [abs(Fraction(s)) for s in qtype.scale]
    return max(values) if largest else min(values)


def _reals(steps: int, qtype: QType | None) -> Fraction:
    """An error of ``steps`` steps of ``qtype`` in reals (the largest scale); 0 without error or scale."""
    return steps * _scale(qtype, True) if steps and qtype is not None and qtype.scale else Fraction(0)


def _real_max(qtype: QType) -> Fraction:
    """The largest |real| a static type represents."""
    st = qtype.storage_type
    if st.is_float:
        return _scale(qtype, True) * st.max
    return max(abs(Fraction(s)) * max(abs(qtype.storage_min - z), abs(qtype.storage_max - z))
               for s, z in zip(qtype.scale, qtype.zero_point))


class _Graph:
    """The typed model read once: types, constants (as reals), producers."""

    def __init__(self, model: ModelProto) -> None:
        parameters = model_parameters(model)
        self.types: dict[str, QType] = {}
        for decl in iter_declarations(model):
            qtype = read_qtype(decl.value_info, decl.pointer, parameters=parameters)
            if qtype is not None:
                self.types.setdefault(decl.name, qtype.with_statistics(None))
        plain = plain_copy(model)
        self.constants: dict[str, np.ndarray] = {t.name: numpy_helper.to_array(t) for t in plain.graph.initializer}
        self.functions = {(f.domain, f.name): f for f in model.functions}
        self.graph = model.graph

    def real(self, name: str) -> np.ndarray | None:
        """The real values of a constant (dequantized when quantized), or None."""
        if name not in self.constants:
            return None
        value = self.constants[name]
        qtype = self.types.get(name)
        if qtype is None:
            return np.asarray(value, np.float64)
        from onnx_qtypes.reference_ops.quant import dequantize  # noqa: PLC0415

        return dequantize(value, qtype, tensor=name)


def _attrs(node: NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _same(a: QType | None, b: QType | None) -> bool:
    return a is not None and b is not None and not a.is_dynamic and a == b


def operator_tolerance(op: str, inputs: Sequence[QType | None], outputs: Sequence[QType | None],
                       attrs: Mapping[str, Any] | None = None) -> Tolerance:
    """The operator's own tolerance on exact inputs (its class, A.2)."""
    e = _own(op, list(inputs), list(outputs), dict(attrs or {}))
    return Tolerance(e, "" if e == 0 else ONE_STEP_REASON.format(op=op, spec=SPEC))


def _own(op: str, inputs: list[QType | None], outputs: list[QType | None], attrs: dict[str, Any]) -> int:
    if op in ("DequantizeLinear", "QuantizeLinear", "DynamicQuantizeLinear") or op in CONTROL_FLOW:
        return 0  # a boundary maps exactly (near-ties: see tolerances); control flow: its body decides
    quantized_out = [q for q in outputs if q is not None]
    if not quantized_out and not any(q is not None for q in inputs):
        return 0  # no quantized tensor: the node is plain ONNX (a Loop's condition, a shape computation)
    moves = moves_data(op, attrs.get("mode", b"nearest"))
    if moves and not quantized_out:
        return 0  # quantized values moved to a float output: each is one input real (a dequantize)
    if op in EXACT_WHEN_EQUAL or moves:
        typed_in = [q for q in inputs if q is not None]
        if typed_in and quantized_out and all(_same(q, typed_in[0]) for q in (*typed_in, *quantized_out)):
            return 0
    return 1


def _lipschitz(g: _Graph, node: NodeProto, i: int, inputs: list[QType | None]) -> Fraction:
    """L from input i of ``node`` to its output (reals, max-norm)."""
    op, attrs = node.op_type, _attrs(node)
    if moves_data(op, attrs.get("mode", b"nearest")) or op in ("Identity", "DequantizeLinear", "QuantizeLinear"):
        return Fraction(1)
    if op in LIPSCHITZ:
        return LIPSCHITZ[op]
    if op == "LeakyRelu":
        return max(Fraction(1), abs(Fraction(float(attrs.get("alpha", 0.01)))))
    if op in ("Mul", "MatMul", "Gemm", "Conv", "ConvTranspose"):
        other = node.input[1 - i] if i < 2 else None
        if op == "Gemm" and i == 2:
            return abs(Fraction(float(attrs.get("beta", 1.0))))
        if (op in ("Conv", "ConvTranspose") and i == 2):
            return Fraction(1)
        value = g.real(other) if other else None
        if value is None:  # a variable operand: bounded by its type's range
            qtype = g.types.get(other) if other else None
            if qtype is None or qtype.is_dynamic:
                raise ValueError(f"{op} node {node.name!r}: no bound on operand {other!r}")
            bound = _real_max(qtype)
            if op == "Mul":
                return bound
            shape = _shape_of(g, other)
            if shape is None:
                raise ValueError(f"{op} node {node.name!r}: operand {other!r} has no static shape")
            reduced = _reduced_count(op, attrs, i, shape)
            return bound * reduced * (abs(Fraction(float(attrs.get("alpha", 1.0)))) if op == "Gemm" else 1)
        return _weight_norm(op, attrs, i, np.asarray(value, np.float64))
    raise ValueError(f"no Lipschitz bound for {op} (node {node.name!r}) in a chain")


def _shape_of(g: _Graph, name: str) -> tuple[int, ...] | None:
    for vi in (*g.graph.input, *g.graph.value_info, *g.graph.output):
        if vi.name == name:
            return tuple(d.dim_value for d in vi.type.tensor_type.shape.dim)
    return tuple(g.constants[name].shape) if name in g.constants else None


def _reduced_count(op: str, attrs: dict[str, Any], i: int, shape: tuple[int, ...]) -> int:
    """How many products of the other operand one output element sums (MatMul / Gemm / Conv)."""
    if op == "MatMul":
        return shape[-2] if i == 0 else shape[-1]  # the other operand's K
    if op == "Gemm":
        return shape[0] if (i == 0) == bool(attrs.get("transB", 0)) else shape[1]
    return math.prod(shape[1:])


def _weight_norm(op: str, attrs: dict[str, Any], i: int, w: np.ndarray) -> Fraction:
    """max over outputs of the L1 norm of the constant operand's reals feeding one output element."""
    a = np.abs(w)
    if op == "Mul":
        norm = float(a.max(initial=0))
    elif op == "MatMul":
        norm = float(a.sum(axis=-2).max(initial=0)) if i == 0 else float(a.sum(axis=-1).max(initial=0))
    elif op == "Gemm":
        trans = bool(attrs.get("transB", 0)) if i == 0 else bool(attrs.get("transA", 0))
        axis = (1 if trans else 0) if i == 0 else (0 if trans else 1)
        norm = float(a.sum(axis=axis).max(initial=0)) * abs(float(attrs.get("alpha", 1.0)))
    elif op == "Conv":  # (M, C/group, kh, kw): one output channel reads all of its filter
        norm = float(a.reshape(a.shape[0], -1).sum(axis=1).max(initial=0))
    else:  # ConvTranspose (C, M/group, kh, kw): an output element reads at most every tap of its channel
        norm = float(np.moveaxis(a, 1, 0).reshape(a.shape[1], -1).sum(axis=1).max(initial=0))
    return Fraction(norm)


def tolerances(model: ModelProto, feeds: Mapping[str, np.ndarray] | None = None,
               steps: Mapping[str, float] | None = None) -> dict[str, Tolerance]:
    """Every graph output's tolerance in steps, with its reason: the operator class of each node and the chain
    rule through the graph. ``feeds``: the case's inputs (QuantizeLinear near-ties are found in them);
    ``steps``: the real step a float output computed by a non-boundary operator is judged in."""
    g = _Graph(model)
    bounds: dict[str, _Bound] = {}
    _walk(g, bounds, dict(feeds or {}), dict(steps or {}))
    out = {}
    for vi in g.graph.output:
        b = bounds.get(vi.name, _Bound())
        reason = ""
        if b.steps:
            causes = list(dict.fromkeys(b.causes))
            if len(b.path) <= 1:
                reason = "; ".join(causes)
            else:  # the rule and the path, then the other causes than one step per operator in one line
                computing = sorted({c.split(" computes")[0] for c in causes if " computes a new real value" in c})
                others = [c for c in causes if " computes a new real value" not in c]
                reason = CHAIN_REASON.format(spec=SPEC, path=" -> ".join(b.path)) + (
                    f"; {', '.join(computing)} compute new values (one step each)" if computing else "") + (
                    f"; {'; '.join(others)}" if others else "")
        out[vi.name] = Tolerance(b.steps, reason)
    return out


def _walk(g: _Graph, bounds: dict[str, _Bound], feeds: dict, steps: dict) -> None:
    """Fill ``bounds`` for every tensor the main graph computes, node by node (ONNX orders them topologically)."""
    outputs = {vi.name for vi in g.graph.output}
    for node in g.graph.node:
        op = node.op_type
        ins = [g.types.get(n) if n else None for n in node.input]
        outs = [g.types.get(n) if n else None for n in node.output]
        carried = [bounds.get(n, _Bound()) for n in node.input if n]
        path = max((b.path for b in carried), key=len, default=())
        causes = tuple(c for b in carried for c in b.causes)

        def put(name: str, t: int, real: Fraction, own: str = "") -> None:
            bounds[name] = _Bound(t, real, (*path, f"{op} {t}") if t else path, (*causes, own) if own else causes)

        if op in CONTROL_FLOW or (node.domain, op) in g.functions and _typed_body(g, node):
            t = max((b.steps for b in carried), default=0) + _body_tolerance(g, node)
            for n in node.output:
                put(n, t, Fraction(0), ONE_STEP_REASON.format(op=f"the body of {op}", spec=SPEC)
                    if t > max((b.steps for b in carried), default=0) else "")
            continue
        quantizes = op == "QuantizeLinear" or moves_data(op, _attrs(node).get("mode", b"nearest"))
        if quantizes and outs and outs[0] is not None and ins and ins[0] is None:  # a float input quantized
            ties = _near_tie_count(g, node, outs[0], feeds)
            t, real = (1 if ties else 0), (carried[0].real if carried else Fraction(0))
            if real:  # a float input carrying error
                if outs[0].is_dynamic:
                    raise ValueError(f"QuantizeLinear node {node.name!r}: a dynamic output carries no chain bound")
                t += math.floor(real / _scale(outs[0], False)) + 1
            put(node.output[0], t, _reals(t, outs[0]), NEAR_TIE_REASON.format(
                count=ties, p=SIGNIFICAND[outs[0].expressed], expressed=outs[0].expressed, spec=SPEC) if ties else "")
            continue
        e = _own(op, ins, outs, _attrs(node))
        first = next((q for q in ins if q is not None), None)
        most = max((b.steps for b in carried), default=0)
        if e == 0 and op not in BOUNDARY and all(q is None or _same(q, first) for q in outs):
            for n, q in zip(node.output, outs):  # exact copy / select with equal parameters: passes t on
                if n:
                    put(n, most, _reals(most, q))
            continue
        total = Fraction(0)
        for i, name in enumerate(node.input):
            b = bounds.get(name) if name else None
            if b is not None and b.real:
                total += _lipschitz(g, node, i, ins) * b.real
        own = ONE_STEP_REASON.format(op=op, spec=SPEC) if e else ""
        for n, q in zip(node.output, outs):
            if not n:
                continue
            if op == "DequantizeLinear":  # exact: the float output carries the input's error, in its steps
                put(n, carried[0].steps if carried else 0, total)
            elif q is not None and not q.is_dynamic:
                if q.storage_type.is_float and total:
                    raise ValueError(f"{op} node {node.name!r}: float storage carries no chain bound in steps")
                t = e + (0 if total == 0 else math.floor(total / _scale(q, False)) + 1)
                put(n, t, _reals(t, q), own)
            elif q is not None:  # dynamic: its parameters follow the data; only exact inputs have a bound
                if total:
                    raise ValueError(f"{op} node {node.name!r}: a dynamic output carries no chain bound")
                put(n, e, Fraction(0), own)
            elif steps.get(n) is not None:  # a float graph output, in the real step it is judged in
                t = e + (0 if total == 0 else math.floor(total / Fraction(steps[n])) + 1)
                put(n, t, t * Fraction(steps[n]), own)
            elif total and (e or n in outputs):
                raise ValueError(f"float output {n!r} of {op} has no step to count its error in")
            else:  # exact inputs: the class alone; a plain float op inside carries the error in reals
                put(n, e, total, own)


def _typed_body(g: _Graph, node: NodeProto) -> bool:
    body = g.functions[(node.domain, node.op_type)]
    return any(n in g.types for n in (*body.input, *body.output))


def _body_tolerance(g: _Graph, node: NodeProto) -> int:
    """The largest own tolerance of a subgraph's or typed function body's nodes (exact inputs: bodies here
    move and compare values, or requantize once)."""
    bodies: list[Sequence[NodeProto]] = []
    if node.op_type in CONTROL_FLOW:
        bodies = [a.g.node for a in node.attribute if a.type == onnx.AttributeProto.GRAPH]
    else:
        bodies = [g.functions[(node.domain, node.op_type)].node]
    worst = 0
    for nodes in bodies:
        for inner in nodes:
            ins = [g.types.get(n) if n else None for n in inner.input]
            outs = [g.types.get(n) if n else None for n in inner.output]
            worst = max(worst, _body_tolerance(g, inner) if inner.op_type in CONTROL_FLOW
                        else _own(inner.op_type, ins, outs, _attrs(inner)))
    return worst


def _near_tie_count(g: _Graph, node: NodeProto, qtype: QType, feeds: dict) -> int:
    """How many elements of the QuantizeLinear's float input (a feed) are near-ties under ``qtype``."""
    x = feeds.get(node.input[0])
    if x is None:
        return 0
    from onnx_qtypes.reference_ops.quant import broadcast_parameters, dynamic_parameters  # noqa: PLC0415

    if qtype.is_dynamic and node.op_type == "QuantizeLinear":  # bound to its scale / zero-point operands
        scale = feeds.get(node.input[1]) if len(node.input) > 1 else None
        zero = feeds.get(node.input[2]) if len(node.input) > 2 else None
        if scale is None or np.size(scale) != 1:
            return 0  # constant operands of a static type are read below; a per-axis binding is not judged here
        qtype = qtype.replace(scale=float(np.asarray(scale)), zero_point=0 if zero is None else int(np.asarray(zero)))
    elif qtype.is_dynamic:  # the parameters the data chooses
        qtype = dynamic_parameters(np.asarray(x), qtype)
    if qtype.storage_type.is_float:
        return 0  # float storage rounds to a non-uniform grid: no half-integer quotient to miss
    scale, zero_point = broadcast_parameters(qtype, np.shape(x), tensor=node.output[0])
    near = near_ties(x, scale, qtype.expressed)
    # a near-tie whose two candidates saturate to one stored value cannot be off
    with np.errstate(all="ignore"):
        below = np.floor(np.asarray(x, np.float64) / scale) + zero_point
    lo, hi = qtype.storage_min, qtype.storage_max
    return int(np.count_nonzero(near & (np.clip(below, lo, hi) != np.clip(below + 1, lo, hi))))
