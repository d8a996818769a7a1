"""How the definition feeds dequantized values to an onnx.reference operator.

Real values are float64, so that the operator rounds once, when its result is
quantized (proposal/spec/semantics.md#exactness: the definition computes on
exact reals, approximated by float64). Operators that onnx.reference runs
through an ONNX function body (Gelu, HardSwish, Mish, MeanVarianceNormalization,
GroupNormalization, a model-local function, ...) are evaluated on float64 too:
``exact_function`` rewrites the body so that no step of it rounds to a
narrower float type. A float constant of the body keeps the value it holds
(HardSwish's alpha is float32(1/6), Gelu's 0.044715 is float32(0.044715):
read exactly, widened without rounding), and a Cast between float types,
such as GroupNormalization's cast to its ``stash_type``, is the identity on
reals. The evaluator and the lookup-table kernels both use this, so a table
built from the definition equals the definition.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx import AttributeProto, FunctionProto, NodeProto, TensorProto, helper
from onnx.reference.op_run import OpFunction, OpRun

from onnx_qtypes.proto.default_domain import STANDARD_DOMAINS
from onnx_qtypes.proto.qtype import QType

_NARROW_FLOATS = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16}


def runs_function_body(inner: OpRun) -> bool:
    return isinstance(inner, OpFunction)


def body_dtype(inner: OpRun) -> np.dtype | None:
    """The float type ``inner`` is fed in: float64 for an operator run through a function body (which
    ``exact_function`` makes compute in float64 throughout); None for one onnx.reference implements directly
    (it takes float64 as it is)."""
    return np.dtype(np.float64) if runs_function_body(inner) else None


def operator_input(inner: OpRun, real: np.ndarray, qtype: QType) -> np.ndarray:
    """``real`` (float64 dequantized values) in the float type ``inner`` computes in."""
    dtype = body_dtype(inner)
    return real if dtype is None else real.astype(dtype)


def exact_body(body: FunctionProto) -> FunctionProto | None:
    """``body`` evaluated on exact reals (float64), or None when it needs no change: every float constant
    becomes the float64 of the value it holds (a Cast to DOUBLE after it: exact), and every Cast to a narrower
    float type a Cast to DOUBLE (the precision a body names is how a float kernel computes; the definition
    does not round there)."""
    nodes: list[NodeProto] = []
    changed = False
    taken = {n for node in body.node for n in (*node.input, *node.output)} | set(body.input) | set(body.output)
    for node in body.node:
        if node.domain not in STANDARD_DOMAINS:
            nodes.append(node)
            continue
        if node.op_type == "Cast" and _cast_target(node) in _NARROW_FLOATS:
            copy = NodeProto()
            copy.CopyFrom(node)
            for a in copy.attribute:
                if a.name == "to":
                    a.i = TensorProto.DOUBLE
            nodes.append(copy)
            changed = True
        elif node.op_type == "Constant" and node.output and _float_constant(node):
            narrow = _fresh(f"{node.output[0]}__as_written", taken)
            copy = NodeProto()
            copy.CopyFrom(node)
            copy.output[0] = narrow
            nodes += [copy, helper.make_node("Cast", [narrow], [node.output[0]], to=TensorProto.DOUBLE)]
            changed = True
        else:
            nodes.append(node)
    if not changed:
        return None
    out = FunctionProto()
    out.CopyFrom(body)
    del out.node[:]
    out.node.extend(nodes)
    return out


def _cast_target(node: NodeProto) -> int | None:
    for a in node.attribute:
        if a.name == "to" and not a.ref_attr_name:
            return int(a.i)
    return None


def _float_constant(node: NodeProto) -> bool:
    """A Constant whose output is a float of a narrower type than float64 (value_float(s), or a float tensor)."""
    for a in node.attribute:
        if a.name in ("value_float", "value_floats"):
            return True
        if a.name == "value" and not a.ref_attr_name and a.type == AttributeProto.TENSOR:
            return a.t.data_type in _NARROW_FLOATS
    return False


def _fresh(name: str, taken: set[str]) -> str:
    candidate, k = name, 0
    while candidate in taken:
        k += 1
        candidate = f"{name}{k}"
    taken.add(candidate)
    return candidate


def exact_function(inner: OpRun) -> OpRun:
    """Make ``inner``, an operator onnx.reference runs through a function body, evaluate that body on float64
    (``exact_body``), nested function bodies included; ``inner`` itself is returned (changed in place)."""
    if not isinstance(inner, OpFunction) or getattr(inner, "_onnx_qtypes_exact", False):
        return inner
    original = inner._run_impl
    built: dict[bytes, Any] = {}

    def run_impl(impl: Any, *inputs: Any, **kwargs: Any) -> Any:
        proto = getattr(impl, "proto_", None)
        if isinstance(proto, FunctionProto):
            key = proto.SerializeToString(deterministic=True)
            if key not in built:
                built[key] = _exact_evaluator(impl, proto)
            impl = built[key]
        return original(impl, *inputs, **kwargs)

    inner._run_impl = run_impl  # OpFunction._run and the context-dependent one both call it with the body's impl
    inner._onnx_qtypes_exact = True
    return inner


def _exact_evaluator(impl: Any, proto: FunctionProto) -> Any:
    """An evaluator of ``proto`` (run by ``impl``) that computes on float64, its nested function bodies too."""
    body = exact_body(proto)
    if body is not None:
        functions = list(getattr(impl, "functions_", {}).values())
        new_ops = list(getattr(impl, "new_ops_", {}).values())
        impl = type(impl)(body, functions=functions or None, new_ops=new_ops or None)
    for node in getattr(impl, "rt_nodes_", ()):
        exact_function(getattr(node, "_inner", node))
    return impl
