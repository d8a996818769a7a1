"""Values that cross If / Loop / Scan boundaries keep one type (proto/control_flow.py, QT312, the evaluator)."""

from __future__ import annotations

import numpy as np
import pytest
from checker_models import if_model, int8, loop_model
from onnx import TensorProto, helper

from onnx_qtypes import QType
from onnx_qtypes.checker import iter_diagnostics
from onnx_qtypes.proto.control_flow import crossing_problem, crossings, expected_outer
from onnx_qtypes.reference_ops import EvaluationError, ReferenceEvaluator


def _scan(num_state: int = 1, num_scan: int = 1, **attrs: object):
    body = helper.make_graph(
        [], "body",
        [helper.make_tensor_value_info(f"s_in{k}", TensorProto.INT8, [2]) for k in range(num_state)]
        + [helper.make_tensor_value_info(f"x_in{j}", TensorProto.INT8, [2]) for j in range(num_scan)],
        [helper.make_tensor_value_info(f"s_out{k}", TensorProto.INT8, [2]) for k in range(num_state)]
        + [helper.make_tensor_value_info("y_out", TensorProto.INT8, [2])])
    inputs = [f"s{k}" for k in range(num_state)] + [f"x{j}" for j in range(num_scan)]
    return helper.make_node("Scan", inputs, [f"final{k}" for k in range(num_state)] + ["ys"], body=body,
                            num_scan_inputs=num_scan, **attrs)


def test_scan_crossings_name_state_slices_and_stacks():
    node = _scan(scan_input_axes=[1], scan_output_axes=[-1])
    found = {(c.inner, c.outer): c for c in crossings(node, 21)}
    assert set(found) == {("s_in0", "s0"), ("s_in0", "s_out0"), ("s_out0", "final0"), ("x_in0", "x0"), ("y_out", "ys")}
    assert found[("x_in0", "x0")].stacked == 1 and found[("x_in0", "x0")].port == ("input", 1)
    assert found[("y_out", "ys")].stacked == -1  # counted from the end: resolved with the outer rank
    assert found[("s_in0", "s0")].stacked is None


@pytest.mark.parametrize(("inner_axis", "stacked", "outer_axis"), [(0, 0, 1), (1, 0, 2), (0, 1, 0), (1, 1, 2)])
def test_stacking_moves_the_axis_at_or_after_the_stacked_one(inner_axis, stacked, outer_axis):
    crossing = next(c for c in crossings(_scan(scan_input_axes=[stacked]), 21) if c.outer == "x0")
    inner = QType("int8", [0.1, 0.2], [0, 0], axis=inner_axis)
    assert expected_outer(crossing, inner) == QType("int8", [0.1, 0.2], [0, 0], axis=outer_axis)
    assert crossing_problem(_scan(), crossing, inner, QType("int8", [0.1, 0.2], [0, 0], axis=outer_axis)) is None
    if outer_axis != inner_axis:
        assert "the axis moved" in crossing_problem(_scan(), crossing, inner, inner)


@pytest.mark.parametrize("count", [-2**31, -1, 0])
def test_a_scan_count_below_one_carries_no_more_than_the_node_has(count):
    """num_scan_inputs = -2^31 (QT413 reports it) made every input beyond the node's a carried value: 2^31 of them,
    and check hung (found by tests/fuzz_long.py --seed 80)."""
    import signal  # noqa: PLC0415

    def stop(*_: object) -> None:
        raise TimeoutError("crossings ran past 5 s")

    node = _scan()
    node.attribute[1].i = count  # num_scan_inputs
    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(5)
    try:
        found = list(crossings(node, 21))
    except TimeoutError:
        pytest.fail(f"crossings of a Scan with num_scan_inputs = {count} did not end within 5 s", pytrace=False)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert len(found) <= 3 * len(node.input)  # at most three per carried value, and every input carried


def test_a_per_tensor_type_crosses_unchanged_and_a_plain_side_is_named():
    crossing = next(iter(crossings(_scan(), 21)))
    q = QType("int8", 0.5, 1)
    assert crossing_problem(_scan(), crossing, q, q) is None
    assert crossing_problem(_scan(), crossing, None, None) is None
    assert "'s_in0' is not quantized" in crossing_problem(_scan(), crossing, None, q)


def test_other_nodes_have_no_crossings():
    assert list(crossings(helper.make_node("Relu", ["a"], ["b"]), 21)) == []
    assert list(crossings(helper.make_node("If", ["c"], ["r"], domain="com.example"), 21)) == []
    assert list(crossings(_scan(), 8)) == []  # Scan-8: sequence_lens first and a batch axis; not read


def test_an_axis_counted_from_the_end_is_resolved_with_the_outer_rank():
    crossing = next(c for c in crossings(_scan(scan_output_axes=[-1]), 21) if c.outer == "ys")
    inner = QType("int8", [0.1, 0.2], [0, 0], axis=0)  # per-axis on axis 0 of a rank-2 body value
    assert expected_outer(crossing, inner) is None  # rank unknown: nothing to say
    assert expected_outer(crossing, inner, outer_rank=3) == inner  # stacked on axis 2: axis 0 stays
    assert "must be" in crossing_problem(_scan(), crossing, inner, QType("int8", 0.1), outer_rank=3)


@pytest.mark.parametrize("build", [lambda: if_model(int8(0.4, 0), int8(0.2, 0)),
                                   lambda: loop_model(int8(0.5, 0), int8(0.1, 0))], ids=["if", "loop"])
def test_the_evaluator_refuses_what_qt312_reports(build):
    model = build()
    assert any(d.rule == "QT312" for d in iter_diagnostics(model))
    with pytest.raises(EvaluationError, match="passes the stored values across unchanged"):
        ReferenceEvaluator(model)


def test_consistent_crossings_compute_the_definition():
    x = np.array([1, -3], np.int8)  # a quantized graph input takes its storage integers
    q = int8(0.1, 0)
    expected = x * np.float64(q.scale[0])
    for model in (if_model(q, q), loop_model(q, q)):
        feeds = {"x_q": x} if model.graph.node[0].op_type == "Loop" else {"x_q": x, "c": np.array(True)}
        (y,) = ReferenceEvaluator(model).run(None, feeds)
        np.testing.assert_allclose(y, expected.astype(np.float32))
