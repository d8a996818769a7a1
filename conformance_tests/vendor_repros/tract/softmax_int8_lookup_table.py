"""tract: DequantizeLinear -> Softmax -> QuantizeLinear (int8 / uint8 storage, float32 scales) returns quantize(1.0)
in every element: saturated to 127 (int8) or 255 (uint8) with the usual output scale 1/256.

Standalone (numpy, onnx, tract): python softmax_int8_lookup_table.py  ->  exit 1 while the bug is there, 0 when
tract's output is within one quantization step of the exact Softmax, 2 when tract cannot be run at all.

Expected: each row's Softmax of the dequantized inputs, quantized with y_scale / y_zero_point (onnxruntime with
ORT_DISABLE_ALL and IREE give exactly this). Actual (tract 0.23.9): every element is the same value, round(1 /
y_scale) + y_zero_point clamped to the storage range, i.e. the quantization of a probability of 1.0, whatever the
inputs and zero points.

Likely cause (tract's source, core/src/ops/quant.rs, DequantizeLinearF32::declutter): the declutter that folds a
DequantizeLinear ... QuantizeLinear chain of element-wise ops into a 256-entry lookup table accepts every op whose
axes mapping is element-wise (AxesMapping::is_element_wise_unary). Softmax reports AxesMapping::natural (every
axis maps to itself), so the chain is folded into a table computed by running Softmax on a 1-D tensor of the 256
codes, where Softmax's axis (1 for this 2-D model) names no axis: each code becomes softmax of itself alone, 1.0.
Softmax is not element-wise along its axis and must not be folded into a table.
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

X_SCALE, X_ZERO_POINT, Y_SCALE, Y_ZERO_POINT = 0.015625, -52, 1 / 256, -128  # int8; uint8 below adds 128
X = np.array([[22, -21, 102, 27, 19], [66, 64, -65, -102, -86]])


def model(storage: int, dtype: type) -> onnx.ModelProto:
    shift = 0 if dtype == np.int8 else 128
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero_point"], ["x_real"]),
         helper.make_node("Softmax", ["x_real"], ["y_real"], axis=-1),
         helper.make_node("QuantizeLinear", ["y_real", "y_scale", "y_zero_point"], ["y"])],
        "softmax_qdq",
        [helper.make_tensor_value_info("x", storage, list(X.shape))],
        [helper.make_tensor_value_info("y", storage, list(X.shape))],
        [numpy_helper.from_array(np.array(X_SCALE, np.float32), "x_scale"),
         numpy_helper.from_array(np.array(X_ZERO_POINT + shift, dtype), "x_zero_point"),
         numpy_helper.from_array(np.array(Y_SCALE, np.float32), "y_scale"),
         numpy_helper.from_array(np.array(Y_ZERO_POINT + shift, dtype), "y_zero_point")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def expected(dtype: type) -> np.ndarray:
    shift = 0 if dtype == np.int8 else 128
    real = (X - X_ZERO_POINT) * X_SCALE  # the input's zero point shifts with the storage: reals are equal
    e = np.exp(real - real.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    info = np.iinfo(dtype)
    return np.clip(np.rint(p / Y_SCALE) + Y_ZERO_POINT + shift, info.min, info.max).astype(dtype)


def run_tract(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "softmax_qdq.onnx")
        onnx.save(m, path)
        runnable = tract.onnx().load(path).into_model().into_runnable()
        return runnable.run([x])[0].to_numpy()


print(f"tract {tract.version()}, numpy {np.__version__}, onnx {onnx.__version__}")
bad = False
for storage, dtype in ((TensorProto.INT8, np.int8), (TensorProto.UINT8, np.uint8)):
    x = (X + (0 if dtype == np.int8 else 128)).astype(dtype)
    want, got = expected(dtype), run_tract(model(storage, dtype), x)
    steps = int(np.abs(want.astype(np.int64) - got.astype(np.int64)).max())
    print(f"\n{np.dtype(dtype).name}: x = {x.tolist()}")
    print(f"  expected y = {want.tolist()}")
    print(f"  tract    y = {got.tolist()}")
    info = np.iinfo(dtype)
    one = int(np.clip(np.rint(1 / Y_SCALE) + Y_ZERO_POINT + (0 if dtype == np.int8 else 128), info.min, info.max))
    print(f"  quantize(1.0) = {one}: the value of a probability of 1")
    print(f"  largest difference: {steps} step(s) (one step allowed)")
    bad |= steps > 1
print("\nBUG REPRODUCED" if bad else "\nnot reproduced: tract agrees with the exact Softmax within one step")
sys.exit(1 if bad else 0)
