"""OpenVINO: QuantizeLinear to integer storage (FakeQuantize) maps NaN to the storage type's minimum instead of the
zero point; +-inf saturate as defined.

Standalone (numpy, onnx, openvino): python quantize_linear_nan_to_storage_min.py  ->  exit 1 while a NaN element
differs, 0 once every element matches, 2 when OpenVINO cannot be run.

Model (the suite's quantize-linear-nan-inf-int8-float32 without its two ties, which the rounding-mode script covers):
x float32 [12] -> QuantizeLinear(scale 0.5, zero point -3) -> y int8. Expected: NaN has no quantized value; the
conformance suite's definition gives it the zero point (real 0), +-inf saturate, finite values round half to even.
(ONNX's QuantizeLinear leaves NaN to integer storage undefined; onnxruntime and IREE also give the storage minimum,
tract gives the zero point.) Actual (OpenVINO 2026.4.1): NaN gives -128, every other element as expected.
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

X = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0, -1.5, 300.0, -300.0, np.nan, 2.0, -np.inf, 63.0], np.float32)
SCALE, ZERO_POINT = 0.5, -3
graph = helper.make_graph(
    [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])], "quantize",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [X.size])],
    [helper.make_tensor_value_info("y", TensorProto.INT8, [X.size])],
    [numpy_helper.from_array(np.array(SCALE, np.float32), "s"),
     numpy_helper.from_array(np.array(ZERO_POINT, np.int8), "z")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)

print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
steps = np.nan_to_num(X.astype(np.float64) / SCALE, nan=0.0, posinf=1e300, neginf=-1e300)  # NaN: real 0
want = np.clip(np.rint(steps) + ZERO_POINT, -128, 127).astype(np.int64)
core = ov.Core()
got = core.compile_model(core.read_model(model.SerializeToString()), "CPU")([X])[0].astype(np.int64)
print(f"x = {X.tolist()}, scale {SCALE}, zero point {ZERO_POINT}")
print(f"expected y = {want.tolist()}\nOpenVINO y = {got.tolist()}")
wrong = np.flatnonzero(got != want)
if wrong.size and not np.isnan(X[wrong]).all():
    print("a non-NaN element differs too: something else is wrong")
print("\nREPRODUCED: NaN does not give the zero point" if wrong.size else "\nnot reproduced: NaN gives the zero point")
sys.exit(1 if wrong.size else 0)
