"""OpenVINO CPU: on a CPU with bfloat16 support (AMX / AVX512-BF16) the default INFERENCE_PRECISION_HINT is bf16, so
a model that dequantizes 16-bit storage to float32 computes in bfloat16 (8 significant bits) and loses the low bits.

Standalone (numpy, onnx, openvino): python bf16_default_inference_precision.py  ->  exit 1 while the default
compile differs from the float32 result, 0 once it matches, 2 when OpenVINO cannot be run (or the CPU's default
precision is not bf16: then there is nothing to reproduce here and the script says so, exit 0).

Models: (a) x int16 [1, 8] -> DequantizeLinear(scale 0.001, zero point 0) -> MatMul(identity 8x8 float32) ->
QuantizeLinear(same) -> y int16: expected y = x; (b) x int16 [8] -> DequantizeLinear(scale 0.0031738281, zero point
-7576) -> Cast(bfloat16) -> y: expected the exact real rounded once to bfloat16. Actual (OpenVINO 2026.4.1, default
hint bf16): (a) y = x rounded to bfloat16 precision (21601 -> 21500, 12345 -> 12312); (b) some outputs one bfloat16
unit off (63.0 for 63.25). With INFERENCE_PRECISION_HINT f32 (the control) both are exact.
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

X = np.array([21601, 12345, -30001, 255, 257, 1001, 32767, -129], np.int16)
SCALE, ZERO_POINT = np.float32(0.0031738281), np.int16(-7576)  # (b): the suite's dequantize_linear-int16-bfloat16


def make(nodes, inputs, outputs, initializers) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()


matmul = make([helper.make_node("DequantizeLinear", ["x", "s", "z"], ["r"]),
               helper.make_node("MatMul", ["r", "eye"], ["m"]),
               helper.make_node("QuantizeLinear", ["m", "s", "z"], ["y"])],
              [helper.make_tensor_value_info("x", TensorProto.INT16, [1, 8])],
              [helper.make_tensor_value_info("y", TensorProto.INT16, [1, 8])],
              [numpy_helper.from_array(np.array(0.001, np.float32), "s"),
               numpy_helper.from_array(np.array(0, np.int16), "z"),
               numpy_helper.from_array(np.eye(8, dtype=np.float32), "eye")])
to_bf16 = make([helper.make_node("DequantizeLinear", ["x", "s", "z"], ["r"]),
                helper.make_node("Cast", ["r"], ["y"], to=TensorProto.BFLOAT16)],
               [helper.make_tensor_value_info("x", TensorProto.INT16, [8])],
               [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [8])],
               [numpy_helper.from_array(np.array(SCALE), "s"), numpy_helper.from_array(np.array(ZERO_POINT), "z")])


def bf16_to_float(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits).view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def float_to_bf16(values: np.ndarray) -> np.ndarray:
    """Round float32 to bfloat16, half to even (finite values)."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bf16_to_float(rounded.astype(np.uint16))


def run(model: bytes, x: np.ndarray, config: dict) -> np.ndarray:
    core = ov.Core()
    compiled = core.compile_model(core.read_model(model), "CPU", config)
    request = compiled.create_infer_request()
    request.infer({0: x})
    out = request.get_output_tensor(0)
    data = np.array(out.data, copy=True)
    return bf16_to_float(data) if out.get_element_type() == ov.Type.bf16 else data


core = ov.Core()
hint = core.get_property("CPU", "INFERENCE_PRECISION_HINT")
print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}; CPU default "
      f"INFERENCE_PRECISION_HINT = {hint}")
if "bf16" not in str(hint).lower() and "bfloat16" not in str(hint).lower():
    print("not reproduced: this CPU's default inference precision is not bfloat16")
    sys.exit(0)
bad = []
wants = {"(a) DQ int16 -> MatMul(identity) -> Q": (matmul, X.reshape(1, 8), X.reshape(1, 8)),
         "(b) DQ int16 -> Cast bfloat16": (to_bf16, X, float_to_bf16(
             ((X.astype(np.int64) - ZERO_POINT) * np.float64(SCALE)).astype(np.float32)))}
for name, (model, x, want) in wants.items():
    print(f"\n{name}\n  x = {x.ravel().tolist()}\n  expected y = {want.ravel().tolist()}")
    for label, config in (("default", {}),
                          ("INFERENCE_PRECISION_HINT f32 (control)", {"INFERENCE_PRECISION_HINT": "f32"})):
        got = run(model, x, config)
        print(f"  {label}: y = {got.ravel().tolist()}")
        if not np.array_equal(got, want):
            (bad.append(name) if label == "default" else print("  the control differs too: something else is wrong"))
print(f"\nREPRODUCED: bfloat16 precision loss in {'; '.join(bad)}" if bad else
      "\nnot reproduced: the default compile keeps the 16-bit values")
sys.exit(1 if bad else 0)
