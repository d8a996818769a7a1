"""OpenVINO: QuantizeLinear to integer storage rounds half to even on x / s + (zp - qmin), computed in float32, not on
x / s. The ONNX frontend lowers QuantizeLinear to FakeQuantize(input_low = (qmin - zp) * s, levels = 2^bits), so
when zp - qmin is odd every exact tie goes to the wrong neighbour, and with 16-bit storage the float32 sum can also
round a near-tie onto a tie.

Standalone (numpy, onnx, openvino): python quantize_linear_ties_offset_rounding.py  ->  exit 1 while an element
differs, 0 once all match, 2 when OpenVINO cannot be run.

Models (the suite's ties-uint8-float32 and zp-max-int16-float32): x float32 -> QuantizeLinear(s, zp) -> y, (a) uint8
with s 0.25, zp 3 (x / s = -2.5, -1.5, ..., all ties) and (b) int16 with s 2^-9, zp 32767. Expected: round half to
even of x / s (exact here: s is a power of two), plus zp, saturated. Actual (OpenVINO 2026.4.1): (a) every tie one
step off (-2.5 + 3 -> 0 instead of 1 ... ); (b) x = -7.006836 (x / s = -3587.50024) gives 29180 instead of 29179.
A control with an even zp - qmin (uint8 zp 4) matches.
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

TIES = np.arange(-0.625, 5.2, 0.25, dtype=np.float32)  # x / 0.25 = -2.5, -1.5, ..., 20.5
NEAR_TIE = np.array([-7.006836414337158, -6.127455711364746, -39.259666442871094], np.float32)
CASES = {  # name: storage, scale, zero point, x
    "(a) uint8, scale 0.25, zero point 3": (TensorProto.UINT8, 0.25, 3, TIES),
    "(b) int16, scale 2^-9, zero point 32767": (TensorProto.INT16, 2.0 ** -9, 32767, NEAR_TIE),
    "control: uint8, scale 0.25, zero point 4": (TensorProto.UINT8, 0.25, 4, TIES),
}


def model(storage: int, scale: float, zero_point: int, size: int) -> bytes:
    dtype = helper.tensor_dtype_to_np_dtype(storage)
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])], "quantize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [size])],
        [helper.make_tensor_value_info("y", storage, [size])],
        [numpy_helper.from_array(np.array(scale, np.float32), "s"),
         numpy_helper.from_array(np.array(zero_point, dtype), "z")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10).SerializeToString()


core = ov.Core()
print(f"OpenVINO {ov.get_version()}, numpy {np.__version__}, onnx {onnx.__version__}")
bad = []
for name, (storage, scale, zero_point, x) in CASES.items():
    info = np.iinfo(helper.tensor_dtype_to_np_dtype(storage))
    want = np.clip(np.rint(x.astype(np.float64) / scale) + zero_point, info.min, info.max).astype(np.int64)
    got = core.compile_model(core.read_model(model(storage, scale, zero_point, x.size)), "CPU")([x])[0]
    wrong = np.flatnonzero(got.astype(np.int64) != want)
    print(f"\n{name}\n  x / s      = {(x.astype(np.float64) / scale).tolist()}\n  expected y = {want.tolist()}\n"
          f"  OpenVINO y = {got.tolist()}  ({wrong.size} of {x.size} differ)")
    if wrong.size:
        (print("  the control differs too: something else is wrong") if name.startswith("control") else
         bad.append(name))
print(f"\nREPRODUCED: ties (or near-ties) rounded on the offset value in {'; '.join(bad)}" if bad else
      "\nnot reproduced: QuantizeLinear rounds x / s half to even")
sys.exit(1 if bad else 0)
