"""IREE: DequantizeLinear and QuantizeLinear on uint16, int4 or uint4 storage do not compile ("failed to legalize
onnx.DequantizeLinear"), and int2 / uint2 tensors are refused by the ONNX importer ("Unknown ONNX tensor element
type: 26").

Standalone (numpy, onnx, iree-base-compiler, iree-base-runtime): python storage_types_refused.py  ->  exit 1 while
any of these storage types is refused, 0 once all compile and compute the definition, 2 when IREE cannot be run.

Models: x (storage type, graph input [6]) -> DequantizeLinear(scale 0.5, zero point 1) -> y float32, and x float32
-> QuantizeLinear(same) -> y (storage type). int8, uint8 and int16 are the controls (they compile and are exact).
Expected: y = 0.5 * (x - 1), and y = clamp(round(x / 0.5) + 1). Actual (IREE 3.13.0): uint16, int4 and uint4
import, but iree-compile leaves the two operators unconverted ("failed to legalize onnx.DequantizeLinear"); int2
and uint2 (ONNX 1.18's types) are unknown to the importer. Likely cause: torch-mlir's ONNX-to-torch conversion
builds the operators on torch's quantized tensors (torch.aten._make_per_tensor_quantized_tensor, then dequantize),
and torch has quantized types for 8-, 16- and 32-bit signed storage and uint8 only. The 4-bit types are refused as
weights of an 8-bit model too (DequantizeLinear of an int4 initializer).
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

CONTROLS = ("INT8", "UINT8", "INT16")
SUBJECTS = ("UINT16", "INT4", "UINT4", "INT2", "UINT2")
CODES = [1, 0, 3, 5, 2, 1]  # in every storage type's range
REALS = np.array([0.0, -0.5, 1.0, 2.5, 0.5, 1.5], np.float32)
SCALE, ZERO_POINT = 0.5, 1


def model(op: str, storage: int) -> onnx.ModelProto:
    x_type, y_type = (storage, TensorProto.FLOAT) if op == "DequantizeLinear" else (TensorProto.FLOAT, storage)
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "scale", "zero_point"], ["y"])], op.lower(),
        [helper.make_tensor_value_info("x", x_type, [6])], [helper.make_tensor_value_info("y", y_type, [6])],
        [numpy_helper.from_array(np.array(SCALE, np.float32), "scale"),
         numpy_helper.from_array(np.array(ZERO_POINT, helper.tensor_dtype_to_np_dtype(storage)), "zero_point")])
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


def check(name: str, op: str) -> bool:
    """True when the model compiles and computes the definition (compared as integers / reals)."""
    storage = getattr(TensorProto, name)
    np_type = helper.tensor_dtype_to_np_dtype(storage)  # ml_dtypes.int4 ... for the sub-byte types
    if op == "DequantizeLinear":
        x, want = np.array(CODES, np_type), SCALE * (np.array(CODES, np.float64) - ZERO_POINT)
    else:
        x, want = REALS, np.rint(REALS.astype(np.float64) / SCALE) + ZERO_POINT
    try:
        got = compile_and_run(model(op, storage), x)
    except Exception as exc:  # iree-compile's CompilerToolError, or the importer's own OnnxImportError
        lines = [line.strip() for line in str(exc).splitlines() if "error:" in line or "Unknown" in line]
        text = (lines or [str(exc).splitlines()[0]])[0]
        print(f"{name:6} {op}: refused: {text[:220]}")
        return False
    ok = np.array_equal(got.astype(np.float64), want)
    print(f"{name:6} {op}: y = {got.tolist()}" + ("" if ok else f" (expected {want.tolist()})"))
    return ok


print(f"iree-base-compiler {version('iree-base-compiler')}, iree-base-runtime {version('iree-base-runtime')}, "
      f"numpy {np.__version__}, onnx {onnx.__version__}")
controls = [check(name, op) for name in CONTROLS for op in ("DequantizeLinear", "QuantizeLinear")]
refused = sorted({name for name in SUBJECTS for op in ("DequantizeLinear", "QuantizeLinear") if not check(name, op)},
                 key=SUBJECTS.index)
if not all(controls):
    print("\na control failed too: something else is wrong")
print(f"\nREPRODUCED: refused {', '.join(refused)}" if refused else "\nnot reproduced: every storage type compiles")
sys.exit(1 if refused else 0)
