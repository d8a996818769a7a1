"""QType: validated construction, identity without statistics, proto round trip."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from onnx_qtypes import QType, QTypeError, Schema, Statistics, TensorStatistics
from onnx_qtypes.proto import STORAGE_TYPES, onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.validity import count_problem, is_pow2


def test_defaults_fill_range_and_zero_points():
    qt = QType("int8", scale=[0.5, 0.25], axis=1)
    assert qt.zero_point == (0, 0)
    assert (qt.storage_min, qt.storage_max) == (-128, 127)
    assert qt.granularity == "per-axis" and not qt.is_dynamic


def test_storage_accepts_onnx_data_type_numbers():
    assert QType(3, 1.0) == QType("int8", 1.0)
    assert QType("uint4", 1.0).storage_type.max == 15


@pytest.mark.parametrize(
    ("kwargs", "field", "fragment"),
    [
        ({"storage": "int64", "scale": 1.0}, "storage", "int64"),
        ({"storage": "int8", "scale": 1.0, "expressed": "int32"}, "expressed", "not a float type"),
        ({"storage": "int8", "scale": 0.0}, "scale", "finite and non-zero"),
        ({"storage": "int8", "scale": -1.0, "zero_point": -128, "schema": "symmetric_with_unsigned"}, "scale",
         "non-negative reals only"),
        ({"storage": "int8", "scale": math.nan}, "scale", "finite and non-zero"),
        ({"storage": "int8", "scale": math.inf}, "scale", "finite and non-zero"),
        ({"storage": "uint8", "scale": 1.0, "zero_point": 300}, "zero_point", "outside the storage range [0, 255]"),
        ({"storage": "int4", "scale": 1.0, "zero_point": 9}, "zero_point", "[-8, 7]"),
        ({"storage": "int8", "scale": 1.0, "zero_point": 1.5}, "zero_point", "expected integers"),
        ({"storage": "int8", "scale": [1.0, 2.0], "zero_point": [0]}, "zero_point", "2 scales need 2 zero points"),
        ({"storage": "int8", "scale": [1.0, 2.0]}, "scale", "per-tensor type needs exactly 1 scale"),
        ({"storage": "int8", "scale": 1.0, "axis": -1}, "axis", "must be >= 0"),
        ({"storage": "int8", "scale": 1.0, "block_size": 4}, "block_size", "needs an axis"),
        ({"storage": "int8", "scale": [1.0], "axis": 0, "block_size": 0}, "block_size", "must be > 0"),
        ({"storage": "int8", "scale": 1.0, "storage_min": 5, "storage_max": 5}, "storage_min", "storage_min < storage_max"),
        ({"storage": "int8", "scale": 1.0, "storage_min": -129}, "storage_min", "-128 <= storage_min"),
        ({"storage": "int8", "scale": 1.0, "zero_point": -128, "storage_min": -127}, "zero_point", "[-127, 127]"),
        ({"storage": "int8", "scale": 1.0, "zero_point": 3, "schema": "symmetric"}, "schema", "every zero point to be 0"),
        ({"storage": "uint8", "scale": 1.0, "zero_point": 127, "schema": "symmetric_with_unsigned"}, "schema", "128 or 0"),
        ({"storage": "int8", "scale": 1.0, "zero_point": -127, "schema": "symmetric_with_unsigned"}, "schema",
         "0 or -128"),
        ({"storage": "int8", "scale": 0.3, "schema": "symmetric_pow2_scale"}, "schema", "exactly 2^k"),
        ({"storage": "int8", "zero_point": 3}, "zero_point", "dynamic type"),
        ({"storage": "int8", "scale": 1.0, "schema": "banana"}, "schema", "unknown schema"),
    ],
)
def test_invalid_construction_names_the_field(kwargs, field, fragment):
    with pytest.raises(QTypeError) as info:
        QType(**kwargs)
    assert info.value.field == field
    assert fragment in str(info.value)
    assert str(info.value).startswith(f"QType.{field}:")


def test_near_misses_are_accepted():
    QType("uint8", 1.0, 128, schema="symmetric_with_unsigned")
    QType("uint8", 1.0, 0, schema="symmetric_with_unsigned")
    QType("int8", 1.0, -128, schema="symmetric_with_unsigned")  # the unsigned range written in int8 (Glow)
    QType("int8", 1.0, 0, schema="symmetric_with_unsigned")
    QType("int8", 0.125, 0, schema=Schema.SYMMETRIC_POW2_SCALE)
    QType("int8", 2.0**-20, 5, schema="asymmetric_pow2_scale")
    QType("int8", 1.0, -127, storage_min=-127, storage_max=127)
    QType("int2", 1.0, -2)
    QType("int8")  # dynamic


# SYMMETRIC_WITH_UNSIGNED: (symmetric form = the type's midpoint, unsigned form = storage_min) per storage type
SWU_ADMITTED = {
    "int2": (0, -2), "uint2": (2, 0), "int4": (0, -8), "uint4": (8, 0), "int8": (0, -128), "uint8": (128, 0),
    "int16": (0, -32768), "uint16": (32768, 0), "int32": (0, -(2**31)),
}


def test_symmetric_with_unsigned_covers_every_integer_storage_type():
    assert set(SWU_ADMITTED) == {name for name, st in STORAGE_TYPES.items() if not st.is_float}


@pytest.mark.parametrize(("storage", "admitted"), SWU_ADMITTED.items())
def test_symmetric_with_unsigned_admits_the_midpoint_and_storage_min(storage, admitted):
    st = STORAGE_TYPES[storage]
    for zero_point in admitted:
        assert QType(storage, 1.0, zero_point, schema="symmetric_with_unsigned").zero_point == (zero_point,)
    for zero_point in sorted({z + d for z in admitted for d in (-1, 1)} - set(admitted)):
        if st.min <= zero_point <= st.max:  # outside the range: a range error, not a schema one
            with pytest.raises(QTypeError, match=r"symmetric_with_unsigned requires every zero point to be") as info:
                QType(storage, 1.0, zero_point, schema="symmetric_with_unsigned")
            assert info.value.field == "schema"
            either = " or ".join(map(str, sorted(set(admitted), key=lambda z: z != admitted[0])))
            assert f"to be {either} (" in str(info.value) and f"found {zero_point}" in str(info.value)


def test_symmetric_with_unsigned_int8_minus_128_holds_what_uint8_0_holds():
    signed = QType("int8", 0.1, -128, schema="symmetric_with_unsigned")
    unsigned = QType("uint8", 0.1, 0, schema="symmetric_with_unsigned")
    q = np.arange(-128, 128)
    assert np.array_equal(0.1 * (q - signed.zero_point[0]), 0.1 * (q + 128 - unsigned.zero_point[0]))


@pytest.mark.parametrize(
    ("storage", "lo", "hi", "valid", "invalid"),
    [
        ("int8", -127, 127, (0, -127), (-128, -126, 1)),  # unsigned form follows storage_min; -128 is out of range
        ("uint8", 0, 254, (128, 0), (127, 1)),  # the symmetric form stays at the type's midpoint
        ("uint8", 1, 255, (128, 1), (0, 2)),
        ("uint8", 0, 100, (0,), (50, 128)),  # the midpoint is outside the range
        ("int4", -7, 7, (0, -7), (-8, -6)),
        ("uint16", 10, 60000, (32768, 10), (0, 30005)),
    ],
)
def test_symmetric_with_unsigned_on_a_narrowed_range(storage, lo, hi, valid, invalid):
    for zero_point in valid:
        QType(storage, 1.0, zero_point, schema="symmetric_with_unsigned", storage_min=lo, storage_max=hi)
    for zero_point in invalid:
        with pytest.raises(QTypeError):
            QType(storage, 1.0, zero_point, schema="symmetric_with_unsigned", storage_min=lo, storage_max=hi)


def test_symmetric_with_unsigned_per_axis_mixes_both_forms():
    qt = QType("int8", [0.1, 0.2, 0.3], [0, -128, 0], axis=0, schema="symmetric_with_unsigned")
    assert qt.zero_point == (0, -128, 0)
    with pytest.raises(QTypeError, match="found -127"):
        QType("int8", [0.1, 0.2], [-128, -127], axis=0, schema="symmetric_with_unsigned")


def test_immutable():
    qt = QType("int8", 1.0)
    with pytest.raises(AttributeError):
        qt.scale = (2.0,)  # type: ignore[misc]


def test_statistics_are_not_part_of_identity():
    stats = TensorStatistics(tensor=Statistics(min=-1.0, max=1.0))
    a = QType("int8", 0.5, 1)
    b = a.with_statistics(stats)
    assert a == b and hash(a) == hash(b)
    assert b.statistics == stats
    assert QType("int8", 0.5, 1) != QType("int8", 0.5, 2)


def test_pow2_is_exact():
    assert is_pow2(1.0) and is_pow2(2.0**-30) and is_pow2(1024.0)
    assert not is_pow2(0.3) and not is_pow2(0.0) and not is_pow2(-0.5) and not is_pow2(math.inf)
    assert not is_pow2(np.nextafter(0.5, 1.0))


@pytest.mark.parametrize(
    ("qtype", "shape", "fragment"),
    [
        (QType("int8", [1.0, 1.0, 1.0], axis=1), [2, 4], "needs 4 scales, found 3"),
        (QType("int8", [1.0] * 2, axis=2), [2, 4], "axis 2 is outside [0, 2)"),
        (QType("int8", [1.0], axis=0), [], "not allowed on a scalar"),
        (QType("int8", [1.0] * 4, axis=1, block_size=3), [2, 7], "needs 6 scales"),
    ],
)
def test_count_problems(qtype, shape, fragment):
    problem = count_problem(qtype, shape)
    assert problem is not None and fragment in problem


def test_count_near_misses():
    assert count_problem(QType("int8", [1.0] * 4, axis=1), [2, 4]) is None
    # ragged last block: 7 = 3 + 3 + 1 gives 3 blocks along axis 1, times 2 rows
    assert count_problem(QType("int8", [1.0] * 6, axis=1, block_size=3), [2, 7]) is None
    assert count_problem(QType("int8", [1.0] * 3, axis=1), [2, None]) is None  # unknown dim


scales = st.floats(min_value=1e-30, max_value=1e30, allow_nan=False, allow_infinity=False)


@st.composite
def qtypes(draw):
    storage = STORAGE_TYPES[draw(st.sampled_from(sorted(STORAGE_TYPES)))]
    n = draw(st.integers(1, 5))
    axis = None if n == 1 and draw(st.booleans()) else draw(st.integers(0, 3))
    block = draw(st.one_of(st.none(), st.integers(1, 64))) if axis is not None else None
    if storage.is_float:  # zero point 0, the full range
        lo, hi, zps = storage.min, storage.max, [0] * n
    else:
        lo = draw(st.integers(storage.min, storage.max - 1))
        hi = draw(st.integers(lo + 1, storage.max))
        zps = draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))
    expressed = draw(st.sampled_from(["float32", "float16", "bfloat16"]))
    return QType(storage.name, draw(st.lists(scales, min_size=n, max_size=n)), zps, axis=axis, block_size=block,
                 storage_min=lo, storage_max=hi, expressed=expressed)


@given(qtypes())
def test_proto_round_trip_is_identity(qt):
    msg = pb.QuantizedType.FromString(qt.to_proto().SerializeToString())
    back = QType.from_proto(msg)
    assert back == qt
    assert back.scale == qt.scale  # doubles survive exactly


def test_statistics_round_trip():
    stats = TensorStatistics(
        tensor=Statistics(min=-1.5, max=2.0, mean=0.1, std=0.5, count=10,
                          histogram_edges=(-1.5, 0.0, 2.0), histogram_counts=(4, 6)),
        axis=0,
        per_axis=(Statistics(min=-1.5, max=0.0), Statistics(min=0.0, max=2.0, count=0)),
        method="minmax",
    )
    assert TensorStatistics.from_proto(pb.TensorStatistics.FromString(stats.to_proto().SerializeToString())) == stats
    # absent is unknown, not zero
    assert Statistics.from_proto(pb.Statistics()).min is None


def test_unvalidated_construction_keeps_bad_values_for_reporting():
    msg = pb.QuantizedType(storage_type=3, scale=[0.0], zero_point=[400])
    qt = QType.from_proto(msg, validate=False)
    assert qt.scale == (0.0,) and qt.zero_point == (400,)
    with pytest.raises(QTypeError):
        QType.from_proto(msg)


def test_unvalidated_construction_looks_up_names_and_numbers_alike():
    by_name = QType("int32", 1.0, expressed="float16", validate=False)
    by_number = QType(6, 1.0, expressed=10, validate=False)
    assert by_name.expressed == by_number.expressed == "float16"
    assert by_name.storage == by_number.storage == "int32"
    assert QType(64, 1.0, expressed=99, validate=False).storage.startswith("data type 64")


@st.composite
def messages(draw):
    """QuantizedType messages with any field values, valid or not."""
    msg = pb.QuantizedType(storage_type=draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 21, 22, 25, 26])))
    expressed = draw(st.none() | st.sampled_from([1, 6, 10, 16]))
    if expressed is not None:
        msg.expressed_type = expressed
    msg.scale.extend(draw(st.lists(st.floats(width=32), max_size=4)))
    msg.zero_point.extend(draw(st.lists(st.integers(-(2**40), 2**40), max_size=4)))
    for field, strategy in (("axis", st.integers(-2, 4)), ("block_size", st.integers(-1, 4)),
                            ("schema", st.integers(0, 4)), ("storage_min", st.integers(-300, 300)),
                            ("storage_max", st.integers(-300, 300))):
        value = draw(st.none() | strategy)
        if value is not None:
            setattr(msg, field, value)
    return msg


def _general(msg, stats, validate):
    """The same message through QType's general constructor."""
    has = msg.HasField
    return QType(msg.storage_type, tuple(msg.scale), tuple(msg.zero_point),
                 axis=msg.axis if has("axis") else None, block_size=msg.block_size if has("block_size") else None,
                 schema=msg.schema, storage_min=msg.storage_min if has("storage_min") else None,
                 storage_max=msg.storage_max if has("storage_max") else None, expressed=msg.expressed_type,
                 statistics=stats, validate=validate)


@given(messages(), st.booleans())
def test_from_proto_equals_the_general_constructor(msg, with_stats):
    stats = TensorStatistics(tensor=Statistics(min=-1.0, max=1.0)) if with_stats else None
    fast = QType.from_proto(msg, stats, validate=False)
    slow = _general(msg, stats, validate=False)
    # repr, not ==: NaN scales are kept for reporting and NaN != NaN
    assert repr(fast) == repr(slow) and repr(fast.statistics) == repr(slow.statistics)
    try:
        expected = _general(msg, stats, validate=True)
    except QTypeError as exc:
        with pytest.raises(QTypeError, match=str(exc.field)):
            QType.from_proto(msg, stats)
    else:
        assert QType.from_proto(msg, stats) == expected


def test_replace_validates_unless_told_not_to():
    bad = QType("int8", 0.0, validate=False)
    with pytest.raises(QTypeError, match="finite and non-zero"):
        bad.replace(zero_point=(1,))
    kept = bad.replace(zero_point=(1,), validate=False)
    assert kept.scale == (0.0,) and kept.zero_point == (1,)
    stats = TensorStatistics(tensor=Statistics(min=0.0, max=1.0))
    assert bad.with_statistics(stats).statistics == stats  # no revalidation for metadata
    assert QType("int8", 0.5).replace(scale=(0.25,)) == QType("int8", 0.25)


# -- many parameters: the vector paths decide exactly as the per-value rules ---------------------------

def _outcome(scale, zero_point, schema) -> object:
    try:
        return QType("int8", scale, zero_point, axis=0, schema=schema)
    except QTypeError as exc:
        return str(exc)


def _per_value(scale, zero_point, schema) -> str | None:
    """The first failing check as the spec states it, one value at a time (no numpy)."""
    from onnx_qtypes.proto.validity import scale_problem, zero_point_problem  # noqa: PLC0415

    problems = [p for p in map(scale_problem, map(float, scale)) if p]
    if problems:
        return "QType.scale: " + problems[0]
    problems = [p for p in (zero_point_problem(z, -128, 127) for z in zero_point) if p]
    if problems:
        return "QType.zero_point: " + problems[0]
    schema = Schema.parse(schema)
    if schema.symmetric and any(z != 0 for z in zero_point):
        return f"QType.schema: schema {schema.name.lower()} requires every zero point to be 0, found " \
               f"{next(z for z in zero_point if z != 0)}"
    if schema.pow2 and not all(is_pow2(float(s)) for s in scale):
        return f"QType.schema: schema {schema.name.lower()} requires every scale to be exactly 2^k, found " \
               f"{next(float(s) for s in scale if not is_pow2(float(s)))!r}"
    return None


@given(st.data())
def test_list_array_and_per_value_validation_agree(data):
    n = data.draw(st.integers(1, 40))
    scale = data.draw(st.lists(st.one_of(st.floats(width=32), st.sampled_from([0.5, 0.25, 2.0, 1])),
                               min_size=n, max_size=n))
    zero_point = data.draw(st.lists(st.one_of(st.integers(-200, 300), st.just(0)), min_size=n, max_size=n))
    schema = data.draw(st.sampled_from(["asymmetric", "symmetric", "symmetric_pow2_scale", "asymmetric_pow2_scale"]))
    from_list = _outcome(scale, zero_point, schema)
    from_arrays = _outcome(np.array(scale, dtype=np.float64), np.array(zero_point, dtype=np.int64), schema)
    # numpy scalars take the per-item path: the slow path is the yardstick for the fast ones
    from_items = _outcome([np.float64(s) for s in scale], [np.int64(z) for z in zero_point], schema)
    assert from_list == from_arrays == from_items
    expected = _per_value(scale, zero_point, schema)
    if expected is None:
        assert isinstance(from_list, QType)
        assert from_list.scale == tuple(map(float, scale)) and from_list.zero_point == tuple(zero_point)
    else:
        assert from_list == expected


def test_integral_float_zero_points_are_accepted_and_others_named():
    assert QType("int8", [0.5, 0.5], np.array([1.0, -3.0]), axis=0).zero_point == (1, -3)
    with pytest.raises(QTypeError, match=r"expected integers, got 1\.5"):
        QType("int8", [0.5, 0.5], np.array([1.0, 1.5]), axis=0)
    with pytest.raises(QTypeError, match="expected real numbers, got True"):
        QType("int8", [0.5, True], axis=0)
    with pytest.raises(QTypeError, match="too large for a float"):
        QType("int8", [0.5, 10**400], axis=0)


# -- scalar fields: named errors, no truncation; unknown fields and schema values in a message ---------


@pytest.mark.parametrize(
    ("kwargs", "field", "fragment"),
    [
        ({"axis": "x"}, "axis", "expected an integer, got 'x'"),
        ({"axis": 0.7}, "axis", "expected an integer, got 0.7"),
        ({"axis": True}, "axis", "expected an integer, got True"),
        ({"block_size": "b"}, "block_size", "expected an integer, got 'b'"),
        ({"axis": 0, "block_size": 1.5}, "block_size", "got 1.5"),
        ({"axis": 0, "storage_min": "a"}, "storage_min", "expected an integer, got 'a'"),
        ({"axis": 0, "storage_min": -127.9}, "storage_min", "got -127.9"),
        ({"axis": 0, "storage_max": np.float64(126.5)}, "storage_max", "126.5"),
        ({"axis": 0, "statistics": "junk"}, "statistics", "expected a TensorStatistics or None, got 'junk'"),
        ({"axis": 0, "schema": True}, "schema", "unknown schema True"),
        ({"axis": 0, "expressed": True}, "expressed", "not a float type"),  # True == 1 == FLOAT
        ({"axis": 0, "storage": 3.0}, "storage", "3.0 is not allowed"),  # 3.0 == INT8
    ],
)
def test_scalar_fields_are_checked_not_truncated(kwargs, field, fragment):
    kwargs = {"storage": "int8", "scale": [0.5, 0.5], **kwargs}
    with pytest.raises(QTypeError) as info:
        QType(**kwargs)
    assert info.value.field == field and fragment in str(info.value), str(info.value)
    assert str(info.value).startswith(f"QType.{field}: ")


def test_integral_scalars_are_accepted_like_zero_points():
    qt = QType("int8", [0.5, 0.5], axis=np.int64(1), storage_min=-127.0, storage_max=np.int32(127))
    assert (qt.axis, qt.storage_min, qt.storage_max) == (1, -127, 127)
    assert all(type(v) is int for v in (qt.axis, qt.storage_min, qt.storage_max))
    assert QType("int8", [0.5], axis=0, block_size=2.0).block_size == 2


def test_unvalidated_construction_keeps_odd_values_but_not_odd_types():
    qt = QType("int8", [math.nan], [500], axis=-5, block_size=0, validate=False)
    assert (qt.axis, qt.block_size, qt.zero_point) == (-5, 0, (500,))
    with pytest.raises(QTypeError, match="QType.axis: expected an integer, got 0.5"):
        QType("int8", [0.5], axis=0.5, validate=False)


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda: Statistics(histogram_counts=[1.7]), "statistics.histogram_counts: expected integers, got 1.7"),
        (lambda: Statistics(histogram_counts=[True]), "got True"),
        (lambda: Statistics(histogram_edges=["1.5"]), "statistics.histogram_edges"),
        (lambda: Statistics(count=2.5), "statistics.count: expected an integer, got 2.5"),
        (lambda: Statistics(min="0"), "statistics.min"),
        (lambda: TensorStatistics(tensor="x"), "statistics.tensor: expected a Statistics"),
        (lambda: TensorStatistics(per_axis=[Statistics(), 3]), "statistics.per_axis"),
        (lambda: TensorStatistics(axis=0.5), "statistics.axis: expected an integer"),
        (lambda: TensorStatistics(method=3), "statistics.method"),
    ],
)
def test_statistics_fields_are_checked_not_truncated(make, fragment):
    with pytest.raises(QTypeError, match=fragment.replace(".", r"\.")):
        make()


def test_statistics_keep_unusual_values_for_the_checker():
    stats = Statistics(min=math.nan, max=math.inf, count=-3, histogram_counts=[2.0, 3], histogram_edges=[0, 1, 2])
    assert stats.count == -3 and stats.histogram_counts == (2, 3) and stats.histogram_edges == (0.0, 1.0, 2.0)


def _with_unknown(msg: pb.QuantizedType, tail: bytes) -> pb.QuantizedType:
    return pb.QuantizedType.FromString(msg.SerializeToString() + tail)


def test_unknown_schema_values_and_fields_are_named_and_read_strictly_by_read_qtype():
    from onnx import TensorProto, helper  # noqa: PLC0415

    from onnx_qtypes import MalformedExtensionError  # noqa: PLC0415
    from onnx_qtypes.proto.model import read_qtype, write_qtype  # noqa: PLC0415
    from onnx_qtypes.proto.versions import unknown_field_problem  # noqa: PLC0415

    base = QType("int8", 0.5).to_proto()
    schema_9 = _with_unknown(base, b"\x38\x09")  # field 7 (schema), varint 9: protobuf reads ASYMMETRIC
    field_30 = _with_unknown(base, b"\xf0\x01\x01")  # field 30, varint 1
    version_4 = _with_unknown(base, b"\x60\x04")  # field 12 (version), 4: a newer extension than this reader
    assert unknown_field_problem(base) is None
    assert re.fullmatch(r"quantization\.schema: value 9 is not defined .*symmetric \(1\).*", unknown_field_problem(schema_9))
    assert unknown_field_problem(field_30) == ("quantization: QuantizedType field 30 is not defined by this version "
                                               "of the extension")
    assert unknown_field_problem(version_4).startswith("quantization.version: extension version 4 is not one this "
                                                       "reader knows (1, 2, 3)")
    assert unknown_field_problem(_with_unknown(base, b"\x60\x02")) is None
    stats = TensorStatistics(per_axis=(Statistics(min=0.0), Statistics(min=1.0)), axis=0).to_proto()
    stats.per_axis[1].MergeFromString(b"\x60\x01")
    assert unknown_field_problem(stats, "statistics").startswith("statistics.per_axis[1]: Statistics field 12")
    # the lenient reading (the checker's, which reports QT115) is the default reading
    assert QType.from_proto(schema_9, validate=False).schema is Schema.ASYMMETRIC
    vi = helper.make_tensor_value_info("t", TensorProto.INT8, [2])
    write_qtype(vi, QType("int8", 0.5))
    view = pb.TensorTypeView.FromString(vi.type.tensor_type.SerializeToString())
    view.quantization.CopyFrom(schema_9)
    vi.type.tensor_type.ParseFromString(view.SerializeToString())
    with pytest.raises(MalformedExtensionError, match=r"^/graph/input/0: quantization\.schema: value 9"):
        read_qtype(vi, "/graph/input/0")


def test_bool_zero_points_are_refused():
    with pytest.raises(QTypeError, match="QType.zero_point: expected integers, got True"):
        QType("int8", [0.5, 0.5], [0, True], axis=0)


def test_negative_scales_are_valid_and_flagged():
    """NNCF's symmetric weight compression writes them (types.md#negative-scales): valid, in every form but one."""
    weight = QType("int8", [0.02, -0.5], [0, 0], axis=1, schema="symmetric")
    assert weight.has_negative_scale and not QType("int8", [0.02, 0.5], axis=1).has_negative_scale
    assert QType.from_proto(weight.to_proto()) == weight
    assert QType("int8", -0.25, 3).has_negative_scale  # per-tensor, asymmetric: well defined too
    assert QType("int8", -0.25, 0, schema="symmetric_with_unsigned").has_negative_scale  # its symmetric form
    with pytest.raises(QTypeError, match="non-negative reals only"):  # its unsigned form: reals >= 0
        QType("uint8", [0.1, -0.1], [128, 0], axis=0, schema="symmetric_with_unsigned")
