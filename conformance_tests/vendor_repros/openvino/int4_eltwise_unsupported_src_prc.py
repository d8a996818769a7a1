"""OpenVINO CPU: a DequantizeLinear of int4 / uint4 storage fused into an elementwise kernel does not compile:
'jit_uni_eltwise_generic.cpp: unsupported src_prc: i4' (u4 for uint4). The JIT kernel loads f32, i32, bf16, f16,
u16, i16, i8 and u8 only. GatherElements (and GatherND, SpaceToDepth, Tile) on 4-bit storage end up the same way once
the DequantizeLinear is moved after them.

Standalone (numpy, onnx, openvino): python int4_eltwise_unsupported_src_prc.py  ->  exit 1 while a model does not
compile (or gives wrong values), 0 once both compile and match, 2 when OpenVINO cannot be run.

Models (the suite's relu-int4-float32-per-tensor and gather_elements-int4-float32-per-tensor): x int4 ->
DequantizeLinear(s, zp) -> Relu | GatherElements(axis 1) -> QuantizeLinear(s, zp) -> y int4. Expected: compiles, y
as numpy computes it (printed). Actual (OpenVINO 2026.4.1, default and f32 hint): compile_model raises 'unsupported
src_prc: i4'.
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


def message(exc: Exception) -> str:
    """The informative line of OpenVINO's error (its first lines only locate the C++ frames)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return next((line for line in lines if not line.startswith(("Exception from", "Check "))), lines[0])[:300]


rng = np.random.default_rng(0)
RELU_X = rng.integers(-8, 8, (2, 3, 4)).astype(np.int8)
GATHER_X = np.array([[-7, -7, -1, 1], [4, -5, -4, 7], [2, 4, 0, 5]], np.int8)
INDICES = np.array([[3, 0], [1, 1], [0, 2]], np.int64)
CASES = {  # name: model, x, expected y (relu in storage units: max(x, zero point))
    "relu-int4 (scale 0.6875, zero point -5)": (
        model(helper.make_node("Relu", ["xr"], ["yr"]), [2, 3, 4], [2, 3, 4], 0.6875, -5), RELU_X,
        np.maximum(RELU_X, -5)),
    "gather_elements-int4 (scale 0.6875, zero point -4)": (
        model(helper.make_node("GatherElements", ["xr", "idx"], ["yr"], axis=1), [3, 4], [3, 2], 0.6875, -4,
              [numpy_helper.from_array(INDICES, "idx")]), GATHER_X, np.take_along_axis(GATHER_X, INDICES, 1)),
}

core = ov.Core()
print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
bad = []
for name, (onnx_model, x, want) in CASES.items():
    print(f"\n{name}\n  x = {x.tolist()}\n  expected y = {want.tolist()}")
    try:
        compiled = core.compile_model(core.read_model(onnx_model), "CPU")
    except RuntimeError as exc:
        print(f"  compile_model failed: {message(exc)}")
        bad.append(name)
        continue
    request = compiled.create_infer_request()
    request.infer({0: to_ov_int4(x)})
    got = from_ov_int4(request.get_output_tensor(0))
    print(f"  OpenVINO y = {got.tolist()}")
    if not np.array_equal(got, want):
        bad.append(name)
print(f"\nREPRODUCED: {'; '.join(bad)}" if bad else "\nnot reproduced: both 4-bit models compile and match")
sys.exit(1 if bad else 0)
