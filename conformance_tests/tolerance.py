"""How far an implementation's tensor may be from the definition: the operator class and the chain rule.

The one home of the project's tolerances (proposal/spec/semantics.md §8: #tolerance-table, #quantize-precision, #chains): every case generator
calls ``tolerances`` and ``onnx-qtypes compare`` calls ``node_bounds`` and ``float_limit``.

- An operator's own tolerance ``e`` is its class (``operator_tolerance``): **exact** (0 steps) when every output
  real is one of the input reals under equal parameters (the data-movement list, MaxPool / GlobalMaxPool /
  ReduceMax / ReduceMin, Relu and Clip, with the output's type equal to the input's), for DequantizeLinear and
  for QuantizeLinear of a float input; **one step** for every operator that computes a new real value
  (requantization included), in any expressed type and in integer kernels alike. Every class has its reason.
- QuantizeLinear of a float input is exact except on *near-tie* elements, where ``|x/s - (k + 1/2)| <=
  |x/s| * 2^-p`` (p: significand bits of the expressed type): a runtime dividing in the expressed type may
  land one step off there (semantics.md#quantize-precision).
- Chains (semantics.md#chains): an input within ``t_i`` steps (``R_i = t_i s_i`` in reals) of the definition gives an output
  within ``t_y = e + (0 if every R_i == 0 else floor(sum_i L_i R_i / s_y) + 1)``, with ``L_i`` the operator's
  Lipschitz bound from input i (``LIPSCHITZ``, or computed: from a constant weight's L1 norms, from the other
  operand's magnitude, from the definition's values where they are given). An exact copy or select with equal
  parameters passes ``t_y = max t_i`` on. A float tensor carries its bound in reals, ``R_y = sum_i L_i R_i``.
- Float values (``float_limit``, for ``compare``): a float tensor may be ``R_y`` from the definition's, plus one
  unit in the last place of its expressed type (both sides round once), plus, where its operator computes a new
  value in floats, ``FLOAT_ULPS`` units in the last place of the tensor's largest magnitude.

``node_bounds`` is the rule for one node, given what is known of its inputs (``Bound``: steps and reals, the
definition's or measured); ``tolerances`` walks a model with it. Steps on per-axis and blocked tensors use the
largest input scale and the smallest output scale (|s|: a negative scale is a reflection), so the bound holds
for every channel. Arithmetic is exact (Fraction): the scales are binary floats, the bounds rational.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import onnx
from onnx import ModelProto, NodeProto, helper, numpy_helper

from onnx_qtypes.interop.graph import MS_DOMAIN
from onnx_qtypes.proto import iter_declarations, read_qtype
from onnx_qtypes.proto.control_flow import CONTROL_FLOW
from onnx_qtypes.proto.data_movement import moves_data
from onnx_qtypes.proto.encoding import plain_copy
from onnx_qtypes.proto.model import model_parameters
from onnx_qtypes.proto.qtype import QType

from .judging import steps_text

__all__ = ["Bound", "COMPUTED", "EXACT_REASONS", "PARAMETER_REASON", "FLOAT_ULPS", "LIPSCHITZ", "ModelView", "NodeBound", "Tolerance", "UNBOUNDED",
           "float_limit", "near_ties", "node_bounds", "operator_tolerance", "tolerances"]

SPEC = "proposal/spec/semantics.md"
TABLE, CHAINS, NEAR, FLOATS = (f"{SPEC}#tolerance-table", f"{SPEC}#chains", f"{SPEC}#quantize-precision",
                               f"{SPEC}#float-values")
UNBOUNDED = math.inf
FLOAT_ULPS = 32  # a float kernel's own rounding, in units in the last place of the tensor's largest magnitude

ONE_STEP_REASON = ("{op} computes a new real value: an implementation (an integer kernel, or a float kernel in any "
                   "expressed type) may land one storage step from the exact result ({spec})")
NEAR_TIE_REASON = ("{count} element(s) of x are near-ties (|x/s - (k + 1/2)| <= |x/s| 2^-{p}): a runtime dividing in "
                   "{expressed}, as ONNX's QuantizeLinear permits, may round them one step off; exact ties and the "
                   "other elements are exact ({spec})")
CHAIN_REASON = ("a chain: each operator's own tolerance (0 exact, 1 where it computes a new value) plus what it "
                "carries from its inputs, t_y = e + floor(sum L_i t_i s_i / s_y) + 1 when some t_i > 0 ({spec}); "
                "here {path}")
EXACT = {  # the exact class's reasons, by what makes the operator exact
    "copy": ("{op} copies or selects stored values under equal parameters: every output real is one of the input "
             "reals, the definition's bit for bit: exact ({spec})"),
    "moves-to-float": ("{op} moves quantized values to a float output: each output is one input's real: exact "
                       "({spec})"),
    "dequantize": ("DequantizeLinear gives each stored value's real, rounded once where it leaves the quantized "
                   "domain: exact ({spec})"),
    "quantize": ("{op} quantizes a float input: it rounds the exact quotient, and no element of x is a near tie "
                 "(an element that is one may be one step off): exact ({spec})"),
    "dynamic": ("DynamicQuantizeLinear computes its parameters from the data by a fixed formula and quantizes with "
                "them, no element of x being a near tie, y and y_zero_point: exact ({spec})"),
    "control-flow": ("{op} hands stored values across its subgraphs, whose nodes copy or select them: exact "
                     "({spec})"),
    "plain": "{op} reads and writes no quantized tensor: plain ONNX, no step of its own: exact ({spec})",
    "parameter": ("the parameters a dynamic output's data chose, returned beside it by the calling convention: exact "
                  "({spec})"),
}
PARAMETER_REASON = EXACT["parameter"].format(spec=f"{SPEC}#calling-convention")
EXACT_REASONS = ("data movement with equal parameters", "DequantizeLinear", "QuantizeLinear of a float input")
SIGNIFICAND = {"float32": 24, "float16": 11, "bfloat16": 8, "float64": 53}

# Lipschitz bound (in reals, max-norm) from each quantized input to the output, where it does not depend on data
LIPSCHITZ: dict[str, Fraction] = {
    "Relu": Fraction(1), "Clip": Fraction(1), "Add": Fraction(1), "Sub": Fraction(1), "AveragePool": Fraction(1),
    "GlobalAveragePool": Fraction(1), "ReduceMean": Fraction(1), "Tanh": Fraction(1), "Sigmoid": Fraction(1, 4),
    "HardSwish": Fraction(3, 2), "Softmax": Fraction(1, 2), "Max": Fraction(1), "Min": Fraction(1),
    "Identity": Fraction(1), "Neg": Fraction(1), "Abs": Fraction(1),
    "Gelu": Fraction(113, 100), "Erf": Fraction(113, 100),  # their derivatives peak at 1.1290 and 2/sqrt(pi)
}
EXACT_WHEN_EQUAL = frozenset({"Relu", "Clip", "Max", "Min"})  # exact with equal parameters (besides data movement)
BOUNDARY = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"})
SHAPE_ONLY = frozenset({"Shape", "Size"})  # read no values: exact whatever their input carries


class NoBound(ValueError):
    """The rule gives no bound for an output (the reason says why)."""


@dataclasses.dataclass(frozen=True)
class Tolerance:
    steps: int
    reason: str = ""
    judge: str = "value"  # "positive-finite": any positive finite value is right (case.json "judge")


@dataclasses.dataclass(frozen=True)
class Bound:
    """What is known of one tensor's distance from the definition: ``steps`` (quantized tensors) and ``real``
    (in reals, the largest |implementation - definition|; None: no bound)."""

    steps: float = 0
    real: Fraction | None = Fraction(0)


@dataclasses.dataclass(frozen=True)
class NodeBound:
    """The rule's answer for one output of a node: its tolerance in ``steps`` (quantized outputs; ``UNBOUNDED`` when
    no bound follows), in ``real`` (None: no bound), the operator's own ``own`` step(s), ``reason``, and for a
    QuantizeLinear the near-tie elements of its input (one step more each, ``near``; ``near_count`` of them).
    ``computes``: a float output whose value the operator computes anew (float kernels round it their own way)."""

    steps: float
    real: Fraction | None
    own: int
    reason: str
    near: np.ndarray | None = None
    near_count: int = 0
    computes: bool = False
    chained: bool = False  # some input carried a deviation into it
    cause: str = ""  # why the node adds to the bound itself (its own step, near-ties), for a chain's reason
    open: str = ""  # why any positive finite value is right here (DynamicQuantizeLinear's y_scale of all zeros)


def near_ties(x: np.ndarray, scale: np.ndarray, expressed: str) -> np.ndarray:
    """Which elements of float ``x`` are near-ties for QuantizeLinear with ``scale`` (broadcast to x): the exact
    quotient is a non-half-integer within the expressed type's rounding error of a half-integer (semantics.md#quantize-precision)."""
    p = SIGNIFICAND[expressed]
    x, scale = np.asarray(x, np.float64), np.asarray(scale, np.float64)
    shape = np.broadcast_shapes(x.shape, scale.shape)
    with np.errstate(all="ignore"):
        q = x / scale
        # candidates in float64 (53 bits, far finer than any expressed type), confirmed exactly with Fractions
        candidates = np.isfinite(q) & (np.abs(q - (np.floor(q) + 0.5)) <= np.abs(q) * (2.0 ** -p * 1.001 + 2.0 ** -50))
    out = np.zeros(shape, bool)
    xs, ss = np.broadcast_to(x, shape), np.broadcast_to(scale, shape)
    for index in map(tuple, np.argwhere(candidates)):  # (argwhere: a 0-d x too, a scalar activation)
        v = Fraction(float(xs[index])) / Fraction(float(ss[index]))
        half = Fraction(math.floor(v)) + Fraction(1, 2)
        out[index] = v != half and abs(v - half) <= abs(v) * Fraction(1, 2 ** p)
    return out


def _scale(qtype: QType, largest: bool) -> Fraction:
    values = [abs(Fraction(s)) for s in qtype.scale]
    return max(values) if largest else min(values)


def _reals(steps: float, qtype: QType | None) -> Fraction:
    """An error of ``steps`` steps of ``qtype`` in reals (the largest scale); 0 without error or scale."""
    return Fraction(steps) * _scale(qtype, True) if steps and qtype is not None and qtype.scale else Fraction(0)


def _real_max(qtype: QType) -> Fraction:
    """The largest |real| a static type represents."""
    st = qtype.storage_type
    if st.is_float:
        return _scale(qtype, True) * st.max
    return max(abs(Fraction(s)) * max(abs(qtype.storage_min - z), abs(qtype.storage_max - z))
               for s, z in zip(qtype.scale, qtype.zero_point))


class ModelView:
    """A typed model read once: types, constants (as reals), shapes, producers."""

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
        self._reals: dict[str, np.ndarray] = {}

    def real(self, name: str) -> np.ndarray | None:
        """The real values of a constant (dequantized when quantized), or None."""
        if name not in self.constants:
            return None
        if name not in self._reals:
            value = self.constants[name]
            qtype = self.types.get(name)
            if qtype is None:
                self._reals[name] = np.asarray(value, np.float64) if value.dtype.kind in "fiub" else value
            else:
                from onnx_qtypes.reference_ops.quant import dequantize  # noqa: PLC0415

                self._reals[name] = dequantize(value, qtype, tensor=name)
        return self._reals[name]

    def shape(self, name: str) -> tuple[int, ...] | None:
        for vi in (*self.graph.input, *self.graph.value_info, *self.graph.output):
            if vi.name == name and vi.type.tensor_type.HasField("shape"):
                dims = vi.type.tensor_type.shape.dim
                return tuple(d.dim_value for d in dims) if all(d.HasField("dim_value") for d in dims) else None
        return tuple(self.constants[name].shape) if name in self.constants else None


def _attrs(node: NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _same(a: QType | None, b: QType | None) -> bool:
    return a is not None and b is not None and not a.is_dynamic and a == b


def operator_tolerance(op: str, inputs: Sequence[QType | None], outputs: Sequence[QType | None],
                       attrs: Mapping[str, Any] | None = None) -> Tolerance:
    """The operator's own tolerance on exact inputs (its class, A.2), with why."""
    e, why = _own(op, list(inputs), list(outputs), dict(attrs or {}))
    return Tolerance(e, _class_reason(op, why))


def _class_reason(op: str, why: str) -> str:
    return ONE_STEP_REASON.format(op=op, spec=TABLE) if why == "one-step" else EXACT[why].format(op=op, spec=TABLE)


def _own(op: str, inputs: list[QType | None], outputs: list[QType | None], attrs: dict[str, Any]) -> tuple[int, str]:
    """(e, the class's key in EXACT, or "one-step")."""
    quantized_out = [q for q in outputs if q is not None]
    typed_in = [q for q in inputs if q is not None]
    if op == "DequantizeLinear":
        return 0, "dequantize"
    if op == "DynamicQuantizeLinear":
        return 0, "dynamic"
    if op == "QuantizeLinear":  # of a float input: exact (near-ties aside); of a quantized one: a requantization
        if not inputs or inputs[0] is None:
            return 0, "quantize"
        return (0, "copy") if quantized_out and _same(inputs[0], quantized_out[0]) else (1, "one-step")
    if op in CONTROL_FLOW:
        return 0, "control-flow"  # its body decides (``_body_tolerance``)
    if not quantized_out and not typed_in:
        return 0, "plain"  # no quantized tensor: the node is plain ONNX (a Loop's condition, a shape computation)
    moves = moves_data(op, attrs.get("mode", b"nearest"))
    if moves and not quantized_out:
        return 0, "moves-to-float"  # quantized values moved to a float output: each is one input real
    if op in EXACT_WHEN_EQUAL or moves:
        if typed_in and quantized_out and all(_same(q, typed_in[0]) for q in (*typed_in, *quantized_out)):
            return 0, "copy"
    return 1, "one-step"


class _Operands:
    """What the L of a node's input may read: constants, the definition's values, the inputs' bounds, types."""

    def __init__(self, view: ModelView, node: NodeProto, carried: Mapping[str, Bound],
                 values: Mapping[str, np.ndarray]) -> None:
        self.view, self.node, self.carried, self.values = view, node, carried, values

    def value(self, name: str) -> np.ndarray | None:
        if not name:
            return None
        known = self.view.real(name)
        if known is None:
            known = self.values.get(name)
        return None if known is None or np.asarray(known).dtype.kind not in "fiubV" else np.asarray(known, np.float64)

    def deviation(self, name: str) -> Fraction:
        bound = self.carried.get(name)
        if bound is None or name in self.view.constants:
            return Fraction(0)
        if bound.real is None:
            raise NoBound(f"input {name!r} has no bound")
        return bound.real

    def shape(self, name: str) -> tuple[int, ...] | None:
        value = self.value(name)
        return tuple(value.shape) if value is not None else self.view.shape(name)

    def magnitude(self, name: str) -> Fraction:
        """The largest |real| the implementation's ``name`` may take: the definition's largest, widened by its
        deviation; or, without values, what its static type represents (the smaller when both are known)."""
        options = []
        value = self.value(name)
        if value is not None:
            options.append(Fraction(float(np.max(np.abs(value), initial=0.0))) + self.deviation(name))
        qtype = self.view.types.get(name)
        if qtype is not None and not qtype.is_dynamic:
            options.append(_real_max(qtype))
        if not options:
            raise NoBound(f"{self.node.op_type} node {self.node.name!r}: no bound on the magnitude of operand {name!r} "
                          "(neither its values nor a static type are known)")
        return min(options)


def _lipschitz(ops: _Operands, i: int) -> Fraction:
    """L from input i of the node to its output (reals, max-norm); raises NoBound where the rule gives none."""
    node = ops.node
    op, attrs = node.op_type, _attrs(node)
    if moves_data(op, attrs.get("mode", b"nearest")) or op in ("DequantizeLinear", "QuantizeLinear"):
        return Fraction(1)
    if op in LIPSCHITZ:
        return LIPSCHITZ[op]
    if op in COMPUTED:
        return COMPUTED[op](ops, i, attrs)
    raise NoBound(f"no Lipschitz bound for {op} (node {node.name!r}) in a chain")


def _resize(ops: _Operands, i: int, attrs: dict[str, Any]) -> Fraction:
    """Linear interpolation: non-negative weights summing to 1 (from the data input); cubic ones are not."""
    if attrs.get("mode") in (b"linear", "linear") and i == 0:
        return Fraction(1)
    raise NoBound(f"Resize node {ops.node.name!r} in mode {attrs.get('mode', b'').decode()!r}: no bound")


def _exp(ops: _Operands, i: int, attrs: dict[str, Any]) -> Fraction:
    """exp(x̂) <= exp(max x + R): its largest derivative, from the definition's values."""
    node = ops.node
    value = ops.value(node.input[0])
    if value is None:
        raise NoBound(f"Exp node {node.name!r}: no bound without the definition's values")
    top = float(np.max(value, initial=-np.inf)) + float(ops.deviation(node.input[0]))
    return Fraction(math.exp(top) * (1 + 2.0 ** -40)) if top < 700 else _no(node, "overflows")


def _no(node: NodeProto, why: str) -> Fraction:
    raise NoBound(f"{node.op_type} node {node.name!r}: {why}")


def _div(ops: _Operands, i: int) -> Fraction:
    """a / b: from a, 1 / min|b̂|; from b, max|â| / (min|b| min|b̂|), with min|b̂| >= min|b| - R_b > 0."""
    a, b = ops.node.input[0], ops.node.input[1]
    value = ops.value(b)
    if value is None or not value.size:
        return _no(ops.node, f"no bound without the divisor {b!r}'s values")
    smallest = Fraction(float(np.min(np.abs(value))))
    floor = smallest - ops.deviation(b)
    if floor <= 0:
        return _no(ops.node, f"the divisor {b!r} may reach 0")
    return 1 / floor if i == 0 else ops.magnitude(a) / (smallest * floor)


def _reduced_elements(ops: _Operands, attrs: dict[str, Any]) -> int:
    shape = ops.shape(ops.node.input[0])
    axes = ops.value(ops.node.input[1]) if len(ops.node.input) > 1 else attrs.get("axes")
    if shape is None:
        _no(ops.node, "its input has no static shape")
    if axes is None or not np.size(axes):
        return math.prod(shape) if not attrs.get("noop_with_empty_axes", 0) else 1
    return math.prod(shape[int(a)] for a in np.asarray(axes, np.int64).ravel())


def _layer_norm(ops: _Operands, i: int, attrs: dict[str, Any]) -> Fraction:
    """y = z γ + β with z = (x - mean) / σ over the normalized axes, σ = sqrt(var + ε). An input within δ moves the
    centred values by 2δ and σ by δ (σ is 1/sqrt(N)-Lipschitz in the centred values' 2-norm), so z moves by
    δ (2 + |z|) / σ̂ with σ̂ >= max(σ - δ, sqrt(ε)); from γ, |z|; from β, 1."""
    node = ops.node
    if i == 2:
        return Fraction(1)
    x = ops.value(node.input[0])
    if x is None:
        return _no(node, "no bound without the definition's values of its input")
    axis = int(attrs.get("axis", -1)) % x.ndim
    axes = tuple(range(axis, x.ndim))
    eps = float(attrs.get("epsilon", 1e-5))
    centred = x - x.mean(axis=axes, keepdims=True)
    sigma = np.sqrt((centred ** 2).mean(axis=axes, keepdims=True) + eps)
    z = centred / sigma
    if i == 1:
        return Fraction(float(np.max(np.abs(z), initial=0.0))) * (1 + Fraction(1, 2 ** 40))
    delta = float(ops.deviation(node.input[0]))
    floor = np.maximum(sigma - delta, math.sqrt(eps))
    per_group = (2 + np.max(np.abs(z), axis=axes, keepdims=True)) / floor
    gamma = ops.magnitude(node.input[1]) if len(node.input) > 1 and node.input[1] else Fraction(1)
    return Fraction(float(np.max(per_group))) * (1 + Fraction(1, 2 ** 40)) * gamma


def _weighted(ops: _Operands, i: int, attrs: dict[str, Any]) -> Fraction:
    """MatMul, Gemm, Conv, ConvTranspose: from one operand, the largest L1 norm over outputs of the other operand's
    reals feeding it (widened by that operand's deviation, K R for K products per output), or K times what the
    other's static type represents; a bias enters with 1 (beta for Gemm's C)."""
    node, op = ops.node, ops.node.op_type
    if op == "Gemm" and i == 2:
        return abs(Fraction(float(attrs.get("beta", 1.0))))
    if op in ("Conv", "ConvTranspose") and i == 2:
        return Fraction(1)
    other = node.input[1 - i]
    alpha = abs(Fraction(float(attrs.get("alpha", 1.0)))) if op == "Gemm" else Fraction(1)
    weight = node.input[1]  # Conv / ConvTranspose: the count of products per output comes from the weight's shape
    shape = ops.shape(other) if op in ("MatMul", "Gemm") else ops.shape(weight)
    if shape is None:
        return _no(node, f"operand {other!r} has no static shape")
    count = _products(op, attrs, i, shape)
    options = []
    value = ops.value(other)
    if value is not None:
        norm = Fraction(_l1_norm(op, attrs, i, np.abs(value))) if op in ("MatMul", "Gemm") or i == 0 else \
            count * Fraction(float(np.max(np.abs(value), initial=0.0)))
        options.append(norm + count * ops.deviation(other))
    qtype = ops.view.types.get(other)
    if qtype is not None and not qtype.is_dynamic:
        options.append(count * _real_max(qtype))
    if not options:
        return _no(node, f"no bound on operand {other!r} (neither its values nor a static type are known)")
    return alpha * min(options)


def _products(op: str, attrs: dict[str, Any], i: int, shape: tuple[int, ...]) -> int:
    """How many products one output element sums (K): ``shape`` is the other operand's (MatMul, Gemm) or the
    weight's (Conv: M x C/g x k..., ConvTranspose: C x M/g x k...)."""
    if op == "MatMul":
        if i == 0:
            return shape[-2] if len(shape) >= 2 else shape[0]
        return shape[-1]
    if op == "Gemm":
        if i == 0:  # B is K x N, or N x K with transB
            return shape[1] if attrs.get("transB", 0) else shape[0]
        return shape[0] if attrs.get("transA", 0) else shape[1]  # A is M x K, or K x M with transA
    if op == "Conv":
        return math.prod(shape[1:])
    return shape[0] // max(1, int(attrs.get("group", 1))) * math.prod(shape[2:])  # ConvTranspose: C/g x k...


def _l1_norm(op: str, attrs: dict[str, Any], i: int, a: np.ndarray) -> float:
    """max over outputs of the L1 norm of the other operand's |reals| ``a`` feeding one output element."""
    if op == "MatMul":
        if i == 0:
            return float(a.sum(axis=-2 if a.ndim >= 2 else 0).max(initial=0))
        return float(a.sum(axis=-1).max(initial=0))
    if op == "Gemm":
        trans = bool(attrs.get("transB", 0)) if i == 0 else bool(attrs.get("transA", 0))
        axis = (1 if trans else 0) if i == 0 else (0 if trans else 1)
        return float(a.sum(axis=axis).max(initial=0))
    if op == "Conv":  # (M, C/group, k...): one output channel reads all of its filter
        return float(a.reshape(a.shape[0], -1).sum(axis=1).max(initial=0))
    # ConvTranspose (C, M/group, k...): output channel j of group g reads W[c, j, :] for the group's C/group c
    group = max(1, int(attrs.get("group", 1)))
    grouped = a.reshape(group, a.shape[0] // group, a.shape[1], -1)
    return float(grouped.sum(axis=(1, 3)).max(initial=0))


# Lipschitz bounds computed from attributes, shapes or values (semantics.md#chains, the rows after the constant ones)
COMPUTED: dict[str, Callable[[_Operands, int, dict[str, Any]], Fraction]] = {
    "LeakyRelu": lambda ops, i, attrs: max(Fraction(1), abs(Fraction(float(attrs.get("alpha", 0.01))))),
    "HardSigmoid": lambda ops, i, attrs: abs(Fraction(float(attrs.get("alpha", 0.2)))),
    "Mul": lambda ops, i, attrs: ops.magnitude(ops.node.input[1 - i]),
    "Div": lambda ops, i, attrs: _div(ops, i),
    "Exp": _exp,
    "ReduceSum": lambda ops, i, attrs: Fraction(_reduced_elements(ops, attrs)),
    "LayerNormalization": _layer_norm,
    "MatMul": _weighted, "Gemm": _weighted, "Conv": _weighted, "ConvTranspose": _weighted,
    "Resize": _resize,
}


def node_bounds(view: ModelView, node: NodeProto, carried: Mapping[str, Bound],
                values: Mapping[str, np.ndarray] | None = None) -> dict[str, NodeBound]:
    """The rule for one node of ``view``'s main graph: each output's bound, given ``carried`` (each input's
    ``Bound``; absent: exact) and optionally ``values``, the definition's reals of tensors (a quantized tensor
    dequantized; the bounds of Mul, MatMul of two activations, LayerNormalization, ... read them where given)."""
    values = values or {}
    op, attrs = node.op_type, _attrs(node)
    ins = [view.types.get(n) if n else None for n in node.input]
    outs = [view.types.get(n) if n else None for n in node.output]
    names = [n for n in node.output if n]
    inputs = [n for n in node.input if n]
    bounds = {n: carried.get(n, Bound()) for n in inputs}
    most = max((b.steps for b in bounds.values()), default=0)
    deviated = [n for n, b in bounds.items() if b.real is None or b.real or b.steps]
    e, why = _own(op, ins, outs, attrs)

    def none(reason: str) -> dict[str, NodeBound]:
        return {n: NodeBound(UNBOUNDED, None, e, reason, chained=True) for n in names}

    if op in SHAPE_ONLY:
        return {n: NodeBound(0, Fraction(0), 0, EXACT["plain"].format(op=op, spec=TABLE)) for n in names}
    if node.domain == MS_DOMAIN and op.startswith(("QLinear", "QGemm")):  # a QOperator node a lift kept
        return none(f"{node.domain}.{op} node {node.name!r}: kept as written on untyped integers (the lift types "
                    "none of its tensors), it quantizes again, which the table bounds on typed tensors only: no bound")
    unknown = [n for n, b in bounds.items() if b.real is None]
    if unknown:
        return none(f"input {unknown[0]!r} has no known bound, so none follows ({CHAINS})")
    if op in CONTROL_FLOW or ((node.domain, op) in view.functions and _typed_body(view, node)):
        body = _body_tolerance(view, node)
        if deviated and body:
            return none(f"{op} node {node.name!r}: its body computes new values from inputs that deviated: no bound")
        reason = ONE_STEP_REASON.format(op=f"the body of {op}", spec=TABLE) if body else \
            EXACT["control-flow"].format(op=op, spec=TABLE)
        real = max((b.real for b in bounds.values()), default=Fraction(0))
        return {n: NodeBound(most + body, _reals(most + body, q) if q is not None else real, body, reason,
                             computes=bool(body) and q is None, chained=bool(deviated), cause=reason if body else "")
                for n, q in zip(node.output, outs) if n}
    ops = _Operands(view, node, bounds, values)
    quantizes = op in ("QuantizeLinear", "DynamicQuantizeLinear") or moves_data(op, attrs.get("mode", b"nearest"))
    if quantizes and outs and outs[0] is not None and ins and ins[0] is None:  # a float input quantized
        out, real = outs[0], bounds[inputs[0]].real if inputs else Fraction(0)
        near = _near_tie_mask(view, node, out, values)  # a data-movement op into a quantized type quantizes too
        count = int(np.count_nonzero(near)) if near is not None else 0
        exact = _class_reason(op, "dynamic" if op == "DynamicQuantizeLinear" else "quantize")
        reason = NEAR_TIE_REASON.format(count=count, p=SIGNIFICAND[out.expressed], expressed=out.expressed,
                                        spec=NEAR) if count else exact
        cause = reason if count else ""
        if not real:  # DynamicQuantizeLinear's y_scale and y_zero_point follow from the data exactly
            others = {n: NodeBound(0, Fraction(0), 0, exact, open=_open_scale(values, node, k))
                      for k, n in enumerate(node.output) if n and k}
            return {node.output[0]: NodeBound(0, Fraction(0), 0, reason, near if count else None, count,
                                              cause=cause), **others}
        if out.is_dynamic:
            return none(f"{op} node {node.name!r}: a dynamic output carries no chain bound ({CHAINS})")
        t = math.floor(real / _scale(out, False)) + 1
        return {node.output[0]: NodeBound(t, _reals(t + (1 if count else 0), out), 0,
                                          f"a float input within {_num(real)} of the definition quantized: "
                                          f"floor(R / s_y) + 1 ({CHAINS})", near if count else None, count,
                                          chained=True, cause=cause)}
    first = next((q for q in ins if q is not None), None)
    copies = why in ("copy", "moves-to-float") or (why == "plain" and moves_data(op, attrs.get("mode", b"nearest")))
    if copies and op not in BOUNDARY and all(q is None or _same(q, first) for q in outs):
        reason = _class_reason(op, why)
        real_most = max((b.real for b in bounds.values()), default=Fraction(0))
        return {n: NodeBound(most, _reals(most, q) if q is not None else real_most, 0, reason if not deviated else
                             f"{reason}; the inputs' {_num(most)} step(s) pass on ({CHAINS})", chained=bool(deviated))
                for n, q in zip(node.output, outs) if n}
    total = Fraction(0)
    try:
        for i, name in enumerate(node.input):
            if name and bounds[name].real:
                total += _lipschitz(ops, i) * bounds[name].real
    except NoBound as exc:
        return none(f"{exc} ({CHAINS})")
    own = _class_reason(op, why)
    chain = (f"{e} own step(s) + floor(sum L_i R_i / s_y) + 1 = floor({_num(total)} / s_y) + 1 from the inputs that "
             f"deviated ({', '.join(repr(n) for n in deviated)}) ({CHAINS})")
    out: dict[str, NodeBound] = {}
    for n, q in zip(node.output, outs):
        if not n:
            continue
        if op == "DequantizeLinear":  # exact: the float output carries the input's error
            out[n] = NodeBound(bounds[inputs[0]].steps if inputs else 0, total, 0, own, chained=bool(total))
        elif q is not None and not q.is_dynamic:
            if q.storage_type.is_float and total:
                out[n] = NodeBound(UNBOUNDED, None, e, f"{op} node {node.name!r}: float storage carries no chain "
                                   f"bound in steps ({CHAINS})", chained=True)
                continue
            t = e + (0 if total == 0 else math.floor(total / _scale(q, False)) + 1)
            out[n] = NodeBound(t, _reals(t, q), e, own if not total else chain, chained=bool(total),
                               cause=own if e else "")
        elif q is not None:  # dynamic: its parameters follow the data; only exact inputs have a bound
            out[n] = NodeBound(UNBOUNDED, None, e, f"{op} node {node.name!r}: a dynamic output of inputs that "
                               f"deviated carries no chain bound ({CHAINS})", chained=True) if total else \
                NodeBound(e, Fraction(0), e, own, cause=own if e else "")
        else:  # a float output: the bound in reals (steps: its own, for a case that names its step); float
            # kernels' own rounding is ``float_limit``'s
            out[n] = NodeBound(e, total, e, own if not total else f"{own}; R_y = sum L_i R_i = {_num(total)} "
                               f"({CHAINS})", computes=e > 0 or why == "plain", chained=bool(total),
                               cause=own if e else "")
    return out


def float_limit(expected: np.ndarray, bound: NodeBound) -> np.ndarray:
    """How far each element of a float tensor may be from the definition's ``expected`` (reals, per element): the
    rule's ``bound.real``, one unit in the last place of the expressed type at the larger of the two magnitudes
    the element may have (``expected``, and ``bound.real`` beyond it: both sides round once, the other side at
    its own magnitude: a DequantizeLinear 4 steps off reads 5 · s, rounded, where the definition has s), and
    where the operator computes a new value in floats, FLOAT_ULPS units in the last place of the tensor's largest
    magnitude (a float kernel's own summation order and library functions)."""
    expected = np.asarray(expected)
    if bound.real is None:  # no bound
        return np.full(expected.shape, UNBOUNDED)
    info = np.finfo(expected.dtype if expected.dtype.kind == "f" else np.float32)
    ulp = 2.0 ** -info.nmant  # one unit in the last place, relative
    magnitude = np.abs(expected.astype(np.float64))
    finite = np.where(np.isfinite(magnitude), magnitude, 0.0)
    limit = float(bound.real) + ulp * (finite + float(bound.real)) + float(info.smallest_subnormal)
    if bound.computes and finite.size:
        limit = limit + FLOAT_ULPS * ulp * float(finite.max())
    return limit


def tolerances(model: ModelProto, feeds: Mapping[str, np.ndarray] | None = None,
               steps: Mapping[str, float] | None = None, values: Mapping[str, np.ndarray] | None = None
               ) -> dict[str, Tolerance]:
    """Every graph output's tolerance in steps, with its reason: the operator class of each node and the chain
    rule through the graph. ``feeds``: the case's inputs (QuantizeLinear near-ties are found in them);
    ``steps``: the real step a float output computed by a non-boundary operator is judged in; ``values``: the
    definition's reals of intermediate tensors, where the bounds that depend on data may read them (without
    them, an operand's magnitude is what its type represents). Raises ValueError where the rule gives a graph
    output no bound."""
    view = ModelView(model)
    values = {**_feed_reals(view, dict(feeds or {})), **dict(values or {})}
    steps = dict(steps or {})
    bounds: dict[str, Bound] = {}
    paths: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {}  # tensor -> (path, causes, last reason)
    opens: dict[str, str] = {}  # tensor -> why any positive finite value is right there
    outputs = {vi.name for vi in view.graph.output}
    for node in view.graph.node:
        carried = {n: bounds[n] for n in node.input if n in bounds}
        answers = node_bounds(view, node, carried, values)
        before = [paths.get(n, ((), (), "")) for n in node.input if n]
        path = max((p for p, _, _ in before), key=len, default=())
        causes = tuple(c for _, cs, _ in before for c in cs)
        for n, answer in answers.items():
            if answer.real is None:
                if n in outputs or any(n in o.input for o in view.graph.node):
                    raise ValueError(answer.reason)
                continue
            t = answer.steps + (1 if answer.near_count else 0)
            real = answer.real
            q = view.types.get(n)
            if q is None and answer.computes and steps.get(n) is not None:  # a computed float output, in its step
                t = answer.own + (0 if real == 0 else math.floor(real / Fraction(steps[n])) + 1)
                real = t * Fraction(steps[n])
            elif q is None and real and answer.computes and n in outputs:
                raise ValueError(f"float output {n!r} of {node.op_type} has no step to count its error in")
            bounds[n] = Bound(t, real if q is None else max(real, _reals(t, q)))
            if answer.open:
                opens[n] = answer.open
            paths[n] = ((*path, f"{node.op_type} {_num(t)}") if t else path,
                        (*causes, answer.cause) if answer.cause else causes, answer.reason)
    out = {}
    for vi in view.graph.output:
        b = bounds.get(vi.name, Bound())
        if vi.name in opens:
            out[vi.name] = Tolerance(0, opens[vi.name], judge="positive-finite")
            continue
        path, causes, last = paths.get(vi.name, ((), (), ""))
        if not b.steps:
            reason = last or "a graph input passed through unchanged: exact ({})".format(TABLE)
        else:
            causes = list(dict.fromkeys(causes))
            if len(path) <= 1:
                reason = "; ".join(causes) or last
            else:  # the rule and the path, then the other causes than one step per operator in one line
                computing = sorted({c.split(" computes")[0] for c in causes if " computes a new real value" in c})
                others = [c for c in causes if " computes a new real value" not in c]
                reason = CHAIN_REASON.format(spec=CHAINS, path=" -> ".join(path)) + (
                    f"; {', '.join(computing)} compute new values (one step each)" if computing else "") + (
                    f"; {'; '.join(others)}" if others else "")
        out[vi.name] = Tolerance(int(b.steps), reason)
    return out


def _feed_reals(view: ModelView, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The feeds as the definition's reals: a static quantized feed dequantized, others as given."""
    from onnx_qtypes.reference_ops.quant import dequantize  # noqa: PLC0415

    out = {}
    for name, value in feeds.items():
        qtype = view.types.get(name)
        if qtype is not None and not qtype.is_dynamic:
            out[name] = dequantize(np.asarray(value), qtype, tensor=name)
        elif qtype is None:
            out[name] = np.asarray(value)
    return out


def _typed_body(view: ModelView, node: NodeProto) -> bool:
    body = view.functions[(node.domain, node.op_type)]
    return any(n in view.types for n in (*body.input, *body.output))


def _body_tolerance(view: ModelView, node: NodeProto) -> int:
    """The largest own tolerance of a subgraph's or typed function body's nodes (exact inputs: bodies here
    move and compare values, or requantize once)."""
    bodies: list[Sequence[NodeProto]] = []
    if node.op_type in CONTROL_FLOW:
        bodies = [a.g.node for a in node.attribute if a.type == onnx.AttributeProto.GRAPH]
    else:
        bodies = [view.functions[(node.domain, node.op_type)].node]
    worst = 0
    for nodes in bodies:
        for inner in nodes:
            ins = [view.types.get(n) if n else None for n in inner.input]
            outs = [view.types.get(n) if n else None for n in inner.output]
            worst = max(worst, _body_tolerance(view, inner) if inner.op_type in CONTROL_FLOW
                        else _own(inner.op_type, ins, outs, _attrs(inner))[0])
    return worst


def _open_scale(values: Mapping[str, np.ndarray], node: NodeProto, k: int) -> str:
    """DynamicQuantizeLinear's y_scale on an all-zero input: ONNX's formula divides 0 by 0, so any positive finite
    value is right (semantics.md#all-zero)."""
    x = values.get(node.input[0]) if node.input else None
    if k != 1 or x is None or np.asarray(x).size == 0 or np.any(np.asarray(x, np.float64) != 0):
        return ""
    return (f"DynamicQuantizeLinear of an all-zero input: every stored value is the zero point, and y_scale may be any "
            f"positive finite value ({SPEC}#all-zero)")


def _near_tie_mask(view: ModelView, node: NodeProto, qtype: QType, values: Mapping[str, np.ndarray]
                   ) -> np.ndarray | None:
    """The elements of a QuantizeLinear's float input (the definition's values) that are near-ties under
    ``qtype`` and whose two candidates do not saturate to one stored value; None where the input is not known."""
    x = values.get(node.input[0])
    if x is None:  # a constant (a float weight a kept QuantizeLinear reads): the file's own values
        x = view.constants.get(node.input[0])
    if x is None or np.asarray(x).dtype.kind not in "fV":  # V: ml_dtypes' bfloat16
        return None
    from onnx_qtypes.proto.errors import QTypeError  # noqa: PLC0415
    from onnx_qtypes.reference_ops.quant import broadcast_parameters, dynamic_parameters, storage_range  # noqa: PLC0415

    x = np.asarray(x)
    if qtype.is_dynamic and node.op_type == "QuantizeLinear":  # bound to its scale / zero-point operands
        scale = values.get(node.input[1]) if len(node.input) > 1 else None
        if scale is None and len(node.input) > 1:
            scale = view.real(node.input[1])
        zero = values.get(node.input[2]) if len(node.input) > 2 else None
        if zero is None and len(node.input) > 2:
            zero = view.constants.get(node.input[2])
        if scale is None or np.size(scale) != 1:
            return None  # a per-axis binding is not judged here
        qtype = qtype.replace(scale=float(np.asarray(scale)), zero_point=0 if zero is None else int(np.asarray(zero)))
    elif qtype.is_dynamic:  # the parameters the data chooses
        qtype = dynamic_parameters(x, qtype)
    if qtype.storage_type.is_float:
        return None  # float storage rounds to a non-uniform grid: no half-integer quotient to miss
    try:
        scale, zero_point = broadcast_parameters(qtype, np.shape(x), tensor=node.output[0])
    except QTypeError:  # a shape the parameters do not fit: the reference refused it before this
        return None
    near = near_ties(x, scale, qtype.expressed)
    with np.errstate(all="ignore"):  # a near-tie whose two candidates saturate to one stored value cannot be off
        below = np.floor(np.asarray(x, np.float64) / scale) + zero_point
    lo, hi = storage_range(qtype)
    return near & (np.clip(below, lo, hi) != np.clip(below + 1, lo, hi))


def _num(value: float | Fraction | None) -> str:
    return "?" if value is None else steps_text(float(value))
