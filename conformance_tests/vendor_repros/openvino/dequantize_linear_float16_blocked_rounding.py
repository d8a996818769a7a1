"""OpenVINO: a blocked DequantizeLinear uint8 -> float16 returns 3 of 24 values one float16 unit away from
(q - zp) * s rounded once to float16 (11.1484375 for 11.15625): the product is rounded more than once inside.

Standalone (numpy, onnx, openvino): python dequantize_linear_float16_blocked_rounding.py  ->  exit 1 while an
element differs, 0 once all match, 2 when OpenVINO cannot be run.

Model (the suite's dequantize_linear-uint8-float16-blocked: its exact scales, zero points and input): x uint8
[2, 3, 4] -> DequantizeLinear(s float16 [2, 3, 2], zp uint8 [2, 3, 2], axis 2, block_size 2) -> y float16.
Expected: (q - zp) * s, exact in float64, rounded once to float16. Actual (OpenVINO 2026.4.1, default and f32 hint):
3 elements one float16 unit off. The per-tensor and per-axis float16 variants pass.
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

D_SCALE = np.array([0.78125, 0.453125, 0.078125, 0.1640625, 0.0078125, 0.40625, 0.3125, 0.40625, 0.34375, 0.75,
                    0.203125, 0.125], np.float16).reshape(2, 3, 2)
D_ZERO = np.array([160, 123, 129, 175, 124, 89, 105, 65, 174, 117, 172, 82], np.uint8).reshape(2, 3, 2)
D_X = np.array([247, 76, 145, 20, 46, 72, 243, 120, 224, 122, 215, 63, 238, 83, 119, 168, 15, 100, 110, 87, 166, 184,
                214, 108], np.uint8).reshape(2, 3, 4)


def model(op: str, x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, y_type: int) -> bytes:
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "s", "z"], ["y"], axis=2, block_size=2)], "blocked",
        [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape))],
        [helper.make_tensor_value_info("y", y_type, list(x.shape))],
        [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zero_point, "z")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()


def per_element(blocked: np.ndarray) -> np.ndarray:
    return np.repeat(blocked, 2, axis=2)


d_want = ((D_X.astype(np.int64) - per_element(D_ZERO)) * per_element(D_SCALE).astype(np.float64)).astype(np.float16)
CASES = {"DequantizeLinear uint8 -> float16, blocked": (model("DequantizeLinear", D_X, D_SCALE, D_ZERO,
                                                             TensorProto.FLOAT16), D_X, d_want)}
print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
core = ov.Core()
bad = []
for name, (onnx_model, x, want) in CASES.items():
    for label, config in (("default", {}), ("INFERENCE_PRECISION_HINT f32", {"INFERENCE_PRECISION_HINT": "f32"})):
        got = core.compile_model(core.read_model(onnx_model), "CPU", config)([x])[0]
        wrong = np.argwhere(got != want)
        print(f"{name}, {label}: {len(wrong)} of {want.size} differ" + "".join(
            f"\n  at {tuple(int(i) for i in at)}: x {x[tuple(at)]}, expected {want[tuple(at)]}, "
            f"OpenVINO {got[tuple(at)]}"
            for at in wrong))
        if len(wrong) and name not in bad:
            bad.append(name)
print(f"\nREPRODUCED: {'; '.join(bad)}" if bad else "\nnot reproduced: every value is rounded once")
sys.exit(1 if bad else 0)
