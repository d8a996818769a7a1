"""OpenVINO CPU: a QDQ Conv with int8 activations and int8 weights does not compile under the default bf16 (or f16)
inference precision: 'No suitable implementations' (executor_factory.hpp). With INFERENCE_PRECISION_HINT f32 it
compiles and is exact, and uint8 activations with the same int8 weights compile under bf16.

Standalone (numpy, onnx, openvino): python conv_int8_activation_no_bf16_implementation.py  ->  exit 1 while the
default compile fails, 0 once it compiles and matches, 2 when OpenVINO cannot be run.

Model: x int8 [1, 2, 5, 5] -> DequantizeLinear(0.05, zero point -10 as in the suite's case; 0 compiles) ->
Conv(W = DequantizeLinear(int8 [3, 2, 3, 3], 0.02, 0), pads 1) -> QuantizeLinear(0.1, -10) -> y int8; the control is
the same model with uint8 activations (zero point 110). Expected: compiles; y equal to the float32 computation
(numpy here).
Actual (OpenVINO 2026.4.1, CPU with bf16 default): compile_model raises 'No suitable implementations'.
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
W = rng.integers(-20, 21, (3, 2, 3, 3)).astype(np.int8)
ZERO_POINT = {TensorProto.INT8: -10, TensorProto.UINT8: 110}


def model(activation: int) -> bytes:
    zero = np.array(ZERO_POINT[activation], helper.tensor_dtype_to_np_dtype(activation))
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["xr"]),
         helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wr"]),
         helper.make_node("Conv", ["xr", "wr"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("QuantizeLinear", ["c", "sy", "zx"], ["y"])], "conv",
        [helper.make_tensor_value_info("x", activation, [1, 2, 5, 5])],
        [helper.make_tensor_value_info("y", activation, [1, 3, 5, 5])],
        [numpy_helper.from_array(np.array(0.05, np.float32), "sx"), numpy_helper.from_array(zero, "zx"),
         numpy_helper.from_array(W, "w"), numpy_helper.from_array(np.array(0.02, np.float32), "sw"),
         numpy_helper.from_array(np.array(0, np.int8), "zw"), numpy_helper.from_array(np.array(0.1, np.float32), "sy")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()


def expected(x: np.ndarray, info: np.iinfo, zero_point: int) -> np.ndarray:
    xr = np.pad((x.astype(np.float64) - zero_point) * 0.05, ((0, 0), (0, 0), (1, 1), (1, 1)))
    wr = W.astype(np.float64) * 0.02
    out = np.zeros((1, 3, 5, 5))
    for i in range(5):
        for j in range(5):
            out[0, :, i, j] = np.tensordot(wr, xr[0, :, i:i + 3, j:j + 3], axes=3)
    return np.clip(np.rint(out / 0.1) + zero_point, info.min, info.max)


def message(exc: Exception) -> str:
    """The informative line of OpenVINO's error (its first lines only locate the C++ frames)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return next((line for line in lines if not line.startswith(("Exception from", "Check "))), lines[0])[:300]


core = ov.Core()
print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}; CPU default "
      f"INFERENCE_PRECISION_HINT = {core.get_property('CPU', 'INFERENCE_PRECISION_HINT')}")
bad = False
for name, activation in (("int8", TensorProto.INT8), ("uint8 (control)", TensorProto.UINT8)):
    info = np.iinfo(helper.tensor_dtype_to_np_dtype(activation))
    x = rng.integers(max(info.min, -50), 51 + 100 * (info.min == 0), (1, 2, 5, 5)).astype(info.dtype)
    for label, config in (("default", {}), ("INFERENCE_PRECISION_HINT f32", {"INFERENCE_PRECISION_HINT": "f32"})):
        try:
            got = core.compile_model(core.read_model(model(activation)), "CPU", config)([x])[0]
        except RuntimeError as exc:
            print(f"{name} activations, {label}: compile_model failed: {message(exc)}")
            bad |= name == "int8"
            continue
        if name != "int8":  # the control only has to compile
            print(f"{name} activations, {label}: compiled")
            continue
        ok = np.array_equal(np.asarray(got, np.float64), expected(x, info, ZERO_POINT[activation]))
        print(f"{name} activations, {label}: compiled, y {'as expected' if ok else 'DIFFERS from the float32 result'}")
        bad |= not ok
print("\nREPRODUCED: the int8-activation Conv does not compile (or differs)" if bad else
      "\nnot reproduced: the int8-activation Conv compiles and matches")
sys.exit(1 if bad else 0)
