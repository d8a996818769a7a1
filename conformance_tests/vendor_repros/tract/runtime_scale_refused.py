"""tract: QuantizeLinear / DequantizeLinear whose scale is computed at run time (a graph input, or the scale output
of DynamicQuantizeLinear) are refused: "y_scale must be a const".

Standalone (numpy, onnx, tract): python runtime_scale_refused.py  ->  exit 1 while tract refuses either model,
0 once both compute the definition, 2 when tract cannot be run.

Models: (1) x float32, s float32 and z int8 all graph inputs -> QuantizeLinear(x, s, z) -> y int8; (2) x float32
-> DynamicQuantizeLinear -> (xq, xs, xz) -> DequantizeLinear(xq, xs, xz) -> y float32 (the usual dynamically
quantized activation). Expected: (1) y = clamp(round(x / s) + z); (2) x rounded to its dynamic uint8 grid.
Actual (tract 0.23.9): both refused. Cause (tract's onnx/src/ops/quant.rs): wire() takes the scale and zero point
from constant facts only (`.konst ... .context("y_scale must be a const")`), although ONNX allows any tensor.
"""

import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

try:
    import tract
except ImportError:
    print("tract is not installed: pip install tract")
    sys.exit(2)

X = np.array([-1.0, -0.3, 0.0, 0.45, 2.5], np.float32)
S, Z = np.float32(0.05), np.int8(-4)


def graph_input_scale() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])], "quantize_linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("z", TensorProto.INT8, [])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [5])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def dynamic_quantize() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
         helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["y"])], "dynamic_quantize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def run_tract(m: onnx.ModelProto, feeds: list) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.onnx")
        onnx.save(m, path)
        return tract.onnx().load(path).into_model().into_runnable().run(feeds)[0].to_numpy()


def dynamic_expected(x: np.ndarray) -> np.ndarray:
    """ONNX's DynamicQuantizeLinear (uint8, range including 0), then DequantizeLinear."""
    low, high = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    scale = np.float32((high - low) / 255)
    zero_point = np.clip(np.rint(-low / scale), 0, 255)
    q = np.clip(np.rint(x / scale) + zero_point, 0, 255)
    return ((q - zero_point) * scale).astype(np.float32)


print(f"tract {tract.version()}, numpy {np.__version__}, onnx {onnx.__version__}")
cases = {"QuantizeLinear, scale from a graph input": (
             graph_input_scale(), [X, np.array(S), np.array(Z)],
             np.clip(np.rint(X.astype(np.float64) / np.float64(S)) + Z, -128, 127).astype(np.int8)),
         "DynamicQuantizeLinear -> DequantizeLinear": (dynamic_quantize(), [X], dynamic_expected(X))}
failed = []
for label, (m, feeds, want) in cases.items():
    try:
        got = run_tract(m, feeds)
    except tract.TractError as exc:
        failed.append(label)
        print(f"{label}: tract refuses: {' '.join(str(exc).split('Stack backtrace:')[0].split())}")
        continue
    print(f"{label}: y = {got.tolist()} (expected {want.tolist()})")
    if not np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=0, atol=1e-6):
        failed.append(label)
print(f"\nREPRODUCED: {', '.join(failed)}" if failed else "\nnot reproduced: run-time scales work")
sys.exit(1 if failed else 0)
