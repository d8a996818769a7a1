"""onnxruntime: DequantizeLinear -> Concat -> QuantizeLinear with int8 storage and float16 scales fails at session
creation with the default optimizations: "Type tensor(float16) of input parameter (y_scale) of operator
(QLinearConcat) ... is invalid".

Standalone (numpy, onnx, onnxruntime): python concat_float16_scales_qlinearconcat.py  ->  exit 1 while the default
session is refused (or wrong), 0 once it loads and gives the definition, 2 when onnxruntime cannot be run.

Model: a, b int8 [2, 3] -> DequantizeLinear (float16 scales 0.5 and 0.25, zero points 1 and -2) -> Concat(axis 0)
-> QuantizeLinear(float16 scale 0.5, zero point 0) -> y int8 [4, 3]. Expected: round_half_even of each real / 0.5
(exact here). Actual (onnxruntime 1.32.0): the level-2 QDQ transformer rewrites the group into com.microsoft
QLinearConcat, whose scales must be float32, and session creation fails (INVALID_GRAPH). ORT_ENABLE_BASIC and the
session config entry session.disable_quant_qdq = 1 (the controls) load and are exact; float32 scales fuse and pass.

Cause: onnxruntime/core/optimizer/qdq_transformer/selectors_actions/qdq_selector_action_transformer.cc,
VariadicOpQDQRules (Concat -> VariadicReplaceWithQLinear): the selector does not check the scale type.
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

A = np.array([[3, -5, 7], [1, 0, -9]], np.int8)
B = np.array([[6, -2, 10], [-14, 2, 0]], np.int8)


def model() -> onnx.ModelProto:
    half = lambda name, value: numpy_helper.from_array(np.array(value, np.float16), name)
    int8 = lambda name, value: numpy_helper.from_array(np.array(value, np.int8), name)
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["a", "a_scale", "a_zero_point"], ["a_real"]),
         helper.make_node("DequantizeLinear", ["b", "b_scale", "b_zero_point"], ["b_real"]),
         helper.make_node("Concat", ["a_real", "b_real"], ["y_real"], axis=0),
         helper.make_node("QuantizeLinear", ["y_real", "y_scale", "y_zero_point"], ["y"])], "concat_qdq",
        [helper.make_tensor_value_info("a", TensorProto.INT8, [2, 3]),
         helper.make_tensor_value_info("b", TensorProto.INT8, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [4, 3])],
        [half("a_scale", 0.5), int8("a_zero_point", 1), half("b_scale", 0.25), int8("b_zero_point", -2),
         half("y_scale", 0.5), int8("y_zero_point", 0)])
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


# onnxruntime's own exception types (Fail, InvalidGraph, NotImplemented, ...; each derives from Exception alone):
# what a refused session raises, and nothing else is taken for a refusal
ORT_ERRORS = tuple(error for error in vars(ort.capi.onnxruntime_pybind11_state).values()
                   if isinstance(error, type) and issubclass(error, Exception))


ort.set_default_logger_severity(4)  # a refused session raises; its log line would only repeat it
print(f"onnxruntime {ort.__version__}, numpy {np.__version__}, onnx {onnx.__version__}")
real = np.concatenate([(A.astype(np.float64) - 1) * 0.5, (B.astype(np.float64) + 2) * 0.25])
want = np.clip(np.rint(real / 0.5), -128, 127).astype(np.int8)
print(f"expected y = {want.tolist()}")
feeds = {"a": A, "b": B}
for label, level, config in (("ORT_ENABLE_BASIC (control)", "ORT_ENABLE_BASIC", None),
                             ("session.disable_quant_qdq=1 (control)", "default", {"session.disable_quant_qdq": "1"})):
    got = session(model(), level, config).run(None, feeds)[0]
    same = np.array_equal(got, want)
    print(f"{label}: y = {got.tolist()}" + ("" if same else "  (differs: something else is wrong)"))
try:
    got = session(model()).run(None, feeds)[0]
except ORT_ERRORS as exc:  # onnxruntime's InvalidGraph / Fail
    print(f"default session: refused: {first_line(exc)}")
    print("\nREPRODUCED: the float16-scale Concat group is fused into QLinearConcat, which refuses float16")
    sys.exit(1)
print(f"default session: y = {got.tolist()}")
ok = np.array_equal(got, want)
print("\nnot reproduced: the default session loads" + ("" if ok else " (but the output differs)"))
sys.exit(0 if ok else 1)
