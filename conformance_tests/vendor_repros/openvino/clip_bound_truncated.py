"""OpenVINO: DequantizeLinear -> Clip -> QuantizeLinear with equal input and output parameters runs as one integer
subgraph (Clip plus the zero-point Subtract, no FakeQuantize left), and a Clip bound that falls between storage
values is truncated toward zero instead of rounded: 92.503 storage units gives 92 where the definition gives 93.

Standalone (numpy, onnx, openvino): python clip_bound_truncated.py  ->  exit 1 while a clipped element differs, 0
once all match, 2 when OpenVINO cannot be run.

Model (the suite's clip-uint8-float32-per-tensor: its bounds, scale, zero point and input): x uint8 [24] ->
DequantizeLinear(0.109375, 180) -> Clip(-13.52, -9.57) -> QuantizeLinear(0.109375, 180) -> y uint8. Expected:
round(clip(real) / s) + zp: the bounds are 56.39 and 92.50 storage units, so 56 and 93. Actual (OpenVINO 2026.4.1,
default and f32 hint): the elements clipped at the upper bound give 92 (trunc(92.50)).
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

X = np.array([59, 51, 93, 221, 124, 137, 50, 7, 139, 110, 135, 7, 95, 126, 248, 217, 50, 25, 116, 23, 87, 175, 217, 64],
             np.uint8)
SCALE, ZERO_POINT, LOW, HIGH = np.float32(0.109375), 180, np.float32(-13.52), np.float32(-9.57)
graph = helper.make_graph(
    [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xr"]),
     helper.make_node("Clip", ["xr", "lo", "hi"], ["c"]),
     helper.make_node("QuantizeLinear", ["c", "s", "z"], ["y"])], "clip",
    [helper.make_tensor_value_info("x", TensorProto.UINT8, [X.size])],
    [helper.make_tensor_value_info("y", TensorProto.UINT8, [X.size])],
    [numpy_helper.from_array(np.array(SCALE), "s"), numpy_helper.from_array(np.array(ZERO_POINT, np.uint8), "z"),
     numpy_helper.from_array(np.array(LOW), "lo"), numpy_helper.from_array(np.array(HIGH), "hi")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()

real = (X.astype(np.float64) - ZERO_POINT) * np.float64(SCALE)
want = np.clip(np.rint(np.clip(real, LOW, HIGH) / np.float64(SCALE)) + ZERO_POINT, 0, 255).astype(np.uint8)
print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
print(f"bounds in storage units: {LOW / SCALE + ZERO_POINT:.3f}, {HIGH / SCALE + ZERO_POINT:.3f}")
print(f"x          = {X.tolist()}\nexpected y = {want.tolist()}")
core = ov.Core()
bad = False
for label, config in (("default", {}), ("INFERENCE_PRECISION_HINT f32", {"INFERENCE_PRECISION_HINT": "f32"})):
    got = core.compile_model(core.read_model(model), "CPU", config)([X])[0]
    print(f"{label}: y = {got.tolist()}  ({np.count_nonzero(got != want)} of {X.size} differ)")
    bad |= not np.array_equal(got, want)
print("\nREPRODUCED: the Clip bound is truncated, not rounded" if bad else "\nnot reproduced: the bounds round")
sys.exit(1 if bad else 0)
