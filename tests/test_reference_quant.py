"""reference_ops.quant: the normative formulas, checked against exact
rational arithmetic, hand-computed cases and onnx.reference's own Q/DQ."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from onnx_qtypes import QType, QTypeError, Schema
from onnx_qtypes.proto.parameter_layout import parameter_shape
from onnx_qtypes.proto.storage_types import STORAGE_TYPES
from onnx_qtypes.reference_ops import quant

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SMALL_STORAGE = ["int2", "uint2", "int4", "uint4", "int8", "uint8", "int16", "uint16"]


def exact_quantize(x: float, scale: float, zero_point: int, lo: int, hi: int) -> int:
    """The definition in rational arithmetic: clamp(round_half_even(x / s) + zp)."""
    if math.isinf(x):
        return hi if x > 0 else lo
    ratio = Fraction(x) / Fraction(scale)
    floor = math.floor(ratio)
    rest = ratio - floor
    rounded = floor + (1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and floor % 2) else 0)
    return min(max(rounded + zero_point, lo), hi)


# --- hand-computed cases ---------------------------------------------------------


def test_per_tensor_ties_go_to_even_and_saturate():
    qt = QType("int8", 0.5, 3)
    x = np.array([0.25, 0.75, -0.25, -0.75, 1.25, 100.0, -100.0, np.inf, -np.inf, np.nan])
    # x / 0.5 = 0.5, 1.5, -0.5, -1.5, 2.5 -> 0, 2, -0, -2, 2; then + 3; saturation at [-128, 127]
    assert quant.quantize(x, qt).tolist() == [3, 5, 3, 1, 5, 127, -128, 127, -128, 3]
    assert quant.quantize(x, qt).dtype == np.int8


def test_dequantize_is_scale_times_offset_difference():
    qt = QType("uint8", 0.25, 128)
    q = np.array([0, 127, 128, 129, 255], np.uint8)
    np.testing.assert_array_equal(quant.dequantize(q, qt), [-32.0, -0.25, 0.0, 0.25, 31.75])
    assert quant.dequantize(q, qt).dtype == np.float64


def test_narrow_storage_range_saturates_to_it():
    qt = QType("int8", 1.0, 0, storage_min=-127, storage_max=127, schema="symmetric")
    assert quant.quantize(np.array([-500.0, 500.0]), qt).tolist() == [-127, 127]
    assert quant.storage_range(qt) == (-127, 127)


def test_per_axis_uses_the_slice_index():
    qt = QType("int8", [1.0, 0.5, 0.25], [0, 1, -1], axis=1)
    x = np.array([[1.0, 1.0, 1.0], [-2.0, -2.0, -2.0]])
    # column j: round(x / s_j) + zp_j
    assert quant.quantize(x, qt).tolist() == [[1, 3, 3], [-2, -3, -9]]


def test_blocked_layout_is_row_major_with_a_short_last_block():
    qt = QType("int4", [1, 2, 3, 4, 5, 6], [0] * 6, axis=1, block_size=2)
    assert quant.parameter_index(qt, (2, 5)).tolist() == [[0, 0, 1, 1, 2], [3, 3, 4, 4, 5]]
    scale, zp = quant.broadcast_parameters(qt, (2, 5))
    assert scale.tolist() == [[1, 1, 2, 2, 3], [4, 4, 5, 5, 6]] and zp.shape == (2, 5)


def test_blocked_on_a_leading_axis():
    qt = QType("int8", [1.0, 2.0, 4.0, 8.0], [0, 0, 0, 0], axis=0, block_size=3)
    # shape (5, 2): blocks along axis 0 are rows {0,1,2} and {3,4}; parameter shape (2, 2)
    assert quant.parameter_index(qt, (5, 2)).tolist() == [[0, 1], [0, 1], [0, 1], [2, 3], [2, 3]]


def test_sub_byte_storage_uses_ml_dtypes():
    qt = QType("int4", 1.0, 0)
    q = quant.quantize(np.array([-9.0, -8.0, 7.0, 8.0]), qt)
    assert q.dtype == ml_dtypes.int4 and q.astype(np.int64).tolist() == [-8, -8, 7, 7]
    assert quant.dequantize(q, qt).tolist() == [-8.0, -8.0, 7.0, 7.0]


def test_parameter_count_mismatch_names_the_tensor():
    qt = QType("int8", [1.0, 2.0], [0, 0], axis=0)
    with pytest.raises(QTypeError, match=r"'w'.*needs 3 scales, found 2"):
        quant.quantize(np.zeros((3, 4)), qt, tensor="w")


def test_static_formulas_refuse_a_dynamic_type():
    with pytest.raises(QTypeError, match="dynamic"):
        quant.quantize(np.zeros(3), QType("uint8"), tensor="x")


def test_dequantize_refuses_float_input():
    with pytest.raises(QTypeError, match="storage integers"):
        quant.dequantize(np.zeros(3), QType("uint8", 1.0, 0))


def test_to_storage_refuses_out_of_range_values():
    with pytest.raises(QTypeError, match=r"300 is outside the storage range \[0, 255\]"):
        quant.to_storage(np.array([1, 300]), QType("uint8", 1.0, 0))


# --- properties against exact arithmetic ---------------------------------------------

finite32 = st.floats(-1e4, 1e4, allow_nan=False, width=32)
scales32 = st.floats(2.0**-13, 8.0, width=32)


@st.composite
def per_tensor_case(draw):
    storage = STORAGE_TYPES[draw(st.sampled_from(SMALL_STORAGE + ["int32"]))]
    scale = draw(scales32)
    zp = draw(st.integers(storage.min, storage.max)) if storage.bits < 32 else draw(st.integers(-1000, 1000))
    values = draw(st.lists(finite32 | st.sampled_from([0.5 * scale, -1.5 * scale, 2.5 * scale]), min_size=1, max_size=20))
    return QType(storage.name, scale, zp), values


@SETTINGS
@given(per_tensor_case())
def test_quantize_equals_exact_rational_definition(case):
    qt, values = case
    got = quant.quantize(np.array(values, np.float32), qt).astype(np.int64).tolist()
    want = [exact_quantize(float(np.float32(v)), qt.scale[0], qt.zero_point[0], qt.storage_min, qt.storage_max)
            for v in values]
    assert got == want


@SETTINGS
@given(per_tensor_case())
def test_quantize_inverts_dequantize_on_the_grid(case):
    qt, _ = case
    lo, hi = quant.storage_range(qt)
    q = np.unique(np.clip(np.array([lo, hi, lo + 1, hi - 1, qt.zero_point[0]], np.int64), lo, hi))
    stored = quant.to_storage(q, qt)
    assert quant.quantize(quant.dequantize(stored, qt), qt).astype(np.int64).tolist() == q.tolist()


@st.composite
def blocked_case(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    axis = draw(st.integers(0, rank - 1))
    block = draw(st.one_of(st.none(), st.integers(1, 4)))
    storage = STORAGE_TYPES[draw(st.sampled_from(["int4", "uint4", "int8", "uint8", "int16", "uint16"]))]
    probe = QType(storage.name, 1.0, 0, axis=axis, block_size=block) if block else QType(storage.name, [1.0] * shape[axis], [0] * shape[axis], axis=axis)
    count = math.prod(parameter_shape(probe, shape))
    exps = draw(st.lists(st.integers(-6, 2), min_size=count, max_size=count))  # power-of-two scales: exact in float32
    zps = draw(st.lists(st.integers(storage.min, storage.max), min_size=count, max_size=count))
    qt = QType(storage.name, [2.0**e for e in exps], zps, axis=axis, block_size=block)
    x = np.asarray(draw(st.lists(finite32, min_size=math.prod(shape), max_size=math.prod(shape))), np.float32)
    return qt, x.reshape(shape)


def _onnx_q_dq(qt: QType, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """onnx.reference's QuantizeLinear / DequantizeLinear (opset 21) with the same parameters."""
    pshape = parameter_shape(qt, x.shape)
    storage_dtype = qt.storage_type.np_dtype
    scale = np.asarray(qt.scale, np.float32).reshape(pshape)
    zp = np.asarray(qt.zero_point, np.int64).astype(storage_dtype).reshape(pshape)
    attrs = {} if qt.axis is None else {"axis": qt.axis}
    if qt.block_size:
        attrs["block_size"] = qt.block_size
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], **attrs),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], **attrs)]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("q", qt.storage_type.data_type, x.shape),
                               helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, x.shape)],
                              [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zp, "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    q, y = ReferenceEvaluator(model).run(None, {"x": x})
    return q, y


@SETTINGS
@given(blocked_case())
def test_layouts_agree_with_onnx_reference_quantize_linear(case):
    qt, x = case
    q_ref, y_ref = _onnx_q_dq(qt, x)
    q = quant.quantize(x, qt)
    np.testing.assert_array_equal(q.astype(np.int64), q_ref.astype(np.int64))
    np.testing.assert_array_equal(quant.dequantize(q, qt).astype(np.float32), y_ref)


# --- dynamic types ------------------------------------------------------------------


def _onnx_dynamic(x: np.ndarray) -> tuple[np.ndarray, float, int]:
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])
    y, s, z = ReferenceEvaluator(node).run(None, {"x": x})
    return y, float(s), int(z)


normal32 = st.floats(-50, 50, width=32).filter(lambda v: v == 0 or abs(v) > 1e-30)


@SETTINGS
@given(st.lists(normal32, min_size=1, max_size=40))
def test_uint8_asymmetric_dynamic_equals_dynamic_quantize_linear(values):
    x = np.array(values, np.float32)
    resolved = quant.dynamic_parameters(x, QType("uint8"))
    y_ref, s_ref, z_ref = _onnx_dynamic(x)
    assert resolved.scale == (s_ref,) and resolved.zero_point == (z_ref,)
    y = quant.quantize(x, resolved).astype(np.int64)
    # DynamicQuantizeLinear divides in float32, the definition exactly: they may
    # only differ where x / scale lies within float32 rounding of a tie.
    ratio = x.astype(np.float64) / s_ref
    near_tie = np.abs(np.abs(ratio - np.floor(ratio)) - 0.5) < 1e-4
    assert np.all(np.abs(y - y_ref.astype(np.int64)) <= 1)
    np.testing.assert_array_equal(y[~near_tie], y_ref.astype(np.int64)[~near_tie])


def test_dynamic_constant_input_counts_as_a_range_of_one():
    # DynamicQuantizeLinear: max == min -> scale 1/255, zero point round(0 - 0/scale) = 0
    resolved = quant.dynamic_parameters(np.zeros(4, np.float32), QType("uint8"))
    assert resolved.scale == (float(np.float32(1) / np.float32(255)),) and resolved.zero_point == (0,)


@pytest.mark.parametrize(
    ("storage", "schema", "data", "scale", "zero_point"),
    [
        # symmetric int8: max |x| / 127, zero point 0
        ("int8", "symmetric", [-2.54, 1.0], np.float32(np.float32(2.54) / np.float32(127)), 0),
        # symmetric on a narrow range [-7, 7] of int4: / 7
        ("int4", "symmetric", [0.5, -3.5], 0.5, 0),
        # symmetric_with_unsigned, uint8, non-negative data: zero point 0, max / 255
        ("uint8", "symmetric_with_unsigned", [0.0, 5.1], np.float32(np.float32(5.1) / np.float32(255)), 0),
        # ... with negative data: midpoint 128, max |x| / min(128, 127)
        ("uint8", "symmetric_with_unsigned", [-1.27, 0.5], np.float32(np.float32(1.27) / np.float32(127)), 128),
        # symmetric_with_unsigned, int8, non-negative data: Glow's unsigned form, zero point -128, max / 255
        ("int8", "symmetric_with_unsigned", [0.0, 5.1], np.float32(np.float32(5.1) / np.float32(255)), -128),
        # ... with negative data: symmetric, zero point 0, max |x| / 127
        ("int8", "symmetric_with_unsigned", [-2.54, 1.0], np.float32(np.float32(2.54) / np.float32(127)), 0),
        # int4 narrowed to [-7, 7], non-negative data: zero point storage_min -7, max / 14
        ("int4", "symmetric_with_unsigned", [0.5, 7.0], 0.5, -7),
        # pow2: (1 - -1) / 255 = 0.00784 > 2**-7 -> 2**-6, zero point round(0 - -1 / 2**-6) = 64
        ("uint8", "asymmetric_pow2_scale", [-1.0, 1.0], 2.0**-6, 64),
        # symmetric pow2: 3 / 127 = 0.0236 -> 2**-5
        ("int8", "symmetric_pow2_scale", [3.0, -1.0], 2.0**-5, 0),
    ],
)
def test_dynamic_parameters_per_schema(storage, schema, data, scale, zero_point):
    qt = QType(storage, schema=schema, storage_min=-7 if storage == "int4" else None)
    resolved = quant.dynamic_parameters(np.array(data, np.float32), qt)
    assert resolved.scale == (float(scale),) and resolved.zero_point == (zero_point,)
    assert resolved.schema is Schema.parse(schema)  # the resolved type satisfies the declared schema


@pytest.mark.parametrize(
    ("storage", "lo", "hi", "data", "scale", "zero_point"),
    [
        # uint8 [0, 254] with negative data: the type's midpoint 128, max |x| / min(128 - 0, 254 - 128)
        ("uint8", 0, 254, [-1.26, 0.5], np.float32(np.float32(1.26) / np.float32(126)), 128),
        # uint8 [1, 255] with non-negative data: zero point storage_min 1, max / 254
        ("uint8", 1, 255, [0.0, 2.54], np.float32(np.float32(2.54) / np.float32(254)), 1),
        # uint8 [0, 100]: the midpoint is outside the range, so negative data takes the unsigned form too
        ("uint8", 0, 100, [-3.0, 2.0], np.float32(np.float32(2.0) / np.float32(100)), 0),
        # int8 [0, 127]: the midpoint is storage_min; negative data: max |x| / 127
        ("int8", 0, 127, [-2.54, 1.0], np.float32(np.float32(2.54) / np.float32(127)), 0),
    ],
)
def test_dynamic_symmetric_with_unsigned_on_a_narrowed_range(storage, lo, hi, data, scale, zero_point):
    qt = QType(storage, schema="symmetric_with_unsigned", storage_min=lo, storage_max=hi)
    resolved = quant.dynamic_parameters(np.array(data, np.float32), qt)
    assert resolved.scale == (float(scale),) and resolved.zero_point == (zero_point,)


def test_dynamic_symmetric_with_unsigned_chooses_per_group():
    x = np.array([[0.0, 2.55], [-1.27, 0.5]], np.float32)
    resolved = quant.dynamic_parameters(x, QType("int8", axis=0, schema="symmetric_with_unsigned"))
    assert resolved.zero_point == (-128, 0)
    assert resolved.scale == (float(np.float32(2.55) / np.float32(255)), float(np.float32(1.27) / np.float32(127)))
    q = quant.quantize(x, resolved)
    assert q[0].tolist() == [-128, 127] and q[1].tolist() == [-127, 50]


def test_dynamic_per_axis_and_blocked_reduce_per_group():
    x = np.array([[1.0, -4.0, 2.0], [0.5, 8.0, -1.0]], np.float32)
    per_axis = quant.dynamic_parameters(x, QType("int8", axis=0, schema="symmetric"))
    assert per_axis.scale == (float(np.float32(4) / np.float32(127)), float(np.float32(8) / np.float32(127)))
    blocked = quant.dynamic_parameters(x, QType("int8", axis=1, block_size=2, schema="symmetric"))
    # blocks: row 0 {1, -4}, {2}; row 1 {0.5, 8}, {-1}
    assert blocked.scale == tuple(float(np.float32(v) / np.float32(127)) for v in (4, 2, 8, 1))


def test_a_range_whose_scale_underflows_gets_the_smallest_positive_scale():
    # 1e-43 / 255 underflows float32 (DynamicQuantizeLinear would return scale 0, which no valid type has)
    resolved = quant.dynamic_parameters(np.array([1e-43], np.float32), QType("uint8"))
    assert resolved.scale == (float(np.finfo(np.float32).smallest_subnormal),)


def test_dynamic_parameters_refuse_nan_and_empty_data():
    with pytest.raises(QTypeError, match="NaN"):
        quant.dynamic_parameters(np.array([np.nan]), QType("uint8"), tensor="x")
    with pytest.raises(QTypeError, match="empty"):
        quant.dynamic_parameters(np.zeros(0), QType("uint8"), tensor="x")


def test_quantize_dynamic_returns_the_resolved_type():
    q, resolved = quant.quantize_dynamic(np.array([0.0, 2.55]), QType("uint8"))
    assert resolved.scale == (float(np.float32(2.55) / np.float32(255)),) and q.tolist() == [0, 255]
    assert quant.resolve(resolved, np.zeros(1)) is resolved


# --- dynamic parameters in a narrow expressed type (proposal/spec/semantics.md#dynamic-parameters) ------------


def _nearest(value: Fraction, dtype) -> float:
    """The value of ``dtype`` nearest to the exact ``value``, ties to the even significand: found by comparing
    exact distances to the finite candidates around it, not by converting (which is what is under test)."""
    finfo = ml_dtypes.finfo(dtype)
    if abs(value) > Fraction(float(finfo.max)) + Fraction(float(finfo.max)) / 2 ** (finfo.nmant + 2):
        return math.copysign(math.inf, value)
    start = np.asarray(float(value), np.float64).astype(dtype)
    candidates = {float(start)}
    for direction in (np.inf, -np.inf):
        step = start
        for _ in range(2):
            step = np.nextafter(np.asarray(step, dtype), np.asarray(direction, dtype))
            candidates.add(float(step))
    finite = [c for c in candidates if math.isfinite(c)]
    best = min(abs(Fraction(c) - value) for c in finite)
    ties = [c for c in finite if abs(Fraction(c) - value) == best]
    if len(ties) == 1:
        return ties[0]
    return next(c for c in ties if int(np.asarray(c, dtype).view(np.uint16 if finfo.bits == 16 else np.uint32)) % 2 == 0)


def _spec_asymmetric(x: np.ndarray, qtype: QType) -> tuple[float, int]:
    """semantics.md's asymmetric dynamic_parameters with every operation rounded once from its exact value."""
    dtype = qtype.expressed_type.np_dtype
    lo, hi = qtype.storage_min, qtype.storage_max
    rmin = _nearest(Fraction(min(0.0, float(x.min()))), dtype)
    rmax = _nearest(Fraction(max(0.0, float(x.max()))), dtype)
    span = _nearest(Fraction(rmax) - Fraction(rmin), dtype) or 1.0
    scale = _nearest(Fraction(span) / (hi - lo), dtype)
    if scale == 0:  # semantics.md#dynamic-parameters: an underflowing scale is the type's smallest positive value
        scale = float(ml_dtypes.finfo(dtype).smallest_subnormal)
    initial = _nearest(lo - _nearest(Fraction(rmin) / Fraction(scale), dtype), dtype)
    return scale, int(np.rint(min(max(initial, lo), hi)))


@SETTINGS
@given(st.lists(st.floats(-30000, 30000, width=16), min_size=1, max_size=12),
       st.sampled_from(["int16", "uint16", "int8", "uint8"]), st.sampled_from(["float16", "bfloat16"]))
def test_dynamic_parameters_round_each_operation_once_with_exact_integer_constants(values, storage, expressed):
    qtype = QType(storage, expressed=expressed)
    x = np.array(values, np.float64)
    resolved = quant.dynamic_parameters(x, qtype)
    scale, zero_point = _spec_asymmetric(x, qtype)
    assert resolved.scale == (scale,) and resolved.zero_point == (zero_point,)
    assert 0 < scale < math.inf


def test_sixteen_bit_storage_in_float16_gets_a_finite_scale():
    # float16(65535) is infinity: rounding the range's step count first would give a scale of 0 (then the
    # smallest subnormal), and every value would saturate
    x = np.array([-3.0, 100.0], np.float16)
    for storage in ("uint16", "int16"):
        resolved = quant.dynamic_parameters(x, QType(storage, expressed="float16"))
        assert resolved.scale == (_nearest(Fraction(103) / 65535, np.float16),)
    # the definition computes in float16: the scale rounds down (100 then saturates 1.2 steps short of itself),
    # uint16's zero point 1909 is a float16 value, int16's -32768 + 1908.9 rounds to float16's spacing of 16
    resolved = quant.dynamic_parameters(x, QType("uint16", expressed="float16"))
    back = quant.dequantize(quant.quantize(x, resolved), resolved)
    assert resolved.zero_point == (1909,) and np.all(np.abs(back - x.astype(np.float64)) <= 2 * resolved.scale[0])
    assert quant.dynamic_parameters(x, QType("int16", expressed="float16")).zero_point == (-30864,)
    symmetric = quant.dynamic_parameters(x, QType("int16", expressed="float16", schema="symmetric"))
    assert symmetric.scale == (_nearest(Fraction(100) / 32767, np.float16),)  # 32767, not float16's 32768


def test_round_to_bfloat16_rounds_once():
    # ml_dtypes converts float64 to bfloat16 through float32 and rounds twice here
    value = np.array([1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-30), 1 + 2**-8, 3.0])
    got = quant.round_to(value, ml_dtypes.bfloat16).astype(np.float64)
    assert got.tolist() == [1 + 2**-7, -(1 + 2**-7), 1.0, 3.0]


def test_an_int32_range_divides_by_the_exact_step_count():
    resolved = quant.dynamic_parameters(np.array([-1.0, 1.0]), QType("int32", schema="symmetric"))
    assert resolved.scale == (_nearest(Fraction(1, 2**31 - 1), np.float32),)


def test_a_range_that_overflows_the_expressed_type_has_no_parameters():
    # 46304 - (-19216) = 65520 rounds to infinity in float16: no scale exists, and the run fails naming the tensor
    with pytest.raises(QTypeError, match="overflows float16"):
        quant.dynamic_parameters(np.array([46304.0, -19216.0]), QType("int16", expressed="float16"), tensor="x")
