"""tract: ONNX models holding 4- or 2-bit integers, float8, float4 or bfloat16 tensors are refused at load.

Standalone (numpy, onnx, tract): python storage_types_unknown.py  ->  exit 1 while tract refuses any of
these element types, 0 once each loads and DequantizeLinear computes the definition, 2 when tract cannot be run.

Each model is one DequantizeLinear of a constant in the element type (x = [1, 0, 1, 1] in that type's own codes,
zero point 0, scale 0.5, float32 output): the smallest use of the type in a quantized model. int8 is the control.
Expected: y = 0.5 * (x - 0) = [0.5, 0, 0.5, 0.5]. Actual (tract 0.23.9): "Unknown DatumType Int4" (UINT4, the
float8 types, FLOAT4E2M1 and BFLOAT16 alike) or "unknown ONNX TensorProto.DataType (26)" (INT2, and 25 for UINT2)
from the ONNX loader: tract has no datum type for these ONNX element types (its DatumType covers bool, 8- to 64-bit
integers, float16/32/64 and its own quantized 8-bit types), so a graph with such a tensor cannot be typed at all.
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

TYPES = ("INT8", "INT4", "UINT4", "INT2", "UINT2", "FLOAT8E4M3FN", "FLOAT8E5M2", "FLOAT4E2M1", "BFLOAT16")
X = [1, 0, 1, 1]  # 1 and 0 in every type (integers and floats alike)


def model(name: str) -> onnx.ModelProto:
    data_type = getattr(TensorProto, name)
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero_point"], ["y"])], "dequantize_linear", [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [len(X)])],
        [helper.make_tensor("x", data_type, [len(X)], X), numpy_helper.from_array(np.array(0.5, np.float32), "x_scale"),
         helper.make_tensor("x_zero_point", data_type, [], [0])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def run_tract(m: onnx.ModelProto) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.onnx")
        onnx.save(m, path)
        return tract.onnx().load(path).into_model().into_runnable().run([])[0].to_numpy()


print(f"tract {tract.version()}, numpy {np.__version__}, onnx {onnx.__version__}")
expected = 0.5 * np.array(X, np.float32)
refused = []
for name in TYPES:
    try:
        got = run_tract(model(name))
    except tract.TractError as exc:
        refused.append(name)
        print(f"{name:13} refused: {str(exc).split('Stack backtrace:')[0].strip()}")
        continue
    print(f"{name:13} y = {got.tolist()} (expected {expected.tolist()})")
    if not np.array_equal(got, expected):
        refused.append(name)
if "INT8" in refused:
    print("\nthe int8 control fails too: something else is wrong")
print(f"\nREPRODUCED: refused {', '.join(refused)}" if refused else "\nnot reproduced: every element type loads")
sys.exit(1 if refused else 0)
