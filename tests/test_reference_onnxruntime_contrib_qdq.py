"""``run``'s com.microsoft QuantizeLinear / DequantizeLinear (reference_ops/producer_ops/onnxruntime_contrib_qdq.py:
the standard operators of opset 21) against onnxruntime's own contrib kernels, unoptimized, bit for bit: every
storage type those kernels take, per tensor and per axis, on values at half steps (round half to even) and beyond
the storage range (saturation)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes.reference_ops import ReferenceEvaluator
from tests.corpus import run_onnxruntime

MS = "com.microsoft"
STORAGE = {"int8": (np.int8, TensorProto.INT8), "uint8": (np.uint8, TensorProto.UINT8),
           "int16": (np.int16, TensorProto.INT16), "uint16": (np.uint16, TensorProto.UINT16),
           "int4": (np.int8, TensorProto.INT4), "uint4": (np.uint8, TensorProto.UINT4)}


def _pair(storage: str, per_axis: bool) -> onnx.ModelProto:
    """x -> com.microsoft QuantizeLinear -> com.microsoft DequantizeLinear -> y, zero point 1 (per axis: 1, 2, 0, 3)."""
    dtype, data_type = STORAGE[storage]
    scale = np.array([0.5, 0.25, 1.0, 0.125], np.float32) if per_axis else np.array(0.5, np.float32)
    zero = np.array([1, 2, 0, 3] if per_axis else 1)
    attrs = {"axis": 1} if per_axis else {}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q", domain=MS, **attrs),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq", domain=MS, **attrs)]
    inits = [numpy_helper.from_array(scale, "s"),
             helper.make_tensor("z", data_type, list(zero.shape), zero.astype(dtype).reshape(-1).tolist())]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)],
                             ir_version=8)


@pytest.mark.parametrize("per_axis", [False, True], ids=["per-tensor", "per-axis"])
@pytest.mark.parametrize("storage", sorted(STORAGE))
def test_contrib_quantize_dequantize_is_onnxruntimes_bit_for_bit(storage, per_axis):
    model = _pair(storage, per_axis)
    x = np.array([[0.25, 0.75, -1.25, 1.0625], [3.5, -7.5, 100.0, -1000.0], [1e6, -1e6, 0.0, 2.5]], np.float32)
    (ours,) = ReferenceEvaluator(model).run(None, {"x": x})
    theirs = run_onnxruntime(model, {"x": x}, optimize=False)["y"]
    assert np.asarray(ours).dtype == theirs.dtype and np.asarray(ours).tobytes() == theirs.tobytes()
    assert len(np.unique(theirs)) > 4  # (values that tell: not every element saturated to one end)


def test_contrib_dequantize_of_an_int32_bias_per_axis_is_onnxruntimes():
    bias = np.array([-70000, 5, 123456789, -1], np.int32)
    node = helper.make_node("DequantizeLinear", ["b", "s"], ["y"], name="dq", domain=MS, axis=0)
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
                              [numpy_helper.from_array(bias, "b"),
                               numpy_helper.from_array(np.array([0.001, 0.5, 2.0**-20, 3.0], np.float32), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)],
                              ir_version=8)
    (ours,) = ReferenceEvaluator(model).run(None, {})
    assert np.asarray(ours).tobytes() == run_onnxruntime(model, {}, optimize=False)["y"].tobytes()
