"""Which malformed quantization parameters stock onnx accepts, and what runtimes then compute.

Run: python proposal/experiments/onnx_checker_accepts.py

Each case is a one- or two-node QuantizeLinear / DequantizeLinear model
(opset 21, IR 10) whose parameters break a rule the operator documentation
states or implies. For each: the verdict of
onnx.checker.check_model(full_check=True), what onnx.reference and
onnxruntime (CPU, optimizations disabled) return or raise, and how many
output elements the two disagree on. Case ids are stable; the RFC cites
them. Output: a Markdown table (quoted in proposal/0001).

The quantize cases read x = 48 evenly spaced values in [-1, 1] (24 negative,
24 positive) of shape [1, 3, 4, 4], into uint8 with zero point 128 unless
the case says otherwise.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stock_tools as st  # noqa: E402

X_SHAPE = [1, 3, 4, 4]
X = np.linspace(-1.0, 1.0, math.prod(X_SHAPE), dtype=np.float32).reshape(X_SHAPE)


def tensor(name: str, data_type: int, dims, values) -> TensorProto:
    """An initializer whose values are stored as given, unchecked (int32_data for integers)."""
    t = TensorProto(name=name, data_type=data_type, dims=list(dims))
    if data_type in (TensorProto.FLOAT, TensorProto.DOUBLE):
        t.float_data.extend(values) if data_type == TensorProto.FLOAT else t.double_data.extend(values)
    else:
        t.int32_data.extend(int(v) for v in values)  # no range check: onnx does none either
    return t


def quantize(scale, zero_point=(128,), *, scale_dims=(), zp_dims=None, zp_type=TensorProto.UINT8, **attrs):
    """y = QuantizeLinear(x, scale, zero_point) on X.

    onnxruntime's Python API cannot return 4-bit tensors, so a 4-bit y is
    read back through DequantizeLinear(y, 1, 0), which gives its integers
    as floats in both runtimes.
    """
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], **attrs)]
    inits = [
        tensor("s", TensorProto.FLOAT, scale_dims, scale),
        tensor("z", zp_type, scale_dims if zp_dims is None else zp_dims, zero_point),
    ]
    out, out_type = "y", zp_type
    if zp_type in (TensorProto.INT4, TensorProto.UINT4):
        nodes.append(helper.make_node("DequantizeLinear", ["y", "one", "zero"], ["y_read"]))
        inits += [tensor("one", TensorProto.FLOAT, [], [1.0]), tensor("zero", zp_type, [], [0])]
        out, out_type = "y_read", TensorProto.FLOAT
    return st.model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, X_SHAPE)],
        [helper.make_tensor_value_info(out, out_type, X_SHAPE)],
        inits,
    )


INT32_Q = np.array([5, 7, 9, 11], np.int32)


def int32_with_zero_point() -> onnx.ModelProto:
    """y = DequantizeLinear(q : int32, 0.5, 5): the spec says int32 has no zero point."""
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    inits = [tensor("s", TensorProto.FLOAT, [], [0.5]), tensor("z", TensorProto.INT32, [], [5])]
    return st.model(
        nodes,
        [helper.make_tensor_value_info("q", TensorProto.INT32, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        inits,
    )


def pair_disagrees() -> onnx.ModelProto:
    """x -Q(0.02, 128)-> q -DQ(0.5, 0)-> y: one uint8 tensor read with two different scales."""
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s1", "z1"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "s2", "z2"], ["y"]),
    ]
    inits = [
        tensor("s1", TensorProto.FLOAT, [], [0.02]),
        tensor("z1", TensorProto.UINT8, [], [128]),
        tensor("s2", TensorProto.FLOAT, [], [0.5]),
        tensor("z2", TensorProto.UINT8, [], [0]),
    ]
    return st.model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, X_SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, X_SHAPE)],
        inits,
    )


def describe(values: np.ndarray) -> str:
    """A short account of an output: its distinct values with counts, or its range."""
    values = st.as_numbers(values)
    distinct, counts = np.unique(values, return_counts=True)
    if len(distinct) <= 3:
        parts = [f"{_num(v)}" + (f" ×{c}" if len(distinct) > 1 else "") for v, c in zip(distinct, counts)]
        return ("all " if len(distinct) == 1 else "") + ", ".join(parts)
    return f"{values.size} values in [{_num(values.min())}, {_num(values.max())}]"


def _num(v) -> str:
    return f"{int(v)}" if float(v).is_integer() else f"{float(v):.4g}"


def zero_point_use(values: np.ndarray) -> str:
    """For int32 DequantizeLinear: was the zero point 5 subtracted?"""
    if np.array_equal(values, 0.5 * (INT32_Q - 5)):
        return "0.5·(q − 5): subtracts it"
    return "0.5·q: ignores it" if np.array_equal(values, 0.5 * INT32_Q) else describe(values)


def ratio_to_x(values: np.ndarray) -> str:
    """For the Q/DQ pair: how far y is from x (a matching pair gives y ≈ x)."""
    ratio = np.median(values[np.abs(X) > 0.1] / X[np.abs(X) > 0.1])
    return f"y ≈ {ratio:.3g}·x (a matching pair gives y ≈ x)"


@dataclass(frozen=True)
class Case:
    id: str
    what: str
    build: Callable[[], onnx.ModelProto]
    feeds: dict = field(default_factory=lambda: {"x": X})
    describe: Callable[[np.ndarray], str] = describe


ZERO_X = {"x": np.zeros(X_SHAPE, np.float32)}  # the output is then the zero point as read

CASES = [
    Case("scale-zero", "scale 0", lambda: quantize([0.0])),
    Case("scale-negative", "scale −0.02", lambda: quantize([-0.02])),
    Case("scale-nan", "scale NaN", lambda: quantize([math.nan])),
    Case("scale-inf", "scale +inf", lambda: quantize([math.inf])),
    Case("scale-subnormal", "scale 1e-45 (subnormal)", lambda: quantize([1e-45])),
    Case(
        "scale-per-axis-degenerate",
        "per-axis scales [0.02, 0, NaN], axis 1",
        lambda: quantize([0.02, 0.0, math.nan], [128] * 3, scale_dims=[3], axis=1),
    ),
    Case(
        "zero-point-wraps-uint8",
        "uint8 zero point stored as 300 (x = 0)",
        lambda: quantize([0.02], [300]),
        ZERO_X,
    ),
    Case(
        "zero-point-wraps-int4",
        "int4 zero point stored as 9, range [−8, 7] (x = 0)",
        lambda: quantize([0.02], [9], zp_type=TensorProto.INT4),
        ZERO_X,
    ),
    Case(
        "zero-point-count",
        "3 zero points, 1 scale (per-tensor)",
        lambda: quantize([0.02], [128] * 3, zp_dims=[3]),
    ),
    Case(
        "axis-scale-count",
        "2 per-axis scales for an axis of 3",
        lambda: quantize([0.02, 0.03], [128] * 2, scale_dims=[2], axis=1),
    ),
    Case("axis-out-of-range", "axis 5 on a rank-4 tensor", lambda: quantize([0.02] * 3, [128] * 3, scale_dims=[3], axis=5)),
    Case(
        "block-scale-shape",
        "block size 3, scale shape [1, 3, 4, 4] (should be [1, 1, 4, 4])",
        lambda: quantize([0.02] * 48, [128] * 48, scale_dims=X_SHAPE, axis=1, block_size=3),
    ),
    Case(
        "block-size-negative",
        "block size −2",
        lambda: quantize([0.02] * 48, [128] * 48, scale_dims=X_SHAPE, axis=1, block_size=-2),
    ),
    Case(
        "int32-zero-point",
        "DequantizeLinear of int32 with zero point 5",
        int32_with_zero_point,
        {"q": INT32_Q},
        zero_point_use,
    ),
    Case(
        "qdq-pair-disagrees",
        "QuantizeLinear (0.02, 128) then DequantizeLinear (0.5, 0) of the same tensor",
        pair_disagrees,
        describe=ratio_to_x,
    ),
]


@dataclass(frozen=True)
class Result:
    case: Case
    checker: str
    reference: st.Outcome
    onnxruntime: st.Outcome

    @property
    def different(self) -> tuple[int, int] | None:
        return st.count_different(self.reference, self.onnxruntime)


def measure(case: Case) -> Result:
    m = case.build()
    return Result(case, st.check(m), st.run_reference(m, case.feeds), st.run_onnxruntime(m, case.feeds))


def row(result: Result) -> str:
    def cell(outcome: st.Outcome) -> str:
        return result.case.describe(outcome.value) if outcome.ran else f"raises {outcome.error}"

    diff = result.different
    cells = [
        f"`{result.case.id}`",
        result.case.what,
        f"**{result.checker}**" if result.checker == "accepts" else result.checker,
        cell(result.reference),
        cell(result.onnxruntime),
        "—" if diff is None else f"{diff[0]} of {diff[1]}",
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> int:
    print(st.versions() + f"; models at opset {st.OPSET}, IR {st.IR_VERSION}\n")
    print("| case | parameters | onnx.checker (full_check) | onnx.reference | onnxruntime (CPU) | elements that differ |")
    print("|---|---|---|---|---|---|")
    for case in CASES:
        print(row(measure(case)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
