"""onnxruntime: a DequantizeLinear -> op -> QuantizeLinear group on int4 / uint4 storage with equal parameters on both
sides fails at session creation with the default optimizations, for MaxPool, ReduceMax, ReduceMin, Relu and
Identity: the QDQ transformers drop the pair so that the operator runs on the 4-bit storage itself, and the CPU
provider has no 4-bit kernel for it ("Type 'tensor(int4)' of input parameter ... of operator (MaxPool) ... is
invalid", "Failed to find kernel for Identity(21)").

Standalone (numpy, onnx, onnxruntime): python int4_qdq_rewrite_no_kernel.py  ->  exit 1 while a default session is
refused, 0 once every one loads, 2 when onnxruntime cannot be run.

Models: x int4 [1, 1, 4, 4] (graph input) -> DequantizeLinear(0.5, zero point 1) -> op -> QuantizeLinear(same) ->
y int4, for op in MaxPool (2x2), ReduceMax, ReduceMin, Relu, Identity; the same with uint4. Expected: a session
(ORT_DISABLE_ALL loads every model and the suite's cases pass on it). Actual (onnxruntime 1.32.0): ORT_ENABLE_BASIC
loads (the control); ORT_ENABLE_EXTENDED and the default (ORT_ENABLE_ALL) refuse every model, so the fault is in an
extended-level QDQ transformer (the Relu and Identity groups become an Identity node named QDQFinalCleanupTransformer).
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
OPS = {"MaxPool": {"kernel_shape": [2, 2]}, "ReduceMax": {"keepdims": 1}, "ReduceMin": {"keepdims": 1}, "Relu": {},
       "Identity": {}}
OUT_SHAPES = {"MaxPool": [1, 1, 3, 3], "ReduceMax": [1, 1, 1, 1], "ReduceMin": [1, 1, 1, 1]}


def model(storage: int, op: str) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "scale", "zero_point"], ["x_real"]),
         helper.make_node(op, ["x_real"], ["y_real"], **OPS[op]),
         helper.make_node("QuantizeLinear", ["y_real", "scale", "zero_point"], ["y"])], op.lower(),
        [helper.make_tensor_value_info("x", storage, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", storage, OUT_SHAPES.get(op, [1, 1, 4, 4]))],
        [numpy_helper.from_array(np.array(0.5, np.float32), "scale"),
         helper.make_tensor("zero_point", storage, [], [1])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


MODELS = {f"{op} {name.lower()}": model(getattr(TensorProto, name), op) for name in ("INT4", "UINT4") for op in OPS}


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
