"""OpenVINO CPU: Gather on int4 storage returns wrong elements. The low-precision transformations move the
DequantizeLinear after the Gather, so the CPU plugin gathers the packed int4 data itself, and rows come back from
the wrong place or as garbage: with indices [[0, 4], [2, 2]] of a [5, 3] tensor, the second row is row 1 instead of
row 4 and the last rows are zeros or other values. Slice, Expand, Split and DepthToSpace on 4-bit storage go wrong
the same way.

The wrong values change from run to run (they look like bytes nothing wrote), so the script compiles and runs the
model RUNS times and reports every run; one wrong run is a reproduction. A run that happens to read the right bytes
is possible in principle; every run differed here (OpenVINO 2026.4.1).

Standalone (numpy, onnx, openvino): python int4_data_movement_wrong_elements.py  ->  exit 1 while some run differs,
0 once all runs match, 2 when OpenVINO cannot be run.

Model (the suite's gather-int4-float32-per-tensor): x int4 [5, 3] -> DequantizeLinear(3.75, -5) -> Gather(indices
[[0, 4], [2, 2]], axis 0) -> QuantizeLinear(3.75, -5) -> y int4 [2, 2, 3]. Expected: y = x[indices] (equal
parameters: the storage values move unchanged).
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

RUNS = 5
X = np.array([[6, -6, -7], [5, -4, 3], [-1, 0, -5], [1, -3, -2], [1, -8, 2]], np.int8)
INDICES = np.array([[0, 4], [2, 2]], np.int64)


def model(node: onnx.NodeProto, x_shape: list, y_shape: list, scale: float, zero_point: int, extra=()) -> bytes:
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["xr"]), node,
         helper.make_node("QuantizeLinear", ["yr", "s", "z"], ["y"])], "int4",
        [helper.make_tensor_value_info("x", TensorProto.INT4, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.INT4, y_shape)],
        [numpy_helper.from_array(np.array(scale, np.float32), "s"),
         helper.make_tensor("z", TensorProto.INT4, [], [zero_point]), *extra])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()


def to_ov_int4(values: np.ndarray) -> "ov.Tensor":
    """Two int4 values a byte, the first in the low nibble (ONNX's and OpenVINO's packing)."""
    nibbles = (values.ravel().astype(np.int16) & 0xF).astype(np.uint8)
    nibbles = np.append(nibbles, np.uint8(0)) if nibbles.size % 2 else nibbles
    tensor = ov.Tensor(ov.Type.i4, list(values.shape))
    np.asarray(tensor.data).reshape(-1).view(np.uint8)[:nibbles.size // 2] = nibbles[0::2] | (nibbles[1::2] << 4)
    return tensor


def from_ov_int4(tensor: "ov.Tensor") -> np.ndarray:
    shape = [int(d) for d in tensor.get_shape()]
    raw = np.asarray(tensor.data).reshape(-1).view(np.uint8)[:tensor.get_byte_size()]
    nibbles = np.stack([raw & 0xF, raw >> 4], axis=1).ravel()[:int(np.prod(shape))].astype(np.int8)
    return np.where(nibbles > 7, nibbles - 16, nibbles).reshape(shape)


gather = model(helper.make_node("Gather", ["xr", "idx"], ["yr"], axis=0), [5, 3], [2, 2, 3], 3.75, -5,
               [numpy_helper.from_array(INDICES, "idx")])
want = X[INDICES]
print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
print(f"x = {X.tolist()}, indices = {INDICES.tolist()}\nexpected y = {want.tolist()}")
core = ov.Core()
wrong = 0
for run in range(RUNS):
    request = core.compile_model(core.read_model(gather), "CPU").create_infer_request()
    request.infer({0: to_ov_int4(X)})
    got = from_ov_int4(request.get_output_tensor(0))
    differ = int(np.count_nonzero(got != want))
    print(f"run {run + 1}: y = {got.tolist()}" + (f"  ({differ} of {want.size} differ)" if differ else ""))
    wrong += differ > 0
print(f"\nREPRODUCED: {wrong} of {RUNS} runs gather wrong elements" if wrong else
      f"\nnot reproduced: all {RUNS} runs gather the right elements")
sys.exit(1 if wrong else 0)
