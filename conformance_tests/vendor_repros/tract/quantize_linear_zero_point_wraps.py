"""tract: QuantizeLinear to int8 gives the wrong end of the range for values far outside it: -inf with zero point -3
gives 127, and +inf or 1e30 with zero point 59 gives -128 (expected -128 and 127: out-of-range values saturate).

Standalone (numpy, onnx, tract): python quantize_linear_zero_point_wraps.py  ->  exit 1 while tract gives a
wrong value, 0 when every element is the definition's, 2 when tract cannot be run.

Model: x float32 [8] -> QuantizeLinear(scale 0.5, zero point z, int8) -> y, once with z = -3 and once with z = 59.
Expected: clamp(round_half_even(x / 0.5) + z, -128, 127); NaN gives z (onnxruntime with ORT_DISABLE_ALL agrees on
every element but NaN). Actual (tract 0.23.9): the elements whose x / 0.5 lies beyond the int32 range come out at
the opposite end of the int8 range once the zero point pushes the int32 sum over: z = -3 turns -inf and -1e30 into
127; z = 59 turns +inf and 1e30 into -128. Finite values in range and NaN (-> z) are right.

Likely cause (tract's source, core/src/ops/quant.rs, quantize_linear_f32_i8 / _u8):
`(((x * scale).round() as i32) + zero_point).clamp(..)`: the float-to-int32 cast saturates (inf and 1e30 become
i32::MAX, -inf i32::MIN) and the zero point is then added in int32, which wraps in a release build before the clamp.
Adding the zero point in float (or a saturating add) keeps the saturation.
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

SCALE = 0.5
X = np.array([np.inf, -np.inf, 1e30, -1e30, 300.0, -300.0, 2.25, np.nan], np.float32)


def model(zero_point: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "scale", "zero_point"], ["y"])], "quantize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(X)])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [len(X)])],
        [numpy_helper.from_array(np.array(SCALE, np.float32), "scale"),
         numpy_helper.from_array(np.array(zero_point, np.int8), "zero_point")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def expected(zero_point: int) -> np.ndarray:
    q = np.rint(np.nan_to_num(X.astype(np.float64) / SCALE, nan=0.0, posinf=1e300, neginf=-1e300)) + zero_point
    return np.clip(q, -128, 127).astype(np.int8)  # NaN -> the zero point (real 0); +-inf saturate


def run_tract(m: onnx.ModelProto) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "quantize.onnx")
        onnx.save(m, path)
        runnable = tract.onnx().load(path).into_model().into_runnable()
        return np.asarray(runnable.run([X])[0].to_numpy())


print(f"tract {tract.version()}, numpy {np.__version__}, onnx {onnx.__version__}")
print(f"x = {X.tolist()}")
bad = False
for zero_point in (-3, 59):
    want, got = expected(zero_point), run_tract(model(zero_point))
    wrong = np.flatnonzero(want != got)
    print(f"\nzero point {zero_point}:\n  expected y = {want.tolist()}\n  tract    y = {got.tolist()}")
    print("  differs at x = " + (", ".join(str(X[i]) for i in wrong) or "nowhere"))
    bad |= wrong.size > 0
print("\nBUG REPRODUCED" if bad else "\nnot reproduced: tract saturates every element")
sys.exit(1 if bad else 0)
