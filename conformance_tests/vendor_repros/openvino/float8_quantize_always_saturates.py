"""OpenVINO: QuantizeLinear to float8 (FakeConvert) always saturates. It ignores saturate=0, under which ONNX maps
an out-of-range value to NaN (float8e4m3fn has no infinity), and it maps NaN itself to the most negative finite
value, where float8 keeps NaN.

Standalone (numpy, onnx, openvino): python float8_quantize_always_saturates.py  ->  exit 1 while an element differs
from onnx.reference, 0 once all match, 2 when OpenVINO cannot be run.

Models (the suite's quantize-linear-float8e4m3fn-saturate-0 and quantize_linear-nan-inf-float8*-float32): x float32
[12] -> QuantizeLinear(scale 0.25, zero point 0, saturate 0 | 1) -> y float8e4m3fn / float8e5m2, read back as the
typed output's bytes. Expected: onnx.reference's QuantizeLinear. Actual (OpenVINO 2026.4.1): saturate=0: -200, 1e6,
-1e6 give -448, 448, -448 instead of NaN; NaN gives -448 (e4m3fn) and -57344 (e5m2); the other elements match.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

try:
    import openvino as ov
except ImportError:
    print("OpenVINO is not installed: pip install openvino")
    sys.exit(2)

SATURATE_X = np.array([1.0, -3.5, 100.0, 112.0, 113.0, -200.0, 1e6, -1e6, 0.01, 0.0, -0.03, 50.0], np.float32)
NAN_INF_X = np.array([np.nan, np.inf, -np.inf, 0.0, 1.25, -7.5, 1e30, -1e30, 0.3, -2.2, 5.0, 1000.0], np.float32)
CASES = {  # name: storage, saturate, x
    "float8e4m3fn, saturate=0": (TensorProto.FLOAT8E4M3FN, 0, SATURATE_X),
    "float8e4m3fn, saturate=1, NaN and inf": (TensorProto.FLOAT8E4M3FN, 1, NAN_INF_X),
    "float8e5m2, saturate=1, NaN and inf": (TensorProto.FLOAT8E5M2, 1, NAN_INF_X),
}


def model(storage: int, saturate: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], saturate=saturate)], "quantize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [12])],
        [helper.make_tensor_value_info("y", storage, [12])],
        [numpy_helper.from_array(np.array(0.25, np.float32), "s"),
         helper.make_tensor("z", storage, [], b"\x00", raw=True)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


core = ov.Core()
print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
bad = []
for name, (storage, saturate, x) in CASES.items():
    m = model(storage, saturate)
    float8 = helper.tensor_dtype_to_np_dtype(storage)  # onnx's numpy type for it (ml_dtypes)
    want = ReferenceEvaluator(m).run(None, {"x": x})[0].astype(np.float32)
    request = core.compile_model(core.read_model(m.SerializeToString()), "CPU").create_infer_request()
    request.infer({0: x})
    out = request.get_output_tensor(0)
    got = np.asarray(out.data).reshape(-1).view(np.uint8)[:12].view(float8).astype(np.float32)
    print(f"\n{name}\n  x          = {x.tolist()}\n  expected y = {want.tolist()}\n  OpenVINO y = {got.tolist()}")
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    if not same.all():
        bad.append(name)
print(f"\nREPRODUCED: {'; '.join(bad)}" if bad else "\nnot reproduced: saturate and NaN follow ONNX")
sys.exit(1 if bad else 0)
