"""The checker never crashes: any field values, any statistics, any shapes yield findings, not exceptions."""

from __future__ import annotations

import math

import numpy as np
from checker_models import Graph, qmsg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto

from onnx_qtypes.checker import iter_diagnostics
from onnx_qtypes.proto import Statistics, TensorStatistics
from onnx_qtypes.proto.errors import QTypesError

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
        extra=draw(st.sampled_from([b"", b"\x38\x09", b"\x60\x01"])),
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
OPS = st.sampled_from(["Identity", "Relu", "Transpose", "Flatten", "Concat", "MaxPool", "Softmax", "Squeeze"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(quantized_types(), quantized_types(), st.none() | statistics(), SHAPES, SHAPES, OPS,
       st.sampled_from(["generic", "tflite-int8", "pow2-int8"]))
def test_any_declarations_give_findings_not_crashes(q_in, q_out, stats, in_shape, out_shape, op, profile):
    g = Graph("fuzz").input("x", in_shape, q_in, statistics=stats)
    attrs = {"kernel_shape": [1, 1]} if op == "MaxPool" else {}
    inputs = ["x", "x"] if op == "Concat" else ["x"]
    if op == "Concat":
        attrs["axis"] = 0
    g.node(op, inputs, ["y"], name="op", **attrs).value("y", out_shape, q_out)
    g.node("Identity", ["y"], ["z"], name="out").output("z", out_shape)
    try:
        found = list(iter_diagnostics(g.build(), profile))
    except QTypesError:
        return  # an input error is a legitimate answer for unreadable input
    for d in found:
        assert d.rule.startswith("QT") and d.location.pointer.startswith("/")
        assert d.message and "\n" not in d.message


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**40), min_size=1, max_size=3), st.integers(0, 64))
def test_hostile_initializer_sizes_are_input_errors(dims, raw_bytes):
    g = Graph("hostile").init("w", np.zeros(2, np.int8))
    g.inits[0].ClearField("dims")
    g.inits[0].dims.extend(dims)
    g.inits[0].raw_data = b"\x00" * raw_bytes
    g.node("Identity", ["w"], ["y"], name="id").output("y", None, elem_type=TensorProto.INT8)
    try:
        list(iter_diagnostics(g.build()))
    except QTypesError as exc:
        assert "/graph/initializer/0" in str(exc) and "'w'" in str(exc)
    else:
        assert math.prod(dims) == raw_bytes  # only a consistent tensor may pass
