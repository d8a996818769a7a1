"""Integer kernels against onnx.reference and onnxruntime, side by side in one process.

Two workloads from the issue, each on the same random int8 data:

- Conv: x 1x64x56x56, weights 64x64x3x3 per output channel (symmetric),
  pads 1, int32 bias, int8 output (115.6 M multiply-adds);
- MatMul: 1x512x768 @ 768x768, weights per output column, int8 output.

Each row times one implementation (median over --repeat rounds after one
warm-up; the implementations take turns within a round so that machine
noise hits them alike):

- ours (integer): onnx_qtypes ReferenceEvaluator(kernels="integer") on the typed model;
- ours (definitional): the same model through the definition (float64 via onnx.reference's Conv / MatMul);
- onnx.reference QLinearConv / QLinearMatMul on the equivalent QOperator model;
- onnxruntime QLinearConv / QLinearMatMul, 1 thread, on the same QOperator model.

It prints the ratios the issue sets targets for (at least 10x faster than
onnx.reference, at most 3x slower than onnxruntime) and how many outputs
differ from each peer (the peers requantize in float32; ours rounds the
exact value, so rare +-1 at near-ties are expected).

The BLAS behind numpy uses --threads threads (default 1, like the
onnxruntime session); the variable is set before numpy loads.

Run: python benchmarks/bench_kernels.py [--repeat 7] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="timed rounds per implementation (default 7)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads for numpy (default 1)")
    parser.add_argument("--skip-reference", action="store_true", help="leave out onnx.reference (slow)")
    return parser.parse_args()


ARGS = _arguments() if __name__ == "__main__" else None
if ARGS is not None:
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnx.reference  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from onnx_qtypes import QType, set_qtype  # noqa: E402
from onnx_qtypes.reference_ops import ReferenceEvaluator  # noqa: E402

IR_VERSION, OPSET = 10, 21


def _model(nodes, inputs, outputs, inits) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "bench", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def conv_workload(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (1, 64, 56, 56)).astype(np.int8)
    w = rng.integers(-127, 128, (64, 64, 3, 3)).astype(np.int8)
    x_scale, y_scale = np.float32(0.02), np.float32(0.9)
    w_scale = (rng.uniform(0.5, 1.5, 64) * 0.003).astype(np.float32)
    b_scale = (x_scale * w_scale).astype(np.float32)
    b = rng.integers(-20000, 20000, 64).astype(np.int32)
    y_zp = np.int8(-3)
    typed = _model([helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1])],
                   [helper.make_tensor_value_info("x", TensorProto.INT8, x.shape)],
                   [helper.make_tensor_value_info("y", TensorProto.INT8, (1, 64, 56, 56))],
                   [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    set_qtype(typed, "x", QType("int8", float(x_scale), 0))
    set_qtype(typed, "w", QType("int8", w_scale.astype(np.float64), [0] * 64, axis=0, schema="symmetric"))
    set_qtype(typed, "b", QType("int32", b_scale.astype(np.float64), [0] * 64, axis=0, schema="symmetric"))
    set_qtype(typed, "y", QType("int8", float(y_scale), int(y_zp)))
    inits = [numpy_helper.from_array(v, n) for n, v in (
        ("x_scale", np.array(x_scale)), ("x_zp", np.array(0, np.int8)), ("w", w), ("w_scale", w_scale),
        ("w_zp", np.zeros(64, np.int8)), ("y_scale", np.array(y_scale)), ("y_zp", np.array(y_zp)), ("b", b))]
    qop = _model([helper.make_node("QLinearConv", ["x", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp", "b"],
                                   ["y"], pads=[1, 1, 1, 1])],
                 [helper.make_tensor_value_info("x", TensorProto.INT8, x.shape)],
                 [helper.make_tensor_value_info("y", TensorProto.INT8, (1, 64, 56, 56))], inits)
    return {"name": "Conv 1x64x56x56 * 64x64x3x3, per-channel, pads 1, int32 bias", "typed": typed, "qop": qop,
            "feeds": {"x": x}, "peer": "QLinearConv"}


def matmul_workload(seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (1, 512, 768)).astype(np.int8)
    b = rng.integers(-127, 128, (768, 768)).astype(np.int8)
    a_scale, y_scale = np.float32(0.015), np.float32(0.6)
    b_scale = (rng.uniform(0.5, 1.5, 768) * 0.002).astype(np.float32)
    y_zp = np.int8(5)
    typed = _model([helper.make_node("MatMul", ["a", "b"], ["y"], name="matmul")],
                   [helper.make_tensor_value_info("a", TensorProto.INT8, a.shape)],
                   [helper.make_tensor_value_info("y", TensorProto.INT8, (1, 512, 768))],
                   [numpy_helper.from_array(b, "b")])
    set_qtype(typed, "a", QType("int8", float(a_scale), 0))
    set_qtype(typed, "b", QType("int8", b_scale.astype(np.float64), [0] * 768, axis=1, schema="symmetric"))
    set_qtype(typed, "y", QType("int8", float(y_scale), int(y_zp)))
    inits = [numpy_helper.from_array(v, n) for n, v in (
        ("a_scale", np.array(a_scale)), ("a_zp", np.array(0, np.int8)), ("b", b), ("b_scale", b_scale),
        ("b_zp", np.zeros(768, np.int8)), ("y_scale", np.array(y_scale)), ("y_zp", np.array(y_zp)))]
    qop = _model([helper.make_node("QLinearMatMul", ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"], ["y"])],
                 [helper.make_tensor_value_info("a", TensorProto.INT8, a.shape)],
                 [helper.make_tensor_value_info("y", TensorProto.INT8, (1, 512, 768))], inits)
    return {"name": "MatMul 1x512x768 @ 768x768, per-column, int8 out", "typed": typed, "qop": qop,
            "feeds": {"a": a}, "peer": "QLinearMatMul"}


def runners(workload: dict, skip_reference: bool) -> dict:
    import onnxruntime as ort

    feeds = workload["feeds"]
    integer = ReferenceEvaluator(workload["typed"], kernels="integer")
    definitional = ReferenceEvaluator(workload["typed"])
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(workload["qop"].SerializeToString(), options, providers=["CPUExecutionProvider"])
    out = {
        "ours (integer)": lambda: integer.run(None, feeds)[0],
        "ours (definitional)": lambda: definitional.run(None, feeds)[0],
        f"onnxruntime {workload['peer']} (1 thread)": lambda: session.run(None, feeds)[0],
    }
    if not skip_reference:
        reference = onnx.reference.ReferenceEvaluator(workload["qop"])
        out[f"onnx.reference {workload['peer']}"] = lambda: reference.run(None, feeds)[0]
    return out


def measure(workload: dict, repeat: int, skip_reference: bool) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    fns = runners(workload, skip_reference)
    outputs = {name: fn() for name, fn in fns.items()}  # warm-up, and the outputs to compare
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}, outputs


def report(workload: dict, medians: dict[str, float], outputs: dict[str, np.ndarray]) -> None:
    ours = outputs["ours (integer)"].astype(np.int64)
    base = medians["ours (integer)"]
    print(f"\n{workload['name']}")
    print(f"{'implementation':<38} {'median ms':>10} {'vs ours':>9} {'outputs differing from ours':>30}")
    for name, seconds in medians.items():
        diff = np.abs(outputs[name].astype(np.int64) - ours)
        detail = f"{int((diff > 0).sum())} / {diff.size} (max {int(diff.max())})"
        print(f"{name:<38} {seconds * 1e3:>10.1f} {seconds / base:>8.2f}x {detail:>30}")
    ref = [n for n in medians if n.startswith("onnx.reference")]
    runtime = [n for n in medians if n.startswith("onnxruntime")][0]
    if ref:
        print(f"  onnx.reference / ours = {medians[ref[0]] / base:.1f}x (target >= 10x)")
    print(f"  ours / onnxruntime    = {base / medians[runtime]:.2f}x (target <= 3x)")


def main() -> None:
    args = ARGS or _arguments()
    import onnxruntime

    print(f"numpy {np.__version__} (BLAS threads: {os.environ.get('OPENBLAS_NUM_THREADS', 'default')}), onnx {onnx.__version__}, "
          f"onnxruntime {onnxruntime.__version__}; median of {args.repeat} interleaved rounds, python {sys.version.split()[0]}")
    for workload in (conv_workload(), matmul_workload()):
        medians, outputs = measure(workload, args.repeat, args.skip_reference)
        report(workload, medians, outputs)


if __name__ == "__main__":
    main()
