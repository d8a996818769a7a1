"""OpenVINO: a blocked QuantizeLinear with float16 scales rounds an exact tie upwards: x = -30.46875 with scale
0.8125 is exactly -37.5 steps, -45.5 after the zero point -8; round half to even gives -46, OpenVINO -45 (as
floor(v + 0.5) would).

Standalone (numpy, onnx, openvino): python quantize_linear_float16_blocked_tie.py  ->  exit 1 while an element
differs, 0 once all match, 2 when OpenVINO cannot be run.

Model (the suite's quantize_linear-int8-float16-blocked: its exact scales, zero points and input): x float16
[2, 3, 4] -> QuantizeLinear(s float16 [2, 3, 2], zp int8 [2, 3, 2], axis 2, block_size 2) -> y int8. Expected:
round half to even of x / s, plus zp, saturated. Actual (OpenVINO 2026.4.1, default and f32 hint): element 0 is
-45, not -46; the other 23 (none a tie) match. The per-tensor and per-axis float16 variants have no tie and pass.
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

Q_SCALE = np.array([0.8125, 0.125, 0.78125, 0.1015625, 0.140625, 0.01171875, 0.21875, 0.0390625, 0.90625, 0.34375,
                    0.08984375, 0.21875], np.float16).reshape(2, 3, 2)
Q_ZERO = np.array([-8, -50, 30, 49, 42, 9, 26, -17, 43, 39, -49, 50], np.int8).reshape(2, 3, 2)
Q_X = np.array([-30.46875, -0.04217529296875, 5.16015625, 39.15625, -33.28125, 38.46875, -31.1875, 45.53125,
                14.4296875, 3.984375, 44.34375, 14.4765625, 37.34375, -19.640625, 31.265625, 22.578125, -19.828125,
                45.59375, -25.390625, 21.953125, 10.515625, 12.9140625, 5.828125, 0.2476806640625],
               np.float16).reshape(2, 3, 4)


def model(op: str, x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, y_type: int) -> bytes:
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "s", "z"], ["y"], axis=2, block_size=2)], "blocked",
        [helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape))],
        [helper.make_tensor_value_info("y", y_type, list(x.shape))],
        [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zero_point, "z")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()


def per_element(blocked: np.ndarray) -> np.ndarray:
    return np.repeat(blocked, 2, axis=2)


q_want = np.clip(np.rint(Q_X.astype(np.float64) / per_element(Q_SCALE)) + per_element(Q_ZERO), -128, 127)
CASES = {"QuantizeLinear float16 -> int8, blocked": (model("QuantizeLinear", Q_X, Q_SCALE, Q_ZERO, TensorProto.INT8),
                                                       Q_X, q_want.astype(np.int8))}
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
print(f"\nREPRODUCED: {'; '.join(bad)}" if bad else "\nnot reproduced: the tie rounds half to even")
sys.exit(1 if bad else 0)
