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
   parameters only; compared with the unoptimized path.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
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


def per_axis_model(op: str, **attrs):
    """uint8 [1, 2] activations, per-axis (axis 1): DequantizeLinear each input -> op -> QuantizeLinear."""
    scale = numpy_helper.from_array(np.array([0.1, 0.2], np.float32), "s")
    zero = numpy_helper.from_array(np.array([128, 120], np.uint8), "z")
    inputs = "ab" if op != "LeakyRelu" else "a"
    shape = [2, 2] if op == "MatMul" else [1, 2]
    nodes = [helper.make_node("DequantizeLinear", [n, "s", "z"], [f"r{n}"], axis=1) for n in inputs]
    nodes += [helper.make_node(op, [f"r{n}" for n in inputs], ["r"], **attrs),
              helper.make_node("QuantizeLinear", ["r", "s", "z"], ["y"], axis=1)]
    return st.model(nodes, [helper.make_tensor_value_info(n, F.UINT8, shape) for n in inputs],
                    [helper.make_tensor_value_info("y", F.UINT8, shape)], [scale, zero])


def per_axis_fusion() -> None:
    print("5. uint8 DequantizeLinear -> op -> QuantizeLinear with per-axis activations (axis 1), onnxruntime:")
    options = ort.SessionOptions()
    options.log_severity_level = 4
    rng = np.random.default_rng(0)
    for op, attrs in (("Add", {}), ("Mul", {}), ("MatMul", {}), ("LeakyRelu", {"alpha": 0.1})):
        m = per_axis_model(op, **attrs)
        feeds = {i.name: rng.integers(100, 160, [d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.uint8)
                 for i in m.graph.input}
        try:
            session = ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])
            fused = st.Outcome(np.asarray(session.run(None, feeds)[0]))
        except Exception as exc:  # noqa: BLE001 - the runtime's own error is the result
            fused = st.Outcome(error=st.short_error(exc))
        plain = st.run_onnxruntime(m, feeds)
        same = fused.ran and plain.ran and np.array_equal(fused.value, plain.value)
        print(f"   {op}: default optimizations {'run, equal to ORT_DISABLE_ALL' if same else shown(fused)}"
              f"{'' if same else f'; ORT_DISABLE_ALL {shown(plain)}'}")


def main() -> int:
    print(st.versions(), "\n")
    max_pools()
    loop_without_cond()
    old_dequantize()
    per_axis_fusion()
    return 0


if __name__ == "__main__":
    sys.exit(main())
