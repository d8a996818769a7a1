"""IREE: Cast to int16 or uint16 does not compile: "failed to legalize onnx.Cast {torch.onnx.to = 5 : si64}"
(to = 4 for uint16). Cast to int8, uint8 and int32 compile (the controls).

Standalone (numpy, onnx, iree-base-compiler, iree-base-runtime): python cast_to_16bit_integer_not_lowered.py  ->
exit 1 while a 16-bit Cast is refused, 0 once both compile and compute the definition, 2 when IREE cannot be run.

Model: x float32 [5] -> Cast(to) -> y. (A QDQ model computing a dynamic 16-bit zero point, as DynamicQuantizeLinear
does for 8 bits, ends with Round and such a Cast.) Expected: the integers x holds, [0, 3, -7, 120, 42] (uint16:
their absolute values). Actual (IREE 3.13.0): int16 and uint16 are refused; the controls are exact.

Cause (torch-mlir, lib/Conversion/TorchOnnxToTorch/Utils.cpp, onnxDtypeIntToTorchDtypeInt): the ONNX-to-torch
element type table maps FLOAT, UINT8, INT8, INT32, INT64, BOOL, FLOAT16, DOUBLE and BFLOAT16 only, so Cast
(DefaultDomainAtoF.cpp) returns notifyMatchFailure("unimplemented support for the given dtype conversion") for
INT16 (5) and UINT16 (4), although torch has int16.
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

X = np.array([0.0, 3.0, -7.0, 120.0, 42.0], np.float32)
CONTROLS = ("INT8", "UINT8", "INT32")
SUBJECTS = ("INT16", "UINT16")


def model(to: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=to)], "cast",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(X)])],
        [helper.make_tensor_value_info("y", to, [len(X)])])
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


def check(name: str) -> bool:
    to = getattr(TensorProto, name)
    dtype = helper.tensor_dtype_to_np_dtype(to)
    x = np.abs(X) if name.startswith("U") else X
    want = x.astype(np.int64)
    try:
        got = compile_and_run(model(to), x).view(dtype).astype(np.int64)  # IREE's integers are signless
    except Exception as exc:  # iree-compile's CompilerToolError
        print(f"Cast to {name.lower():6}: refused: {error_line(exc)}")
        return False
    ok = np.array_equal(got, want)
    print(f"Cast to {name.lower():6}: y = {got.tolist()}" + ("" if ok else f" (expected {want.tolist()})"))
    return ok


controls = [check(name) for name in CONTROLS]
refused = [name.lower() for name in SUBJECTS if not check(name)]
if not all(controls):
    print("\na control failed too: something else is wrong")
print(f"\nREPRODUCED: Cast to {', '.join(refused)} refused" if refused else "\nnot reproduced: 16-bit Casts compile")
sys.exit(1 if refused else 0)
