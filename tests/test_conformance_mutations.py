"""An implementation that gets one feature of the type wrong fails at least one execution case (issue 19, "done when").

Each mutation below is the reference backend (the definition) with exactly one feature broken the way a runtime
could break it: reading channel 0's parameters for every channel (the tract bug), ignoring zero points, block
sizes, narrowed ranges or the sign of a scale, rounding half away from zero, ignoring parameters by reference or
the version field, computing in the expressed type, choosing dynamic parameters under another schema, decoding a
float8 / float4 / integer storage type as another, wrapping an int32 accumulator or output, mapping NaN or inf
elsewhere, treating a typed function body as untyped and back. For each, the cases that hold the feature are run
until one does not pass; that case must pass again once the mutation is undone (so the case, not the mutation's
side effects elsewhere, is what catches it).
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import pytest

import onnx_qtypes.proto.model as proto_model
from onnx_qtypes.conformance import PASS, ReferenceBackend, load_cases, run_case
from onnx_qtypes.conformance.coverage import WEIGHT_READERS, case_features
from onnx_qtypes.proto import load
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.storage_types import STORAGE_TYPES
from onnx_qtypes.reference_ops import definition, evaluator, quant

CASES = load_cases()


@functools.cache
def _held(case_id: str) -> frozenset:
    case = next(c for c in CASES if c.id == case_id)
    return frozenset(case_features(load(str(case.model_path)), case.feeds()))


def holding(*pairs):
    """Cases holding every (field, value) pair (coverage.case_features)."""
    return lambda case: set(pairs) <= _held(case.id)


def ids(*prefixes):
    return lambda case: case.id.startswith(prefixes)


def tagged(**tags):
    def select(case):
        return all(v in case.tags.get(k, ()) if isinstance(case.tags.get(k), list) else case.tags.get(k) == v
                   for k, v in tags.items())
    return select


# -- the mutations: (monkeypatch) -> None ---------------------------------------------------------------------------

def _wrap(monkeypatch, owner, name, make):
    monkeypatch.setattr(owner, name, make(getattr(owner, name)))


def channel_zero_everywhere(mp):
    def make(original):
        def parameter_index(qtype, shape, tensor=None):
            index = original(qtype, shape, tensor)
            return np.zeros_like(index) if qtype.axis is not None and qtype.block_size is None else index
        return parameter_index
    _wrap(mp, quant, "parameter_index", make)


def first_block_everywhere(mp):
    def make(original):
        def parameter_index(qtype, shape, tensor=None):
            index = original(qtype, shape, tensor)
            if qtype.block_size is None:
                return index
            return np.take(index, np.zeros(index.shape[qtype.axis], np.int64), axis=qtype.axis)
        return parameter_index
    _wrap(mp, quant, "parameter_index", make)


def parameters(transform):
    def mutate(mp):
        def make(original):
            def parameters_at(qtype, index):
                return transform(*original(qtype, index))
            return parameters_at
        _wrap(mp, quant, "parameters_at", make)
    return mutate


def full_storage_range(mp):
    mp.setattr(quant, "storage_range", lambda qtype: (qtype.storage_type.min, qtype.storage_type.max))


def half_away_from_zero(mp):
    mp.setattr(quant, "round_half_to_even", lambda x: np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5)))


def references_ignored(mp):
    mp.setattr(proto_model, "referenced_values", lambda msg, parameters, shape, where: None)


def refuses_version(which):
    def mutate(mp):
        def make(original):
            def read_qtype(value_info, where="", **kwargs):
                view = proto_model.read_view(value_info.type.tensor_type, where)
                version = view.quantization.version if view.quantization.HasField("version") else None
                if version is not None and (which == "any" or version == which):
                    raise proto_model.QTypesError(f"{where}: version {version} is not supported")
                return original(value_info, where, **kwargs)
            return read_qtype
        _wrap(mp, evaluator, "read_qtype", make)
    return mutate


def in_expressed_type(mp):
    """Dequantized values and results rounded to the expressed type (a runtime computing in float16 / bfloat16)."""
    def dq(original):
        def dequantize(q, qtype, *, tensor=None):
            real = original(q, qtype, tensor=tensor)
            return real.astype(qtype.expressed_type.np_dtype).astype(np.float64)
        return dequantize

    def qu(original):
        def quantize(x, qtype, *, tensor=None, saturate=True):
            with np.errstate(over="ignore"):
                narrow = np.asarray(x, np.float64).astype(qtype.expressed_type.np_dtype).astype(np.float64)
            return original(narrow, qtype, tensor=tensor, saturate=saturate)
        return quantize
    _wrap(mp, quant, "dequantize", dq)
    _wrap(mp, quant, "quantize", qu)


NEIGHBOUR = {Schema.ASYMMETRIC: Schema.SYMMETRIC, Schema.SYMMETRIC: Schema.ASYMMETRIC,
             Schema.SYMMETRIC_WITH_UNSIGNED: Schema.SYMMETRIC, Schema.ASYMMETRIC_POW2_SCALE: Schema.ASYMMETRIC,
             Schema.SYMMETRIC_POW2_SCALE: Schema.SYMMETRIC}


def dynamic_schema_read_as_another(schema: Schema):
    def mutate(mp):
        def make(original):
            def dynamic_parameters(x, qtype, *, tensor=None):
                if not qtype.is_dynamic or qtype.schema is not schema:
                    return original(x, qtype, tensor=tensor)
                chosen = original(x, qtype.replace(schema=NEIGHBOUR[schema], validate=False), tensor=tensor)
                return chosen.replace(schema=schema, validate=False)
            return dynamic_parameters
        _wrap(mp, quant, "dynamic_parameters", make)
    return mutate


def float16_constants_rounded(mp):
    """qmax - qmin rounded to float16 first (65535 -> inf): the scale underflows to the smallest subnormal."""
    def make(original):
        def dynamic_parameters(x, qtype, *, tensor=None):
            chosen = original(x, qtype, tensor=tensor)
            if qtype.is_dynamic and qtype.expressed == "float16" and qtype.storage_max - qtype.storage_min > 65504:
                tiny = float(ml_dtypes.finfo(np.float16).smallest_subnormal)
                return chosen.replace(scale=tiny, zero_point=qtype.storage_min, validate=False)
            return chosen
        return dynamic_parameters
    _wrap(mp, quant, "dynamic_parameters", make)


def storage_read_as(storage: str, other_dtype):
    """Values of ``storage`` decoded as the bytes of another type (float8 formats, float4 as int4)."""
    def mutate(mp):
        def make(original):
            def dequantize(q, qtype, *, tensor=None):
                q = np.asarray(q)
                if qtype.storage == storage and q.dtype == qtype.storage_type.np_dtype:
                    raw = q.view(np.uint8)
                    if storage == "float4e2m1":  # the nibble as a two's-complement int4
                        wrong = ((raw.astype(np.int64) & 0xF) ^ 8) - 8
                    else:
                        wrong = raw.view(other_dtype).astype(np.float64)
                    scale, _ = quant.broadcast_parameters(qtype, q.shape, tensor)
                    return scale * wrong
                return original(q, qtype, tensor=tensor)
            return dequantize
        _wrap(mp, quant, "dequantize", make)
    return mutate


def signedness_swapped(storage: str):
    """An integer storage type read with the other signedness (int4 as uint4, uint8 as int8, ...)."""
    st = STORAGE_TYPES[storage]
    span = 1 << st.bits

    def mutate(mp):
        def make(original):
            def dequantize(q, qtype, *, tensor=None):
                if qtype.storage != storage:
                    return original(q, qtype, tensor=tensor)
                q = np.asarray(q).astype(np.int64)
                wrong = q % span if st.min < 0 else ((q + span // 2) % span) - span // 2
                scale, zero_point = quant.broadcast_parameters(qtype, q.shape, tensor)
                return scale * (wrong - zero_point).astype(np.float64)
            return dequantize
        _wrap(mp, quant, "dequantize", make)
    return mutate


def float_value_misread(storage: str, value: float):
    """+-``value`` of a float storage type decoded as the next smaller magnitude (a decoding table wrong at the top:
    the cases' values must reach it)."""
    st = STORAGE_TYPES[storage]
    codes = np.arange(2 ** st.bits, dtype=np.uint8).view(st.np_dtype).astype(np.float64)
    below = float(codes[np.isfinite(codes) & (codes < value)].max())

    def mutate(mp):
        def make(original):
            def dequantize(q, qtype, *, tensor=None):
                real = original(q, qtype, tensor=tensor)
                q = np.asarray(q)
                if qtype.storage != storage or q.dtype != st.np_dtype:
                    return real
                wide = q.astype(np.float64)
                scale, _ = quant.broadcast_parameters(qtype, q.shape, tensor)
                return np.where(np.abs(wide) == value, np.sign(wide) * below * scale, real)
            return dequantize
        _wrap(mp, quant, "dequantize", make)
    return mutate


def pow2_rounded(how):
    """A *_POW2_SCALE dynamic scale rounded to a power of two by ``how`` (np.floor, np.round) of its log2, not up."""
    def mutate(mp):
        mp.setattr(quant, "_pow2_ceiling", lambda scales: np.ldexp(1.0, how(np.log2(scales)).astype(np.int64)))
    return mutate


def float_saturation(always: bool):
    def mutate(mp):
        def make(original):
            return lambda steps, qtype, *, saturate=True: original(steps, qtype, saturate=always)
        _wrap(mp, quant, "quantize_float", make)
    return mutate


def special_values(where_nan=None, where_inf=None):
    """NaN stored as ``where_nan`` (a storage value) instead of the zero point; +-inf at the zero point."""
    def mutate(mp):
        def make(original):
            def quantize(x, qtype, *, tensor=None, saturate=True):
                out = original(x, qtype, tensor=tensor, saturate=saturate)
                if qtype.storage_type.is_float:
                    return out
                x = np.asarray(x, np.float64)
                _, zero_point = quant.broadcast_parameters(qtype, x.shape, tensor)
                values = out.astype(np.int64)
                if where_nan is not None:
                    values = np.where(np.isnan(x), where_nan, values)
                if where_inf:
                    values = np.where(np.isinf(x), zero_point, values)
                return values.astype(out.dtype)
            return quantize
        _wrap(mp, quant, "quantize", make)
    return mutate


def int32_wraps(mp):
    def make(original):
        def quantize(x, qtype, *, tensor=None, saturate=True):
            if qtype.storage != "int32":
                return original(x, qtype, tensor=tensor, saturate=saturate)
            scale, zero_point = quant.broadcast_parameters(qtype, np.shape(x), tensor)
            steps = np.rint(np.asarray(x, np.float64) / scale).astype(np.int64) + zero_point
            return (((steps + 2**31) % 2**32) - 2**31).astype(np.int32)
        return quantize
    _wrap(mp, quant, "quantize", make)


def int32_accumulator(mp):
    """MatMul of per-tensor integer operands summed in a wrapping int32 accumulator."""
    def make(original):
        def run(self, args, kwargs):
            ins = self._in[:2]
            if (self._node.op_type == "MatMul" and self._out[0] is not None
                    and all(q is not None and q.axis is None and not q.is_dynamic and not q.storage_type.is_float
                            for q in ins)):
                qa, qb = (np.asarray(a).astype(np.int64) - q.zero_point[0] for a, q in zip(args, ins))
                acc = ((np.matmul(qa, qb) + 2**31) % 2**32) - 2**31
                return (quant.quantize(acc * ins[0].scale[0] * ins[1].scale[0], self._out[0]),)
            return original(self, args, kwargs)
        return run
    _wrap(mp, evaluator._TypedNode, "_run", make)


def function_bodies(typed: bool):
    """Every model-local function's call treated as if its body were typed (storage passed in) or untyped."""
    def mutate(mp):
        def make(original):
            def __init__(self, model, kernels):
                original(self, model, kernels)
                self.typed_bodies = ({(f.domain, f.name): f for f in self.model.functions} if typed else {})
            return __init__
        _wrap(mp, evaluator._Session, "__init__", make)
        mp.setattr(evaluator._TypedNode, "_same_types_as", lambda self, body: None)  # no check: it just runs
    return mutate


def requantization_dropped(mp):
    """Data movement between two types copies the stored integers (clamped) instead of requantizing."""
    from onnx_qtypes.proto.data_movement import moves_data  # noqa: PLC0415

    def make(original):
        def run(self, args, kwargs):
            ins, outs = [q for q in self._in if q is not None], [q for q in self._out if q is not None]
            if moves_data(self._node.op_type) and ins and outs and any(q != ins[0] for q in (*ins, *outs)):
                values = self._inner.run(*[np.asarray(a) for a in args], **kwargs)
                return tuple(np.clip(np.asarray(v).astype(np.int64), q.storage_min, q.storage_max)
                             .astype(q.storage_type.np_dtype) if q is not None else v
                             for v, q in zip(values, self._out))
            return original(self, args, kwargs)
        return run
    _wrap(mp, evaluator._TypedNode, "_run", make)


def bodies_in_expressed_type(mp):
    """Function bodies (HardSwish, model-local functions) fed the expressed type, not the reals."""
    def operator_input(inner, real, qtype):
        return real.astype(qtype.expressed_type.np_dtype) if definition.runs_function_body(inner) else real
    mp.setattr(evaluator, "operator_input", operator_input)
    mp.setattr(evaluator, "body_dtype", lambda inner: None)


FLOAT8_MISREAD = {"float8e4m3fn": ml_dtypes.float8_e4m3fnuz, "float8e4m3fnuz": ml_dtypes.float8_e4m3fn,
                  "float8e5m2": ml_dtypes.float8_e5m2fnuz, "float8e5m2fnuz": ml_dtypes.float8_e5m2}

MUTATIONS = {
    "per-axis: channel 0's parameters everywhere": (channel_zero_everywhere, holding(("granularity", "per-axis"))),
    "blocked: the first block's parameters along the axis": (first_block_everywhere, holding(("granularity", "blocked"))),
    **{f"per-axis {op} weight: channel 0's parameters everywhere": (
        channel_zero_everywhere, lambda c, op=op: c.operator == op and ((f"{op} weight", "per-axis") in _held(c.id)))
       for op in WEIGHT_READERS},
    **{f"blocked {op} weight: the first block's parameters": (
        first_block_everywhere, lambda c, op=op: c.operator == op and ((f"{op} weight", "blocked") in _held(c.id)))
       for op in WEIGHT_READERS},
    **{f"{op} per-axis / blocked: one channel's parameters": (
        channel_zero_everywhere, lambda c, op=op: c.operator == op and c.tags.get("granularity") == "per-axis")
       for op in ("QuantizeLinear", "DequantizeLinear")},
    "requantizing data movement copies storage": (requantization_dropped, ids("requantize-ties-", "reshape-requantize",
                                                                             "chain-conv-relu-conv-add")),
    "zero points ignored": (parameters(lambda s, z: (s, np.zeros_like(z))), holding(("zero point", "listed"))),
    "negative scales read as positive": (parameters(lambda s, z: (np.abs(s), z)), holding(("scale sign", "negative"))),
    "narrowed range ignored": (full_storage_range, holding(("range", "narrowed"))),
    "ties rounded half away from zero": (half_away_from_zero, ids("ties-", "requantize-ties-")),
    "parameters by reference ignored": (references_ignored, holding(("scale", "by reference"))),
    "version 2 refused (a version-1 reader)": (refuses_version(2), holding(("version", "2"))),
    "an explicit version field refused": (refuses_version("any"), holding(("version", "1"))),
    "computed in float16 / bfloat16": (in_expressed_type, lambda c: c.tags.get("expressed") in ("float16", "bfloat16")),
    "bfloat16: computed in bfloat16": (in_expressed_type, holding(("expressed", "bfloat16"))),
    "dynamic 16-bit parameters with float16 constants": (float16_constants_rounded, ids("dynamic-quantize-")),
    "float8 saturation ignored": (float_saturation(False), holding(("storage", "float8e4m3fn"))),
    "saturate=0 ignored": (float_saturation(True), ids("quantize-linear-float8e4m3fn-saturate-0")),
    "float4e2m1 read as int4": (storage_read_as("float4e2m1", None), holding(("storage", "float4e2m1"))),
    **{f"{s}: {v:g} decoded as the value below it": (float_value_misread(s, v), holding(("storage", s)))
       for s, v in (("float4e2m1", 3.0), ("float4e2m1", 4.0), ("float4e2m1", 6.0), ("float8e4m3fn", 448.0),
                    ("float8e4m3fnuz", 240.0), ("float8e5m2", 57344.0), ("float8e5m2fnuz", 57344.0))},
    **{f"float4e2m1 dynamic power-of-two scale rounded {name}": (
        pow2_rounded(how), ids("dynamic-graph-output-add-float4e2m1-float32")) for name, how in (
        ("down", np.floor), ("to the nearest", np.round))},
    "int32 output wraps": (int32_wraps, holding(("storage", "int32"))),
    "int32 accumulator wraps": (int32_accumulator, ids("matmul-accumulator-exceeds-int32")),
    "NaN stored as 0": (special_values(where_nan=0), holding(("inputs", "NaN"))),
    "NaN stored as storage_min": (special_values(where_nan=-128), ids("quantize-linear-nan-inf-int8")),
    "inf at the zero point": (special_values(where_inf=True), holding(("inputs", "+inf"))),
    "typed function bodies run as untyped": (function_bodies(False), holding(("function", "typed body"))),
    "untyped function bodies fed storage": (function_bodies(True), holding(("function", "untyped body"))),
    "function bodies in the expressed type": (bodies_in_expressed_type, lambda c: c.tags.get("expressed") == "float16"
                                              and c.operator in ("HardSwish", "Poly")),
    **{f"dynamic {s.name.lower()} chosen as {NEIGHBOUR[s].name.lower()}": (
        dynamic_schema_read_as_another(s), holding(("dynamic schema", s.name.lower()))) for s in Schema},
    **{f"{s} decoded as {np.dtype(d).name}": (storage_read_as(s, d), holding(("storage", s)))
       for s, d in FLOAT8_MISREAD.items()},
    **{f"{s} read with the other signedness": (signedness_swapped(s), holding(("storage", s)))
       for s in ("int2", "uint2", "int4", "uint4", "int8", "uint8", "int16", "uint16")},
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_one_feature_wrong_fails_a_case(name, monkeypatch):
    mutate, select = MUTATIONS[name]
    candidates = [c for c in CASES if select(c)]
    assert candidates, f"no case holds the feature {name!r} breaks"
    backend = ReferenceBackend()
    mutate(monkeypatch)
    caught = None
    for case in candidates:
        result = run_case(backend, case)
        if result.outcome != PASS:
            caught = case, result
            break
    monkeypatch.undo()
    assert caught is not None, f"{name}: all {len(candidates)} cases pass"
    case, result = caught
    assert run_case(backend, case).outcome == PASS, f"{case.id} fails without the mutation too"
