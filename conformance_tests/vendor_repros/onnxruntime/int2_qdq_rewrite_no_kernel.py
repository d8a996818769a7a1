"""onnxruntime: DequantizeLinear -> op -> QuantizeLinear groups on int2 / uint2 storage fail at session creation with
the default optimizations: the QDQ transformers rewrite them into com.microsoft QLinear* kernels (QLinearAdd, ...)
or drop the pair around a data movement operator (Reshape, ...), without checking for 2-bit storage, and no kernel
takes int2: "Type 'tensor(int2)' of input parameter (a) of operator (QLinearAdd) ... is invalid", "Failed to find
kernel for Reshape(25)".

Standalone (numpy, onnx, onnxruntime): python int2_qdq_rewrite_no_kernel.py -> exit 1 while a default session is
refused, 0 once every one loads, 2 when onnxruntime cannot be run.

Models (opset 25, where int2 / uint2 are QuantizeLinear / DequantizeLinear types): a, b int2 / uint2 [2, 4] (graph
inputs) -> DequantizeLinear(0.5, zero point 1) -> Add(a, b), or Reshape(a, [4, 2]) -> QuantizeLinear(same) -> y.
Expected: a session (ORT_DISABLE_ALL loads and the suite's 2-bit cases pass on it). Actual (onnxruntime 1.32.0):
ORT_ENABLE_BASIC loads (the control); ORT_ENABLE_EXTENDED and the default refuse.
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

LEVELS = ("ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "ORT_ENABLE_EXTENDED", "default")
CONTROL_LEVELS = ("ORT_DISABLE_ALL", "ORT_ENABLE_BASIC")


def model(storage: int, op: str) -> onnx.ModelProto:
    middle, shape = ((helper.make_node("Add", ["a_real", "b_real"], ["y_real"]), [2, 4]) if op == "Add" else
                     (helper.make_node("Reshape", ["a_real", "shape"], ["y_real"]), [4, 2]))
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["a", "scale", "zero_point"], ["a_real"]),
         helper.make_node("DequantizeLinear", ["b", "scale", "zero_point"], ["b_real"]), middle,
         helper.make_node("QuantizeLinear", ["y_real", "scale", "zero_point"], ["y"])], op.lower(),
        [helper.make_tensor_value_info("a", storage, [2, 4]), helper.make_tensor_value_info("b", storage, [2, 4])],
        [helper.make_tensor_value_info("y", storage, shape)],
        [numpy_helper.from_array(np.array(0.5, np.float32), "scale"),
         helper.make_tensor("zero_point", storage, [], [1]),
         numpy_helper.from_array(np.array([4, 2], np.int64), "shape")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)], ir_version=11)


MODELS = {f"{op} {name.lower()}": model(getattr(TensorProto, name), op) for name in ("INT2", "UINT2")
          for op in ("Add", "Reshape")}


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
