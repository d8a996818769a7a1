"""The checker never crashes: any field values, any statistics, any shapes yield findings, not exceptions.

An invalid quantized type (any field combination a file can hold) is reported by its type rule wherever it
sits: on the data input or output of every data-movement op, on each operand of Conv / Gemm / MatMul (inputs,
weights, bias, output), on either side of QuantizeLinear / DequantizeLinear, and into Concat under each
built-in profile. No rule may turn it into an exception.
"""

from __future__ import annotations

import cProfile
import math
import pathlib
import pstats

import numpy as np
import pytest
from checker_models import Graph, one_tensor, qmsg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto

from onnx_qtypes.checker import builtin_names, iter_diagnostics
from onnx_qtypes.checker.columns import well_formed
from onnx_qtypes.checker.context import Context
from onnx_qtypes.proto.data_movement import DATA_MOVEMENT
from onnx_qtypes.checker.profile import load_profile
from onnx_qtypes.proto import QType, Statistics, TensorStatistics
from onnx_qtypes.proto.errors import QTypeError

PROFILES = builtin_names()
ROOT = pathlib.Path(__file__).resolve().parents[1]

STORAGE = st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 21, 22, 25, 26, 99])
REALS = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32), st.sampled_from([0.0, -0.0, 1e-45, 2.0**-3]))


@st.composite
def quantized_types(draw):  # noqa: ANN001, ANN201
    n = draw(st.integers(0, 4))
    return qmsg(
        storage=draw(STORAGE),
        scale=draw(st.lists(REALS, min_size=n, max_size=n)),
        zero_point=draw(st.lists(st.integers(-(2**40), 2**40), max_size=5)),
        axis=draw(st.none() | st.integers(-3, 6)),
        block_size=draw(st.none() | st.integers(-2, 5)),
        schema=draw(st.none() | st.integers(0, 4)),
        storage_min=draw(st.none() | st.integers(-300, 300)),
        storage_max=draw(st.none() | st.integers(-300, 300)),
        expressed=draw(st.none() | st.sampled_from([1, 6, 10, 16, 11])),
        extra=draw(st.sampled_from([b"", b"\x38\x09", b"\xf0\x01\x01"])),
    )


@st.composite
def statistics(draw):  # noqa: ANN001, ANN201
    def one():  # noqa: ANN202
        edges = draw(st.lists(REALS, max_size=4))
        return Statistics(
            min=draw(st.none() | REALS), max=draw(st.none() | REALS), mean=draw(st.none() | REALS),
            std=draw(st.none() | REALS), count=draw(st.none() | st.integers(-5, 50)),
            histogram_edges=edges, histogram_counts=draw(st.lists(st.integers(-3, 20), max_size=4)),
        )

    return TensorStatistics(tensor=one(), axis=draw(st.none() | st.integers(-1, 4)),
                            per_axis=[one() for _ in range(draw(st.integers(0, 3)))])


SHAPES = st.none() | st.lists(st.integers(1, 4), max_size=4)
OPS = st.sampled_from(["Identity", "Relu", "Transpose", "Flatten", "Concat", "MaxPool", "Softmax", "Squeeze", "Reshape",
                       "Gather", "Split", "Pad", "Tile", "Resize", "Conv", "MatMul", "Gemm", "DequantizeLinear"])
EXTRA_INPUTS = {  # op -> constant inputs after the data (any shapes: a node that does not fit is QT310's)
    "Reshape": [("shape", np.array([-1], np.int64))], "Gather": [("indices", np.array([0], np.int64))],
    "Pad": [("pads", np.zeros(8, np.int64))], "Tile": [("repeats", np.ones(4, np.int64))],
    "Resize": [("roi", None), ("scales", np.ones(4, np.float32))],
    "Conv": [("w", np.ones((1, 1, 1, 1), np.int8)), ("b", np.ones(1, np.int32))],
    "Gemm": [("w", np.ones((4, 4), np.int8)), ("b", np.ones(4, np.int32))], "MatMul": [("w", np.ones((4, 4), np.int8))],
    "DequantizeLinear": [("s", np.array(0.5, np.float32)), ("zp", np.array(0, np.int8))],  # (not "z": the output)
}


def _validates(message) -> bool:  # noqa: ANN001
    try:
        QType.from_proto(message, validate=True)
    except QTypeError:
        return False
    return True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(quantized_types(), quantized_types(), st.none() | statistics(), SHAPES, SHAPES, OPS, st.sampled_from(PROFILES))
def test_any_declarations_give_findings_not_crashes(q_in, q_out, stats, in_shape, out_shape, op, profile):
    g = Graph("fuzz").input("x", in_shape, q_in, statistics=stats)
    attrs = {"kernel_shape": [1, 1]} if op == "MaxPool" else {}
    inputs = ["x", "x"] if op == "Concat" else ["x"]
    if op == "Concat":
        attrs["axis"] = 0
    for name, array in EXTRA_INPUTS.get(op, []):
        if array is not None:  # weights have the input's (any) type, a bias the output's
            g.init(name, array, {"w": q_in, "b": q_out}.get(name))
        inputs.append(name if array is not None else "")
    g.node(op, inputs, ["y"], name="op", **attrs).value("y", out_shape, q_out)
    g.node("Identity", ["y"], ["z"], name="out").output("z", out_shape)
    found = list(iter_diagnostics(g.build(), profile))  # never an exception: these models are all readable
    for d in found:
        assert d.rule.startswith("QT") and d.location.pointer.startswith("/")
        assert d.message and "\n" not in d.message
    if not _validates(q_in):  # a type QType refuses is an error the report names
        assert any(d.severity.value == "error" and d.location.tensor == "x" and d.rule < "QT2" for d in found)


@settings(max_examples=200, deadline=None)
@given(quantized_types())
def test_well_formed_is_what_qtype_validates(message):
    ctx = Context(one_tensor(message), load_profile(None))
    qtype = ctx.qtype("", "q")
    assert well_formed(ctx, qtype) == _validates(message)
    assert well_formed(ctx, qtype.replace(validate=False)) == _validates(message)  # not a declared type


@pytest.mark.parametrize(("storage", "zero_point", "lo", "valid"), [
    (TensorProto.INT8, -128, None, True), (TensorProto.INT8, 0, None, True), (TensorProto.INT8, -127, None, False),
    (TensorProto.INT8, -127, -127, True), (TensorProto.UINT8, 128, None, True), (TensorProto.UINT8, 0, None, True),
    (TensorProto.UINT8, 127, None, False), (TensorProto.UINT8, 1, 1, True), (TensorProto.UINT4, 8, None, True),
])
def test_well_formed_judges_symmetric_with_unsigned_as_qtype_does(storage, zero_point, lo, valid):
    message = qmsg(storage, [0.5], [zero_point], schema=2, storage_min=lo)
    ctx = Context(one_tensor(message), load_profile(None))
    assert _validates(message) is valid
    assert well_formed(ctx, ctx.qtype("", "q")) is valid


# --- every invalid kind, wherever it sits -------------------------------------------------------------------

SHAPE = (1, 4, 2, 2)
VALID = qmsg(scale=[0.5], zero_point=[0])


def _invalid_kinds(shape: tuple[int, ...], storage: int) -> dict[str, tuple[dict, str]]:
    """kind -> (qmsg fields breaking one rule, that rule) for a tensor of ``shape``: any field a file can hold."""
    axis = 1 if len(shape) > 1 else 0
    n = shape[axis] if shape else 1
    lo, hi = (-128, 127) if storage == TensorProto.INT8 else (-(2**31), 2**31 - 1)
    per_axis = {"scale": [0.5] * n, "zero_point": [0] * n, "axis": axis}
    return {
        "scale_zero": ({"scale": [0.0]}, "QT101"),
        "scale_nan": ({"scale": [math.nan]}, "QT101"),
        "scale_inf": ({"scale": [math.inf]}, "QT101"),
        "scale_negative_infinite": ({"scale": [-math.inf]}, "QT101"),
        "per_axis_scale_zero": ({**per_axis, "scale": [0.0] + [0.5] * (n - 1)}, "QT101"),
        "zero_point_out_of_range": ({"zero_point": [hi + 1]}, "QT103"),
        "implied_zero_point_out_of_range": ({"storage_max": -1}, "QT103"),  # none written means 0
        "storage_float": ({"storage": TensorProto.FLOAT, "zero_point": [0]}, "QT104"),
        "storage_unknown": ({"storage": 99, "zero_point": [0]}, "QT104"),
        "range_inverted": ({"storage_min": 5, "storage_max": 3}, "QT105"),
        "range_outside": ({"storage_min": lo - 1}, "QT105"),
        "expressed_int": ({"expressed": TensorProto.INT32}, "QT106"),
        "expressed_unknown": ({"expressed": 99}, "QT106"),
        "scale_count": ({**per_axis, "scale": [0.5] * (n + 1), "zero_point": [0] * (n + 1)}, "QT107"),
        "zero_point_count": ({**per_axis, "zero_point": [0] * (n + 1)}, "QT107"),
        "one_zero_point": ({**per_axis, "scale": [0.5] * (n + 1), "zero_point": [0]}, "QT107"),
        "per_tensor_two_scales": ({"scale": [0.5, 0.5], "zero_point": [0, 0]}, "QT107"),
        "block_count": ({**per_axis, "block_size": 1, "scale": [0.5] * (math.prod(shape) + 1), "zero_point": []},
                        "QT107"),
        "negative_axis": ({**per_axis, "axis": -3}, "QT108"),
        "axis_out_of_range": ({**per_axis, "axis": 7}, "QT108"),
        "block_negative": ({**per_axis, "block_size": -1}, "QT110"),
        "block_zero": ({**per_axis, "block_size": 0}, "QT110"),
        "block_without_axis": ({"block_size": 2}, "QT110"),
        "symmetric_zero_point": ({"schema": 1, "zero_point": [3]}, "QT111"),
        "unsigned_midpoint": ({"schema": 2, "zero_point": [5]}, "QT111"),
        "pow2_scale": ({"schema": 3, "scale": [0.1]}, "QT112"),
        "pow2_per_axis": ({**per_axis, "schema": 4, "scale": [0.1] * n}, "QT112"),
        "dynamic_zero_point": ({"scale": [], "zero_point": [0]}, "QT113"),
        "schema_unknown": ({"extra": b"\x38\x63"}, "QT115"),  # schema = 99
        "unknown_field": ({"extra": b"\xf0\x01\x01"}, "QT115"),  # field 30
    }


def invalid(kind: str, shape: tuple[int, ...] = SHAPE, storage: int = TensorProto.INT8) -> tuple:
    """(QuantizedType message of that kind for a tensor of ``shape``, the rule it breaks)."""
    fields, rule = _invalid_kinds(shape, storage)[kind]
    return qmsg(**{"storage": storage, **fields}), rule


KINDS = list(_invalid_kinds(SHAPE, TensorProto.INT8))


def _i64(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


# op -> (constant inputs after the data (None: an omitted input), attributes, output shapes)
MOVERS: dict[str, tuple[list, dict, list[tuple[int, ...]]]] = {
    "Identity": ([], {}, [SHAPE]),
    "Reshape": ([("shape", _i64(1, 4, 4))], {}, [(1, 4, 4)]),
    "Flatten": ([], {"axis": 1}, [(1, 16)]),
    "Squeeze": ([("axes", _i64(0))], {}, [(4, 2, 2)]),
    "Unsqueeze": ([("axes", _i64(0))], {}, [(1, 1, 4, 2, 2)]),
    "Transpose": ([], {"perm": [0, 2, 3, 1]}, [(1, 2, 2, 4)]),
    "Slice": ([("starts", _i64(0)), ("ends", _i64(2)), ("axes", _i64(1))], {}, [(1, 2, 2, 2)]),
    "Gather": ([("indices", _i64(0, 2))], {"axis": 1}, [(1, 2, 2, 2)]),
    "Split": ([("split", _i64(2, 2))], {"axis": 1}, [(1, 2, 2, 2), (1, 2, 2, 2)]),
    "Concat": ([], {"axis": 1}, [(1, 8, 2, 2)]),
    "Pad": ([("pads", _i64(0, 0, 1, 1, 0, 0, 1, 1)), ("pad_value", np.array(0, np.int8))], {}, [(1, 4, 4, 4)]),
    "MaxPool": ([], {"kernel_shape": [1, 1]}, [SHAPE]),
    "Expand": ([("to", _i64(2, 4, 2, 2))], {}, [(2, 4, 2, 2)]),
    "Tile": ([("repeats", _i64(1, 1, 2, 2))], {}, [(1, 4, 4, 4)]),
    "DepthToSpace": ([], {"blocksize": 2}, [(1, 1, 4, 4)]),
    "SpaceToDepth": ([], {"blocksize": 2}, [(1, 16, 1, 1)]),
    "Resize": ([("roi", None), ("scales", np.array([1, 1, 2, 2], np.float32))], {"mode": "nearest"}, [(1, 4, 4, 4)]),
    "GatherElements": ([("indices", np.zeros(SHAPE, np.int64))], {"axis": 2}, [SHAPE]),
    "GatherND": ([("indices", _i64(0))], {}, [(4, 2, 2)]),
    "GlobalMaxPool": ([], {}, [(1, 4, 1, 1)]),
    "ReduceMax": ([("axes", _i64(2, 3))], {"keepdims": 1}, [(1, 4, 1, 1)]),
    "ReduceMin": ([("axes", _i64(2, 3))], {"keepdims": 1}, [(1, 4, 1, 1)]),
}


def mover(op: str, in_q, out_q, statistics: TensorStatistics | None = None):  # noqa: ANN001, ANN201
    """a (type ``in_q``) -> op -> b0.. (type ``out_q``) -> Identity -> graph outputs of type ``out_q``."""
    extra, attrs, out_shapes = MOVERS[op]
    g = Graph(op).input("a", SHAPE, in_q, statistics=statistics)
    inputs = ["a", "a"] if op == "Concat" else ["a"]
    for name, array in extra:
        if array is not None:
            g.init(name, array, in_q if name == "pad_value" else None)  # Pad's value has the data's type
        inputs.append(name if array is not None else "")
    outputs = [f"b{i}" for i in range(len(out_shapes))]
    g.node(op, inputs, outputs, name="op", **attrs)
    for name, shape in zip(outputs, out_shapes):
        g.value(name, shape, out_q).node("Identity", [name], [f"{name}_out"], name=f"{name}_copy")
        g.output(f"{name}_out", shape, out_q)
    return g.build()


def _fired(found: list, rule: str, tensor: str) -> bool:
    return any(d.rule == rule and d.location.tensor == tensor and d.severity.value == "error" for d in found)


def test_the_table_covers_every_data_movement_op():
    assert set(MOVERS) == set(DATA_MOVEMENT)


@pytest.mark.parametrize("op", list(MOVERS))
def test_invalid_types_through_data_movement_give_findings(op):
    for kind in KINDS:
        bad, rule = invalid(kind)
        out_shape = MOVERS[op][2][0]
        bad_out, out_rule = invalid(kind, out_shape)
        for variant, in_q, out_q, tensor, want in (
            ("input", bad, VALID, "a", rule),
            ("both", bad, bad, "a", rule),  # the same invalid type in and out (statistics on the input)
            ("output", VALID, bad_out, "b0", out_rule),
        ):
            stats = TensorStatistics(Statistics(min=-1.0, max=1.0)) if variant == "both" else None
            found = list(iter_diagnostics(mover(op, in_q, out_q, stats)))
            assert _fired(found, want, tensor), (kind, variant, [(d.rule, d.location.tensor) for d in found])
            # QT401 derives the output's type only from a well-formed input's; for Concat the output is the
            # reference each input is compared with, and an invalid output is none
            derived = [d for d in found if d.rule == "QT401"]
            if variant == "both" or (variant == "input" and op != "Concat"):
                assert not derived, (kind, variant, derived[0].message)


WEIGHTED = {
    "Conv": {"x": SHAPE, "w": (3, 4, 1, 1), "b": (3,), "y": (1, 3, 2, 2)},
    "Gemm": {"x": (2, 4), "w": (4, 3), "b": (3,), "y": (2, 3)},
    "MatMul": {"x": (2, 4), "w": (4, 3), "y": (2, 3)},
}


def weighted(op: str, role: str, q):  # noqa: ANN001, ANN201
    """Conv / Gemm / MatMul with ``q`` on one operand (x, weights w, bias b or output y), valid types elsewhere."""
    shapes = WEIGHTED[op]
    w_valid = qmsg(scale=[0.25] * 3, zero_point=[0] * 3, axis=0 if op == "Conv" else 1, schema=1)
    b_valid = qmsg(storage=TensorProto.INT32, scale=[0.125] * 3, zero_point=[0] * 3, axis=0)
    types = {"x": VALID, "w": w_valid, "b": b_valid, "y": VALID, role: q}
    g = Graph(op).input("x", shapes["x"], types["x"]).init("w", np.ones(shapes["w"], np.int8), types["w"])
    if "b" in shapes:
        g.init("b", np.ones(shapes["b"], np.int32), types["b"])
    g.node(op, list(shapes)[:-1], ["y"], name="op").value("y", shapes["y"], types["y"])
    return g.node("Identity", ["y"], ["z"], name="copy").output("z", shapes["y"], types["y"]).build()


@pytest.mark.parametrize(("op", "role"), [(op, role) for op, shapes in WEIGHTED.items() for role in shapes])
def test_invalid_types_on_weights_bias_and_activations_give_findings(op, role):
    storage = TensorProto.INT32 if role == "b" else TensorProto.INT8
    for kind in KINDS:
        q, rule = invalid(kind, WEIGHTED[op][role], storage)
        model = weighted(op, role, q)
        for profile in PROFILES:
            found = list(iter_diagnostics(model, profile))
            assert _fired(found, rule, role), (kind, profile, [(d.rule, d.location.tensor) for d in found])


def boundary(op: str, q, per_axis: bool):  # noqa: ANN001, ANN201
    """QuantizeLinear producing, or DequantizeLinear reading, tensor ``t`` of type ``q``."""
    scale = np.full(4, 0.5, np.float32) if per_axis else np.array(0.5, np.float32)
    g = Graph(op).init("s", scale).init("zp", np.zeros(scale.shape, np.int8))
    attrs = {"axis": 1} if per_axis else {}
    if op == "QuantizeLinear":
        g.input("x", SHAPE).node(op, ["x", "s", "zp"], ["t"], name="op", **attrs).value("t", SHAPE, q)
        return g.node("Identity", ["t"], ["y"], name="copy").output("y", SHAPE, q).build()
    return g.input("t", SHAPE, q).node(op, ["t", "s", "zp"], ["y"], name="op", **attrs).output("y", SHAPE).build()


@pytest.mark.parametrize("per_axis", [False, True], ids=["per-tensor", "per-axis"])
@pytest.mark.parametrize("op", ["QuantizeLinear", "DequantizeLinear"])
def test_invalid_types_at_boundaries_give_findings(op, per_axis):
    for kind in KINDS:
        q, rule = invalid(kind)
        found = list(iter_diagnostics(boundary(op, q, per_axis)))
        assert _fired(found, rule, "t"), (kind, [(d.rule, d.location.tensor) for d in found])


@pytest.mark.parametrize("profile", PROFILES)
def test_invalid_types_into_concat_give_findings_under_every_profile(profile):
    for kind in KINDS:
        q, rule = invalid(kind)
        wide, wide_rule = invalid(kind, (1, 8, 2, 2))
        for in_q, out_q, tensor, want in ((q, VALID, "a", rule), (q, q, "a", rule), (VALID, wide, "b", wide_rule)):
            g = Graph("concat").input("a", SHAPE, in_q).input("c", SHAPE, VALID)
            g.node("Concat", ["a", "c"], ["b"], name="op", axis=1).value("b", (1, 8, 2, 2), out_q)
            model = g.node("Identity", ["b"], ["y"], name="copy").output("y", (1, 8, 2, 2), out_q).build()
            found = list(iter_diagnostics(model, profile))
            assert _fired(found, want, tensor), (kind, tensor, [(d.rule, d.location.tensor) for d in found])


# --- hostile sizes: a parameter list of any length costs vector operations, not a Python step per value -------


def _huge(n: int) -> list[tuple[object, object]]:
    """(model, profile) pairs whose types carry ``n`` parameters, valid or broken every way rules read them."""
    def chain(q, op="Identity", out=None, extra=(), attrs=None, out_n=n, stats=None):  # noqa: ANN001, ANN202
        g = Graph("huge").input("a", (n,), q, statistics=stats)
        for name, array in extra:
            g.init(name, np.asarray(array, np.int64))
        g.node(op, ["a", "a"] if op == "Concat" else ["a", *(name for name, _ in extra)], ["b"], name="op",
               **(attrs or {}))
        g.value("b", (out_n,), out if out is not None else q)
        return g.node("Identity", ["b"], ["c"], name="copy").output("c", (out_n,)).build()

    def per_axis(scale: float = 0.125, zero_point: int = 0, count: int = n, **kw):  # noqa: ANN003, ANN202
        return qmsg(scale=[scale] * count, zero_point=[zero_point] * count, axis=0, **kw)

    half = n // 2
    bias = qmsg(storage=TensorProto.INT32, scale=[0.125] * n, zero_point=[1] * n, axis=0)
    conv = (Graph("conv").input("x", (1, 1, 1, 1), VALID).init("w", np.ones((n, 1, 1, 1), np.int8), per_axis(schema=1))
            .init("b", np.ones(n, np.int32), bias).node("Conv", ["x", "w", "b"], ["y"], name="conv")
            .value("y", (1, n, 1, 1), VALID).output("y", (1, n, 1, 1)).build())
    return [
        (chain(per_axis()), "generic"),
        (chain(per_axis(0.0)), "generic"),  # QT101 on every scale
        (chain(per_axis(0.1, expressed=TensorProto.FLOAT16)), "generic"),  # QT102: 0.1 is no float16
        (chain(per_axis(zero_point=300)), "generic"),  # QT103
        (chain(qmsg(scale=[0.125] * n, axis=0, storage_max=-1)), "generic"),  # QT103: the implied zero points
        (chain(per_axis(zero_point=3, schema=1)), "generic"),  # QT111
        (chain(per_axis(0.1, schema=3)), "generic"),  # QT112
        (chain(per_axis(0.1, zero_point=3)), "pow2-int8"),  # QT504, QT505
        (chain(per_axis(), stats=TensorStatistics(Statistics(min=-1.0, max=1.0))), "generic"),  # QT208
        (chain(qmsg(scale=[0.125] * n, zero_point=[0] * n), stats=TensorStatistics(Statistics(min=-99.0, max=99.0))),
         "generic"),  # QT107 and QT208 on a per-tensor type of n pairs
        (chain(per_axis(), "Slice", per_axis(count=half), [("s", [0]), ("e", [half])], out_n=half), "generic"),
        (chain(per_axis(), "Slice", per_axis(count=n), [("s", [-1]), ("e", [-n - 1]), ("ax", [0]), ("st", [-1])]),
         "generic"),
        (chain(per_axis(), "Gather", per_axis(count=half), [("i", np.arange(half))], out_n=half), "generic"),
        (chain(per_axis(), "Concat", per_axis(0.25, count=2 * n), attrs={"axis": 0}, out_n=2 * n), "tflite-int8"),
        (chain(per_axis(), "Transpose", per_axis(0.25)), "generic"),
        (conv, "generic"),  # QT404 on every bias zero point; QT405 and QT407 read every channel
    ]


def _run(model, profile: str) -> tuple[int, list]:  # noqa: ANN001
    profiler = cProfile.Profile()
    profiler.enable()
    found = list(iter_diagnostics(model, profile))
    profiler.disable()
    return pstats.Stats(profiler).total_calls, [(d.rule, d.location.pointer) for d in found]


def test_huge_parameter_lists_cost_no_python_step_per_value():
    # The same models with 10 and with 20,000 parameters: the same findings, and the Python calls made do not
    # grow with the count (a rule that loops over the values in Python would add 20,000 calls or more).
    for index, ((small, profile), (large, _)) in enumerate(zip(_huge(10), _huge(20_000))):
        small_calls, small_found = _run(small, profile)
        large_calls, large_found = _run(large, profile)
        assert large_found == small_found, index
        assert large_calls - small_calls < 2_000, (index, small_found, small_calls, large_calls)
    assert {rule for model, profile in _huge(10) for rule, _ in _run(model, profile)[1]} >= {
        "QT101", "QT102", "QT103", "QT107", "QT111", "QT112", "QT208", "QT401", "QT404", "QT504", "QT505"}


@pytest.mark.parametrize("op", ["GatherElements", "GatherND", "GlobalMaxPool", "ReduceMax", "ReduceMin"])
def test_qt401_covers_the_selecting_ops(op):
    """They pick stored values (or the largest / smallest), so their output keeps the input's parameters."""
    same = list(iter_diagnostics(mover(op, QType("int8", 0.5, 3), QType("int8", 0.5, 3))))
    assert not [d for d in same if d.rule == "QT401"], [d.message for d in same]
    changed = list(iter_diagnostics(mover(op, QType("int8", 0.5, 3), QType("int8", 0.25, 3))))
    assert [d.location.tensor for d in changed if d.rule == "QT401"] == ["b0"], [(d.rule, d.message) for d in changed]


def test_qt208_judges_a_function_tensor_by_its_functions_outputs():
    """c is read by a Relu in the body but also returned by the function: its values below the range do leave
    the body, so QT208 reports them (the Relu exemption is for tensors only a Relu reads)."""
    import numpy as np
    from onnx import TensorProto, helper

    from onnx_qtypes import QType, Statistics, TensorStatistics, set_qtypes
    from onnx_qtypes.checker import iter_diagnostics

    def build(returned: bool):
        body = [helper.make_node("Add", ["a", "b"], ["c"]), helper.make_node("Relu", ["c"], ["d"])]
        fn = helper.make_function("local", "F", ["a", "b"], ["c" if returned else "d"], body,
                                  [helper.make_opsetid("", 21)])
        graph = helper.make_graph([helper.make_node("F", ["x", "x"], ["y"], domain="local")], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
        model = helper.make_model(graph, ir_version=10, functions=[fn],
                                  opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("local", 1)])
        low = QType("uint8", float(np.float32(0.01)), 0).with_statistics(
            TensorStatistics(tensor=Statistics(min=-5.0, max=1.0)))
        set_qtypes(model, {"c": low}, function="local:F")
        return [d for d in iter_diagnostics(model) if d.rule == "QT208"]

    assert [d.location.pointer.split("/")[1:3] for d in build(returned=True)] == [["functions", "0"]]
    assert build(returned=False) == []  # only the Relu reads c: below-range values become 0 either way


@pytest.mark.parametrize("variant", ["quantize-linear", "dynamic-quantize-linear"])
def test_a_boundary_node_without_its_data_input_is_a_finding(variant):
    """The float view turned such a node into Identity of its (missing) input 0: an IndexError."""
    from onnx_qtypes import load

    model = load(ROOT / "examples" / "typed_cnn.onnx")
    node = model.graph.node[0]
    del node.input[:]
    if variant == "dynamic-quantize-linear":
        node.op_type = "DynamicQuantizeLinear"
        node.output.extend(["s", "z"])
    found = list(iter_diagnostics(model))
    assert any(d.rule == "QT310" and "input size 0" in d.message for d in found), [str(d) for d in found]


@pytest.mark.parametrize("variant", ["quantize-four-inputs", "quantize-one-input", "dequantize-two-outputs"])
def test_a_boundary_node_with_more_inputs_or_outputs_than_its_operator_takes_is_qt310(variant):
    """The float view made such a node Identity of its input 0, dropping the extra input or output: check called
    the file clean, and lower and run refused it (found by the consistency scan, seed 218)."""
    from onnx_qtypes import load

    model = load(ROOT / "examples" / "typed_cnn.onnx")
    at, op = next((k, n.op_type) for k, n in enumerate(model.graph.node)
                  if n.op_type == ("QuantizeLinear" if variant.startswith("quantize") else "DequantizeLinear"))
    node = model.graph.node[at]
    if variant == "quantize-four-inputs":
        node.input.append(node.input[-1])
    elif variant == "quantize-one-input":  # fewer than QuantizeLinear's two
        del node.input[1:]
    else:
        node.output.append("extra")
    found = [d for d in iter_diagnostics(model) if d.rule == "QT310"]
    assert [d.location.pointer for d in found] == [f"/graph/node/{at}"], [str(d) for d in found]
    said = {"quantize-four-inputs": "input size 4", "quantize-one-input": "input size 1"}.get(variant, "output size 2")
    assert said in found[0].message, found[0].message
    assert op in found[0].message
