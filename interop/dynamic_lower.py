"""Write a dynamic type back in standard ONNX: the nodes that choose its parameters at run time.

A dynamic type's parameters are ``dynamic_parameters`` of the real values it
quantizes (semantics.md §3). uint8 ASYMMETRIC per tensor in float32 over
the full range is exactly ``DynamicQuantizeLinear``; every other per-tensor
ASYMMETRIC or SYMMETRIC type is the same pseudocode written out in standard
operators, each rounding to the expressed type as the spec says::

    rmin = Min(ReduceMin(x), 0);  rmax = Max(ReduceMax(x), 0)
    r     = rmax - rmin                   (ASYMMETRIC)   |  Max(-rmin, rmax)  (SYMMETRIC)
    scale = Max(Where(r == 0, 1, r) / (qmax - qmin | qsym), smallest subnormal)
    zero_point = Cast(Round(Clip(qmin - rmin / scale, qmin, qmax)))   (ASYMMETRIC)  |  0
    y = QuantizeLinear(x, scale, zero_point)      (+ Clip on the integers for a narrowed range)

SYMMETRIC_WITH_UNSIGNED picks between its unsigned and symmetric forms with
``Where(rmin < 0, ...)``. ``Round`` rounds half to even, as
``round_half_to_even`` does, and QuantizeLinear rounds and saturates as
``quantize`` does. The power-of-2 schemas round the scale up with
``Pow(2, Ceil(Log(s) / Log(2)))``, corrected by one exact halving or
doubling. Per-axis and blocked dynamic types are refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import ml_dtypes
import numpy as np
from onnx import NodeProto, TensorProto, helper, numpy_helper

from onnx_qtypes.interop.errors import LowerError
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.validity import symmetric_with_unsigned_zero_points

CLIP_STORAGE = ("int8", "uint8", "int16", "uint16")  # integer types Clip takes at opset 21


@dataclasses.dataclass
class DynamicNodes:
    nodes: list[NodeProto]
    initializers: list[TensorProto]
    scale: str
    zero_point: str


def is_dynamic_quantize_linear_type(qtype: QType) -> bool:
    """The one dynamic type DynamicQuantizeLinear computes: uint8 asymmetric, per tensor, float32, full range."""
    st = qtype.storage_type
    return (qtype.is_dynamic and qtype.storage == "uint8" and qtype.schema is Schema.ASYMMETRIC and qtype.axis is None
            and qtype.expressed == "float32" and (qtype.storage_min, qtype.storage_max) == (st.min, st.max))


def unsupported(qtype: QType) -> str | None:
    """Why the dynamic ``qtype`` has no standard form here, or None."""
    if qtype.axis is not None:
        return f"a {qtype.granularity} dynamic type (only per-tensor dynamic types lower)"
    if qtype.storage in ("int2", "uint2", "int32") or qtype.storage_type.is_float:
        return f"a dynamic {qtype.storage} type"  # float storage: the symmetric form is not written here
    st = qtype.storage_type
    if (qtype.storage_min, qtype.storage_max) != (st.min, st.max) and qtype.storage not in CLIP_STORAGE:
        return f"a narrowed storage range on a dynamic {qtype.storage} type (Clip takes no {qtype.storage})"
    return None


def dynamic_quantize(x: str, y: str, qtype: QType, fresh: Callable[[str], str], node_name: Callable[[str], str],
                     tensor: str, rounding: np.dtype | None = None) -> DynamicNodes:
    """Nodes quantizing float ``x`` into ``y`` with the parameters ``dynamic_parameters`` chooses for ``qtype``.

    ``rounding``: the type the definition rounds each operation to when it is narrower than the one the nodes
    compute in (a float16 type lowered to float32 inside): each Sub and Div is then followed by a Cast to it and
    back, so that every operation is rounded once to it while the integer constants stay exact (65535 is no
    float16 value)."""
    if is_dynamic_quantize_linear_type(qtype):
        scale, zp = fresh(f"{tensor}_scale"), fresh(f"{tensor}_zero_point")
        node = helper.make_node("DynamicQuantizeLinear", [x], [y, scale, zp], name=node_name(f"{tensor}_DynamicQuantizeLinear"))
        return DynamicNodes([node], [], scale, zp)
    reason = unsupported(qtype)
    if reason:
        raise LowerError(f"tensor {tensor!r}: {reason} has no standard form")
    ftype = qtype.expressed_type.np_dtype
    lo, hi = qtype.storage_min, qtype.storage_max
    nodes: list[NodeProto] = []
    inits: list[TensorProto] = []

    def const(value, dtype, what: str) -> str:
        with np.errstate(over="ignore"):
            array = np.asarray(value, dtype=dtype)
        # the spec's integer constants are exact (semantics.md#dynamic-parameters): one the expressed type
        # rounds (float16(32767) is 32768, float16(65535) infinity) would make Div compute something else
        if array.dtype.kind == "f" and not (np.isfinite(array) and float(array) == float(value)):
            raise LowerError(f"tensor {tensor!r}: {value} is not a {qtype.expressed} value, so the dynamic "
                             f"parameters of {qtype} cannot be computed in {qtype.expressed}")
        tensor_proto = numpy_helper.from_array(array, fresh(f"{tensor}_{what}"))
        inits.append(tensor_proto)
        return tensor_proto.name

    def op(op_type: str, inputs: list[str], what: str, **attrs) -> str:
        out = fresh(f"{tensor}_{what}")
        nodes.append(helper.make_node(op_type, inputs, [out], name=node_name(f"{tensor}_{what}"), **attrs))
        if rounding is not None and op_type in ("Sub", "Div"):  # rounded once to the definition's type
            narrow = op("Cast", [out], f"{what}_rounded", to=helper.np_dtype_to_tensor_dtype(np.dtype(rounding)))
            return op("Cast", [narrow], f"{what}_widened", to=helper.np_dtype_to_tensor_dtype(np.dtype(ftype)))
        return out

    zero, one = const(0, ftype, "zero"), const(1, ftype, "one")
    rmin = op("Min", [op("ReduceMin", [x], "min", keepdims=0), zero], "rmin")
    rmax = op("Max", [op("ReduceMax", [x], "max", keepdims=0), zero], "rmax")
    def scale_of(span: str, steps: int, what: str) -> str:  # nonempty(span) / steps
        nonempty = op("Where", [op("Equal", [span, zero], f"{what}_empty"), one, span], f"{what}_nonempty")
        return op("Div", [nonempty, const(steps, ftype, f"{what}_steps")], f"{what}_scale")

    storage = qtype.storage_type
    asymmetric = qtype.schema in (Schema.ASYMMETRIC, Schema.ASYMMETRIC_POW2_SCALE)
    amax = None if asymmetric else op("Max", [op("Neg", [rmin], "neg_rmin"), rmax], "amax")
    zp = None
    if asymmetric:
        raw = scale_of(op("Sub", [rmax, rmin], "range"), hi - lo, "range")
    elif qtype.schema in (Schema.SYMMETRIC, Schema.SYMMETRIC_POW2_SCALE):
        raw = scale_of(amax, min(-lo, hi) if lo < 0 else hi, "amax")
    else:  # SYMMETRIC_WITH_UNSIGNED: the unsigned form unless a value is negative and the midpoint fits the range
        mid, bottom = symmetric_with_unsigned_zero_points(storage.min, storage.max, lo)
        raw = scale_of(rmax, hi - lo, "unsigned")
        zp = const(bottom, storage.np_dtype, "zero_point_unsigned")
        if lo <= mid < hi:
            negative = op("Less", [rmin, zero], "negative")
            signed = scale_of(amax, min(mid - lo, hi - mid) if lo < mid else hi - mid, "signed")
            raw = op("Where", [negative, signed, raw], "scale_raw")
            zp = op("Where", [negative, const(mid, storage.np_dtype, "zero_point_signed"), zp], "zero_point")
    if qtype.schema.pow2:
        raw = _pow2_ceiling(raw, const, op, ftype)
    tiny = const(ml_dtypes.finfo(rounding if rounding is not None else ftype).smallest_subnormal, ftype, "smallest")
    scale = op("Max", [raw, tiny], "scale")
    if asymmetric:
        qmin, qmax = const(lo, ftype, "qmin"), const(hi, ftype, "qmax")
        initial = op("Sub", [qmin, op("Div", [rmin, scale], "rmin_steps")], "zero_point_real")
        rounded = op("Round", [op("Clip", [initial, qmin, qmax], "zero_point_clipped")], "zero_point_rounded")
        zp = op("Cast", [rounded], "zero_point", to=storage.data_type)
    elif zp is None:
        zp = const(0, storage.np_dtype, "zero_point")
    if (lo, hi) == (storage.min, storage.max):
        nodes.append(helper.make_node("QuantizeLinear", [x, scale, zp], [y], name=node_name(f"{tensor}_QuantizeLinear")))
    else:  # QuantizeLinear saturates at the storage type's range; the narrowed range clips the integers
        full = op("QuantizeLinear", [x, scale, zp], "full_range")
        low, high = const(lo, storage.np_dtype, "storage_min"), const(hi, storage.np_dtype, "storage_max")
        nodes.append(helper.make_node("Clip", [full, low, high], [y], name=node_name(f"{tensor}_storage_range")))
    return DynamicNodes(nodes, inits, scale, zp)


def _pow2_ceiling(s: str, const, op, ftype) -> str:
    """The smallest power of two >= s (s >= 0): 2^ceil(log(s) / log(2)), then corrected by one halving or
    doubling (both exact) where the logarithm's rounding missed, so the result is exact."""
    two, half = const(2, ftype, "two"), const(0.5, ftype, "half")
    exponent = op("Ceil", [op("Div", [op("Log", [s], "log"), op("Log", [two], "log2")], "log2_scale")], "exponent")
    guess = op("Pow", [two, exponent], "pow2_guess")
    lower = op("Mul", [guess, half], "pow2_lower")
    guess = op("Where", [op("GreaterOrEqual", [lower, s], "pow2_too_big"), lower, guess], "pow2_down")
    doubled = op("Mul", [guess, two], "pow2_doubled")
    return op("Where", [op("Less", [guess, s], "pow2_too_small"), doubled, guess], "pow2_scale")


__all__ = ["DynamicNodes", "dynamic_quantize", "is_dynamic_quantize_linear_type", "unsupported"]
