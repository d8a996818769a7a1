"""IREE: DynamicQuantizeLinear of an all-zero input returns y_scale 0, which is no scale (dequantizing with it loses
every value; dividing by it is 0 / 0). y and y_zero_point are right.

Standalone (numpy, onnx, iree-base-compiler, iree-base-runtime): python dynamic_quantize_linear_all_zero_scale.py  ->
exit 1 while y_scale is not a positive finite value, 0 once it is (and y, y_zero_point are 0), 2 when IREE cannot
be run.

Model: x float32 [2, 3] -> DynamicQuantizeLinear -> y uint8, y_scale float32, y_zero_point uint8. Expected: y = 0 and
y_zero_point = 0 for x all zeros; y_scale any positive finite value. ONNX's formula (max(x, 0) - min(x, 0)) / 255 is
0 / 255 here and its zero point -min / y_scale is 0 / 0: the operator defines no scale for this input, and
onnxruntime returns 1 (the conformance suite's reference 1/255). Actual (IREE 3.13.0): y = 0, y_zero_point = 0,
y_scale = 0. One element of 1e-30 among the zeros (the control) gives a positive scale.

Source: torch-mlir lib/Conversion/TorchOnnxToTorch/DefaultDomainAtoF.cpp, DynamicQuantizeLinear: the formula taken
literally, scale = (max(0, max(x)) - min(0, min(x))) / 255, with no case for an empty range.
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


def model() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zero_point"])], "dynamic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 3]),
         helper.make_tensor_value_info("y_scale", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("y_zero_point", TensorProto.UINT8, [])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


print(f"iree-base-compiler {version('iree-base-compiler')}, iree-base-runtime {version('iree-base-runtime')}, "
      f"numpy {np.__version__}, onnx {onnx.__version__}")


def run(x: np.ndarray) -> tuple[np.ndarray, float, int]:
    info = onnx_importer.ModelInfo(onnx.shape_inference.infer_shapes(model()))
    module = info.create_module(context=ir.Context()).operation
    onnx_importer.NodeImporter.define_function(info.main_graph, module).import_all()
    binary = compiler.compile_str(module.get_asm(), target_backends=["llvm-cpu"], input_type="onnx",
                                  extra_args=["--iree-llvmcpu-target-cpu=generic"])
    context = runtime.SystemContext(config=runtime.Config("local-sync"))
    vm_module = runtime.VmModule.copy_buffer(context.instance, binary)
    context.add_vm_module(vm_module)
    y, scale, zero_point = (np.asarray(v.to_host()) for v in context.modules[vm_module.name]["dynamic"](x))
    return y.view(np.uint8), float(scale), int(zero_point.view(np.uint8))  # IREE's integers are signless


control = np.zeros((2, 3), np.float32)
control[0, 0] = 1e-30
_, scale, zero_point = run(control)
print(f"x with one 1e-30 (control): y_scale = {scale!r}, y_zero_point = {zero_point}")
y, scale, zero_point = run(np.zeros((2, 3), np.float32))
print(f"x all zeros: y = {y.ravel().tolist()}, y_zero_point = {zero_point}, y_scale = {scale!r}")
print("expected: y all 0, y_zero_point 0, y_scale positive and finite")
if y.any() or zero_point != 0:
    print("\ny or y_zero_point differs too: something else is wrong")
ok = bool(np.isfinite(scale) and scale > 0) and not y.any() and zero_point == 0
print("\nnot reproduced: y_scale is positive" if ok else "\nREPRODUCED: y_scale is not a positive finite value")
sys.exit(0 if ok else 1)
