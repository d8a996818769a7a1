"""tract: Round on a float64 tensor is refused when the model runs: "RoundHalfToEven does not support F64".

Standalone (numpy, onnx, tract): python round_float64_refused.py  ->  exit 1 while tract refuses the model, 0 once
it computes it, 2 when tract cannot be run.

Model: x float32 [6] -> Cast(float64) -> Round -> Cast(float32) -> y. QuantizeLinear at opset 21 has no int32
output, so a QDQ model writes quantization to int32 storage as float64 Div, Round, Add, Clip and Cast (float32 cannot
hold every int32). Expected: round half to even, [0, 2, -2, 2, 2, -4]. Actual (tract 0.23.9): the model loads and
optimizes, and running it fails with "Evaluating ... Round ... RoundHalfToEven does not support F64". The same model
in float32 runs (the control).
"""

import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

try:
    import tract
except ImportError:
    print("tract is not installed: pip install tract")
    sys.exit(2)

X = np.array([0.5, 1.5, -2.5, 2.4, 2.5, -3.5], np.float32)


def model(inner: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["wide"], to=inner),
         helper.make_node("Round", ["wide"], ["rounded"]),
         helper.make_node("Cast", ["rounded"], ["y"], to=TensorProto.FLOAT)], "round",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(X)])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [len(X)])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def run_tract(m: onnx.ModelProto) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "round.onnx")
        onnx.save(m, path)
        runnable = tract.onnx().load(path).into_model().into_runnable()
        return np.asarray(runnable.run([X])[0].to_numpy())


print(f"tract {tract.version()}, numpy {np.__version__}, onnx {onnx.__version__}")
want = np.rint(X.astype(np.float64)).astype(np.float32)
print(f"x = {X.tolist()}\nexpected y = {want.tolist()}")
control = run_tract(model(TensorProto.FLOAT))
print(f"float32 Round (control): y = {control.tolist()}")
try:
    got = run_tract(model(TensorProto.DOUBLE))
except tract.TractError as exc:
    print(f"float64 Round: refused: {' '.join(str(exc).split('Stack backtrace:')[0].split())}")
    print("\nREPRODUCED: tract cannot round a float64 tensor")
    sys.exit(1)
print(f"float64 Round: y = {got.tolist()}")
ok = np.array_equal(got, want)
print("\nnot reproduced: tract rounds float64" + ("" if ok else " (but not to the expected values)"))
sys.exit(0 if ok else 1)
