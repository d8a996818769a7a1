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
   per_axis_activation_fusions.py, which covers every fused operator);
6. every operator reference_ops/corrected/ replaces, on one input each: stock
   onnx.reference, onnxruntime (unoptimized) and the reference evaluator
   (the full measurement: float_op_differential.py);
7. where onnxruntime (unoptimized) departs from ONNX's text and the reference
   follows the text.
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


def _differential():
    import float_op_differential as fd  # noqa: PLC0415

    return fd


def _loop_stacking():
    fd = _differential()
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("Add", ["v_in", "one"], ["v_out"]),
         helper.make_node("Identity", ["v_out"], ["s"])], "body",
        [helper.make_tensor_value_info("i", F.INT64, []), helper.make_tensor_value_info("c_in", F.BOOL, []),
         helper.make_tensor_value_info("v_in", F.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(n, t, d) for n, t, d in (("c_out", F.BOOL, []), ("v_out", F.FLOAT, [2, 3]),
                                                                ("s", F.FLOAT, [2, 3]))],
        [numpy_helper.from_array(np.ones((2, 3), np.float32), "one")])
    return fd.Trial("Loop", [("n", np.array(4, np.int64)), ("c", np.array(True)), ("v", np.zeros((2, 3), np.float32))],
                    {"body": body}, outputs=2)


def _corrections():
    """(what onnx.reference gets wrong, one trial showing it)."""
    fd = _differential()
    x4 = np.random.default_rng(0).normal(2, 3, (2, 3, 4, 5)).astype(np.float32)
    bn = [(n, np.random.default_rng(i).uniform(0.5, 2, 3).astype(np.float32)) for i, n in enumerate("sbmv")]
    plane = np.random.default_rng(1).permutation(30).astype(np.float32).reshape(1, 2, 3, 5)
    return [
        ("BatchNormalization-9 (momentum set): training mode", fd.Trial("BatchNormalization", [("x", x4), *bn],
                                                                         {"momentum": 0.9}, opset=9)),
        ("BatchNormalization-7: fails", fd.Trial("BatchNormalization", [("x", x4), *bn], opset=7)),
        ("GatherElements over 512 positions (BERT token types): fails",
         fd.Trial("GatherElements", [("d", np.zeros((1, 512), np.int64)), ("i", np.arange(7).reshape(1, 7))],
                  {"axis": 1})),
        ("MaxPool Indices: numbered per channel", fd.Trial("MaxPool", [("x", plane)], {"kernel_shape": [2, 2]},
                                                           outputs=2)),
        ("MaxPool SAME_LOWER + ceil_mode: output shape",
         fd.Trial("MaxPool", [("x", plane)], {"kernel_shape": [2, 3], "strides": [2, 3], "auto_pad": "SAME_LOWER",
                                              "ceil_mode": 1})),
        ("AveragePool SAME_UPPER + ceil_mode: refused", fd.Trial("AveragePool", [("x", plane)], {
            "kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER", "ceil_mode": 1})),
        ("GlobalMaxPool of N x C x D: drops C", fd.Trial("GlobalMaxPool", [("x", plane[0])])),
        ("Pad with negative pads: fails", fd.Trial("Pad", [("x", plane[0, 0]), ("p", np.array([-1, 1, 0, -2]))])),
        ("Slice of an axis of 1, starts = ends = -2, step -2: ONNX clamps the end to -1, before the first element",
         fd.Trial("Slice", [("x", np.arange(25, dtype=np.float32).reshape(5, 5, 1)), ("s", np.array([-2])),
                            ("e", np.array([-2])), ("a", np.array([-1])), ("t", np.array([-2]))])),
        ("Shape end=-3 on rank 2: not clamped", fd.Trial("Shape", [("x", plane[0, 0])], {"end": -3})),
        ("Softsign of a scalar: fails", fd.Trial("Softsign", [("x", np.array(-3.0, np.float32))])),
        ("Softmax-11 at axis 1 of 2 x 2 x 2: normalized along axis 1 alone, not over the coerced rows of 4",
         fd.Trial("Softmax", [("x", np.arange(8, dtype=np.float32).reshape(2, 2, 2))], {"axis": 1}, opset=11)),
        ("ConvTranspose depthwise with bias [10, 20]: B[0] everywhere", fd.Trial("ConvTranspose", [
            ("x", np.ones((1, 2, 1, 1), np.float32)), ("w", np.ones((2, 1, 1, 1), np.float32)),
            ("b", np.array([10, 20], np.float32))], {"group": 2})),
        ("Resize linear align_corners, scales 1.5: length_resized = 4.5", fd.Trial("Resize", [
            ("x", plane[:, :1, :, :1]), ("r", np.array([], np.float32)), ("s", np.array([1, 1, 1.5, 1], np.float32))],
            {"mode": "linear", "coordinate_transformation_mode": "align_corners"})),
        ("Loop scan output of [2, 3] per iteration: vstack", _loop_stacking()),
    ]


def _shown(outcome) -> str:
    if outcome.error:
        return outcome.error[:90]
    return "; ".join(f"shape {list(v.shape)} {np.round(v.ravel()[:4].astype(np.float64), 3).tolist()}"
                     for v in outcome.values)


def corrected_operators() -> None:
    fd = _differential()
    print("6. onnx.reference operators the reference evaluator corrects (one input each;"
          " all operators: python proposal/experiments/float_op_differential.py --stock):")
    for label, trial in _corrections():
        stock, ort, ours = fd.run_stock_reference(trial), fd.run_onnxruntime(trial), fd.run_project_reference(trial)
        print(f"   {label}\n     onnx.reference: {_shown(stock)}\n     onnxruntime:    {_shown(ort)}\n"
              f"     reference:      {_shown(ours)} "
              f"({'= onnxruntime' if fd.difference(ours, ort) is None else fd.difference(ours, ort)})")


def onnxruntime_departures() -> None:
    fd = _differential()
    x = (np.arange(5, dtype=np.float32) * 10).reshape(1, 1, 1, 5)
    cases = [
        ("Resize tf_crop_and_resize, roi [0.25, 0.75] on an axis kept at 5 (ONNX: samples 1, 1.5, ..., 3)",
         fd.Trial("Resize", [("x", x), ("r", np.array([0, 0, 0, 0.25, 1, 1, 1, 0.75], np.float32)), ("s", None),
                             ("z", np.array([1, 1, 1, 5]))],
                  {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"})),
        ("Resize scales 1.4 on 5 (ONNX: floor(5 x float32(1.4)) = floor(6.99999988) = 6)",
         fd.Trial("Resize", [("x", x), ("r", np.array([], np.float32)), ("s", np.array([1, 1, 1, 1.4], np.float32))],
                  {"mode": "nearest"})),
        ("ConvTranspose SAME_UPPER, stride 3, kernel 2 on 2 (ONNX: output = input x stride = 6; the padding would "
         "be -1: refused)",
         fd.Trial("ConvTranspose", [("x", x[..., :2]), ("w", np.ones((1, 1, 1, 2), np.float32))],
                  {"strides": [1, 3], "auto_pad": "SAME_UPPER"})),
    ]
    print("7. where onnxruntime (unoptimized) departs from ONNX's text:")
    for label, trial in cases:
        print(f"   {label}\n     onnxruntime: {_shown(fd.run_onnxruntime(trial))}\n"
              f"     reference:   {_shown(fd.run_project_reference(trial))}")
    print("   (and BatchNormalization-9 with outputs [Y, '', '', '', '']: onnxruntime 1.32 crashes the process)")


def main() -> int:
    print(st.versions(), "\n")
    max_pools()
    loop_without_cond()
    old_dequantize()
    per_axis_fusion()
    corrected_operators()
    onnxruntime_departures()
    return 0


if __name__ == "__main__":
    sys.exit(main())
