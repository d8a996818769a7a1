"""Record what onnxruntime computes on the known deviations from the definition.

Each reproduction below is a minimal model (built here, or one corpus model)
with fixed inputs. For each, this script computes

- our reference output (``onnx_qtypes.reference_ops.ReferenceEvaluator``),
- onnxruntime's *unoptimized* output (every graph optimization disabled,
  ``ORT_DISABLE_ALL``: its definition path, DequantizeLinear -> float op ->
  QuantizeLinear as written),
- onnxruntime's *optimized* output (the default session: fused QLinear* /
  QGemm / 16-bit QDQ kernels),

and writes them, with the distances in quantization steps and a verdict, to
``onnxruntime-<version>.json`` beside this file. The records are measured
vendor results, not expectations: tests check their form and our own column,
never the vendor's numbers.

    python conformance_tests/vendor_results/record_onnxruntime.py [--out DIR] [--save-models DIR]

Exit codes: 0 recorded; 2 onnxruntime missing or the command misused.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import pathlib
import platform
import re
import sys
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import QType, lift, lower, set_qtype
from onnx_qtypes.reference_ops import ReferenceEvaluator, dequantize

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
IR_VERSION, OPSET = 10, 21  # what onnxruntime 1.20 .. 1.32 load
FORMAT = 1  # bump when the record layout changes
TOLERANCE = 1  # steps: the suite's widest allowance for an integer implementation
REQUIRED_KEYS = ("format", "vendor", "version", "environment", "command", "deviations")
DEVIATION_KEYS = ("id", "description", "reproduction", "output", "step", "reference", "unoptimized", "optimized",
                  "max_steps", "verdict")


def f32(value: float) -> float:
    """The nearest float32 (QuantizeLinear / DequantizeLinear store float scales in float32)."""
    return float(np.float32(value))


@dataclasses.dataclass
class Reproduction:
    """One deviation: the model a vendor runs, its inputs, and how our reference computes the same thing."""

    description: str  # what the vendor's optimized path does differently, in one paragraph
    model: str  # the model in words
    vendor_model: onnx.ModelProto  # plain ONNX (no extension fields)
    feeds: dict[str, np.ndarray]
    output: str
    ours: Callable[[], np.ndarray]
    step: float = 1.0  # one quantization step of the output: 1 for storage integers, the scale for dequantized floats
    vendor_dependent: bool = False  # True when the vendor's own tools built the model (then it may differ by version)


def _graph_model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "reproduction", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)


def _typed_one_node(op: str, inputs: list[tuple], outputs: list[tuple], inits: dict[str, np.ndarray] | None = None,
                    **attrs) -> onnx.ModelProto:
    """A typed one-node model; inputs/outputs are (name, storage elem_type, shape, QType)."""
    inits = inits or {}
    node = helper.make_node(op, [n for n, *_ in inputs], [n for n, *_ in outputs], name="node", **attrs)
    model = _graph_model(
        [node],
        [helper.make_tensor_value_info(n, t, s) for n, t, s, _ in inputs if n not in inits],
        [helper.make_tensor_value_info(n, t, s) for n, t, s, _ in outputs],
        [numpy_helper.from_array(v, n) for n, v in inits.items()],
    )
    for name, _, _, qtype in [*inputs, *outputs]:
        set_qtype(model, name, qtype)
    return model


def _single_op(typed: onnx.ModelProto, feeds: dict[str, np.ndarray], description: str, text: str) -> Reproduction:
    output = typed.graph.output[0].name
    return Reproduction(description, text, lower(typed), feeds, output,
                        lambda: ReferenceEvaluator(typed).run([output], feeds)[0])


# --- the reproductions ------------------------------------------------------------------------------------


def matmul_a16w8() -> Reproduction:
    rng = np.random.default_rng(0)
    w = rng.integers(-127, 128, (16, 8)).astype(np.int8)
    x = rng.integers(-8000, 8000, (2, 16)).astype(np.int16)
    typed = _typed_one_node(
        "MatMul",
        [("x", TensorProto.INT16, [2, 16], QType("int16", 2.0**-12, 0)), ("w", TensorProto.INT8, [16, 8], QType("int8", f32(0.01), 0))],
        [("y", TensorProto.INT16, [2, 8], QType("int16", 2.0**-9, 0))], {"w": w})
    return _single_op(
        typed, {"x": x},
        "16-bit activations, 8-bit weights: an optimized session may run DQ -> MatMul -> Q through a fused "
        "integer kernel; the definition is the unoptimized float path (DequantizeLinear -> MatMul -> "
        "QuantizeLinear), which the reference follows. A deviation here is the fused kernel's, in int16 steps.",
        "MatMul(x: int16 [2,16] scale 2^-12 zp 0, w: int8 [16,8] initializer scale float32(0.01) zp 0, drawn by "
        "numpy default_rng(0)) -> y: int16 [2,8] scale 2^-9 zp 0; lowered by onnx_qtypes.lower to QDQ")


def matmul_u16u8() -> Reproduction:
    rng = np.random.default_rng(0)
    w = rng.integers(0, 256, (16, 8)).astype(np.uint8)
    x = (rng.integers(-8000, 8000, (2, 16)) + 32768).astype(np.uint16)
    typed = _typed_one_node(
        "MatMul",
        [("x", TensorProto.UINT16, [2, 16], QType("uint16", 2.0**-12, 32768)),
         ("w", TensorProto.UINT8, [16, 8], QType("uint8", f32(0.01), 128))],
        [("y", TensorProto.UINT16, [2, 8], QType("uint16", 2.0**-9, 32768))], {"w": w})
    return _single_op(
        typed, {"x": x},
        "The same fused 16-bit QDQ path with unsigned storage (uint16 activations, uint8 weights, non-zero zero "
        "points).",
        "MatMul(x: uint16 [2,16] scale 2^-12 zp 32768, w: uint8 [16,8] initializer scale float32(0.01) zp 128, "
        "drawn by numpy default_rng(0)) -> y: uint16 [2,8] scale 2^-9 zp 32768; lowered by onnx_qtypes.lower")


def _corpus(name: str) -> Reproduction:
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from corpus import corpus_feeds, corpus_models
    finally:
        sys.path.remove(str(ROOT / "tests"))
    from onnx_qtypes import get_qtype

    q = corpus_models()[name]
    typed = lift(q)
    feeds = corpus_feeds(name, 0)
    output = typed.graph.output[0].name
    dq = next(n for n in typed.graph.node if output in n.output)
    step = get_qtype(typed, dq.input[0]).scale[0]
    return Reproduction(
        f"The corpus model {name} (tests/corpus.py: onnxruntime.quantization.quantize_static of a two-layer MLP): "
        "the same 16-bit fused QDQ kernels on a whole model, in steps of the output's scale.",
        f"tests/corpus.py corpus_models()['{name}'], input corpus_feeds('{name}', 0); ours: lift(model)",
        q, feeds, output, lambda: ReferenceEvaluator(typed).run([output], feeds)[0], step=step, vendor_dependent=True)


def corpus_mlp_a16w8() -> Reproduction:
    return _corpus("mlp-qdq_a16w8")


def corpus_mlp_u16_u4() -> Reproduction:
    return _corpus("mlp-qdq_u16_u4")


def average_pool_ceil_mode_edge_window() -> Reproduction:
    x = np.array([89, 35, 2, -59], np.int8).reshape(1, 1, 4, 1)
    typed = _typed_one_node(
        "AveragePool", [("x", TensorProto.INT8, [1, 1, 4, 1], QType("int8", f32(0.05), 3))],
        [("y", TensorProto.INT8, [1, 1, 2, 1], QType("int8", f32(0.04), -2))],
        kernel_shape=[3, 1], strides=[2, 1], ceil_mode=1, count_include_pad=1)
    return _single_op(
        typed, {"x": x},
        "The fused QLinearAveragePool divides a ceil_mode edge window by the whole kernel size under "
        "count_include_pad=1; the definition (and onnxruntime's float AveragePool) divides by the elements of the "
        "padded input the window covers: kernel 3, stride 2 over 4 rows averages the last two rows over 3, not 2.",
        "AveragePool(x: int8 [1,1,4,1] scale float32(0.05) zp 3; kernel_shape [3,1], strides [2,1], ceil_mode 1, "
        "count_include_pad 1) -> y: int8 [1,1,2,1] scale float32(0.04) zp -2")


def softmax_saturation() -> Reproduction:
    x = np.array([[100, -100]], np.int8)  # softmax ~ [1, 0]
    typed = _typed_one_node(
        "Softmax", [("x", TensorProto.INT8, [1, 2], QType("int8", f32(0.1), 0))],
        [("y", TensorProto.INT8, [1, 2], QType("int8", f32(1 / 297), 0))], axis=1)
    return _single_op(
        typed, {"x": x},
        "A probability above the output range must saturate (127). onnxruntime 1.31's fused QLinearSoftmax "
        "wrapped around to -128 when it exceeded the range by enough (y_scale 1/297; 1/296 still gave 127).",
        "Softmax(x: int8 [1,2] scale float32(0.1) zp 0; axis 1) -> y: int8 [1,2] scale float32(1/297) zp 0")


def gemm_bias_zero_point() -> Reproduction:
    rng = np.random.default_rng(0)
    b = rng.integers(0, 256, (3, 2)).astype(np.uint8)
    a = rng.integers(0, 256, (2, 3)).astype(np.uint8)
    c = np.array([[100, -200], [300, 400]], np.int32)
    typed = _typed_one_node(
        "Gemm",
        [("a", TensorProto.UINT8, [2, 3], QType("uint8", f32(0.05), 10)),
         ("b", TensorProto.UINT8, [3, 2], QType("uint8", f32(0.02), 7)),
         ("c", TensorProto.INT32, [2, 2], QType("int32", f32(0.001), 5000))],
        [("y", TensorProto.UINT8, [2, 2], QType("uint8", 0.5, 100))], {"b": b, "c": c})
    return _single_op(
        typed, {"a": a},
        "The DQ -> Gemm -> Q fusion into QGemm reads the bias C as int32 with scale s_a * s_b and zero point 0 "
        "without checking C's own DequantizeLinear: C's zero point 5000 (scale 0.001, i.e. -5 real) is ignored, "
        "10 output steps off.",
        "Gemm(a: uint8 [2,3] scale float32(0.05) zp 10, b: uint8 [3,2] initializer scale float32(0.02) zp 7, "
        "c: int32 [2,2] initializer [[100,-200],[300,400]] scale float32(0.001) zp 5000; a, b drawn by numpy "
        "default_rng(0), b first) -> y: uint8 [2,2] scale 0.5 zp 100")


def int32_dequantize_wraps() -> Reproduction:
    x = np.array([-3, 5], np.int32)
    model = _graph_model(
        [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.INT32, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.array(1.0, np.float32), "s"), numpy_helper.from_array(np.array(2**31 - 1, np.int32), "z")])
    return Reproduction(
        "DequantizeLinear on int32 must compute scale * (x - zero_point) exactly; onnxruntime subtracts the zero "
        "point in int32 and wraps around (x = -3, zero point 2^31 - 1 gives +2^31 - 2), on both paths.",
        "DequantizeLinear(x: int32 [2], scale 1.0, zero point 2^31 - 1) -> y: float",
        model, {"x": x}, "y", lambda: dequantize(x, QType("int32", 1.0, 2**31 - 1)))


REPRODUCTIONS: dict[str, Callable[[], Reproduction]] = {
    "qdq-16bit-fused-matmul-int16": matmul_a16w8,
    "qdq-16bit-fused-matmul-uint16": matmul_u16u8,
    "qdq-16bit-fused-corpus-mlp-a16w8": corpus_mlp_a16w8,
    "qdq-16bit-fused-corpus-mlp-u16-u4": corpus_mlp_u16_u4,
    "average-pool-ceil-mode-edge-window": average_pool_ceil_mode_edge_window,
    "softmax-saturation": softmax_saturation,
    "gemm-bias-zero-point": gemm_bias_zero_point,
    "int32-dequantize-wraps": int32_dequantize_wraps,
}


# --- measuring and recording -----------------------------------------------------------------------------


def model_sha256(model: onnx.ModelProto) -> str:
    return hashlib.sha256(model.SerializeToString(deterministic=True)).hexdigest()


def as_json(array: np.ndarray) -> list:
    array = np.asarray(array)
    return array.astype(np.int64).tolist() if array.dtype.kind in "iu" else array.astype(np.float64).tolist()


def steps_apart(a, b, step: float) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    return float(np.abs(np.rint(a / step) - np.rint(b / step)).max()) if a.size else 0.0


def _run(ort, model: onnx.ModelProto, feeds: dict, output: str, optimize: bool):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return as_json(session.run([output], feeds)[0])
    except Exception as error:  # a refusal is a result too
        return {"error": f"{type(error).__name__}: {str(error).splitlines()[0]}"}


def reproduction_record(rid: str, repro: Reproduction) -> dict:
    """The vendor-independent half of a record entry: what is run, on what, and what we compute."""
    return {
        "id": rid,
        "description": repro.description,
        "reproduction": {
            "function": f"conformance_tests/vendor_results/record_onnxruntime.py:{REPRODUCTIONS[rid].__name__}",
            "model": repro.model,
            "model_sha256": model_sha256(repro.vendor_model),
            "vendor_dependent_model": repro.vendor_dependent,
            "inputs": {name: {"dtype": str(v.dtype), "shape": list(v.shape), "values": as_json(v)}
                       for name, v in repro.feeds.items()},
        },
        "output": repro.output,
        "step": repro.step,
        "reference": as_json(repro.ours()),
    }


def measure(ort, rid: str, repro: Reproduction) -> dict:
    entry = reproduction_record(rid, repro)
    ours = entry["reference"]
    entry["unoptimized"] = _run(ort, repro.vendor_model, repro.feeds, repro.output, optimize=False)
    entry["optimized"] = _run(ort, repro.vendor_model, repro.feeds, repro.output, optimize=True)
    entry["max_steps"] = {
        path: None if isinstance(entry[path], dict) else steps_apart(ours, entry[path], repro.step)
        for path in ("unoptimized", "optimized")
    }
    entry["verdict"] = {
        path: "fails" if steps is None else "agrees" if steps <= TOLERANCE else "deviates"
        for path, steps in entry["max_steps"].items()
    }
    return entry


def _cpu_flags() -> list[str]:
    """The instruction-set flags onnxruntime's MLAS kernels dispatch on (results may depend on them)."""
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    match = re.search(r"^flags\s*:(.*)$", text, re.M)
    wanted = {"sse4_1", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni",
              "amx_int8", "amx_bf16", "avx512_bf16", "avx_vnni_int8"}
    return sorted(wanted & set(match.group(1).split())) if match else []


def record(ort) -> dict:
    return {
        "format": FORMAT,
        "vendor": "onnxruntime",
        "version": ort.__version__,
        "environment": {
            "provider": "CPUExecutionProvider",
            "intra_op_num_threads": 1,
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpu_flags": _cpu_flags(),
            "onnx": onnx.__version__,
            "numpy": np.__version__,
        },
        "command": "python conformance_tests/vendor_results/record_onnxruntime.py",
        "tolerance_steps": TOLERANCE,
        "deviations": [measure(ort, rid, make()) for rid, make in REPRODUCTIONS.items()],
    }


def dumps(document: dict) -> str:
    """Indented JSON with arrays of numbers kept on one line (readable diffs between versions)."""
    text = json.dumps(document, indent=1, allow_nan=False)
    return re.sub(r"\[[-0-9.eE+,\s]*\]", lambda m: re.sub(r"\s+", " ", m.group(0)).replace("[ ", "[").replace(" ]", "]"),
                  text) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, default=HERE, help="folder for onnxruntime-<version>.json")
    parser.add_argument("--save-models", type=pathlib.Path, metavar="DIR",
                        help="also write each reproduction's vendor model as DIR/<id>.onnx (for a bug report)")
    args = parser.parse_args(argv)
    try:
        import onnxruntime as ort
    except ImportError:
        print("record_onnxruntime: error: onnxruntime is not installed (pip install onnxruntime)", file=sys.stderr)
        return 2
    document = record(ort)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"onnxruntime-{ort.__version__}.json"
    path.write_text(dumps(document))
    if args.save_models:
        args.save_models.mkdir(parents=True, exist_ok=True)
        for rid, make in REPRODUCTIONS.items():
            onnx.save(make().vendor_model, args.save_models / f"{rid}.onnx")
    for entry in document["deviations"]:
        print(f"{entry['id']:40} unoptimized {entry['verdict']['unoptimized']:8} "
              f"optimized {entry['verdict']['optimized']:8} max steps {entry['max_steps']['optimized']}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
