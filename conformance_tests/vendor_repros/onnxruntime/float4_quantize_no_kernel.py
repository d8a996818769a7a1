"""onnxruntime: QuantizeLinear and DequantizeLinear on float4e2m1 have no CPU kernel: session creation fails with
NOT_IMPLEMENTED ("Could not find an implementation for DequantizeLinear(23) node ..."), optimized or not.

Standalone (numpy, onnx, onnxruntime): python float4_quantize_no_kernel.py  ->  exit 1 while a session is refused, 0
once both load, 2 when onnxruntime cannot be run.

Models (opset 23, where float4e2m1 is a QuantizeLinear / DequantizeLinear type): x float4e2m1 [2, 4] (graph input) ->
DequantizeLinear(scale 0.5) -> y float32, and x float32 -> QuantizeLinear(scale 0.5, zero point float4e2m1 +0) -> y
float4e2m1. Expected: a session (onnx.reference computes both). Actual (onnxruntime 1.32.0): refused at every
optimization level, ORT_DISABLE_ALL included: the CPU provider registers these operators for float4e2m1 nowhere.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

try:
    import onnxruntime as ort
except ImportError:
    print("onnxruntime is not installed: pip install onnxruntime")
    sys.exit(2)

LEVELS = ("ORT_DISABLE_ALL", "default")
CONTROL_LEVELS = ()


def model(op: str) -> onnx.ModelProto:
    x_type, y_type = ((TensorProto.FLOAT4E2M1, TensorProto.FLOAT) if op == "DequantizeLinear" else
                      (TensorProto.FLOAT, TensorProto.FLOAT4E2M1))
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "scale", "zero_point"], ["y"])], op.lower(),
        [helper.make_tensor_value_info("x", x_type, [2, 4])], [helper.make_tensor_value_info("y", y_type, [2, 4])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "scale"),
         helper.make_tensor("zero_point", TensorProto.FLOAT4E2M1, [], [0.0])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)], ir_version=11)


MODELS = {op: model(op) for op in ("DequantizeLinear", "QuantizeLinear")}


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
        control = level in CONTROL_LEVELS
        print(f"{label}, {level}{' (control)' if control else ''}: {'refused: ' + error if error else 'loads'}")
        if error and not control:
            refused.append(f"{label} at {level}")
        if error and control:
            print("  the control is refused too: something else is wrong")
print(f"\nREPRODUCED: {len(refused)} refused" if refused else "\nnot reproduced: every session loads")
sys.exit(1 if refused else 0)
