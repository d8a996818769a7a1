"""OpenVINO: a weight with a negative per-tensor scale, transposed and gathered (each step requantized with the same
parameters) before a MatMul, comes out wrong: the low-precision transformations move the DequantizeLinear past the
Transpose / Gather and mishandle the negative scale. The same reals with a positive scale (weights negated) are
exact.

Standalone (numpy, onnx, openvino): python negative_scale_transpose_gather.py  ->  exit 1 while an element differs,
0 once all match, 2 when OpenVINO cannot be run.

Model (the suite's transpose-gather-negative-scale-int8-float32, its exact weights, parameters and input): w int8
[5, 4] -> DequantizeLinear(-0.0390625, 0) -> Transpose -> QuantizeLinear/DequantizeLinear(same) -> Gather(rows
[3, 0, 2, 1]) -> QuantizeLinear/DequantizeLinear(same) -> MatMul(a = DequantizeLinear(a int8 [3, 4], 0.0625, 1)) ->
QuantizeLinear(0.28125, 14) -> y int8 [3, 5]. Expected: numpy's computation (the requantizations are exact: equal
parameters). Actual (OpenVINO 2026.4.1): elements up to ~217 steps off; the control (scale +0.0390625, weights -w)
matches.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

try:
    import openvino as ov
except ImportError:
    print("OpenVINO is not installed: pip install openvino")
    sys.exit(2)

W = np.array([72, 79, -50, -31, 51, -8, 21, -13, -79, -38, 92, -79, 116, -1, 6, 66, -126, 21, 3, -13],
             np.int8).reshape(5, 4)
A = np.array([-79, -95, 80, 92, 94, 61, 46, 19, -108, -3, -27, -6], np.int8).reshape(3, 4)
ROWS = np.array([3, 0, 2, 1], np.int64)


def model(weights: np.ndarray, weight_scale: float) -> bytes:
    def qdq(name: str, out: str) -> list:
        return [helper.make_node("QuantizeLinear", [name, "ws", "wz"], [name + "_q"]),
                helper.make_node("DequantizeLinear", [name + "_q", "ws", "wz"], [out])]
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wr"]),
         helper.make_node("Transpose", ["wr"], ["wt"], perm=[1, 0]), *qdq("wt", "wtr"),
         helper.make_node("Gather", ["wtr", "rows"], ["wg"], axis=0), *qdq("wg", "wgr"),
         helper.make_node("DequantizeLinear", ["a", "as", "az"], ["ar"]),
         helper.make_node("MatMul", ["ar", "wgr"], ["m"]),
         helper.make_node("QuantizeLinear", ["m", "ys", "yz"], ["y"])], "transpose_gather",
        [helper.make_tensor_value_info("a", TensorProto.INT8, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [3, 5])],
        [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(np.array(weight_scale, np.float32), "ws"),
         numpy_helper.from_array(np.array(0, np.int8), "wz"), numpy_helper.from_array(ROWS, "rows"),
         numpy_helper.from_array(np.array(0.0625, np.float32), "as"),
         numpy_helper.from_array(np.array(1, np.int8), "az"),
         numpy_helper.from_array(np.array(0.28125, np.float32), "ys"),
         numpy_helper.from_array(np.array(14, np.int8), "yz")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()


real = (A.astype(np.float64) - 1) * 0.0625 @ (W.astype(np.float64) * -0.0390625).T[ROWS]
want = np.clip(np.rint(real / 0.28125) + 14, -128, 127).astype(np.int8)
print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
print(f"expected y = {want.tolist()}")
core = ov.Core()
bad = False
negated = (-W.astype(np.int16)).astype(np.int8)  # no -128 in W: exact
for name, weights, scale in (("negative scale -0.0390625", W, -0.0390625),
                             ("control: scale +0.0390625, weights -w", negated, 0.0390625)):
    got = core.compile_model(core.read_model(model(weights, scale)), "CPU")([A])[0]
    steps = int(np.abs(got.astype(np.int64) - want).max())
    print(f"{name}: y = {got.tolist()}  ({np.count_nonzero(got != want)} of {want.size} differ, at most {steps} steps)")
    if steps and name.startswith("control"):
        print("  the control differs too: something else is wrong")
    bad |= steps > 0 and not name.startswith("control")
print("\nREPRODUCED: the negative-scale weight goes wrong through Transpose / Gather" if bad else
      "\nnot reproduced: the negative-scale weight is exact")
sys.exit(1 if bad else 0)
