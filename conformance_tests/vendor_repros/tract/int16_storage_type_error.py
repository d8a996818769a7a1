"""tract: DequantizeLinear and QuantizeLinear with int16 or uint16 storage fail while tract types the model, with an
internal type error instead of a result or a clear refusal ("Tensor datum type error: tensor is I16, accessed as I32").

Standalone (numpy, onnx, tract): python int16_storage_type_error.py  ->  exit 1 while tract fails on any of the
four models, 0 once each computes the definition, 2 when tract cannot be run.

ONNX (opset 21) allows int16 / uint16 for both operators. Models: x (int16 / uint16, a graph input) ->
DequantizeLinear(scale 0.01, zero point 5) -> y float32; and x float32 -> QuantizeLinear(scale 0.01, zero point 5)
-> y int16 / uint16. Expected: y = 0.01 * (x - 5), and y = clamp(round(x / 0.01) + 5). Actual (tract 0.23.9):
DequantizeLinear: "tensor is I16, accessed as I32" (U16 alike); QuantizeLinear: "tensor is I16, accessed as I8".
Cause (tract's onnx/src/ops/quant.rs): both wire() functions read the zero point as u8 or i8 (QuantizeLinear) or as
u8, i8 or else i32 (DequantizeLinear): a 16-bit zero point is read as the wrong type and the typed view fails; the
per-axis QuantizeLinear path says so plainly ("unsupported per-axis output type I16").
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

SCALE, ZERO_POINT = 0.01, 5
CODES = np.array([-300, 0, 5, 1234])  # int16; uint16 adds 300
REALS = np.array([-2.955, 0.0, 0.05, 12.29], np.float32)


def model(op: str, storage: int, dtype: type) -> onnx.ModelProto:
    x_type, y_type = (storage, TensorProto.FLOAT) if op == "DequantizeLinear" else (TensorProto.FLOAT, storage)
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "scale", "zero_point"], ["y"])], op.lower(),
        [helper.make_tensor_value_info("x", x_type, [4])], [helper.make_tensor_value_info("y", y_type, [4])],
        [numpy_helper.from_array(np.array(SCALE, np.float32), "scale"),
         numpy_helper.from_array(np.array(ZERO_POINT, dtype), "zero_point")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def run_tract(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.onnx")
        onnx.save(m, path)
        return tract.onnx().load(path).into_model().into_runnable().run([x])[0].to_numpy()


print(f"tract {tract.version()}, numpy {np.__version__}, onnx {onnx.__version__}")
failed = []
for storage, dtype in ((TensorProto.INT16, np.int16), (TensorProto.UINT16, np.uint16)):
    codes = (CODES + (0 if dtype == np.int16 else 300)).astype(dtype)
    info = np.iinfo(dtype)
    cases = {"DequantizeLinear": (codes, (SCALE * (codes.astype(np.float64) - ZERO_POINT)).astype(np.float32)),
             "QuantizeLinear": (REALS, np.clip(np.rint(REALS.astype(np.float64) / np.float64(np.float32(SCALE)))
                                               + ZERO_POINT, info.min, info.max).astype(dtype))}
    for op, (x, want) in cases.items():
        label = f"{op} {np.dtype(dtype).name}"
        try:
            got = run_tract(model(op, storage, dtype), x)
        except tract.TractError as exc:
            failed.append(label)
            print(f"{label}: tract fails: {' '.join(str(exc).split('Stack backtrace:')[0].split())}")
            continue
        ok = np.allclose(got, want, rtol=0, atol=1e-6) if op == "DequantizeLinear" else np.array_equal(got, want)
        print(f"{label}: y = {got.tolist()} (expected {want.tolist()})")
        if not ok:
            failed.append(label)
print(f"\nREPRODUCED: {', '.join(failed)}" if failed else "\nnot reproduced: 16-bit storage works")
sys.exit(1 if failed else 0)
