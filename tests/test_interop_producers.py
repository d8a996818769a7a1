"""QDQ written other ways: onnxruntime's less common options, Constant-node parameters, older opsets."""

from __future__ import annotations

import logging

import numpy as np
import onnx
import pytest
from corpus import calibration_samples, corpus_feeds, float_models, run_onnxruntime
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import lift, lower, quantized_tensors
from onnx_qtypes.interop import lift_model

VARIANTS = {
    # one QuantizeLinear / DequantizeLinear pair per consumer
    "DedicatedQDQPair": ({"DedicatedQDQPair": True}, 21),
    # float weights quantized at run time by a QuantizeLinear
    "AddQDQPairToWeight": ({"AddQDQPairToWeight": True}, 21),
    # Relu kept between its own pairs
    "QDQKeepRemovableActivations": ({"QDQKeepRemovableActivations": True}, 21),
    # com.microsoft QuantizeLinear / DequantizeLinear for 16-bit at opset 13
    "UseQDQContribOps": ({"UseQDQContribOps": True}, 13),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_quantize_static_options(variant, tmp_path):
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    options, opset = VARIANTS[variant]
    model = float_models()["cnn"]
    model.opset_import[0].version = opset
    onnx.save(model, tmp_path / "f.onnx")

    class Reader:
        items = iter(calibration_samples("cnn"))

        def get_next(self):
            return next(self.items, None)

    root = logging.getLogger()
    level, root.level = root.level, logging.ERROR
    try:
        quantize_static(tmp_path / "f.onnx", tmp_path / "q.onnx", Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt16 if opset < 21 else QuantType.QUInt8, extra_options=options)
    finally:
        root.setLevel(level)
    q = onnx.load(tmp_path / "q.onnx")
    result = lift_model(q)
    assert not result.warnings and result.typed_tensors >= 14
    ops = [n.op_type for n in result.model.graph.node]
    float_ops = [n.op_type for n in model.graph.node]
    if variant != "QDQKeepRemovableActivations":
        float_ops = [op for op in float_ops if op != "Relu"]
    assert [op for op in ops if op not in ("QuantizeLinear", "DequantizeLinear")] == float_ops
    assert ops.count("DequantizeLinear") == 1  # only the float output's
    if variant == "AddQDQPairToWeight":  # the run-time weight quantizers stay, reading float initializers
        inits = {t.name for t in result.model.graph.initializer}
        assert all(n.input[0] in inits or n.input[0] == "x" for n in result.model.graph.node if n.op_type == "QuantizeLinear")
    lowered = lower(result.model)
    feeds = corpus_feeds("cnn")
    assert np.array_equal(run_onnxruntime(lowered, feeds, optimize=False)["y"], run_onnxruntime(q, feeds, optimize=False)["y"])


def test_parameters_and_weights_in_constant_nodes():
    """Exporters (torch.onnx) write scales and zero points as Constant nodes; they go away with their pairs."""

    def constant(name, value, dtype):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value, dtype), name))

    nodes = [
        constant("s", 0.125, np.float32), constant("z", 3, np.int8),
        constant("ws", 0.25, np.float32), constant("wz", 0, np.int8), constant("w", [1, -2, 3, -4], np.int8),
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q_in"),
        helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="dq_in"),
        helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"], name="dq_w"),
        helper.make_node("Add", ["xd", "wd"], ["sum"], name="add"),
        helper.make_node("QuantizeLinear", ["sum", "s", "z"], ["sq"], name="q_sum"),
        helper.make_node("DequantizeLinear", ["sq", "s", "z"], ["y"], name="dq_out"),
    ]
    graph = helper.make_graph(
        nodes, "exported", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    typed = lift(model)
    # the weight's parameters go, the weight stays a typed Constant; the edge pair still reads s and z
    assert [n.op_type for n in typed.graph.node] == ["Constant"] * 3 + ["QuantizeLinear", "Add", "DequantizeLinear"]
    assert [n.output[0] for n in typed.graph.node[:3]] == ["s", "z", "w"]
    types = quantized_tensors(typed)
    assert types["w"].scale == (0.25,) and types["sum"].zero_point == (3,)
    feeds = {"x": np.asarray([0.5, -1.0, 2.0, 40.0], np.float32)}
    lowered = lower(typed)
    assert np.array_equal(run_onnxruntime(lowered, feeds, optimize=False)["y"], run_onnxruntime(model, feeds, optimize=False)["y"])
    assert quantized_tensors(lift(lowered)) == types
