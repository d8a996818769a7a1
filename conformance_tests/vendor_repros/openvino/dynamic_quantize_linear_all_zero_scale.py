"""OpenVINO: DynamicQuantizeLinear of an all-zero input returns y_scale 0 ((max - min) / 255 taken literally). A
scale of 0 is no scale: nothing can be dequantized or requantized with it; onnxruntime returns 1 and the ONNX
reference 1/255 (the conformance suite's definition accepts any positive finite scale there, y and y_zero_point 0).

Standalone (numpy, onnx, openvino): python dynamic_quantize_linear_all_zero_scale.py  ->  exit 1 while y_scale is not
positive and finite (or y / y_zero_point differ), 0 once it is, 2 when OpenVINO cannot be run.

Model: x float32 [24] -> DynamicQuantizeLinear -> y uint8, y_scale, y_zero_point; fed all zeros, and (control) the
same with one element 1e-30. Expected: y all 0, y_zero_point 0, y_scale > 0 and finite. Actual (OpenVINO 2026.4.1):
y and y_zero_point 0, y_scale 0.0; the control gives a positive scale.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

try:
    import openvino as ov
except ImportError:
    print("OpenVINO is not installed: pip install openvino")
    sys.exit(2)

graph = helper.make_graph(
    [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zero_point"])], "dynamic",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [24])],
    [helper.make_tensor_value_info("y", TensorProto.UINT8, [24]),
     helper.make_tensor_value_info("y_scale", TensorProto.FLOAT, []),
     helper.make_tensor_value_info("y_zero_point", TensorProto.UINT8, [])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)

print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
core = ov.Core()
compiled = core.compile_model(core.read_model(model.SerializeToString()), "CPU")
bad = False
for name, x in (("all zeros", np.zeros(24, np.float32)), ("control: one element 1e-30", np.eye(1, 24)[0] * 1e-30)):
    y, scale, zero_point = (np.asarray(v) for v in compiled([x.astype(np.float32)]).values())
    control = name.startswith("control")  # only its scale is checked: the 1e-30 element quantizes to 255
    ok = np.isfinite(scale) and float(scale) > 0 and (control or (not y.any() and int(zero_point) == 0))
    print(f"{name}: y = {y.tolist()}, y_zero_point {int(zero_point)}, y_scale {float(scale)!r}"
          f" ({'as expected' if ok else 'expected a positive finite y_scale, y and y_zero_point 0'})")
    if not ok and control:
        print("  the control differs too: something else is wrong")
    bad |= not ok and not control
print("\nREPRODUCED: all-zero input gives y_scale 0" if bad else "\nnot reproduced: y_scale is positive")
sys.exit(1 if bad else 0)
