"""IREE: QuantizeLinear to integer storage maps NaN to the storage type's minimum (int8 -128, uint8 0, int16 -32768)
instead of the zero point.

Standalone (numpy, onnx, iree-base-compiler, iree-base-runtime): python quantize_linear_nan_to_storage_min.py  ->
exit 1 while a NaN element differs, 0 once every element matches, 2 when IREE cannot be run.

Model: x float32 [6] -> QuantizeLinear(scale 0.5, zero point z) -> y, for int8 (z = -3), uint8 (z = 141) and int16
(z = 1000). Expected: NaN has no quantized value; the conformance suite's definition gives it the zero point (real
0), +-inf saturate and finite values round half to even. (ONNX's QuantizeLinear leaves NaN to integer storage
undefined, and onnxruntime and OpenVINO give the storage minimum as IREE does; tract gives the zero point.)
Actual (IREE 3.13.0): every element but NaN is as expected; NaN gives the storage minimum, whatever the zero point.
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

SCALE = 0.5
X = np.array([np.nan, np.inf, -np.inf, 2.25, -1.75, np.nan], np.float32)
STORAGE = {"INT8": -3, "UINT8": 141, "INT16": 1000}


def model(storage: int, zero_point: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "scale", "zero_point"], ["y"])], "quantize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(X)])],
        [helper.make_tensor_value_info("y", storage, [len(X)])],
        [numpy_helper.from_array(np.array(SCALE, np.float32), "scale"),
         numpy_helper.from_array(np.array(zero_point, helper.tensor_dtype_to_np_dtype(storage)), "zero_point")])
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
print(f"x = {X.tolist()}, scale {SCALE}")
bad = False
for name, zero_point in STORAGE.items():
    storage = getattr(TensorProto, name)
    info = np.iinfo(helper.tensor_dtype_to_np_dtype(storage))
    steps = np.nan_to_num(X.astype(np.float64) / SCALE, nan=0.0, posinf=1e300, neginf=-1e300)  # NaN: real 0
    want = np.clip(np.rint(steps) + zero_point, info.min, info.max).astype(np.int64)
    # IREE's integers are signless: a uint8 result comes back as int8 holding the same bits
    got = compile_and_run(model(storage, zero_point), X).view(info.dtype).astype(np.int64)
    print(f"\n{name.lower()}, zero point {zero_point}:\n  expected y = {want.tolist()}\n  IREE     y = {got.tolist()}")
    wrong = np.flatnonzero(got != want)
    if wrong.size and not np.isnan(X[wrong]).all():
        print("  a non-NaN element differs too: something else is wrong")
    bad |= wrong.size > 0
print("\nREPRODUCED: NaN does not give the zero point" if bad else "\nnot reproduced: NaN gives the zero point")
sys.exit(1 if bad else 0)
