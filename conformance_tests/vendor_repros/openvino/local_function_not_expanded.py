"""OpenVINO's ONNX frontend does not expand model-local functions: read_model fails with 'No conversion rule found
for operations: local.Poly', where onnxruntime inlines the function.

Standalone (numpy, onnx, openvino): python local_function_not_expanded.py  ->  exit 1 while the model is refused (or
wrong), 0 once it loads and computes x * x + x, 2 when OpenVINO cannot be run.

Model (the shape of the suite's function-untyped-body cases): x float32 [4] -> local.Poly (a model-local function,
y = x * x + x, untyped body) -> QuantizeLinear(0.25, 0) -> DequantizeLinear -> y float32. Expected: y = 0.25 *
round(4 * (x * x + x)) (x chosen so that it is exact). Actual (OpenVINO 2026.4.1): read_model raises 'No conversion
rule found for operations: local.Poly'.
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

X = np.array([-1.5, -0.5, 0.25, 2.0], np.float32)
poly = helper.make_function("local", "Poly", ["t"], ["u"],
                            [helper.make_node("Mul", ["t", "t"], ["sq"]), helper.make_node("Add", ["sq", "t"], ["u"])],
                            [helper.make_opsetid("", 21)])
graph = helper.make_graph(
    [helper.make_node("Poly", ["x"], ["p"], domain="local"),
     helper.make_node("QuantizeLinear", ["p", "s", "z"], ["q"]),
     helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])], "function",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    [numpy_helper.from_array(np.array(0.25, np.float32), "s"), numpy_helper.from_array(np.array(0, np.int8), "z")])
model = helper.make_model(graph, functions=[poly], ir_version=10,
                          opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("local", 1)])

print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
want = np.rint(4 * (X * X + X)) / 4
print(f"x = {X.tolist()}\nexpected y = {want.tolist()}")
core = ov.Core()
try:
    got = core.compile_model(core.read_model(model.SerializeToString()), "CPU")([X])[0]
except RuntimeError as exc:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    print("read/compile failed: " + next((line for line in lines if "conversion rule" in line), lines[-1])[:300])
    print("\nREPRODUCED: the model-local function is not expanded")
    sys.exit(1)
print(f"OpenVINO y = {got.tolist()}")
print("\nnot reproduced: the function is expanded" if np.array_equal(got, want) else "\nREPRODUCED: y differs")
sys.exit(0 if np.array_equal(got, want) else 1)
