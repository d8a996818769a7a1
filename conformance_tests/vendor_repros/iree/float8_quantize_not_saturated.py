"""IREE: QuantizeLinear to float8 does not saturate: with saturate=1 (the default) a value beyond the type's
largest finite value, or +-inf, must become +-that largest value; IREE gives NaN (float8e4m3fn, float8e4m3fnuz,
float8e5m2fnuz) or +-inf (float8e5m2).

Standalone (numpy, onnx, iree-base-compiler, iree-base-runtime): python float8_quantize_not_saturated.py  ->  exit 1
while any element differs from the definition, 0 once every one matches, 2 when IREE cannot be run.

Model: x float32 [8] -> QuantizeLinear(scale 0.25 float32, zero point 0 of the float8 type, saturate unset) -> y.
Expected (ONNX QuantizeLinear, saturate=1): x / 0.25 rounded to the float8 type, out-of-range values and +-inf
clamped to +-max (448, 240, 57344, 57344), NaN kept NaN. onnx.reference gives exactly this for all four types,
and so does onnxruntime (ORT_DISABLE_ALL) for float8e4m3fn.
Actual (IREE 3.13.0): the in-range elements and NaN are right; every out-of-range element and +-inf comes back NaN
(e4m3fn, e4m3fnuz, e5m2fnuz: types without infinity) or +-inf (e5m2).

Cause (torch-mlir, lib/Conversion/TorchOnnxToTorch/DefaultDomainQtoZ.cpp, QuantizeLinear, "Case 3" for a floating
point result): x / scale + zero_point is converted with torch.aten.to.dtype, a plain float truncation; the saturate
attribute is never read and nothing clamps before the conversion.
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

SCALE = 0.25
X = np.array([1.25, -7.5, 5.0, 1e3, -1e6, np.inf, -np.inf, np.nan], np.float32)  # x / 0.25 of the first 3 exact
LARGEST = {"FLOAT8E4M3FN": 448.0, "FLOAT8E4M3FNUZ": 240.0, "FLOAT8E5M2": 57344.0, "FLOAT8E5M2FNUZ": 57344.0}


def model(storage: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "scale", "zero_point"], ["y"])], "quantize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(X)])],
        [helper.make_tensor_value_info("y", storage, [len(X)])],
        [numpy_helper.from_array(np.array(SCALE, np.float32), "scale"),
         helper.make_tensor("zero_point", storage, [], b"\x00", raw=True)])  # +0 in every float8 type
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def compile_and_run(m: onnx.ModelProto, *inputs: np.ndarray) -> np.ndarray:
    info = onnx_importer.ModelInfo(onnx.shape_inference.infer_shapes(m))
    module = info.create_module(context=ir.Context()).operation
    onnx_importer.NodeImporter.define_function(info.main_graph, module).import_all()
    binary = compiler.compile_str(module.get_asm(), target_backends=["llvm-cpu"], input_type="onnx",
                                  extra_args=["--iree-llvmcpu-target-cpu=generic"])
    context = runtime.SystemContext(config=runtime.Config("local-sync"))
    vm_module = runtime.VmModule.copy_buffer(context.instance, binary)
    context.add_vm_module(vm_module)
    return np.asarray(context.modules[vm_module.name][m.graph.name](*inputs).to_host())


print(f"iree-base-compiler {version('iree-base-compiler')}, iree-base-runtime {version('iree-base-runtime')}, "
      f"numpy {np.__version__}, onnx {onnx.__version__}")
print(f"x = {X.tolist()}, scale {SCALE}")
bad = []
for name, largest in LARGEST.items():
    storage = getattr(TensorProto, name)
    float8 = helper.tensor_dtype_to_np_dtype(storage)  # onnx's own (ml_dtypes) float8 type
    # clamp, then round to nearest even in the float8 type; NaN stays NaN
    want = np.clip(X.astype(np.float64) / SCALE, -largest, largest).astype(float8).astype(np.float64)
    got = compile_and_run(model(storage), X).view(float8).astype(np.float64)  # float8 bytes, read as the type
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    print(f"\n{name.lower()}:\n  expected y = {want.tolist()}\n  IREE     y = {got.tolist()}")
    if not same.all():
        bad.append(name.lower())
print(f"\nREPRODUCED: not saturated for {', '.join(bad)}" if bad else "\nnot reproduced: every type saturates")
sys.exit(1 if bad else 0)
