"""IREE: DequantizeLinear of float8 storage with per-axis scales (one scale per channel) does not compile: "failed
to legalize onnx.DequantizeLinear ... f8E4M3FN". The same operator with one scale for the tensor compiles and is
exact.

Standalone (numpy, onnx, iree-base-compiler, iree-base-runtime): python float8_per_axis_dequantize_not_lowered.py
->  exit 1 while any float8 type is refused per axis, 0 once all compile and compute the definition, 2 when IREE
cannot be run.

Model: x (float8 type, graph input [2, 3]) -> DequantizeLinear(scale float32 [3], axis 1, zero point +0 of the
type) -> y float32. Expected: y = x * scale[c] per column c (onnx.reference gives it). Actual
(IREE 3.13.0): iree-compile leaves the operator unconverted for float8e4m3fn, float8e4m3fnuz, float8e5m2 and
float8e5m2fnuz; with a scalar scale (the control) it compiles and is exact. A float8 weight of a MatMul quantized
per output channel is refused the same way.

Cause (torch-mlir, lib/Conversion/TorchOnnxToTorch/DefaultDomainAtoF.cpp, DequantizeLinear): a floating-point
operand with a rank-1 scale returns notifyMatchFailure("unimplemented: support for per-Channel Quantization for
floating point input not present"); QuantizeLinear has the same TODO for a float8 result.
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

TYPES = ("FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ")
CODES = np.array([[1.0, -2.0, 0.5], [4.0, 0.0, -1.5]])  # exact in every float8 type
SCALE = np.array([0.5, 2.0, 0.25], np.float32)


def model(storage: int, per_axis: bool) -> onnx.ModelProto:
    scale = SCALE if per_axis else SCALE[:1].reshape(())
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "scale", "zero_point"], ["y"], axis=1)], "dequantize",
        [helper.make_tensor_value_info("x", storage, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(scale, "scale"),
         helper.make_tensor("zero_point", storage, list(scale.shape), b"\x00" * scale.size, raw=True)])  # +0
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


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
refused = []
for name in TYPES:
    storage = getattr(TensorProto, name)
    x = CODES.astype(helper.tensor_dtype_to_np_dtype(storage))  # onnx's own (ml_dtypes) float8 type
    for per_axis in (False, True):
        want = CODES * (SCALE if per_axis else SCALE[0])
        label = f"{name.lower():15} {'per-axis' if per_axis else 'per-tensor (control)'}"
        try:
            got = compile_and_run(model(storage, per_axis), x)
        except Exception as exc:  # iree-compile's CompilerToolError
            print(f"{label}: refused: {error_line(exc)}")
            refused.append(label)
            continue
        ok = np.array_equal(got.astype(np.float64), want)
        print(f"{label}: y = {got.tolist()}" + ("" if ok else f" (expected {want.tolist()})"))
        if not ok:
            refused.append(label)
print(f"\nREPRODUCED: {len(refused)} refused or wrong" if refused else "\nnot reproduced: every float8 type compiles")
sys.exit(1 if refused else 0)
