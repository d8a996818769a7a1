"""OpenVINO: a division by a constant becomes a multiplication by its rounded float32 reciprocal (the ConvertDivide
pass, x / c -> x * c^-1), one float32 unit off: DynamicQuantizeLinear's y_scale = (rmax - rmin) / 255 comes out as
(rmax - rmin) * float32(1/255), and so does the same scale written as ReduceMax - ReduceMin then Div (how a dynamic
quantized type's scale is computed), so every value dequantized with it is off in the last place.

Standalone (numpy, onnx, openvino): python divide_by_constant_reciprocal.py  ->  exit 1 while a scale is not the
division, 0 once both are, 2 when OpenVINO cannot be run.

Models, on x float32 [24] (the suite's dynamic_quantize_linear-uint8-float32-mixed input): (a) DynamicQuantizeLinear
(x) -> y, y_scale, y_zero_point; (b) (ReduceMax(x) - ReduceMin(x)) / 255 -> scale. Expected: float32(rmax - rmin) /
255 rounded once (0x1.4f72f8p-6 here; onnxruntime gives it). Actual (OpenVINO 2026.4.1): 0x1.4f72fap-6, which is
float32(rmax - rmin) * float32(1/255); y and y_zero_point match.
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

X = np.array([-1.3446118831634521, 0.28730711340904236, 0.2083827257156372, 3.3376753330230713, -0.544417142868042,
              0.7975488901138306, -0.9486128687858582, 0.26090723276138306, -0.19804903864860535, 2.4110121726989746,
              2.7277467250823975, 1.7262977361679077, -1.1604480743408203, -1.7240052223205566, 0.33947718143463135,
              1.3121293783187866, -1.8832428455352783, -1.5166009664535522, 0.20384998619556427, -1.6954309940338135,
              -0.16121961176395416, 1.4363855123519897, -0.13455277681350708, 0.2064211666584015], np.float32)
x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [X.size])
dynamic = helper.make_graph(
    [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zero_point"])], "dynamic", [x_info],
    [helper.make_tensor_value_info("y", TensorProto.UINT8, [X.size]),
     helper.make_tensor_value_info("scale", TensorProto.FLOAT, []),
     helper.make_tensor_value_info("zero_point", TensorProto.UINT8, [])])
divide = helper.make_graph(
    [helper.make_node("ReduceMax", ["x"], ["hi"], keepdims=0), helper.make_node("ReduceMin", ["x"], ["lo"], keepdims=0),
     helper.make_node("Sub", ["hi", "lo"], ["range"]), helper.make_node("Div", ["range", "levels"], ["scale"])],
    "divide", [x_info], [helper.make_tensor_value_info("scale", TensorProto.FLOAT, [])],
    [numpy_helper.from_array(np.array(255, np.float32), "levels")])

print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
spread = np.float32(max(X.max(), 0)) - np.float32(min(X.min(), 0))
want = np.float32(spread / np.float32(255))
print(f"rmax - rmin = {float(spread).hex()}\nexpected scale (division)       = {float(want).hex()}\n"
      f"(rmax - rmin) * float32(1/255)   = {float(spread * np.float32(1 / 255)).hex()}")
core = ov.Core()
bad = []
for name, graph, index in (("(a) DynamicQuantizeLinear y_scale", dynamic, 1),
                           ("(b) (ReduceMax - ReduceMin) / 255", divide, 0)):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    outputs = core.compile_model(core.read_model(m.SerializeToString()), "CPU")([X])
    got = np.float32(np.asarray(outputs[index]).reshape(()))
    print(f"{name}: OpenVINO {float(got).hex()}")
    if got != want:
        bad.append(name)
print(f"\nREPRODUCED: not the division in {'; '.join(bad)}" if bad else
      "\nnot reproduced: both scales are the division")
sys.exit(1 if bad else 0)
