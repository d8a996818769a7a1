"""tract: DynamicQuantizeLinear of an all-zero input returns y_scale 0, which is no scale (dequantizing with it
loses every value; dividing by it is 0 / 0). y and y_zero_point are right.

Standalone (numpy, onnx, tract): python dynamic_quantize_linear_all_zero_scale.py  ->  exit 1 while y_scale is not a
positive finite value, 0 once it is (and y, y_zero_point are 0), 2 when tract cannot be run.

Model: x float32 [2, 3] -> DynamicQuantizeLinear -> y uint8, y_scale float32, y_zero_point uint8. Expected: y = 0
and y_zero_point = 0 for x all zeros; y_scale any positive finite value. ONNX's formula (max(x, 0) - min(x, 0)) / 255
is 0 / 255 here and its zero point -min / y_scale is 0 / 0: the operator defines no scale for this input, and
onnxruntime returns 1 (the conformance suite's reference 1/255). Actual (tract 0.23.9): y = 0, y_zero_point = 0,
y_scale = 0. One element of 1e-30 among the zeros (the control) gives a positive scale.

Source: onnx/src/ops/quant.rs, scale_and_zero_point: scale = (max - min) / 255 with no case for an empty range; the
zero point -min / scale is NaN, which the clamp and the `as u8` cast turn into 0, so only y_scale shows it.
"""

import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

try:
    import tract
except ImportError:
    print("tract is not installed: pip install tract")
    sys.exit(2)


def model() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zero_point"])], "dynamic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 3]),
         helper.make_tensor_value_info("y_scale", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("y_zero_point", TensorProto.UINT8, [])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def run_tract(x: np.ndarray) -> list[np.ndarray]:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "dynamic.onnx")
        onnx.save(model(), path)
        runnable = tract.onnx().load(path).into_model().into_runnable()
        return [np.asarray(t.to_numpy()) for t in runnable.run([x])]


print(f"tract {tract.version()}, numpy {np.__version__}, onnx {onnx.__version__}")
control = np.zeros((2, 3), np.float32)
control[0, 0] = 1e-30
y, scale, zero_point = run_tract(control)
print(f"x with one 1e-30 (control): y_scale = {float(scale)!r}, y_zero_point = {int(zero_point)}")
y, scale, zero_point = run_tract(np.zeros((2, 3), np.float32))
print(f"x all zeros: y = {y.ravel().tolist()}, y_zero_point = {int(zero_point)}, y_scale = {float(scale)!r}")
print("expected: y all 0, y_zero_point 0, y_scale positive and finite")
if y.any() or int(zero_point) != 0:
    print("\ny or y_zero_point differs too: something else is wrong")
ok = bool(np.isfinite(scale) and scale > 0) and not y.any() and int(zero_point) == 0
print("\nnot reproduced: y_scale is positive" if ok else "\nREPRODUCED: y_scale is not a positive finite value")
sys.exit(0 if ok else 1)
