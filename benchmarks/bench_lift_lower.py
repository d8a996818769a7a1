"""Lift and lower time against model size, side by side with onnx.shape_inference.

    python benchmarks/bench_lift_lower.py            # 500 .. 8000 nodes
    python benchmarks/bench_lift_lower.py --nodes 4000 --repeat 5

The model is a QDQ chain like onnxruntime writes: a float input, then per
block a per-channel int8 weight (DequantizeLinear), a MatMul, and the
QuantizeLinear / DequantizeLinear pair on its output; 4 nodes per block.
For each size the script times, in one process and on the same model:

- ``lift`` (QDQ -> typed),
- ``lower`` (typed -> QDQ) of the lifted model,
- the peer: ``onnx.shape_inference.infer_shapes`` on the QDQ model, a
  maintained single pass over the graph in C++, linear in its size.

It prints milliseconds, microseconds per node, and the ratio to the peer.
Time linear in size shows as a flat microseconds-per-node column (and a flat
ratio); ``--check`` exits 1 when the per-node cost of the largest model is
more than twice that of the smallest.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import lift, lower

DIM = 8


def qdq_chain(nodes: int) -> onnx.ModelProto:
    """A QDQ model of about ``nodes`` nodes (4 per block plus the input pair)."""
    rng = np.random.default_rng(0)
    blocks = max(1, (nodes - 2) // 4)
    graph_nodes = [
        helper.make_node("QuantizeLinear", ["x", "s_in", "z_in"], ["x_q"], name="q_in"),
        helper.make_node("DequantizeLinear", ["x_q", "s_in", "z_in"], ["h0"], name="dq_in"),
    ]
    inits = [
        numpy_helper.from_array(np.asarray(0.05, np.float32), "s_in"),
        numpy_helper.from_array(np.asarray(0, np.int8), "z_in"),
    ]
    for b in range(blocks):
        w = f"w{b}"
        inits += [
            numpy_helper.from_array(rng.integers(-127, 128, size=(DIM, DIM)).astype(np.int8), w),
            numpy_helper.from_array(rng.uniform(1e-3, 1e-2, size=DIM).astype(np.float32), f"{w}_scale"),
            numpy_helper.from_array(np.zeros(DIM, np.int8), f"{w}_zero_point"),
            numpy_helper.from_array(np.asarray(0.05, np.float32), f"m{b}_scale"),
            numpy_helper.from_array(np.asarray(b % 7, np.int8), f"m{b}_zero_point"),
        ]
        graph_nodes += [
            helper.make_node("DequantizeLinear", [w, f"{w}_scale", f"{w}_zero_point"], [f"{w}_dq"], name=f"dq_{w}", axis=1),
            helper.make_node("MatMul", [f"h{b}", f"{w}_dq"], [f"m{b}"], name=f"matmul{b}"),
            helper.make_node("QuantizeLinear", [f"m{b}", f"m{b}_scale", f"m{b}_zero_point"], [f"m{b}_q"], name=f"q{b}"),
            helper.make_node("DequantizeLinear", [f"m{b}_q", f"m{b}_scale", f"m{b}_zero_point"], [f"h{b + 1}"], name=f"dq{b}"),
        ]
    graph = helper.make_graph(
        graph_nodes, "qdq_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, DIM])],
        [helper.make_tensor_value_info(f"h{blocks}", TensorProto.FLOAT, [1, DIM])], inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    """Median wall time in seconds (other processes share the machine)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=[500, 1000, 2000, 4000, 8000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="exit 1 unless the cost per node stays within 2x")
    args = parser.parse_args(argv)

    header = ("nodes", "lift ms", "lower ms", "infer_shapes ms", "lift us/node", "lower us/node", "lift/peer", "lower/peer")
    print(" | ".join(header))
    print(" | ".join("-" * len(h) for h in header))
    per_node = []
    for size in args.nodes:
        model = qdq_chain(size)
        count = len(model.graph.node)
        typed = lift(model)
        assert len(typed.graph.node) == count // 4 + 2  # every inner pair folded
        t_lift = best_of(args.repeat, lambda: lift(model))
        t_lower = best_of(args.repeat, lambda: lower(typed))
        t_peer = best_of(args.repeat, lambda: onnx.shape_inference.infer_shapes(model))
        per_node.append((t_lift / count, t_lower / count))
        print(
            f"{count} | {t_lift * 1e3:.1f} | {t_lower * 1e3:.1f} | {t_peer * 1e3:.1f} | {t_lift / count * 1e6:.1f} | "
            f"{t_lower / count * 1e6:.1f} | {t_lift / t_peer:.1f} | {t_lower / t_peer:.1f}"
        )
    growth = [big / small for big, small in zip(per_node[-1], per_node[0])]
    print(f"per-node cost, largest vs smallest model: lift x{growth[0]:.2f}, lower x{growth[1]:.2f} (1.0 = linear)")
    if args.check and max(growth) > 2.0:
        print("not linear: the per-node cost more than doubled", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
