"""tract: the ONNX Loop operator is not implemented: "Unimplemented(Loop) ... Operator can not be made a TypedOp".

Standalone (numpy, onnx, tract): python loop_unimplemented.py  ->  exit 1 while tract refuses the model, 0 once it
computes the loop, 2 when tract cannot be run.

Model: x int8 [4] -> Loop(3 trips) whose body takes the elementwise Max of the carried value and its rotation by
one -> y int8. (The suite's loop cases carry int8 storage through the body: data movement, exact.) Expected: after
3 rotations every element is the maximum of x. Actual (tract 0.23.9): refused when the model is typed. The same
holds for a float32 Loop: tract's ONNX front end parses Loop into an unimplemented placeholder.
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

X = np.array([3, -7, 12, 5], np.int8)


def model() -> onnx.ModelProto:
    body = helper.make_graph(
        [helper.make_node("Slice", ["acc_in", "one", "end", "axis"], ["tail"]),
         helper.make_node("Slice", ["acc_in", "zero", "one", "axis"], ["head"]),
         helper.make_node("Concat", ["tail", "head"], ["turned"], axis=0),
         helper.make_node("Max", ["acc_in", "turned"], ["acc_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", TensorProto.INT8, [4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.INT8, [4])],
        [numpy_helper.from_array(np.array([v], np.int64), n) for n, v in
         (("zero", 0), ("one", 1), ("end", 4), ("axis", 0))])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "", "x"], ["y"], body=body)], "loop",
        [helper.make_tensor_value_info("x", TensorProto.INT8, [4])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [4])],
        [numpy_helper.from_array(np.array(3, np.int64), "n")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def run_tract(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.onnx")
        onnx.save(m, path)
        return tract.onnx().load(path).into_model().into_runnable().run([x])[0].to_numpy()


print(f"tract {tract.version()}, numpy {np.__version__}, onnx {onnx.__version__}")
want = np.full(4, X.max(), np.int8)
try:
    got = run_tract(model(), X)
except tract.TractError as exc:
    print(f"Loop: tract refuses: {' '.join(str(exc).split('Stack backtrace:')[0].split())}")
    print("\nREPRODUCED")
    sys.exit(1)
print(f"Loop: y = {got.tolist()} (expected {want.tolist()})")
print("\nnot reproduced: Loop runs" if np.array_equal(got, want) else "\nREPRODUCED: wrong result")
sys.exit(0 if np.array_equal(got, want) else 1)
