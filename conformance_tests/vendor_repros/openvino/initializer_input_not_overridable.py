"""OpenVINO's ONNX frontend reads a graph input that an initializer also names as a constant: the input gets no
port, so a value fed for it cannot override the initializer's default.

Standalone (numpy, onnx, openvino): python initializer_input_not_overridable.py  ->  exit 1 while the input has no
port (or the feed is not applied), 0 once the fed value is used, 2 when OpenVINO cannot be run.

Model (the shape of the suite's dynamic-graph-input-storage-int8-float32 after lower): x int8 [6] and zp int8 []
graph inputs, zp also an initializer (0; ONNX IR >= 4: an initializer that names a graph input is that input's
default value, which a value given at run time replaces), scale 0.5 a constant; y = DequantizeLinear(x, 0.5, zp).
Fed zp = -11. Expected: y = 0.5 * (x + 11) (onnxruntime 1.32 gives it, ORT_DISABLE_ALL and default). Actual
(OpenVINO 2026.4.1): the read model's inputs are x only; the feed has nowhere to go, and y = 0.5 * x.
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

X = np.array([-128, -11, -1, 0, 5, 116], np.int8)
ZP = np.array(-11, np.int8)
graph = helper.make_graph(
    [helper.make_node("DequantizeLinear", ["x", "s", "zp"], ["y"])], "overridable",
    [helper.make_tensor_value_info("x", TensorProto.INT8, [6]), helper.make_tensor_value_info("zp", TensorProto.INT8, [])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])],
    [numpy_helper.from_array(np.array(0.5, np.float32), "s"), numpy_helper.from_array(np.array(0, np.int8), "zp")])
model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21)])
onnx.checker.check_model(model, full_check=True)

print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
want = 0.5 * (X.astype(np.float32) - np.float32(ZP))
print(f"x = {X.tolist()}, fed zp = {int(ZP)}\nexpected y = {want.tolist()}")
core = ov.Core()
read = core.read_model(model.SerializeToString())
names = [sorted(port.get_names()) for port in read.inputs]
print(f"OpenVINO's inputs: {names}")
compiled = core.compile_model(read, "CPU")
if not any("zp" in n for n in names):
    got = compiled({"x": X})[0]
    print(f"y without the zp feed (it has no port) = {got.tolist()}")
    print("\nREPRODUCED: the initializer-backed input zp has no port; the fed value cannot override it")
    sys.exit(1)
got = compiled({"x": X, "zp": ZP})[0]
print(f"OpenVINO y = {got.tolist()}")
ok = np.array_equal(got, want)
print("\nnot reproduced: the fed zp is used" if ok else "\nREPRODUCED: the fed zp is not used")
sys.exit(0 if ok else 1)
