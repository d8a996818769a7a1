"""OpenVINO CPU: a QDQ Conv whose weights are uint8 does not compile, whatever the precision hint: 'No suitable
implementations' (executor_factory.hpp). The same reals as int8 weights (w - 128, zero point -128) compile and
are exact, so the uint8 weight type alone is the trigger.

Standalone (numpy, onnx, openvino): python conv_uint8_weight_no_implementation.py  ->  exit 1 while the uint8-weight
Conv does not compile (or differs), 0 once it compiles and matches, 2 when OpenVINO cannot be run.

Model (the suite's conv-uint8-float32-per-tensor, smaller weights): x uint8 [1, 2, 5, 5] -> DequantizeLinear(0.21875,
110) -> Conv(W = DequantizeLinear(uint8 [3, 2, 3, 3], 0.9375, 0), pads 1) -> QuantizeLinear(92, 25) -> y uint8.
Expected: compiles, y equal to the int8-weight control. Actual (OpenVINO 2026.4.1): compile_model raises 'No
suitable implementations' with the default and the f32 hint.
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

rng = np.random.default_rng(0)
W = rng.integers(0, 256, (3, 2, 3, 3)).astype(np.uint8)
X = rng.integers(0, 256, (1, 2, 5, 5)).astype(np.uint8)


def model(weights: np.ndarray, weight_zero_point: np.ndarray) -> bytes:
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["xr"]),
         helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wr"]),
         helper.make_node("Conv", ["xr", "wr"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("QuantizeLinear", ["c", "sy", "zy"], ["y"])], "conv",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 2, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 3, 5, 5])],
        [numpy_helper.from_array(np.array(0.21875, np.float32), "sx"),
         numpy_helper.from_array(np.array(110, np.uint8), "zx"),
         numpy_helper.from_array(weights, "w"), numpy_helper.from_array(np.array(0.9375, np.float32), "sw"),
         numpy_helper.from_array(weight_zero_point, "zw"), numpy_helper.from_array(np.array(92, np.float32), "sy"),
         numpy_helper.from_array(np.array(25, np.uint8), "zy")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()


def message(exc: Exception) -> str:
    """The informative line of OpenVINO's error (its first lines only locate the C++ frames)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return next((line for line in lines if not line.startswith(("Exception from", "Check "))), lines[0])[:300]


core = ov.Core()
print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
f32 = {"INFERENCE_PRECISION_HINT": "f32"}
control = core.compile_model(core.read_model(model((W.astype(np.int16) - 128).astype(np.int8),
                                                   np.array(-128, np.int8))), "CPU", f32)([X])[0]
print("control, int8 weights w - 128 with zero point -128 (the same reals), f32 hint: "
      f"y = {control.ravel()[:10].tolist()}...")
bad = False
for label, config in (("default", {}), ("INFERENCE_PRECISION_HINT f32", f32)):
    try:
        got = core.compile_model(core.read_model(model(W, np.array(0, np.uint8))), "CPU", config)([X])[0]
    except RuntimeError as exc:
        print(f"uint8 weights, {label}: compile_model failed: {message(exc)}")
        bad = True
        continue
    same = np.array_equal(got, control)
    print(f"uint8 weights, {label}: compiled, y {'equals the control' if same else 'DIFFERS from the control'}")
    bad |= not same
print("\nREPRODUCED: the uint8-weight Conv does not compile (or differs)" if bad else
      "\nnot reproduced: the uint8-weight Conv compiles and matches")
sys.exit(1 if bad else 0)
