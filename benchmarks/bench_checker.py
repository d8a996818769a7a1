"""Checker speed against onnx.checker.check_model(full_check=True), side by side in one process.

Builds synthetic CNNs of about 1,000 / 4,000 / 16,000 nodes (Conv with
per-channel int8 weights and int32 bias, then Relu, repeated), in two forms
from the same generator: the typed model the onnx-qtypes checker validates,
and its float twin (same graph, float weights) that stock onnx.checker
validates — stock onnx.checker refuses the typed model itself by design (the
fail-closed marker). Prints, per size, the median time of each and their
ratio; target: at most 3x at 4,000 nodes, and time growing linearly with
nodes (the last column, time per node, stays flat).

Run: python benchmarks/bench_checker.py [--sizes 1000 4000 16000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import QType, Schema
from onnx_qtypes.proto.encoding import to_wire_form
from onnx_qtypes.proto import write_qtype
from onnx_qtypes.checker import iter_diagnostics

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


def _time(fn, repeat: int) -> float:  # noqa: ANN001
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure(nodes: int, repeat: int) -> dict[str, float]:
    typed, twin = build(nodes)
    found = list(iter_diagnostics(typed))
    errors = [str(d) for d in found if d.is_error]
    assert not errors, errors[:3]  # the benchmark model is valid: the checker runs every rule to the end
    onnx.checker.check_model(twin, full_check=True)
    ours, theirs = [], []
    for _ in range(repeat):  # interleaved, so that load from other processes hits both alike
        ours.append(_time(lambda: list(iter_diagnostics(typed)), 1))
        theirs.append(_time(lambda: onnx.checker.check_model(twin, full_check=True), 1))
    checker, stock = statistics.median(ours), statistics.median(theirs)
    return {"nodes": len(typed.graph.node), "checker_s": checker, "onnx_checker_s": stock,
            "ratio": checker / stock, "checker_us_per_node": checker / len(typed.graph.node) * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000, 16000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'nodes':>7}  {'onnx-qtypes check':>17}  {'onnx.checker full':>17}  {'ratio':>6}  {'us/node':>8}")
    for size in args.sizes:
        r = measure(size, args.repeat)
        print(f"{r['nodes']:>7}  {r['checker_s']:>16.3f}s  {r['onnx_checker_s']:>16.3f}s  {r['ratio']:>5.2f}x  "
              f"{r['checker_us_per_node']:>8.1f}")


if __name__ == "__main__":
    main()
