"""Which QuantizeLinear / DequantizeLinear kernels onnxruntime's CPU provider has, and what they compute.

Run: python proposal/experiments/ort_cpu_kernels.py

Every model is one small QuantizeLinear -> DequantizeLinear chain (or one
DequantizeLinear of an initializer), run in an unoptimized session
(ORT_DISABLE_ALL, CPU provider). Printed, after the versions:

1. negative scales: QuantizeLinear(100, scale -0.1, int8) and
   DequantizeLinear(-128, scale -0.1): the values onnxruntime computes;
2. float storage: float8 (opset 21) and FLOAT4E2M1 (opset 23), scale 1;
3. FLOAT8E8M0 block scales (opset 25): a blocked DequantizeLinear of float4 /
   float8 data;
4. float16 and bfloat16 scales: every integer storage type at opsets 21-25
   (int2 / uint2 from 25), per tensor, per axis and blocked, as a chain and
   as a DequantizeLinear alone: how many run, and the others' errors, counted;
5. onnx's default IR version and opset for a new model: the int8 chain and
   an Identity.

proposal/spec/types.md and interop.md quote these results.
"""

from __future__ import annotations

import collections
import itertools
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stock_tools as st  # noqa: E402

F = TensorProto
INTEGER_STORAGE = {  # name: (data type, first opset of its QuantizeLinear / DequantizeLinear)
    "int8": (F.INT8, 21), "uint8": (F.UINT8, 21), "int16": (F.INT16, 21), "uint16": (F.UINT16, 21),
    "int4": (F.INT4, 21), "uint4": (F.UINT4, 21), "int2": (F.INT2, 25), "uint2": (F.UINT2, 25),
}
FLOAT_STORAGE = {
    "float8e4m3fn": (F.FLOAT8E4M3FN, 21), "float8e4m3fnuz": (F.FLOAT8E4M3FNUZ, 21),
    "float8e5m2": (F.FLOAT8E5M2, 21), "float8e5m2fnuz": (F.FLOAT8E5M2FNUZ, 21), "float4e2m1": (F.FLOAT4E2M1, 23),
}
X = np.array([[0.5, -1.0, 2.0, 3.0], [-0.25, 1.5, -2.0, 0.75]], np.float32)
GRANULARITIES = {  # name: (scale shape, attributes)
    "per-tensor": ((), {}), "per-axis": ((4,), {"axis": 1}), "blocked": ((2, 2), {"axis": 1, "block_size": 2}),
}


def chain(storage: int, scale_type: int, opset: int, scale_shape=(), dequantize_only: bool = False,
          **attrs) -> onnx.ModelProto:
    """y = DequantizeLinear(QuantizeLinear(Cast(x, scale_type), scale, zero point 0)) with x float32 [2, 4];
    with ``dequantize_only``, y = DequantizeLinear(q) of a constant q (zeros), so only that kernel is probed."""
    scale = np.full(scale_shape, 0.25, np.float32)
    zero = np.zeros(scale_shape, np.float32)
    inits = [helper.make_tensor("scale", scale_type, scale_shape, scale.ravel().tolist()),
             helper.make_tensor("zero", storage, scale_shape, zero.ravel().astype(int).tolist()
                                if storage in {v[0] for v in INTEGER_STORAGE.values()} else zero.ravel().tolist())]
    quantize = [helper.make_node("Cast", ["x"], ["xs"], to=scale_type),
                helper.make_node("QuantizeLinear", ["xs", "scale", "zero"], ["q"], **attrs)]
    if dequantize_only:
        inits.append(helper.make_tensor("q", storage, [2, 4], [0] * 8))
        quantize = [helper.make_node("Identity", ["x"], ["unused"])]
    nodes = quantize + [helper.make_node("DequantizeLinear", ["q", "scale", "zero"], ["d"], **attrs),
             helper.make_node("Cast", ["d"], ["y"], to=F.FLOAT)]
    return st.model(nodes, [helper.make_tensor_value_info("x", F.FLOAT, [2, 4])],
                    [helper.make_tensor_value_info("y", F.FLOAT, [2, 4])], inits, opset)


def negative_scales() -> None:
    quantize = st.model([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"])],
                        [helper.make_tensor_value_info("x", F.FLOAT, [1])], [helper.make_tensor_value_info("q", F.INT8, [1])],
                        [numpy_helper.from_array(np.array(-0.1, np.float32), "s"), numpy_helper.from_array(np.array(0, np.int8), "z")])
    dequantize = st.model([helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])],
                          [helper.make_tensor_value_info("q", F.INT8, [1])], [helper.make_tensor_value_info("y", F.FLOAT, [1])],
                          [numpy_helper.from_array(np.array(-0.1, np.float32), "s"), numpy_helper.from_array(np.array(0, np.int8), "z")])
    q = st.run_onnxruntime(quantize, {"x": np.array([100.0], np.float32)})
    d = st.run_onnxruntime(dequantize, {"q": np.array([-128], np.int8)})
    print("1. negative scales (int8, zero point 0, scale -0.1):")
    print(f"   QuantizeLinear(100) = {q.value.tolist() if q.ran else q.error}")
    print(f"   DequantizeLinear(-128) = {np.round(d.value.astype(np.float64), 6).tolist() if d.ran else d.error}")


def describe(outcome: st.Outcome, expected: np.ndarray | None = None) -> str:
    if not outcome.ran:
        return outcome.error
    if expected is not None and not np.array_equal(outcome.value, expected):
        return f"runs, differs from onnx.reference: {outcome.value.tolist()} vs {expected.tolist()}"
    return "runs" + (", equals onnx.reference" if expected is not None else "")


def float_storage() -> None:
    print("\n2. float storage, QuantizeLinear -> DequantizeLinear, scale 1 (float32):")
    for name, (data_type, opset) in FLOAT_STORAGE.items():
        m = chain(data_type, F.FLOAT, opset)
        print(f"   {name} (opset {opset}): {describe(st.run_onnxruntime(m, {'x': X}))}")


def e8m0_block_scales() -> None:
    print("\n3. FLOAT8E8M0 block scales, DequantizeLinear(axis 1, block_size 32, output_dtype float), opset 25:")
    for name, data_type, dtype in (("float4e2m1", F.FLOAT4E2M1, ml_dtypes.float4_e2m1fn),
                                   ("float8e4m3fn", F.FLOAT8E4M3FN, ml_dtypes.float8_e4m3fn)):
        data = np.linspace(-4, 4, 32).astype(dtype).reshape(1, 32)
        scale = np.array([[2.0]], np.float32).astype(ml_dtypes.float8_e8m0fnu)
        m = st.model([helper.make_node("DequantizeLinear", ["w", "s"], ["y"], axis=1, block_size=32, output_dtype=F.FLOAT)],
                     [], [helper.make_tensor_value_info("y", F.FLOAT, [1, 32])],
                     [numpy_helper.from_array(data, "w"), numpy_helper.from_array(scale, "s")], 25)
        print(f"   {name} data: {describe(st.run_onnxruntime(m, {}), st.run_reference(m, {}).value)}")


def half_scales() -> None:
    print("\n4. float16 / bfloat16 scales, zero point 0: QuantizeLinear -> DequantizeLinear of x, and"
          " DequantizeLinear alone of a constant:")
    for (scale_name, scale_type), alone in itertools.product((("float16", F.FLOAT16), ("bfloat16", F.BFLOAT16)),
                                                             (False, True)):
        outcomes: collections.Counter[str] = collections.Counter()
        for storage, (data_type, first) in INTEGER_STORAGE.items():
            for opset in range(max(21, first), 26):
                for shape, attrs in GRANULARITIES.values():
                    outcomes[describe(st.run_onnxruntime(chain(data_type, scale_type, opset, shape, alone, **attrs), {"x": X}))] += 1
        total = sum(outcomes.values())
        print(f"   {scale_name} scales, {'DequantizeLinear alone' if alone else 'QuantizeLinear -> DequantizeLinear'}:"
              f" {total} models (int8 to uint4 at opsets 21-25, int2 / uint2 at 25; x 3 granularities):")
        for what, count in outcomes.most_common():
            print(f"     {count} / {total}: {what}")


def default_versions() -> None:
    """The int8 chain of 4. (float32 scale) with onnx's default IR version and opset for a new model."""
    typed = chain(F.INT8, F.FLOAT, 21)
    m = helper.make_model(typed.graph)
    print(f"\n5. onnx's defaults, IR {m.ir_version} / opset {m.opset_import[0].version}, int8 QuantizeLinear ->"
          f" DequantizeLinear: {describe(st.run_onnxruntime(m, {'x': X}), st.run_reference(m, {'x': X}).value)}")
    identity = helper.make_model(helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                                                   typed.graph.input, typed.graph.output))
    print(f"   the same defaults, an Identity: {describe(st.run_onnxruntime(identity, {'x': X}))}")


def main() -> int:
    print(st.versions(), "(CPU provider, ORT_DISABLE_ALL)\n")
    negative_scales()
    float_storage()
    e8m0_block_scales()
    half_scales()
    default_versions()
    return 0


if __name__ == "__main__":
    sys.exit(main())
