"""Parameters by reference: a 4096 x 4096 int4 weight with float16 scales per block of 32 (524,288 scales) as
onnxruntime's and NNCF's 4-bit LLM weight quantization writes it (DequantizeLinear with block_size), lifted,
saved with external data, checked, run and lowered, with its types and graph under 64 KiB."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnx.reference
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_qtypes as qt
from onnx_qtypes.checker import iter_diagnostics
from onnx_qtypes.proto.errors import ParameterReferenceError
from onnx_qtypes.proto.parameter_tensors import REFERENCE_THRESHOLD
from onnx_qtypes.reference_ops import ReferenceEvaluator

K = N = 4096
BLOCK = 32
BUDGET = 64 * 1024  # bytes of graph and types per weight


def _blocked_qdq(k: int = K, n: int = N) -> onnx.ModelProto:
    """y = x @ DequantizeLinear(w: int4 [k, n], w_scale: float16 [k / 32, n], axis 0, block_size 32)."""
    rng = np.random.default_rng(4096)
    w = numpy_helper.from_array(rng.integers(-8, 8, (k, n)).astype(ml_dtypes.int4), "w")
    scales = (rng.random((k // BLOCK, n)) * 0.02 + 0.001).astype(np.float16)
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["w", "w_scale"], ["w_real"], name="dq_w", axis=0, block_size=BLOCK),
         helper.make_node("MatMul", ["x", "w_real"], ["y"], name="matmul")],
        "llm_weight",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, n])],
        [w, numpy_helper.from_array(scales, "w_scale")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def _graph_and_types(path) -> int:
    """Bytes of the .onnx file itself: graph, types and everything not moved to external data."""
    return path.stat().st_size


@pytest.fixture(scope="module")
def typed(tmp_path_factory):
    qdq = _blocked_qdq()
    lifted = qt.lift(qdq)
    folder = tmp_path_factory.mktemp("llm")
    path = folder / "typed.onnx"
    qt.save(lifted, path, external_data=True)
    return qdq, lifted, path


def test_lift_keeps_the_blocked_scales_in_their_initializer(typed):
    _, lifted, _ = typed
    w = qt.get_qtype(lifted, "w")
    assert (w.granularity, w.axis, w.block_size, w.expressed) == ("blocked", 0, BLOCK, "float16")
    assert w.scale_tensor == "w_scale" and len(w.scale) == K * N // BLOCK > REFERENCE_THRESHOLD
    assert "w_scale" in {t.name for t in lifted.graph.initializer}
    declared = next(vi for vi in lifted.graph.value_info if vi.name == "w")
    assert len(declared.SerializeToString()) < 100  # a name, not 524,288 doubles


def test_saved_with_external_data_under_the_budget_and_read_back(typed):
    _, lifted, path = typed
    size = _graph_and_types(path)
    assert size <= BUDGET, size
    again = qt.load(path)
    assert qt.get_qtype(again, "w") == qt.get_qtype(lifted, "w")


def test_checks_clean_and_a_bad_scale_is_located_in_the_initializer(typed):
    _, lifted, path = typed
    assert [d for d in iter_diagnostics(path) if d.is_error] == []
    broken = onnx.ModelProto()
    broken.CopyFrom(lifted)
    scale = next(t for t in broken.graph.initializer if t.name == "w_scale")
    values = numpy_helper.to_array(scale).copy()
    values[3, 7] = 0
    scale.CopyFrom(numpy_helper.from_array(values, "w_scale"))
    (error,) = [d for d in iter_diagnostics(broken) if d.is_error]
    index = [t.name for t in broken.graph.initializer].index("w_scale")
    assert error.rule == "QT101" and error.location.pointer == f"/graph/initializer/{index}"
    assert f"scale[{3 * N + 7}]" in error.message


def test_runs_as_the_quantizers_model_means(typed):
    qdq, _, path = typed
    x = np.random.default_rng(1).normal(size=(1, K)).astype(np.float16)
    (ours,) = ReferenceEvaluator(qt.load(path)).run(None, {"x": x})
    (plain,) = onnx.reference.ReferenceEvaluator(qdq).run(None, {"x": x})
    np.testing.assert_allclose(np.asarray(ours, np.float32), np.asarray(plain, np.float32), rtol=2e-2, atol=0.25)


def test_lowers_to_the_same_dequantize_reading_the_same_initializer(typed, tmp_path):
    qdq, _, path = typed
    lowered = qt.lower(qt.load(path))
    (dq,) = [n for n in lowered.graph.node if n.op_type == "DequantizeLinear"]
    assert list(dq.input) == ["w", "w_scale"]
    assert {a.name: a.i for a in dq.attribute} == {"axis": 0, "block_size": BLOCK}
    scales = {t.name: numpy_helper.to_array(t) for t in lowered.graph.initializer}
    original = {t.name: numpy_helper.to_array(t) for t in qdq.graph.initializer}
    assert np.array_equal(scales["w_scale"], original["w_scale"])
    assert sum(t.name.startswith("w_scale") for t in lowered.graph.initializer) == 1  # not copied
    qt.save(lowered, tmp_path / "lowered.onnx", external_data=True)
    assert _graph_and_types(tmp_path / "lowered.onnx") <= BUDGET


def test_set_qtype_chooses_the_form_and_get_qtype_reads_both():
    model = _blocked_qdq(64, 64)
    lifted = qt.lift(model)
    w = qt.get_qtype(lifted, "w")
    assert w.scale_tensor is None and len(w.scale) == 128  # small: listed in the type
    qt.set_qtype(lifted, "w", w.replace(scale_tensor="w_params"))
    assert qt.get_qtype(lifted, "w") == w and qt.get_qtype(lifted, "w").scale_tensor == "w_params"
    params = next(t for t in lifted.graph.initializer if t.name == "w_params")
    assert (list(params.dims), params.data_type) == ([2, 64], TensorProto.FLOAT16)
    qt.set_qtype(lifted, "w", w.replace(scale_tensor=None))  # back to listed: the initializer goes
    assert "w_params" not in {t.name for t in lifted.graph.initializer}
    with pytest.raises(qt.QTypesError, match="does not hold this tensor's parameters"):
        qt.set_qtype(lifted, "w", w.replace(scale_tensor="w"))


def test_a_reference_to_nothing_is_a_located_error_for_readers():
    model = qt.lift(_blocked_qdq(64, 64))
    w = qt.get_qtype(model, "w")
    qt.set_qtype(model, "w", w.replace(scale_tensor="w_params"))
    model.graph.initializer.remove(next(t for t in model.graph.initializer if t.name == "w_params"))
    with pytest.raises(ParameterReferenceError, match="'w_params' names no initializer"):
        qt.get_qtype(model, "w")
    with pytest.raises(qt.QTypesError, match="w_params"):
        qt.lower(model)


def test_show_and_statistics_read_the_referenced_form(typed, capsys):
    import json

    from onnx_qtypes.cli import main

    _, lifted, path = typed
    assert main(["show", str(path), "--format", "json"]) == 0
    (row,) = [r for r in json.loads(capsys.readouterr().out)["tensors"] if r["tensor"] == "w"]
    assert row["qtype"]["parameters_in"] == {"scale": "w_scale", "zero_point": None}
    assert len(row["qtype"]["scale"]) == K * N // BLOCK
    stats = qt.TensorStatistics(tensor=qt.Statistics(min=-1.0, max=1.0))
    model = qt.load(path)
    qt.set_statistics(model, "w", stats)
    assert qt.get_statistics(model, "w") == stats and qt.get_qtype(model, "w").scale_tensor == "w_scale"


def test_referenced_zero_points_read_by_a_dequantize_are_marked_and_still_read():
    """An asymmetric int4 weight: its zero points in an initializer that its DequantizeLinear also reads (so the
    marker applies to it); check, run and lower read it the same."""
    rng = np.random.default_rng(7)
    k, n = 64, 64
    w = numpy_helper.from_array(rng.integers(0, 16, (k, n)).astype(ml_dtypes.uint4), "w")
    scales = (rng.random((k // BLOCK, n)) * 0.02 + 0.001).astype(np.float16)
    zero_points = numpy_helper.from_array(rng.integers(0, 16, (k // BLOCK, n)).astype(ml_dtypes.uint4), "w_zp")
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["w", "w_scale", "w_zp"], ["w_real"], name="dq_w", axis=0,
                          block_size=BLOCK),
         helper.make_node("MatMul", ["x", "w_real"], ["y"], name="matmul")],
        "asym", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, n])],
        [w, numpy_helper.from_array(scales, "w_scale"), zero_points])
    qdq = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    typed = qt.lift(qdq)
    wt = qt.get_qtype(typed, "w")
    qt.set_qtype(typed, "w", wt.replace(scale_tensor="w_scale", zero_point_tensor="w_zp"))
    assert qt.get_qtype(typed, "w").zero_point == wt.zero_point
    assert [d for d in iter_diagnostics(typed) if d.is_error] == []
    x = rng.normal(size=(1, k)).astype(np.float16)
    (ours,) = ReferenceEvaluator(typed).run(None, {"x": x})
    (plain,) = onnx.reference.ReferenceEvaluator(qdq).run(None, {"x": x})
    np.testing.assert_allclose(np.asarray(ours, np.float32), np.asarray(plain, np.float32), rtol=2e-2, atol=0.25)
    lowered = qt.lower(typed)
    onnx.checker.check_model(lowered, full_check=True)


def test_a_bad_referenced_scale_is_one_finding_not_also_a_boundary_mismatch(typed):
    """The DequantizeLinear of a typed model reading the very initializer its type names cannot disagree with it:
    a NaN there is QT101 alone, and an initializer that cannot be read is QT117 alone."""
    _, lifted, _ = typed
    model = onnx.ModelProto()
    model.CopyFrom(lifted)
    model.graph.output.append(helper.make_tensor_value_info("w_out", TensorProto.FLOAT16, [K, N]))
    model.graph.node.append(helper.make_node("DequantizeLinear", ["w", "w_scale"], ["w_out"], name="dq_out",
                                             axis=0, block_size=BLOCK))
    scale = next(t for t in model.graph.initializer if t.name == "w_scale")
    values = numpy_helper.to_array(scale).copy()
    values[5, 5] = np.nan
    scale.CopyFrom(numpy_helper.from_array(values, "w_scale"))
    assert sorted({d.rule for d in iter_diagnostics(model) if d.is_error}) == ["QT101"]
    scale.CopyFrom(numpy_helper.from_array(values[:64], "w_scale"))  # dims no longer the parameter shape
    assert sorted({d.rule for d in iter_diagnostics(model) if d.is_error}) == ["QT117"]


def test_reference_names_that_are_not_free_are_refused_and_leave_the_model_unchanged():
    model = qt.lift(_blocked_qdq(64, 64))
    w = qt.get_qtype(model, "w")
    before = model.SerializeToString()
    for name in ("x", "y"):  # a graph input, a node output
        with pytest.raises(qt.QTypesError, match=f"'{name}' is a graph input or a node output"):
            qt.set_qtype(model, "w", w.replace(scale_tensor=name))
        assert model.SerializeToString() == before
    model.graph.initializer.append(numpy_helper.from_array(np.ones((2, 64), np.int8).astype(ml_dtypes.int4), "v"))
    before = model.SerializeToString()
    with pytest.raises(qt.QTypesError, match="named for the parameters of another type too"):
        qt.set_qtypes(model, {"w": w.replace(scale_tensor="shared"),
                              "v": qt.QType("int4", [0.5] * 64, None, axis=1, scale_tensor="shared")})
    assert model.SerializeToString() == before  # all or nothing


@pytest.mark.parametrize("held, accepted", [(0.5, True), (0.25, False)])
def test_a_per_tensor_type_may_name_an_existing_scalar_initializer_for_its_scale(held, accepted):
    """A 0-d initializer (a per-tensor scale as quantizers write it) ended set_qtype in numpy's IndexError."""
    graph = helper.make_graph([helper.make_node("Identity", ["q"], ["y"])], "g",
                              [helper.make_tensor_value_info("q", TensorProto.INT8, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [3])],
                              [numpy_helper.from_array(np.array(held, np.float32), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    wanted = qt.QType("int8", 0.5, 0, scale_tensor="s")
    if not accepted:
        with pytest.raises(qt.QTypesError, match="initializer 's' exists and does not hold this tensor's parameters"):
            qt.set_qtype(model, "q", wanted)
        return
    qt.set_qtype(model, "q", wanted)
    assert qt.get_qtype(model, "q") == qt.QType("int8", 0.5, 0) and [t.name for t in model.graph.initializer] == ["s"]
