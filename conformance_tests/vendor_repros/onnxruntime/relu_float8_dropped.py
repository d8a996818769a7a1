"""onnxruntime: DequantizeLinear -> Relu -> QuantizeLinear on float8 storage (equal parameters) returns negative values
unchanged with the default optimizations: the QDQ transformers drop the Relu as redundant, as they may for integer
storage whose zero point is the type's minimum, and then the pair; float8 storage has signed codes.

Standalone (numpy, onnx, onnxruntime): python relu_float8_dropped.py  ->  exit 1 while the default session returns a
negative value, 0 once it gives relu, 2 when onnxruntime cannot be run.

Model (onnxruntime's Python API takes no float8 arrays, so the float8 tensor is made inside): x float32 [8] ->
QuantizeLinear(scale 0.5, zero point +0, float8 type) -> DequantizeLinear -> Relu -> QuantizeLinear(same) ->
DequantizeLinear -> y float32, for float8e4m3fn and float8e5m2. Expected: relu of x rounded to the float8 type, 0 for
every negative x. Actual (onnxruntime 1.32.0, default session): y equals x rounded, negatives included (-3 where
Relu gives 0); ORT_DISABLE_ALL and ORT_ENABLE_BASIC (the controls) give relu.
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

X = np.array([-3.0, -1.5, -0.25, 0.0, 0.5, 1.0, 2.5, 6.0], np.float32)  # exact in both float8 types


def model(storage: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "scale", "zero_point"], ["x_q"]),
         helper.make_node("DequantizeLinear", ["x_q", "scale", "zero_point"], ["x_real"]),
         helper.make_node("Relu", ["x_real"], ["y_real"]),
         helper.make_node("QuantizeLinear", ["y_real", "scale", "zero_point"], ["y_q"]),
         helper.make_node("DequantizeLinear", ["y_q", "scale", "zero_point"], ["y"])], "relu_qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(X)])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [len(X)])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "scale"),
         helper.make_tensor("zero_point", storage, [], b"\x00", raw=True)])  # +0 in both types
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


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


ort.set_default_logger_severity(4)  # a refused session raises; its log line would only repeat it
print(f"onnxruntime {ort.__version__}, numpy {np.__version__}, onnx {onnx.__version__}")
want = np.maximum(X, 0)
print(f"x = {X.tolist()}\nexpected y = {want.tolist()}")
bad = []
for name in ("FLOAT8E4M3FN", "FLOAT8E5M2"):
    m = model(getattr(TensorProto, name))
    for level in ("ORT_DISABLE_ALL", "ORT_ENABLE_BASIC", "default"):
        got = session(m, level).run(None, {"x": X})[0]
        control = level != "default"
        ok = np.array_equal(got, want)
        print(f"{name.lower()}, {level}{' (control)' if control else ''}: y = {got.tolist()}")
        if not ok and control:
            print("  the control differs too: something else is wrong")
        if not ok and not control:
            bad.append(name.lower())
print(f"\nREPRODUCED: Relu dropped for {', '.join(bad)}" if bad else
      "\nnot reproduced: the default session applies Relu")
sys.exit(1 if bad else 0)
