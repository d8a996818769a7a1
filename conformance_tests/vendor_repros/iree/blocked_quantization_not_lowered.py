"""IREE: DequantizeLinear and QuantizeLinear with blocked parameters (ONNX opset 21's block_size: a scale per block
of elements along the axis, as 4-bit LLM weights use) do not compile: "failed to legalize onnx.DequantizeLinear
{torch.onnx.axis = 1, torch.onnx.block_size = 2}".

Standalone (numpy, onnx, iree-base-compiler, iree-base-runtime): python blocked_quantization_not_lowered.py  ->
exit 1 while either model fails to compile, 0 once both compute the definition, 2 when IREE cannot be run.

Models: x int8 [2, 4] (graph input) -> DequantizeLinear(axis 1, block_size 2, scale and zero point [2, 2]) -> y
float32; x float32 -> QuantizeLinear(same) -> y int8. The control is the same DequantizeLinear with per-axis
parameters (one scale per row), which compiles. Expected: each element scaled by its block's scale and zero point.
Actual (IREE 3.13.0): the importer keeps block_size, and no conversion pattern accepts it.
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

SCALE = np.array([[0.5, 0.25], [0.125, 1.0]], np.float32)  # [rows, blocks]: a block is 2 elements of a row
ZERO_POINT = np.array([[0, 3], [-2, 1]], np.int8)
CODES = np.array([[10, -20, 30, 40], [-50, 60, 70, -80]], np.int8)
REALS = np.array([[1.5, -2.0, 3.25, 4.0], [-5.5, 6.0, 7.0, -8.0]], np.float32)


def model(op: str, blocked: bool) -> onnx.ModelProto:
    x_type, y_type = ((TensorProto.INT8, TensorProto.FLOAT) if op == "DequantizeLinear"
                      else (TensorProto.FLOAT, TensorProto.INT8))
    scale, zero_point, attributes = ((SCALE, ZERO_POINT, {"axis": 1, "block_size": 2}) if blocked
                                     else (SCALE[:, 0], ZERO_POINT[:, 0], {"axis": 0}))
    graph = helper.make_graph(
        [helper.make_node(op, ["x", "scale", "zero_point"], ["y"], **attributes)], op.lower(),
        [helper.make_tensor_value_info("x", x_type, [2, 4])], [helper.make_tensor_value_info("y", y_type, [2, 4])],
        [numpy_helper.from_array(scale, "scale"), numpy_helper.from_array(zero_point, "zero_point")])
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


def check(label: str, op: str, blocked: bool) -> bool:
    """True when the model compiles and computes the definition."""
    scale = np.repeat(SCALE.astype(np.float64), 2, axis=1) if blocked else SCALE[:, :1].astype(np.float64)
    zero_point = np.repeat(ZERO_POINT, 2, axis=1) if blocked else ZERO_POINT[:, :1]
    x, want = ((CODES, scale * (CODES - zero_point)) if op == "DequantizeLinear"
               else (REALS, np.clip(np.rint(REALS / scale) + zero_point, -128, 127)))
    try:
        got = compile_and_run(model(op, blocked), x)
    except compiler.CompilerToolError as exc:
        errors = [line.strip() for line in str(exc).splitlines() if "error:" in line]
        print(f"{label}: iree-compile failed: {(errors or [str(exc).splitlines()[0]])[0][:240]}")
        return False
    ok = np.allclose(got.astype(np.float64), want, rtol=0, atol=1e-6)
    print(f"{label}: y = {got.tolist()}" + ("" if ok else f" (expected {want.tolist()})"))
    return ok


print(f"iree-base-compiler {version('iree-base-compiler')}, iree-base-runtime {version('iree-base-runtime')}, "
      f"numpy {np.__version__}, onnx {onnx.__version__}")
control = check("DequantizeLinear per-axis (control)", "DequantizeLinear", False)
failed = [op for op in ("DequantizeLinear", "QuantizeLinear") if not check(f"{op} blocked", op, True)]
if not control:
    print("\nthe per-axis control fails too: something else is wrong")
print(f"\nREPRODUCED: {', '.join(failed)}" if failed else "\nnot reproduced: blocked parameters compile")
sys.exit(1 if failed else 0)
