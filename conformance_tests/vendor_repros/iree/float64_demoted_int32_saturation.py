"""IREE: a float64 computation is silently run in float32 (iree-compile's default --iree-input-demote-f64-to-f32),
so quantizing to int32 storage saturates at 2147483520 (the largest float32 below 2^31) where the model's float64
Clip gives 2147483647.

Standalone (numpy, onnx, iree-base-compiler, iree-base-runtime): python float64_demoted_int32_saturation.py  ->  exit
1 while the default compile differs from the definition, 0 once it matches, 2 when IREE cannot be run.

Model (how a QDQ model at opset 21 quantizes to int32 storage; QuantizeLinear has no int32 output before opset 23):
x float32 [6] -> Cast(float64) -> Div(scale 2^-20) -> Round -> Clip(-2147483648, 2147483647) -> Cast(int32) -> y.
Expected: clamp(round_half_even(x / 2^-20), int32 range), all exact in float64: 2147483647 for x = 4096 and 1e6, and
1073741824, -3 ... for the others (onnxruntime gives exactly this). Actual (IREE 3.13.0, default flags): every
element that saturates high is 2147483520; the bound 2147483647 has no float32 value (it rounds to 2^31, which
int32 cannot hold). Compiled with --iree-input-demote-f64-to-f32=false (the control) the model gives the expected
values exactly.

The demotion is IREE's default (compiler/src/iree/compiler/Pipelines/Options.h: demoteF64ToF32 = true, "Converts
all f64 ops and values into f32 counterparts unconditionally"): a model whose float64 arithmetic is there for its
precision gets a different result, and nothing warns.
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

SCALE = 2.0 ** -20
X = np.array([4096.0, 1e6, 1024.0, -3.0 * SCALE, -4096.0, 0.25], np.float32)


def model() -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["wide"], to=TensorProto.DOUBLE),
         helper.make_node("Div", ["wide", "scale"], ["steps"]),
         helper.make_node("Round", ["steps"], ["rounded"]),
         helper.make_node("Clip", ["rounded", "low", "high"], ["saturated"]),
         helper.make_node("Cast", ["saturated"], ["y"], to=TensorProto.INT32)], "quantize_int32",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [len(X)])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [len(X)])],
        [numpy_helper.from_array(np.array(SCALE, np.float64), "scale"),
         numpy_helper.from_array(np.array(-2.0 ** 31, np.float64), "low"),
         numpy_helper.from_array(np.array(2.0 ** 31 - 1, np.float64), "high")])
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
want = np.clip(np.rint(X.astype(np.float64) / SCALE), -2.0 ** 31, 2.0 ** 31 - 1).astype(np.int64)
print(f"x = {X.tolist()}\nexpected y = {want.tolist()}")
control = compile_and_run(model(), X, flags=("--iree-input-demote-f64-to-f32=false",))
print(f"IREE, --iree-input-demote-f64-to-f32=false (control): y = {control.tolist()}")
got = compile_and_run(model(), X)
print(f"IREE, default flags: y = {got.tolist()}")
if not np.array_equal(control, want):
    print("\nthe control differs too: something else is wrong")
wrong = np.flatnonzero(got.astype(np.int64) != want)
print(f"\nREPRODUCED: {wrong.size} element(s) differ by default" if wrong.size else
      "\nnot reproduced: the default compile keeps float64")
sys.exit(1 if wrong.size else 0)
