"""IREE: a Loop without its optional condition input (ONNX's `for` loop: trip count only, cond "") does not compile:
"failed to legalize onnx.Loop". The same Loop with a condition input (a constant true) compiles and runs.

Standalone (numpy, onnx, iree-base-compiler, iree-base-runtime): python loop_without_condition_not_lowered.py  ->
exit 1 while the loop without condition fails, 0 once it computes the loop, 2 when IREE cannot be run.

Model: x int8 [4] -> Loop(trip count 3, condition "") whose body takes the elementwise Max of the carried value and
its rotation by one -> y int8 (the suite's loop cases carry int8 storage through such a body; float32 fails the
same way). Expected: after 3 rotations every element is the maximum of x. Actual (IREE 3.13.0): compile fails.
Likely cause: the importer passes the empty condition as !torch.none, and torch-mlir's onnx.Loop conversion expects
a tensor condition (the control differs only there).
"""

import sys
from importlib.metadata import version

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

try:
    from iree import compiler, runtime
    from iree.compiler import ir
    from iree.compiler.extras import onnx_importer
except ImportError:
    print("IREE is not installed: pip install iree-base-compiler iree-base-runtime")
    sys.exit(2)

X = np.array([3, -7, 12, 5], np.int8)


def model(with_condition: bool) -> onnx.ModelProto:
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
    constants = [numpy_helper.from_array(np.array(3, np.int64), "n")]
    if with_condition:
        constants.append(numpy_helper.from_array(np.array(True), "go"))
    graph = helper.make_graph(
        [helper.make_node("Loop", ["n", "go" if with_condition else "", "x"], ["y"], body=body)], "loop",
        [helper.make_tensor_value_info("x", TensorProto.INT8, [4])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [4])], constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def compile_and_run(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    info = onnx_importer.ModelInfo(onnx.shape_inference.infer_shapes(m))
    module = info.create_module(context=ir.Context()).operation
    onnx_importer.NodeImporter.define_function(info.main_graph, module).import_all()
    binary = compiler.compile_str(module.get_asm(), target_backends=["llvm-cpu"], input_type="onnx",
                                  extra_args=["--iree-llvmcpu-target-cpu=generic"])
    context = runtime.SystemContext(config=runtime.Config("local-sync"))
    vm_module = runtime.VmModule.copy_buffer(context.instance, binary)
    context.add_vm_module(vm_module)
    return np.asarray(context.modules[vm_module.name][m.graph.name](x).to_host())


def check(label: str, with_condition: bool) -> bool:
    want = np.full(4, X.max(), np.int8)
    try:
        got = compile_and_run(model(with_condition), X)
    except compiler.CompilerToolError as exc:
        errors = [line.strip() for line in str(exc).splitlines() if "error:" in line]
        print(f"{label}: iree-compile failed: {(errors or [str(exc).splitlines()[0]])[0][:240]}")
        return False
    print(f"{label}: y = {got.tolist()} (expected {want.tolist()})")
    return np.array_equal(got, want)


print(f"iree-base-compiler {version('iree-base-compiler')}, iree-base-runtime {version('iree-base-runtime')}, "
      f"numpy {np.__version__}, onnx {onnx.__version__}")
control = check("Loop with a condition input (control)", True)
subject = check("Loop without a condition input", False)
if not control:
    print("\nthe control fails too: something else is wrong")
print("\nnot reproduced: the loop without condition runs" if subject else "\nBUG REPRODUCED")
sys.exit(0 if subject else 1)
