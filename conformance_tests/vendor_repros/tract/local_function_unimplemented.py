"""tract: a node calling a model-local function (ModelProto.functions) is refused: "Unimplemented(Poly) ...
Operator can not be made a TypedOp".

Standalone (numpy, onnx, tract): python local_function_unimplemented.py  ->  exit 1 while tract refuses the model, 0
once it computes it, 2 when tract cannot be run.

Model: x float32 [2, 3] -> local.Poly -> y, where the model's function local.Poly (opset 21) is fy = fx * fx - fx.
Expected: x * x - x (onnx.reference and onnxruntime expand the function and give it). Actual (tract 0.23.9): the
ONNX front end looks the node up among its operators only and does not expand ModelProto.functions, so the call
becomes an unimplemented placeholder that typing refuses. The same two nodes written inline run (the control).
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

X = np.array([[0.5, -1.0, 2.0], [3.0, -0.25, 0.0]], np.float32)
BODY = [helper.make_node("Mul", ["fx", "fx"], ["sq"]), helper.make_node("Sub", ["sq", "fx"], ["fy"])]


def model(call: bool) -> onnx.ModelProto:
    nodes = [helper.make_node("Poly", ["x"], ["y"], domain="local")] if call else [
        helper.make_node("Mul", ["x", "x"], ["sq"]), helper.make_node("Sub", ["sq", "x"], ["y"])]
    graph = helper.make_graph(nodes, "poly", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    function = helper.make_function("local", "Poly", ["fx"], ["fy"], BODY, [helper.make_opsetid("", 21)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("local", 1)],
                             ir_version=10, functions=[function] if call else [])


def run_tract(m: onnx.ModelProto) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "poly.onnx")
        onnx.save(m, path)
        runnable = tract.onnx().load(path).into_model().into_runnable()
        return np.asarray(runnable.run([X])[0].to_numpy())


print(f"tract {tract.version()}, numpy {np.__version__}, onnx {onnx.__version__}")
onnx.checker.check_model(model(True), full_check=True)
want = X * X - X
print(f"expected y = {want.tolist()}")
print(f"inline Mul, Sub (control): y = {run_tract(model(False)).tolist()}")
try:
    got = run_tract(model(True))
except tract.TractError as exc:
    print(f"local function call: refused: {' '.join(str(exc).split('Stack backtrace:')[0].split())}")
    print("\nREPRODUCED: tract does not expand model-local functions")
    sys.exit(1)
print(f"local function call: y = {got.tolist()}")
ok = np.allclose(got, want)
print("\nnot reproduced: tract expands the function" + ("" if ok else " (but not to the expected values)"))
sys.exit(0 if ok else 1)
