"""OpenVINO: a QuantizeLinear to float4e2m1 becomes FakeConvert, which has no f4e2m1 format, so the model does not
load: 'Bad format for f8 conversion type: f4e2m1' (fake_convert.cpp).

Standalone (numpy, onnx, openvino): python float4_quantize_fake_convert_refused.py  ->  exit 1 while the model is
refused (or wrong), 0 once it runs and matches, 2 when OpenVINO cannot be run.

Model (the shape of the suite's quantize_linear-float4e2m1-float32-per-tensor): x float32 [6] -> QuantizeLinear(scale
0.5, zero point 0 float4e2m1) -> DequantizeLinear(same) -> y float32. Expected: onnx.reference's result (x / s rounded
to float4e2m1, saturated to +-6, times s). Actual (OpenVINO 2026.4.1): read_model / compile_model raises 'Bad format
for f8 conversion type: f4e2m1'.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

try:
    import openvino as ov
except ImportError:
    print("OpenVINO is not installed: pip install openvino")
    sys.exit(2)

X = np.array([0.5, -1.5, 3.0, 12.0, -0.75, 1.0], np.float32)
graph = helper.make_graph(
    [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
     helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])], "float4",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [X.size])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [X.size])],
    [numpy_helper.from_array(np.array(0.5, np.float32), "s"),
     helper.make_tensor("z", TensorProto.FLOAT4E2M1, [], b"\x00", raw=True)])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)], ir_version=11)

print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
want = ReferenceEvaluator(model).run(None, {"x": X})[0]
print(f"x = {X.tolist()}\nexpected y = {want.tolist()}")
core = ov.Core()
try:
    got = core.compile_model(core.read_model(model.SerializeToString()), "CPU")([X])[0]
except RuntimeError as exc:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    print("read/compile failed: " + next((line for line in lines if "format" in line.lower()), lines[-1])[:300])
    print("\nREPRODUCED: the float4e2m1 QuantizeLinear is refused")
    sys.exit(1)
print(f"OpenVINO y = {got.tolist()}")
same = np.array_equal(got, want)
print("\nnot reproduced: the float4e2m1 QuantizeLinear runs and matches" if same else "\nREPRODUCED: y differs")
sys.exit(0 if same else 1)
