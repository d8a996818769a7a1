"""IREE: a graph input that an initializer also names is imported as a constant, so the compiled function takes
no argument for it and a value given at run time cannot override the initializer's default.

Standalone (numpy, onnx, iree-base-compiler, iree-base-runtime): python initializer_input_not_overridable.py  ->
exit 1 while the input is not an argument (or the fed value is not used), 0 once it is, 2 when IREE cannot be run.

Model (the shape of the suite's dynamic-graph-input-storage-int8-float32 after lower): x int8 [6] and zp int8 []
graph inputs, zp also an initializer (0; ONNX IR >= 4: an initializer that names a graph input is that input's
default value, which a value given at run time replaces), scale 0.5 a constant; y = DequantizeLinear(x, 0.5, zp).
Fed zp = -11. Expected: y = 0.5 * (x + 11) (onnxruntime 1.32 gives it). Actual (IREE 3.13.0): the ONNX importer
(iree.compiler.extras.onnx_importer, also behind iree-import-onnx) keeps only the inputs no initializer names
(GraphInfo.input_map), so the function's one argument is x and y = 0.5 * x.
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

X = np.array([-128, -11, -1, 0, 5, 116], np.int8)
ZP = np.array(-11, np.int8)
graph = helper.make_graph(
    [helper.make_node("DequantizeLinear", ["x", "s", "zp"], ["y"])], "overridable",
    [helper.make_tensor_value_info("x", TensorProto.INT8, [6]), helper.make_tensor_value_info("zp", TensorProto.INT8, [])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])],
    [numpy_helper.from_array(np.array(0.5, np.float32), "s"), numpy_helper.from_array(np.array(0, np.int8), "zp")])
model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21)])
onnx.checker.check_model(model, full_check=True)

print(f"iree-base-compiler {version('iree-base-compiler')}, iree-base-runtime {version('iree-base-runtime')}, "
      f"numpy {np.__version__}, onnx {onnx.__version__}")
want = 0.5 * (X.astype(np.float32) - np.float32(ZP))
print(f"x = {X.tolist()}, fed zp = {int(ZP)}\nexpected y = {want.tolist()}")
info = onnx_importer.ModelInfo(model)
arguments = list(info.main_graph.input_map)
print(f"the importer's function arguments: {arguments}")
module = info.create_module(context=ir.Context()).operation
onnx_importer.NodeImporter.define_function(info.main_graph, module).import_all()
binary = compiler.compile_str(module.get_asm(), target_backends=["llvm-cpu"], input_type="onnx",
                              extra_args=["--iree-llvmcpu-target-cpu=generic"])
context = runtime.SystemContext(config=runtime.Config("local-sync"))
vm_module = runtime.VmModule.copy_buffer(context.instance, binary)
context.add_vm_module(vm_module)
function = context.modules[vm_module.name][model.graph.name]
if "zp" not in arguments:
    got = np.asarray(function(X).to_host())
    print(f"y without the zp argument (there is none) = {got.tolist()}")
    print("\nREPRODUCED: the initializer-backed input zp is a constant; the fed value cannot override it")
    sys.exit(1)
got = np.asarray(function(X, ZP).to_host())
print(f"IREE y = {got.tolist()}")
ok = np.array_equal(got, want)
print("\nnot reproduced: the fed zp is used" if ok else "\nREPRODUCED: the fed zp is not used")
sys.exit(0 if ok else 1)
