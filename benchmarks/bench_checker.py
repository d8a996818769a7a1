"""Checker speed against onnx.checker.check_model(full_check=True), side by side in one process.

Two forms of the same synthetic CNN (Conv with per-channel int8 weights and int32 bias, then Relu, repeated),
about 1,000 / 4,000 / 16,000 nodes each:

- the QDQ file as onnxruntime's quantize_static (QDQ, per_channel, QInt8) writes it: every weight and bias an
  integer initializer read through a DequantizeLinear placed first, every activation a QuantizeLinear /
  DequantizeLinear pair, the Relu fused away, the value_info quantize_static keeps (the layout and names of
  its output on this model, reproduced here because quantize_static itself needs minutes at 4,000 nodes);
  `onnx-qtypes check` reads it through its lifted form (onnx_qtypes.diagnose). Its peer: onnx.checker on
  that same file.
- the typed model as `onnx-qtypes check` reads it (onnx_qtypes.diagnose: the rules, and the quantization nodes no
  type covers, which this model has none of); its peer, onnx.checker on its float
  twin (same graph, float weights: stock onnx.checker refuses the typed model itself by design).

Prints, per size, the median time of each and their ratios; targets: the QDQ form at most 3x onnx.checker
at 16,000 nodes, the time per node flat from 1,000 to 16,000 (the us/node columns).

Run: python benchmarks/bench_checker.py [--sizes 1000 4000 16000] [--repeat 5] [--floor]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import QType, Schema, diagnose
from onnx_qtypes.proto import write_qtype
from onnx_qtypes.proto.encoding import to_wire_form

IR_VERSION, OPSET = 10, 21
CHANNELS, SIDE = 16, 8


def build(nodes: int, seed: int = 0) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    """(typed model, float twin) with ``nodes`` nodes: Q, (Conv, Relu) * n, DQ."""
    rng = np.random.default_rng(seed)
    blocks = max((nodes - 2) // 2, 1)
    shape = [1, CHANNELS, SIDE, SIDE]
    x_scale = float(np.float32(0.02))
    typed_nodes = [helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["a0"], name="quantize")]
    float_nodes = [helper.make_node("Identity", ["x"], ["a0"], name="quantize")]
    typed_inits = [numpy_helper.from_array(np.array(x_scale, np.float32), "x_scale"),
                   numpy_helper.from_array(np.array(0, np.int8), "x_zp")]
    float_inits: list[onnx.TensorProto] = []
    types: dict[str, QType] = {"a0": QType("int8", x_scale, 0)}
    for i in range(blocks):
        w_real = rng.normal(0, 0.1, size=(CHANNELS, CHANNELS, 3, 3)).astype(np.float32)
        w_scale = (np.abs(w_real).reshape(CHANNELS, -1).max(axis=1) / 127).astype(np.float32)
        w_q = np.clip(np.rint(w_real / w_scale[:, None, None, None]), -127, 127).astype(np.int8)
        b_scale = np.float32(x_scale) * w_scale
        b_q = rng.integers(-1000, 1000, size=CHANNELS).astype(np.int32)
        typed_inits += [numpy_helper.from_array(w_q, f"w{i}"), numpy_helper.from_array(b_q, f"b{i}")]
        float_inits += [numpy_helper.from_array(w_real, f"w{i}"),
                        numpy_helper.from_array((b_q * b_scale).astype(np.float32), f"b{i}")]
        for group in (typed_nodes, float_nodes):
            group.append(helper.make_node("Conv", [f"a{i}", f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}",
                                          pads=[1, 1, 1, 1]))
            group.append(helper.make_node("Relu", [f"c{i}"], [f"a{i + 1}"], name=f"relu{i}"))
        types[f"w{i}"] = QType("int8", w_scale, [0] * CHANNELS, axis=0, schema=Schema.SYMMETRIC,
                               storage_min=-127, storage_max=127)
        types[f"b{i}"] = QType("int32", b_scale, [0] * CHANNELS, axis=0, schema=Schema.SYMMETRIC)
        types[f"c{i}"] = types[f"a{i + 1}"] = QType("int8", x_scale, 0)
    last = f"a{blocks}"
    typed_nodes.append(helper.make_node("DequantizeLinear", [last, "x_scale", "x_zp"], ["y"], name="dequantize"))
    float_nodes.append(helper.make_node("Identity", [last], ["y"], name="dequantize"))
    io = ([helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    activations = [n for n in types if n[0] in "ac"]
    weight_shapes = {t.name: list(t.dims) for t in typed_inits}
    typed_vi = []
    for name, qtype in types.items():  # declared directly: set_qtype searches the model per call
        vi = helper.make_tensor_value_info(name, TensorProto.UNDEFINED, weight_shapes.get(name, shape))
        write_qtype(vi, qtype)
        typed_vi.append(vi)
    float_vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in activations]
    typed = helper.make_model(helper.make_graph(typed_nodes, "typed", *io, typed_inits, value_info=typed_vi),
                              opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    to_wire_form(typed)  # weights and boundary zero points marked, as save writes them
    twin = helper.make_model(helper.make_graph(float_nodes, "float", *io, float_inits, value_info=float_vi),
                             opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    return typed, twin


def build_qdq(nodes: int, seed: int = 0) -> onnx.ModelProto:
    """The QDQ file quantize_static(QDQ, per_channel=True, QInt8) writes for the float chain, ``nodes`` nodes."""
    rng = np.random.default_rng(seed)
    blocks = max((nodes - 5) // 5, 1)
    shape = [1, CHANNELS, SIDE, SIDE]
    inits: list[onnx.TensorProto] = []
    weights: list[onnx.NodeProto] = []
    scales: dict[str, np.float32] = {}

    def qdq(name: str) -> list[onnx.NodeProto]:
        scales[name] = np.float32(rng.uniform(0.01, 0.05))
        inits.extend([numpy_helper.from_array(np.array(0, np.int8), f"{name}_zero_point"),
                      numpy_helper.from_array(np.array(scales[name], np.float32), f"{name}_scale")])
        q, d = f"{name}_QuantizeLinear", f"{name}_DequantizeLinear"
        return [helper.make_node("QuantizeLinear", [name, f"{name}_scale", f"{name}_zero_point"], [f"{q}_Output"],
                                 name=q),
                helper.make_node("DequantizeLinear", [f"{q}_Output", f"{name}_scale", f"{name}_zero_point"],
                                 [f"{d}_Output"], name=d)]

    chain = [helper.make_node("Identity", ["x"], ["a0"], name="quantize"), *qdq("a0")]
    value_info = []
    for i in range(blocks):
        w = rng.normal(0, 0.1, size=(CHANNELS, CHANNELS, 3, 3)).astype(np.float32)
        w_scale = (np.abs(w).reshape(CHANNELS, -1).max(axis=1) / 127).astype(np.float32)
        w_q = np.clip(np.rint(w / w_scale[:, None, None, None]), -127, 127).astype(np.int8)
        inits += [numpy_helper.from_array(np.zeros(CHANNELS, np.int8), f"w{i}_zero_point"),
                  numpy_helper.from_array(w_scale, f"w{i}_scale"), numpy_helper.from_array(w_q, f"w{i}_quantized"),
                  numpy_helper.from_array(rng.integers(-1000, 1000, size=CHANNELS).astype(np.int32), f"b{i}_quantized"),
                  numpy_helper.from_array((scales[f"a{i}"] * w_scale).astype(np.float32), f"b{i}_quantized_scale"),
                  numpy_helper.from_array(np.zeros(CHANNELS, np.int32), f"b{i}_quantized_zero_point")]
        weights += [helper.make_node("DequantizeLinear", [f"b{i}_quantized", f"b{i}_quantized_scale",
                                                          f"b{i}_quantized_zero_point"], [f"b{i}"],
                                     name=f"b{i}_DequantizeLinear", axis=0),
                    helper.make_node("DequantizeLinear", [f"w{i}_quantized", f"w{i}_scale", f"w{i}_zero_point"],
                                     [f"w{i}_DequantizeLinear_Output"], name=f"w{i}_DequantizeLinear", axis=0)]
        chain.append(helper.make_node("Conv", [f"a{i}_DequantizeLinear_Output", f"w{i}_DequantizeLinear_Output",
                                               f"b{i}"], [f"a{i + 1}"], name=f"conv{i}", pads=[1, 1, 1, 1]))
        chain += qdq(f"a{i + 1}")
        value_info.append(helper.make_tensor_value_info(f"a{i + 1}", TensorProto.FLOAT, shape))
    chain.append(helper.make_node("Identity", [f"a{blocks}_DequantizeLinear_Output"], ["y"], name="dequantize"))
    graph = helper.make_graph(weights + chain, "qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits,
                              value_info=value_info)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION,
                             producer_name="onnx.quantize")


def _time(fn) -> float:  # noqa: ANN001
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(nodes: int, repeat: int) -> dict[str, float]:
    typed, twin = build(nodes)
    qdq = build_qdq(nodes)
    errors = [str(d) for d in diagnose(typed).diagnostics if d.is_error]
    errors += [str(d) for d in diagnose(qdq).diagnostics if d.is_error]
    assert not errors, errors[:3]  # the benchmark models are valid: every rule runs to the end
    onnx.checker.check_model(twin, full_check=True)
    onnx.checker.check_model(qdq, full_check=True)
    runs: dict[str, list[float]] = {"typed": [], "twin": [], "qdq": [], "qdq_onnx": []}
    for _ in range(repeat):  # interleaved, so that load from other processes hits all alike
        runs["typed"].append(_time(lambda: diagnose(typed)))
        runs["twin"].append(_time(lambda: onnx.checker.check_model(twin, full_check=True)))
        runs["qdq"].append(_time(lambda: diagnose(qdq)))
        runs["qdq_onnx"].append(_time(lambda: onnx.checker.check_model(qdq, full_check=True)))
    t = {k: statistics.median(v) for k, v in runs.items()}
    # ratios per round, then their median: a slow moment of the machine hits both sides of one round
    ratio = {k: statistics.median(a / b for a, b in zip(runs[k], runs[peer]))
             for k, peer in (("typed", "twin"), ("qdq", "qdq_onnx"))}
    return {"qdq_nodes": len(qdq.graph.node), "typed_nodes": len(typed.graph.node), **t,
            "qdq_ratio": ratio["qdq"], "typed_ratio": ratio["typed"],
            "qdq_us": t["qdq"] / len(qdq.graph.node) * 1e6, "typed_us": t["typed"] / len(typed.graph.node) * 1e6}


def floor(nodes: int, repeat: int) -> dict[str, float]:
    """What any checker of the QDQ file that lifts it in Python pays before its first rule, against the peer:
    onnx.shape_inference on the file (the lift must type every tensor), one read of every node's op type, inputs
    and outputs, and every initializer as an array (the lift reads every scale, zero point and weight)."""
    qdq = build_qdq(nodes)
    steps = {"infer": lambda: onnx.shape_inference.infer_shapes(qdq),
             "walk": lambda: [(n.op_type, n.domain, n.input[:], n.output[:]) for n in qdq.graph.node],
             "arrays": lambda: [numpy_helper.to_array(t) for t in qdq.graph.initializer],
             "peer": lambda: onnx.checker.check_model(qdq, full_check=True)}
    runs = {k: [] for k in steps}
    for _ in range(repeat):
        for k, fn in steps.items():
            runs[k].append(_time(fn))
    t = {k: statistics.median(v) for k, v in runs.items()}
    return {"nodes": len(qdq.graph.node), **t, **{f"{k}_ratio": t[k] / t["peer"] for k in ("infer", "walk", "arrays")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 16000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--floor", action="store_true", help="the cost before any rule, against the peer (floor())")
    args = parser.parse_args()
    if args.floor:
        print("| QDQ nodes | onnx.checker (full) | shape inference | ratio | walk of the nodes | ratio "
              "| initializers as arrays | ratio | sum of ratios |")
        print("|---|---|---|---|---|---|---|---|---|")
        for size in args.sizes:
            r = floor(size, args.repeat)
            total = r["infer_ratio"] + r["walk_ratio"] + r["arrays_ratio"]
            print(f"| {r['nodes']:,} | {r['peer']:.3f} s | {r['infer']:.3f} s | {r['infer_ratio']:.2f}x | "
                  f"{r['walk']:.3f} s | {r['walk_ratio']:.2f}x | {r['arrays']:.3f} s | {r['arrays_ratio']:.2f}x | "
                  f"{total:.2f}x |", flush=True)
        return
    print("| QDQ nodes | check (QDQ) | onnx.checker (QDQ) | ratio | us/node | typed nodes | check (typed) "
          "| onnx.checker (float twin) | ratio | us/node |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for size in args.sizes:
        r = measure(size, args.repeat)
        print(f"| {r['qdq_nodes']:,} | {r['qdq']:.3f} s | {r['qdq_onnx']:.3f} s | {r['qdq_ratio']:.2f}x | "
              f"{r['qdq_us']:.0f} | {r['typed_nodes']:,} | {r['typed']:.3f} s | {r['twin']:.3f} s | "
              f"{r['typed_ratio']:.2f}x | {r['typed_us']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
