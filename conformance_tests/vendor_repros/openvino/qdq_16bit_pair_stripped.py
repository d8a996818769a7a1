"""OpenVINO removes every 16-bit QuantizeLinear -> DequantizeLinear pair inside a graph (a FakeQuantize with 65536
levels is treated as the identity: FQStrippingTransformation in low_precision_transformations/qdq_stripping.cpp), so
the intermediate neither rounds nor saturates to the 16-bit storage.

Standalone (numpy, onnx, openvino): python qdq_16bit_pair_stripped.py  ->  exit 1 while the output skips the inner
quantization, 0 once it matches, 2 when OpenVINO cannot be run.

Model (the suite's quantize-relu-dequantize-uint16-float32, its scale and zero point): x float32 [8] ->
QuantizeLinear(s 0.0018310547, zp 30478, uint16) -> DequantizeLinear -> Relu -> QuantizeLinear(same) ->
DequantizeLinear -> y float32. Expected: relu of x rounded to the uint16 grid and saturated to its range, whose top
is (65535 - 30478) * s = 64.19. Actual (OpenVINO 2026.4.1, default and f32 hint): y = relu(x) exactly: 81.03 stays
81.03, and no value is rounded to the grid.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

try:
    import openvino as ov
except ImportError:
    print("OpenVINO is not installed: pip install openvino")
    sys.exit(2)

X = np.array([17.03834342956543, -25.974245071411133, 32.28324890136719, 58.28312683105469, 81.03120422363281,
              40.98699951171875, -0.6120417714118958, 7.516322612762451], np.float32)
SCALE, ZERO_POINT = np.float32(0.0018310547), 30478
graph = helper.make_graph(
    [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
     helper.make_node("DequantizeLinear", ["q", "s", "z"], ["xr"]),
     helper.make_node("Relu", ["xr"], ["r"]),
     helper.make_node("QuantizeLinear", ["r", "s", "z"], ["rq"]),
     helper.make_node("DequantizeLinear", ["rq", "s", "z"], ["y"])], "quantize_relu_dequantize",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [X.size])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [X.size])],
    [numpy_helper.from_array(np.array(SCALE), "s"), numpy_helper.from_array(np.array(ZERO_POINT, np.uint16), "z")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()

q = np.clip(np.rint(X.astype(np.float64) / np.float64(SCALE)) + ZERO_POINT, 0, 65535)
want = (np.maximum(q, ZERO_POINT) - ZERO_POINT).astype(np.float32) * SCALE  # Relu on the grid, exact in float32
print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
print(f"x          = {X.tolist()}\nexpected y = {want.tolist()}\nrelu(x)    = {np.maximum(X, 0).tolist()}")
core = ov.Core()
bad = False
for label, config in (("default", {}), ("INFERENCE_PRECISION_HINT f32", {"INFERENCE_PRECISION_HINT": "f32"})):
    got = core.compile_model(core.read_model(model), "CPU", config)([X])[0]
    differ = int(np.count_nonzero(got != want))
    skipped = np.array_equal(got, np.maximum(X, 0))
    print(f"{label}: y = {got.tolist()}  ({differ} of {X.size} differ"
          f"{', y equals relu(x): the uint16 QuantizeLinear was skipped' if skipped else ''})")
    bad |= differ > 0
print("\nREPRODUCED: the 16-bit QuantizeLinear -> DequantizeLinear pair is skipped" if bad else
      "\nnot reproduced: the intermediate is quantized to uint16")
sys.exit(1 if bad else 0)
