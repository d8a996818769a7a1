"""How far a backend's quantized tensor may be from the definition's, in storage steps (decisions A.2-A.4).

This is the small interface ``compare`` judges through, until the suite's own ``conformance_tests/tolerance.py``
(the one function every case generator calls) lands; then ``own_steps`` and ``lipschitz`` below are replaced by
imports of that module's operator-class function and chain rule, and ``allowance`` keeps its signature.

- ``own_steps`` (A.2): 0 for operators whose every output real is one of the input reals under equal
  parameters (data movement, MaxPool / ReduceMax / ReduceMin, Relu and Clip with equal parameters) and for
  QuantizeLinear of a float input; 1 for every operator that computes a new real value.
- QuantizeLinear near-ties (A.3): one step more on the elements whose exact quotient x / s lies within the
  expressed type's rounding error of a half-integer without being one, 0 < |x/s - (k + 1/2)| <= |x/s| * 2^-p.
- The chain (A.4): an operator whose quantized inputs are within t_i steps (scale s_i) of the definition's
  may give an output within t_y = e + (0 if every t_i == 0 else floor(sum L_i t_i s_i / s_y) + 1); exact
  copy / select operators with equal parameters pass the largest t_i on. ``compare`` takes t_i as the input's
  *measured* largest deviation, so a node is judged on the inputs the backend actually gave it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np
from onnx import NodeProto, helper

from onnx_qtypes.proto.data_movement import DATA_MOVEMENT, moves_data
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.reference_ops.quant import broadcast_parameters

UNBOUNDED = math.inf
ONE_STEP = "computes a new real value: one step (A.2)"


@dataclasses.dataclass(frozen=True)
class Allowance:
    """A tensor's tolerance: ``steps`` everywhere (``UNBOUNDED``: no bound is known), plus one step on the
    elements ``near_ties`` marks (a QuantizeLinear's near-tie quotients, A.3)."""

    steps: float
    reason: str
    near_ties: np.ndarray | None = None


@dataclasses.dataclass(frozen=True)
class NodeFacts:
    """What judging one node needs: every tensor's quantized type, the reference's real values (a quantized
    tensor dequantized), which tensors are constants, and each input's measured deviation in steps (0 for
    constants and fed inputs; None: not measured)."""

    qtypes: Mapping[str, QType]
    reals: Mapping[str, np.ndarray]
    constants: frozenset[str]
    deviation: Mapping[str, float | None]


def _attr(node: NodeProto, name: str, default: object) -> object:
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _data_inputs(node: NodeProto) -> list[str]:
    """The inputs that carry the operator's data (for a data-movement operator: the positions sharing its type)."""
    positions = DATA_MOVEMENT.get(node.op_type, (None, None))[0]
    names = list(node.input) if positions is None else [node.input[p] for p in positions if p < len(node.input)]
    return [n for n in names if n]


def is_copy(node: NodeProto, output: str, qtypes: Mapping[str, QType]) -> bool:
    """Exact copy / select with equal parameters: every output real is one of the input reals (A.2's exact class)."""
    mode = _attr(node, "mode", b"nearest")
    if not (moves_data(node.op_type, mode) or node.op_type in ("Relu", "Clip")):
        return False
    out = qtypes.get(output)
    inputs = _data_inputs(node) if node.op_type not in ("Relu", "Clip") else list(node.input[:1])
    return out is not None and bool(inputs) and all(qtypes.get(n) == out for n in inputs)


def own_steps(node: NodeProto, output: str, qtypes: Mapping[str, QType]) -> tuple[int, str]:
    """The operator class's own tolerance e (A.2), with its reason."""
    if is_copy(node, output, qtypes):
        return 0, "copies or selects stored values under equal parameters: exact (A.2)"
    if node.op_type == "QuantizeLinear" and node.input and node.input[0] not in qtypes:
        return 0, "QuantizeLinear of a float input: exact, one step on near-tie elements (A.2, A.3)"
    if node.op_type == "DequantizeLinear":
        return 0, "DequantizeLinear: exact (A.2)"
    return 1, ONE_STEP


def _l1_bound(weight: np.ndarray, reduce_axes: tuple[int, ...]) -> float:
    """max over outputs of the L1 norm of the (real) weights feeding each."""
    w = np.abs(np.asarray(weight, np.float64))
    return float(np.max(np.sum(w, axis=reduce_axes))) if w.size else 0.0


def lipschitz(node: NodeProto, k: int, facts: NodeFacts) -> float | None:
    """L from input ``k`` to the output (A.4's table), None where A.4 gives no bound."""
    op = node.op_type
    other = [n for i, n in enumerate(node.input) if i != k and n]
    reals = facts.reals
    if op in ("Relu", "Clip", "Add", "Sub", "AveragePool", "GlobalAveragePool", "ReduceMean", "Tanh") or \
            moves_data(op, _attr(node, "mode", b"nearest")):
        return 1.0
    if op == "Sigmoid":
        return 0.25
    if op == "LeakyRelu":
        return max(1.0, abs(float(_attr(node, "alpha", 0.01))))
    if op == "HardSwish":
        return 1.5
    if op == "Softmax":
        return 0.5
    if op == "Mul" and len(other) == 1 and other[0] in reals:
        return float(np.max(np.abs(reals[other[0]]))) if reals[other[0]].size else 0.0
    if op == "Conv" and k == 0 and len(node.input) > 1 and _constant(node.input[1], facts):
        w = reals[node.input[1]]
        return _l1_bound(w, tuple(range(1, w.ndim)))  # per output channel: every input channel and tap
    if op == "MatMul" and len(node.input) == 2:
        a, b = node.input
        if k == 0 and _constant(b, facts):
            w = reals[b]
            return _l1_bound(w, (w.ndim - 2,)) if w.ndim >= 2 else float(np.sum(np.abs(w)))
        if k == 1 and _constant(a, facts):
            w = reals[a]
            return _l1_bound(w, (w.ndim - 1,))
        return None
    if op == "Gemm" and len(node.input) >= 2:
        alpha, beta = abs(float(_attr(node, "alpha", 1.0))), abs(float(_attr(node, "beta", 1.0)))
        if k == 2:
            return beta
        a, b = node.input[0], node.input[1]
        if k == 0 and _constant(b, facts):
            w = reals[b] if not _attr(node, "transB", 0) else reals[b].T
            return alpha * _l1_bound(w, (0,))
        if k == 1 and _constant(a, facts):
            w = reals[a] if not _attr(node, "transA", 0) else reals[a].T
            return alpha * _l1_bound(w, (1,))
    return None


def _constant(name: str, facts: NodeFacts) -> bool:
    return name in facts.constants and name in facts.reals


def _largest_step(qtype: QType) -> float:
    return float(np.max(np.abs(np.asarray(qtype.scale, np.float64))))


def _smallest_step(qtype: QType) -> float:
    return float(np.min(np.abs(np.asarray(qtype.scale, np.float64))))


def allowance(node: NodeProto, output: str, facts: NodeFacts) -> Allowance:
    """The tolerance of ``output`` of ``node``, given how far the backend's inputs were from the reference's."""
    e, why = own_steps(node, output, facts.qtypes)
    inputs = [(k, n) for k, n in enumerate(node.input) if n]
    unknown = [n for _, n in inputs if facts.deviation.get(n) is None]
    if unknown:
        return Allowance(UNBOUNDED, f"input {unknown[0]!r} has no known bound, so none follows (A.4)")
    deviated = [(k, n) for k, n in inputs if facts.deviation[n]]
    near = _near_ties(node, facts) if node.op_type == "QuantizeLinear" else None
    if not deviated:
        return Allowance(e, why + ("; every input agreed" if inputs else ""), near)
    if is_copy(node, output, facts.qtypes):
        t = max(facts.deviation[n] or 0 for _, n in deviated)
        return Allowance(t, f"copies or selects stored values under equal parameters: the inputs' {_num(t)} "
                            "step(s) pass on (A.4)")
    out = facts.qtypes.get(output)
    total = 0.0
    for k, n in deviated:
        L, qt = lipschitz(node, k, facts), facts.qtypes.get(n)
        if L is None or qt is None or out is None or qt.is_dynamic or out.is_dynamic:
            return Allowance(UNBOUNDED, f"input {n!r} deviated by {_num(facts.deviation[n])} step(s) and A.4 "
                                        f"gives {node.op_type} no bound from it")
        total += L * float(facts.deviation[n]) * _largest_step(qt)
    t = e + math.floor(total / _smallest_step(out)) + 1
    return Allowance(t, f"{e} own step(s) + floor(sum L·t·s / s_y) + 1 from inputs that deviated "
                        f"({', '.join(f'{n!r} {_num(facts.deviation[n])}' for _, n in deviated)}) (A.4)", near)


def _near_ties(node: NodeProto, facts: NodeFacts) -> np.ndarray | None:
    """Elements of a QuantizeLinear whose quotient x / s is a near-tie in the expressed type (A.3)."""
    x = facts.reals.get(node.input[0]) if node.input else None
    qt = facts.qtypes.get(node.output[0]) if node.output else None
    if x is None or qt is None or qt.is_dynamic or np.asarray(x).dtype.kind != "f":
        return None
    x = np.asarray(x)
    try:
        scale, _ = broadcast_parameters(qt, x.shape)
        p = np.finfo(qt.expressed_type.np_dtype).nmant + 1  # significand bits with the implicit one
    except Exception:  # a shape the parameters do not fit: the reference refused it before this
        return None
    with np.errstate(all="ignore"):
        q = x.astype(np.float64) / scale
        distance = np.abs(q - (np.floor(q) + 0.5))
        near = (distance <= np.abs(q) * 2.0 ** -p) & (distance != 0)  # an exact tie is computed exactly (A.3)
    return near if near.any() else None


def _num(value: float | None) -> str:
    return "?" if value is None else (str(int(value)) if float(value).is_integer() else f"{value:.3g}")
