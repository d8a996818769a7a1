"""OpenVINO's ONNX frontend does not read int2 / uint2 (ONNX IR 11, opset 25) nor float8e4m3fnuz / float8e5m2fnuz
tensors: read_model fails with 'Unsupported data type INT2 expected: ...' (the suite's message: 'Loading input
model Unsupported type'), before anything runs.

Standalone (numpy, onnx, openvino): python onnx_frontend_type_unsupported.py  ->  exit 1 while a type is refused (or
dequantizes wrong), 0 once every model loads and dequantizes exactly, 2 when OpenVINO cannot be run.

Model, per type: x <type> [4] -> DequantizeLinear(scale 0.5, zero point 0 of the type) -> y float32, opset 25 for
the 2-bit types and 21 for the fnuz ones. Expected: y = 0.5 * x (codes chosen so every real is exact). Actual
(OpenVINO 2026.4.1): read_model raises 'Unsupported data type' for all four.
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

# type: (opset, raw bytes of x, its values, zero-point bytes); 2-bit codes pack four a byte, the first lowest
TYPES = {
    "INT2": (25, bytes([0b00_11_10_01]), [1.0, -2.0, -1.0, 0.0], b"\x00"),  # codes 1, -2, -1, 0
    "UINT2": (25, bytes([0b11_10_01_00]), [0.0, 1.0, 2.0, 3.0], b"\x00"),
    "FLOAT8E4M3FNUZ": (21, bytes([0x40, 0x48, 0xC0, 0x00]), [1.0, 2.0, -1.0, 0.0], b"\x00"),
    "FLOAT8E5M2FNUZ": (21, bytes([0x40, 0x44, 0xC0, 0x00]), [1.0, 2.0, -1.0, 0.0], b"\x00"),
}


def model(name: str) -> tuple[bytes, bytes]:
    """The model (x as an initializer-free graph input) and x's raw bytes."""
    opset, raw, _, zero = TYPES[name]
    storage = getattr(TensorProto, name)
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"])], "dequantize",
        [helper.make_tensor_value_info("x", storage, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(np.array(0.5, np.float32), "s"), helper.make_tensor("z", storage, [], zero, raw=True)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=11 if opset > 21 else 10)
    return m.SerializeToString(), raw


def message(exc: Exception) -> str:
    """The informative line of OpenVINO's error (its first lines only locate the C++ frames)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return next((line for line in lines if not line.startswith(("Exception from", "Check "))), lines[0])[:300]


core = ov.Core()
print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
bad = []
for name, (_, _, values, _) in TYPES.items():
    onnx_model, raw = model(name)
    want = 0.5 * np.array(values, np.float32)
    try:
        compiled = core.compile_model(core.read_model(onnx_model), "CPU")
    except RuntimeError as exc:
        print(f"{name.lower()}: read/compile failed: {message(exc)}")
        bad.append(name.lower())
        continue
    port = compiled.inputs[0]
    tensor = ov.Tensor(port.get_element_type(), [4])
    np.asarray(tensor.data).reshape(-1).view(np.uint8)[:len(raw)] = np.frombuffer(raw, np.uint8)
    request = compiled.create_infer_request()
    request.infer({0: tensor})
    got = np.array(request.get_output_tensor(0).data)
    print(f"{name.lower()}: expected y = {want.tolist()}, OpenVINO y = {got.tolist()}")
    if not np.array_equal(got, want):
        bad.append(name.lower())
print(f"\nREPRODUCED: refused or wrong: {', '.join(bad)}" if bad else "\nnot reproduced: every type loads")
sys.exit(1 if bad else 0)
