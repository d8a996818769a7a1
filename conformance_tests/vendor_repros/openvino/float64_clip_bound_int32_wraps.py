"""OpenVINO CPU: float64 nodes run in float32, so a float64 Clip to [-2^31, 2^31 - 1] before a Cast to int32 clips
to 2^31 (2147483647 is not a float32), and the Convert to int32 wraps it to -2^31: every value that should saturate
high comes back as -2147483648.

Standalone (numpy, onnx, openvino): python float64_clip_bound_int32_wraps.py  ->  exit 1 while an element differs,
0 once all match, 2 when OpenVINO cannot be run.

Model (how the suite writes a computed int32 tensor, as in add-int32-saturation-int8-float32): x float32 [6] ->
Cast(float64) -> Div(scale 2^-27) -> Round -> Clip(-2147483648.0, 2147483647.0) -> Cast(int32) -> y. Expected:
round(x / s) saturated to int32 (computed exactly in numpy float64). Actual (OpenVINO 2026.4.1, default and f32
hint): the elements above 2^31 - 1 give -2147483648.
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

# x / s: 2^27, -3.5 * 2^27, 15 * 2^27, 16.5 * 2^27 > 2^31 - 1 (saturates high), -2^31, -40 * 2^27
X = np.array([1.0, -3.5, 15.0, 16.5, -16.0, -40.0], np.float32)
SCALE = 2.0 ** -27
graph = helper.make_graph(
    [helper.make_node("Cast", ["x"], ["x64"], to=TensorProto.DOUBLE),
     helper.make_node("Div", ["x64", "s"], ["steps"]),
     helper.make_node("Round", ["steps"], ["rounded"]),
     helper.make_node("Clip", ["rounded", "lo", "hi"], ["saturated"]),
     helper.make_node("Cast", ["saturated"], ["y"], to=TensorProto.INT32)], "int32_saturation",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [X.size])],
    [helper.make_tensor_value_info("y", TensorProto.INT32, [X.size])],
    [numpy_helper.from_array(np.array(SCALE, np.float64), "s"),
     numpy_helper.from_array(np.array(-2.0 ** 31, np.float64), "lo"),
     numpy_helper.from_array(np.array(2.0 ** 31 - 1, np.float64), "hi")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()

want = np.clip(np.rint(X.astype(np.float64) / SCALE), -2 ** 31, 2 ** 31 - 1).astype(np.int32)
print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
print(f"x = {X.tolist()}, scale 2^-27\nexpected y = {want.tolist()}")
core = ov.Core()
bad = False
for label, config in (("default", {}), ("INFERENCE_PRECISION_HINT f32", {"INFERENCE_PRECISION_HINT": "f32"})):
    got = core.compile_model(core.read_model(model), "CPU", config)([X])[0]
    print(f"{label}: y = {got.tolist()}  ({np.count_nonzero(got != want)} of {X.size} differ)")
    bad |= not np.array_equal(got, want)
print("\nREPRODUCED: values above the int32 range wrap to -2147483648" if bad else
      "\nnot reproduced: the float64 Clip saturates to int32")
sys.exit(1 if bad else 0)
