"""proposal/experiments/per_axis_activation_fusions.py: its models are what its table says they are, its
fusion detection agrees with the graph onnxruntime saves, and the recorded table is what the installed
onnxruntime produces when it is the recorded version.

What onnxruntime's fused kernels compute is versioned data (the .md), never asserted here: another
onnxruntime release skips the comparison (rerun the script to record it) and cannot fail this file.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from builders import load_script
from onnx import numpy_helper

ort = pytest.importorskip("onnxruntime")

experiment = load_script("proposal/experiments/per_axis_activation_fusions.py")


@pytest.fixture(scope="module")
def rows() -> list:
    return experiment.measure()


def _activation_scales(model: onnx.ModelProto) -> list[np.ndarray]:
    """The scales of every QuantizeLinear / DequantizeLinear of a uint8 activation (weights are int8)."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    return [inits[n.input[1]] for n in model.graph.node
            if n.op_type in ("QuantizeLinear", "DequantizeLinear") and inits[n.input[2]].dtype == np.uint8]


@pytest.mark.parametrize("op", list(experiment.CASES))
def test_models_are_valid_and_per_axis_as_labelled(op):
    built, control = experiment.CASES[op](), experiment.CASES[op](per_tensor=True)
    for m in (built.model, control.model):
        onnx.checker.check_model(m, full_check=True)
        assert (m.ir_version, m.opset_import[0].version) == (10, 21)
    scales = _activation_scales(built.model)
    per_axis = [s for s in scales if s.ndim == 1 and len(set(s.tolist())) == 3]
    # every activation per axis with three distinct scales, except a per-tensor Conv input where labelled so
    assert len(per_axis) == len(scales) - ("input per tensor" in built.per_axis) * 2, scales
    assert all(s.ndim == 0 for s in _activation_scales(control.model))
    assert {n.op_type for n in built.model.graph.node} == {n.op_type for n in control.model.graph.node}


def test_fusion_detection_agrees_with_the_saved_graph(rows):
    """A saved optimized graph with a kernel the model does not name means the QDQ transformer ran: the log
    parsing that decides the 'fused' column must have seen it (it breaks if onnxruntime's log changes)."""
    assert len(rows) == len(experiment.CASES)
    for row in rows:
        named = {n.op_type for n in experiment.CASES[row.op]().model.graph.node}
        if row.optimized_ops is not None and set(row.optimized_ops) - named:
            assert row.fused, row
        if not row.fused and row.optimized_ops is not None:
            assert sorted(row.optimized_ops) == sorted(n.op_type for n in experiment.CASES[row.op]().model.graph.node)
        assert row.unoptimized.ran or row.unoptimized.error  # an outcome either way


def test_recorded_table_matches_the_installed_onnxruntime(rows):
    recorded = experiment.RECORD.read_text()
    version = experiment.recorded_onnxruntime(recorded)
    if version != ort.__version__:
        pytest.skip(f"{experiment.RECORD.name} holds onnxruntime {version}, {ort.__version__} is installed: "
                    f"run {experiment.COMMAND} to record it")
    assert experiment.table(rows) in recorded, f"{experiment.RECORD.name} is stale: run {experiment.COMMAND}"


def test_script_prints_a_row_per_operator(capsys):
    assert experiment.main(["--no-write"]) == 0
    out = capsys.readouterr().out
    assert f"onnxruntime {ort.__version__}" in out
    assert all(f"\n| {op} |" in out for op in experiment.CASES)
