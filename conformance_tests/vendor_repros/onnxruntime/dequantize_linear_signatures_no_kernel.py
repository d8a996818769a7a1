"""onnxruntime: two DequantizeLinear signatures have no CPU kernel, so session creation fails with NOT_IMPLEMENTED
("Could not find an implementation for DequantizeLinear(21) / (25) node ..."), optimized or not: 8-bit storage with
a bfloat16 scale (opset 21), and float8e4m3fn with float8e8m0 block scales (opset 25, the microscaling layout).

Standalone (numpy, onnx, onnxruntime): python dequantize_linear_signatures_no_kernel.py -> exit 1 while a session is
refused, 0 once all load, 2 when onnxruntime cannot be run.

Models: x int8 [2, 4] -> DequantizeLinear(bfloat16 scale 0.5, zero point 0) -> y bfloat16; and w float8e4m3fn [2,
32] -> DequantizeLinear(float8e8m0 scales [2, 1] = 2^-1, axis 1, block_size 32, output_dtype float) -> y float32.
Controls: the same int8 model with a float32 scale and output, and the float8 one with float32 block scales.
Expected: a session (ONNX allows both signatures; onnx.reference computes them). Actual (onnxruntime 1.32.0): the
two subjects are refused at every optimization level; the controls load.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

try:
    import onnxruntime as ort
except ImportError:
    print("onnxruntime is not installed: pip install onnxruntime")
    sys.exit(2)

LEVELS = ("ORT_DISABLE_ALL", "default")
CONTROL_LEVELS = ()


def int8_model(scale_type: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "scale", "zero_point"], ["y"])], "dequantize",
        [helper.make_tensor_value_info("x", TensorProto.INT8, [2, 4])],
        [helper.make_tensor_value_info("y", scale_type, [2, 4])],
        [helper.make_tensor("scale", scale_type, [], [0.5]),
         helper.make_tensor("zero_point", TensorProto.INT8, [], [0])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def float8_model(scale_type: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["w", "scale"], ["y"], axis=1, block_size=32,
                          output_dtype=TensorProto.FLOAT)],  # y's type: the scale's type is no float
        "dequantize_blocked",
        [helper.make_tensor_value_info("w", TensorProto.FLOAT8E4M3FN, [2, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 32])],
        [helper.make_tensor("scale", scale_type, [2, 1], [0.5, 0.5])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)], ir_version=11)


MODELS = {"int8 with a float32 scale (control)": int8_model(TensorProto.FLOAT),
          "int8 with a bfloat16 scale": int8_model(TensorProto.BFLOAT16),
          "float8e4m3fn with float32 block scales (control)": float8_model(TensorProto.FLOAT),
          "float8e4m3fn with float8e8m0 block scales": float8_model(TensorProto.FLOAT8E8M0)}


def session(m: onnx.ModelProto, level: str = "default", config: dict | None = None) -> "ort.InferenceSession":
    """A CPU session at an optimization level ("default" is onnxruntime's, ORT_ENABLE_ALL)."""
    options = ort.SessionOptions()
    if level != "default":
        options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    for key, value in (config or {}).items():
        options.add_session_config_entry(key, value)
    return ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])


def first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0][:300]


# onnxruntime's own exception types (Fail, InvalidGraph, NotImplemented, ...; each derives from Exception alone):
# what a refused session raises, and nothing else is taken for a refusal
ORT_ERRORS = tuple(error for error in vars(ort.capi.onnxruntime_pybind11_state).values()
                   if isinstance(error, type) and issubclass(error, Exception))


ort.set_default_logger_severity(4)  # a refused session raises; its log line would only repeat it
print(f"onnxruntime {ort.__version__}, numpy {np.__version__}, onnx {onnx.__version__}")


def loads(m: onnx.ModelProto, level: str) -> str:
    """'' when a session is created, else onnxruntime's first error line."""
    try:
        session(m, level)
        return ""
    except ORT_ERRORS as exc:  # onnxruntime's Fail / InvalidGraph / NotImplemented
        return first_line(exc)


refused = []
for label, m in MODELS.items():
    onnx.checker.check_model(m, full_check=True)
    for level in LEVELS:
        error = loads(m, level)
        control = level in CONTROL_LEVELS or "(control)" in label
        print(f"{label}, {level}{' (control)' if control else ''}: {'refused: ' + error if error else 'loads'}")
        if error and not control:
            refused.append(f"{label} at {level}")
        if error and control:
            print("  the control is refused too: something else is wrong")
print(f"\nREPRODUCED: {len(refused)} refused" if refused else "\nnot reproduced: every session loads")
sys.exit(1 if refused else 0)
