"""tract: DequantizeLinear and QuantizeLinear with blocked parameters (ONNX opset 21's block_size: a scale per block
of elements along the axis, as 4-bit LLM weights use) are refused: "blocked quantization is not supported".

Standalone (numpy, onnx, tract): python blocked_quantization_refused.py  ->  exit 1 while tract refuses either
model, 0 once both compute the definition, 2 when tract cannot be run.

Models: x int8 [2, 4] (graph input) -> DequantizeLinear(axis 1, block_size 2, scale and zero point [2, 2]) -> y
float32; x float32 -> QuantizeLinear(same) -> y int8. Expected: each element scaled by its block's scale and zero
point. Actual (tract 0.23.9): both refused when the node is built (tract's onnx/src/ops/quant.rs,
quantization_axis); per-tensor and per-axis parameters are accepted.
"""

import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

try:
    import tract
except ImportError:
    print("tract is not installed: pip install tract")
    sys.exit(2)

SCALE = np.array([[0.5, 0.25], [0.125, 1.0]], np.float32)  # [rows, blocks]: a block is 2 elements of a row
ZERO_POINT = np.array([[0, 3], [-2, 1]], np.int8)
CODES = np.array([[10, -20, 30, 40], [-50, 60, 70, -80]], np.int8)
REALS = np.array([[1.5, -2.0, 3.25, 4.0], [-5.5, 6.0, 7.0, -8.0]], np.float32)


def model(op: str) -> onnx.ModelProto:
    x_type, y_type = ((TensorProto.INT8, TensorProto.FLOAT) if op == "DequantizeLinear"
                      else (TensorProto.FLOAT, TensorProto.INT8))
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "scale", "zero_point"], ["y"], axis=1, block_size=2)], op.lower(),
        [helper.make_tensor_value_info("x", x_type, [2, 4])], [helper.make_tensor_value_info("y", y_type, [2, 4])],
        [numpy_helper.from_array(SCALE, "scale"), numpy_helper.from_array(ZERO_POINT, "zero_point")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def run_tract(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.onnx")
        onnx.save(m, path)
        return tract.onnx().load(path).into_model().into_runnable().run([x])[0].to_numpy()


print(f"tract {tract.version()}, numpy {np.__version__}, onnx {onnx.__version__}")
scale, zero_point = np.repeat(SCALE.astype(np.float64), 2, axis=1), np.repeat(ZERO_POINT, 2, axis=1)
expected = {"DequantizeLinear": (CODES, (scale * (CODES - zero_point)).astype(np.float32)),
            "QuantizeLinear": (REALS, np.clip(np.rint(REALS / scale) + zero_point, -128, 127).astype(np.int8))}
failed = []
for op, (x, want) in expected.items():
    try:
        got = run_tract(model(op), x)
    except tract.TractError as exc:
        failed.append(op)
        print(f"{op}: tract refuses: {' '.join(str(exc).split('Stack backtrace:')[0].split())}")
        continue
    print(f"{op}: y = {got.tolist()} (expected {want.tolist()})")
    if not np.array_equal(got, want):
        failed.append(op)
print(f"\nREPRODUCED: {', '.join(failed)}" if failed else "\nnot reproduced: blocked parameters work")
sys.exit(1 if failed else 0)
