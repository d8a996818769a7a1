"""tract: DequantizeLinear and QuantizeLinear with float16 scales (a float16-expressed quantized tensor) are refused
while tract analyses the model: "Applying rule inputs[1].datum_type == F32 ... Impossible to unify F16 with F32".

Standalone (numpy, onnx, tract): python float16_scale_refused.py  ->  exit 1 while tract refuses either model,
0 once both compute the definition, 2 when tract cannot be run.

ONNX (opset 19 on) allows float16 scales, the expressed type of float16 models. Models: x int8 (graph input) ->
DequantizeLinear(scale 0.125 float16, zero point 3) -> y float16; x float16 -> QuantizeLinear(same) -> y int8.
Expected: y = 0.125 * (x - 3), and y = clamp(round(x / 0.125) + 3). Actual (tract 0.23.9): both refused. Cause
(tract's onnx/src/ops/quant.rs): the operators' inference rules pin the scale (and DequantizeLinear's output) to
f32, and wire() reads the scale as f32.
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

SCALE, ZERO_POINT = 0.125, 3
CODES = np.array([-128, 0, 3, 127], np.int8)
REALS = np.array([-16.5, 0.0, 0.3125, 15.0], np.float16)


def model(op: str) -> onnx.ModelProto:
    x_type, y_type = ((TensorProto.INT8, TensorProto.FLOAT16) if op == "DequantizeLinear"
                      else (TensorProto.FLOAT16, TensorProto.INT8))
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "scale", "zero_point"], ["y"])], op.lower(),
        [helper.make_tensor_value_info("x", x_type, [4])], [helper.make_tensor_value_info("y", y_type, [4])],
        [numpy_helper.from_array(np.array(SCALE, np.float16), "scale"),
         numpy_helper.from_array(np.array(ZERO_POINT, np.int8), "zero_point")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def run_tract(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.onnx")
        onnx.save(m, path)
        return tract.onnx().load(path).into_model().into_runnable().run([x])[0].to_numpy()


print(f"tract {tract.version()}, numpy {np.__version__}, onnx {onnx.__version__}")
expected = {"DequantizeLinear": (CODES, (SCALE * (CODES.astype(np.float64) - ZERO_POINT)).astype(np.float16)),
            "QuantizeLinear": (REALS, np.clip(np.rint(REALS.astype(np.float64) / SCALE) + ZERO_POINT, -128, 127)
                               .astype(np.int8))}
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
print(f"\nREPRODUCED: {', '.join(failed)}" if failed else "\nnot reproduced: float16 scales work")
sys.exit(1 if failed else 0)
