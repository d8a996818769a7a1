"""PyTorch FX-QAT exports (zero points through Identity), Brevitas QCDQ (Clip on the stored integers) and Brevitas
QONNX (parameters that are initializers and graph inputs, a 32-bit bias Quant) lift whole: every quantization node
folds into a type, our reference gives onnxruntime's (or qonnx's) unoptimized result, and lower + onnxruntime the
original's bit for bit. The models reproduce the exporters' patterns (tests/corpus_exporters.py)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import QType, diagnose, quantized_tensors
from onnx_qtypes.interop import lift_model, lower
from onnx_qtypes.reference_ops import ReferenceEvaluator
from tests.corpus import run_onnxruntime
from tests.corpus_exporters import brevitas_qcdq, brevitas_qonnx, feeds, torch_fx_qat

ONNXRUNTIME_MODELS = {
    "torch-fx-qat": lambda: torch_fx_qat(False),
    "torch-fx-qat-perchannel": lambda: torch_fx_qat(True),
    "brevitas-qcdq-8": lambda: brevitas_qcdq(8),
    "brevitas-qcdq-4": lambda: brevitas_qcdq(4),
}


@pytest.mark.parametrize("name", sorted(ONNXRUNTIME_MODELS))
def test_exporter_output_lifts_whole_and_computes_what_onnxruntime_computes(name):
    original = ONNXRUNTIME_MODELS[name]()
    result = lift_model(original)
    assert not result.left and not result.warnings
    ops = [n.op_type for n in result.model.graph.node]
    assert "Clip" not in ops and "Identity" not in ops or name.startswith("torch")
    lowered = lower(result.model)
    step = _output_step(original)
    for seed in range(3):
        theirs = run_onnxruntime(original, feeds(seed), optimize=False)["y"]
        (ours,) = ReferenceEvaluator(result.model).run(None, feeds(seed))
        assert np.abs(np.asarray(ours) - theirs).max() <= step * 1.0001  # one step of the output at most
        assert np.array_equal(run_onnxruntime(lowered, feeds(seed), optimize=False)["y"], theirs)


def _output_step(model: onnx.ModelProto) -> float:
    """The scale of the DequantizeLinear writing y."""
    node = next(n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == "y")
    return float(numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == node.input[1])))


@pytest.mark.parametrize("per_channel", [False, True])
def test_torch_zero_points_through_identity_type_the_weight(per_channel):
    result = lift_model(torch_fx_qat(per_channel))
    weight = quantized_tensors(result.model)["wq"]
    assert weight is not None and weight.storage == "int8" and set(weight.zero_point) == {0}
    assert (weight.axis == 0) == per_channel


@pytest.mark.parametrize("bits", [8, 4])
def test_brevitas_clips_become_the_storage_range(bits):
    result = lift_model(brevitas_qcdq(bits))
    assert any("Clip node(s) on stored integers read as the storage range" in n for n in result.notes)
    types = quantized_tensors(result.model)
    weight = types["wc"]
    assert (weight.storage_min, weight.storage_max) == (-(2 ** (bits - 1)) + 1, 2 ** (bits - 1) - 1)
    activation = types["rc"]
    assert (activation.storage, activation.storage_min, activation.storage_max) == ("uint8", 0, 2 ** bits - 1)


def test_a_clip_that_is_not_inside_the_integer_range_or_is_read_as_integers_stays():
    model = brevitas_qcdq(8)
    model.graph.output.append(helper.make_tensor_value_info("xc", TensorProto.INT8, [1, 3, 6, 6]))  # read outside
    result = lift_model(model)
    assert "Clip" in [n.op_type for n in result.model.graph.node]
    assert any(n.op_type == "Clip" for n in result.left) or any("Clip" in w for w in result.warnings)


def test_a_widening_cast_between_quantize_and_dequantize_changes_nothing():
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z8"], ["q"], name="q"),
             helper.make_node("Cast", ["q"], ["q32"], name="widen", to=TensorProto.INT32),
             helper.make_node("DequantizeLinear", ["q32", "s", "z32"], ["d"], name="dq"),
             helper.make_node("Relu", ["d"], ["y"], name="relu")]
    inits = [numpy_helper.from_array(np.asarray(v, dt), n) for n, v, dt in
             (("s", 0.05, np.float32), ("z8", 3, np.int8), ("z32", 3, np.int32))]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    result = lift_model(model)
    assert not result.left and "Cast" not in [n.op_type for n in result.model.graph.node]
    assert list(quantized_tensors(result.model).values()) == [QType("int8", float(np.float32(0.05)), 3)]
    x = {"x": np.linspace(-8, 8, 6, dtype=np.float32)}
    assert np.array_equal(ReferenceEvaluator(result.model).run(None, x)[0], run_onnxruntime(model, x, optimize=False)["y"])


def test_brevitas_qonnx_parameters_and_32_bit_bias_lift_and_compute_what_qonnx_computes():
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx
    from qonnx.transformation.infer_shapes import InferShapes

    original = brevitas_qonnx()
    result = lift_model(original)
    assert not result.left and not result.warnings
    assert [vi.name for vi in result.model.graph.input] == ["x"]
    wrapped = ModelWrapper(onnx.ModelProto.FromString(original.SerializeToString())).transform(InferShapes())
    storages = sorted(t.storage for t in quantized_tensors(result.model).values())
    assert "int32" in storages  # the 32-bit bias Quant
    for seed in range(3):
        theirs = execute_onnx(wrapped, feeds(seed))["y"]
        (ours,) = ReferenceEvaluator(result.model).run(None, feeds(seed))
        assert np.abs(np.asarray(ours) - theirs).max() <= 0.04 * 1.0001  # one step of y


@pytest.mark.parametrize("per_channel", [False, True])
def test_torch_parameters_through_identity_leave_no_finding_on_the_lifted_model(per_channel):
    """The DequantizeLinear writing the float output stays; it reads the zero point as a plain constant, so check
    can compare it with the type (QT308 would say it cannot), on the lifted model and on the exporter's file."""
    original = torch_fx_qat(per_channel)
    result = lift_model(original)
    assert [(d.rule, d.message) for d in diagnose(result.model).diagnostics] == []
    assert [(d.rule, d.message) for d in diagnose(original).diagnostics] == []  # check reads the file through lift
    kept = next(n for n in result.model.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == "y")
    producer = next(n for n in result.model.graph.node if kept.input[2] in n.output)
    assert producer.op_type == "Constant"
    theirs = run_onnxruntime(original, feeds(0), optimize=False)["y"]
    assert np.array_equal(run_onnxruntime(lower(result.model), feeds(0), optimize=False)["y"], theirs)
