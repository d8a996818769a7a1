"""onnxruntime: QuantizeLinear to integer storage maps NaN to the storage type's minimum (int8 -128, uint8 0, int16
-32768) instead of the zero point, with and without graph optimizations.

Standalone (numpy, onnx, onnxruntime): python quantize_linear_nan_to_storage_min.py  ->  exit 1 while a NaN element
differs, 0 once every element matches, 2 when onnxruntime cannot be run.

Model: x float32 [6] -> QuantizeLinear(scale 0.5, zero point z) -> y, for int8 (z = -3), uint8 (z = 141) and int16
(z = 1000). Expected: NaN has no quantized value; the conformance suite's definition gives it the zero point (real
0), +-inf saturate and finite values round half to even. (ONNX's QuantizeLinear does not say what NaN gives for
integer storage; IREE and OpenVINO give the storage minimum too, tract the zero point.) Actual (onnxruntime 1.32.0,
default and ORT_DISABLE_ALL): every element but NaN is as expected; NaN gives the storage minimum, whatever the zero
point.
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

SCALE = 0.5
X = np.array([np.nan, np.inf, -np.inf, 2.25, -1.75, np.nan], np.float32)
STORAGE = {"INT8": -3, "UINT8": 141, "INT16": 1000}


def model(storage: int, zero_point: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "scale", "zero_point"], ["y"])], "quantize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(X)])],
        [helper.make_tensor_value_info("y", storage, [len(X)])],
        [numpy_helper.from_array(np.array(SCALE, np.float32), "scale"),
         numpy_helper.from_array(np.array(zero_point, helper.tensor_dtype_to_np_dtype(storage)), "zero_point")])
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
print(f"x = {X.tolist()}, scale {SCALE}")
bad = False
for name, zero_point in STORAGE.items():
    storage = getattr(TensorProto, name)
    info = np.iinfo(helper.tensor_dtype_to_np_dtype(storage))
    steps = np.nan_to_num(X.astype(np.float64) / SCALE, nan=0.0, posinf=1e300, neginf=-1e300)  # NaN: real 0
    want = np.clip(np.rint(steps) + zero_point, info.min, info.max).astype(np.int64)
    print(f"\n{name.lower()}, zero point {zero_point}:\n  expected y = {want.tolist()}")
    for level in ("ORT_DISABLE_ALL", "default"):
        got = session(model(storage, zero_point), level).run(None, {"x": X})[0].astype(np.int64)
        print(f"  {level:15} y = {got.tolist()}")
        wrong = np.flatnonzero(got != want)
        if wrong.size and not np.isnan(X[wrong]).all():
            print("  a non-NaN element differs too: something else is wrong")
        bad |= wrong.size > 0
print("\nREPRODUCED: NaN does not give the zero point" if bad else "\nnot reproduced: NaN gives the zero point")
sys.exit(1 if bad else 0)
