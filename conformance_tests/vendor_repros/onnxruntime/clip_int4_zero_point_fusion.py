"""onnxruntime: DequantizeLinear -> Clip -> QuantizeLinear with an int4 / uint4 zero point fails at session creation
with the default optimizations: "clip_quantizelinear.cc:79 ... GetQConstantLowerUpper ... Unexpected data type for
QuantizeLinear input y_zero_point of 22" (21 for uint4).

Standalone (numpy, onnx, onnxruntime): python clip_int4_zero_point_fusion.py  ->  exit 1 while a default session is
refused, 0 once both load, 2 when onnxruntime cannot be run.

Models: x int4 / uint4 [2, 4] (graph input) -> DequantizeLinear(0.5, zero point 1) -> Clip(-1, 2) ->
QuantizeLinear(same) -> y. (A narrowed storage range is also written as a Clip before the QuantizeLinear.) Expected: a
session (ORT_DISABLE_ALL loads and the suite's cases pass on it). Actual (onnxruntime 1.32.0): ORT_ENABLE_BASIC loads
(the control); ORT_ENABLE_EXTENDED and the default refuse.

Cause: onnxruntime/core/optimizer/qdq_transformer/clip_quantizelinear.cc, GetQConstantLowerUpper reads the
QuantizeLinear zero point to decide whether the Clip is redundant and knows 8- and 16-bit zero points only.
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


def model(storage: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "scale", "zero_point"], ["x_real"]),
         helper.make_node("Clip", ["x_real", "low", "high"], ["y_real"]),
         helper.make_node("QuantizeLinear", ["y_real", "scale", "zero_point"], ["y"])], "clip",
        [helper.make_tensor_value_info("x", storage, [2, 4])], [helper.make_tensor_value_info("y", storage, [2, 4])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "scale"),
         helper.make_tensor("zero_point", storage, [], [1]),
         numpy_helper.from_array(np.array(-1.0, np.float32), "low"),
         numpy_helper.from_array(np.array(2.0, np.float32), "high")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


MODELS = {name.lower(): model(getattr(TensorProto, name)) for name in ("INT4", "UINT4")}


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
