"""Where onnx.reference and onnxruntime's fused kernels stop short, as proposal/spec/semantics.md §9 lists.

Run: python proposal/experiments/onnx_reference_gaps.py

1. onnx.reference MaxPool with pads that differ between spatial dims
   (kernel 1x2, pads [0, 1, 0, 1]);
2. MaxPool of a 2x2 input, kernel 2, stride 1, pads 1, ceil_mode 1: the output
   shape from onnx.reference and onnxruntime (unoptimized);
3. onnx.reference Loop without the optional cond input, 3 iterations asked;
4. onnx.reference DequantizeLinear at opsets 13 to 19;
5. onnxruntime with default optimizations on DequantizeLinear -> op ->
   QuantizeLinear whose activations are per-axis (uint8, axis 1), for Add,
   Mul, MatMul and LeakyRelu, whose fused QLinear kernels take scalar
   parameters only; compared with the unoptimized path (the rows of
   per_axis_activation_fusions.py, which covers every fused operator).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import per_axis_activation_fusions as fusions  # noqa: E402
import stock_tools as st  # noqa: E402

F = TensorProto


def shown(outcome: st.Outcome) -> str:
    return f"shape {list(outcome.value.shape)}, {outcome.value.ravel().tolist()}" if outcome.ran else outcome.error


def max_pools() -> None:
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    for label, attrs in (("1. kernel 1x2, pads [0, 1, 0, 1]", {"kernel_shape": [1, 2], "pads": [0, 1, 0, 1]}),
                         ("2. kernel 2, stride 1, pads 1, ceil_mode 1",
                          {"kernel_shape": [2, 2], "strides": [1, 1], "pads": [1, 1, 1, 1], "ceil_mode": 1})):
        m = st.model([helper.make_node("MaxPool", ["x"], ["y"], **attrs)],
                     [helper.make_tensor_value_info("x", F.FLOAT, [1, 1, 2, 2])],
                     [helper.make_tensor_value_info("y", F.FLOAT, None)])
        print(f"{label} on a 2x2 input:\n   onnx.reference: {shown(st.run_reference(m, {'x': x}))}\n"
              f"   onnxruntime:    {shown(st.run_onnxruntime(m, {'x': x}))}")


def loop_without_cond() -> None:
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["v_in", "one"], ["v_out"])],
        "body", [helper.make_tensor_value_info("i", F.INT64, []), helper.make_tensor_value_info("cond_in", F.BOOL, []),
                 helper.make_tensor_value_info("v_in", F.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", F.BOOL, []), helper.make_tensor_value_info("v_out", F.FLOAT, [1])],
        [numpy_helper.from_array(np.ones(1, np.float32), "one")])
    m = st.model([helper.make_node("Loop", ["n", "", "v"], ["counted"], body=body)],
                 [helper.make_tensor_value_info("v", F.FLOAT, [1])], [helper.make_tensor_value_info("counted", F.FLOAT, [1])],
                 [numpy_helper.from_array(np.array(3, np.int64), "n")])
    feeds = {"v": np.zeros(1, np.float32)}
    print(f"3. Loop, trip count 3, no cond, body adds 1 to 0:\n   onnx.reference: {shown(st.run_reference(m, feeds))}\n"
          f"   onnxruntime:    {shown(st.run_onnxruntime(m, feeds))}")


def old_dequantize() -> None:
    print("4. onnx.reference DequantizeLinear(int8 [1, -2], scale 0.5):")
    for opset in (13, 18, 19):
        m = st.model([helper.make_node("DequantizeLinear", ["q", "s"], ["y"])],
                     [helper.make_tensor_value_info("q", F.INT8, [2])], [helper.make_tensor_value_info("y", F.FLOAT, [2])],
                     [numpy_helper.from_array(np.array(0.5, np.float32), "s")], opset)
        print(f"   opset {opset}: {shown(st.run_reference(m, {'q': np.array([1, -2], np.int8)}))}")


def per_axis_fusion() -> None:
    """The rows of per_axis_activation_fusions.py (the whole table, with its control) for these operators."""
    print("5. uint8 DequantizeLinear -> op -> QuantizeLinear with per-axis activations (axis 1), onnxruntime"
          f" (the full table: {fusions.COMMAND}):")
    for row in fusions.measure(["Add", "Mul", "MatMul", "LeakyRelu"]):
        same = row.max_steps == 0
        print(f"   {row.op}: {'fused' if row.fused else 'not fused'}; default optimizations "
              f"{'run, equal to ORT_DISABLE_ALL' if same else row.optimized.error or f'{row.max_steps} steps off'}")


def main() -> int:
    print(st.versions(), "\n")
    max_pools()
    loop_without_cond()
    old_dequantize()
    per_axis_fusion()
    return 0


if __name__ == "__main__":
    sys.exit(main())
