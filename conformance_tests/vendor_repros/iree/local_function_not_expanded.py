"""IREE: a node calling a model-local function (ModelProto.functions) does not compile: "failed to legalize
onnx.Poly".

Standalone (numpy, onnx, iree-base-compiler, iree-base-runtime): python local_function_not_expanded.py  ->  exit 1
while the model is refused, 0 once it compiles and computes the definition, 2 when IREE cannot be run.

Model: x float32 [2, 3] -> local.Poly -> y, where the model's function local.Poly (opset 21) is fy = fx * fx - fx.
Expected: x * x - x (onnx.reference and onnxruntime expand the function and give it). Actual (IREE 3.13.0): the ONNX
importer (iree.compiler.extras.onnx_importer, also behind iree-import-onnx) expands only functions that ONNX's
operator schemas define (ModuleCache.get_operator_function looks the op up with onnx.defs.get_schema) and never reads
ModelProto.functions, so the call stays an opaque onnx.Poly that iree-compile cannot convert. The same two nodes
written inline compile and are exact (the control); running onnx.inliner.inline_local_functions on the model
first is a workaround.
"""

import sys
from importlib.metadata import version

import numpy as np
import onnx
from onnx import TensorProto, helper

try:
    from iree import compiler, runtime
    from iree.compiler import ir
    from iree.compiler.extras import onnx_importer
except ImportError:
    print("IREE is not installed: pip install iree-base-compiler iree-base-runtime")
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


def compile_and_run(m: onnx.ModelProto, *inputs: np.ndarray, flags: tuple[str, ...] = ()) -> np.ndarray:
    info = onnx_importer.ModelInfo(onnx.shape_inference.infer_shapes(m))
    module = info.create_module(context=ir.Context()).operation
    onnx_importer.NodeImporter.define_function(info.main_graph, module).import_all()
    binary = compiler.compile_str(module.get_asm(), target_backends=["llvm-cpu"], input_type="onnx",
                                  extra_args=["--iree-llvmcpu-target-cpu=generic", *flags])
    context = runtime.SystemContext(config=runtime.Config("local-sync"))
    vm_module = runtime.VmModule.copy_buffer(context.instance, binary)
    context.add_vm_module(vm_module)
    return np.asarray(context.modules[vm_module.name][m.graph.name](*inputs).to_host())


def error_line(exc: Exception) -> str:
    """The first 'error:' line of iree-compile's diagnostics (or the importer's message)."""
    lines = [line.strip() for line in str(exc).splitlines() if "error:" in line]
    return (lines or str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


print(f"iree-base-compiler {version('iree-base-compiler')}, iree-base-runtime {version('iree-base-runtime')}, "
      f"numpy {np.__version__}, onnx {onnx.__version__}")
onnx.checker.check_model(model(True), full_check=True)
want = X * X - X
print(f"expected y = {want.tolist()}")
print(f"inline Mul, Sub (control): y = {compile_and_run(model(False), X).tolist()}")
try:
    got = compile_and_run(model(True), X)
except Exception as exc:  # iree-compile's CompilerToolError
    print(f"local function call: refused: {error_line(exc)}")
    print("\nREPRODUCED: IREE does not expand model-local functions")
    sys.exit(1)
print(f"local function call: y = {got.tolist()}")
ok = np.allclose(got, want)
print("\nnot reproduced: IREE expands the function" + ("" if ok else " (but not to the expected values)"))
sys.exit(0 if ok else 1)
