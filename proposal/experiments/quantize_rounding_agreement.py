"""How often QuantizeLinear in onnx.reference and onnxruntime differs from the exact result.

Run: python proposal/experiments/quantize_rounding_agreement.py [--n N] [--seed S]

For each storage type (int8, uint8, int16, uint16, int4, uint4) and each
(x type, scale type) pair, N random x (default 10^6, seed 0) spread uniformly
over the storage range plus two steps either side (so some saturate) go
through one per-tensor QuantizeLinear node in onnx.reference and in
onnxruntime (CPU, optimizations disabled). Each output is compared with the
exact result, clamp(round_half_to_even(x / scale) + zero_point), computed by
onnx_qtypes.reference_ops.quantize (one correctly rounded float64 division,
exact for these inputs: proposal/spec/semantics.md#exactness).

Each miss is also classified against the near-tie rule of
proposal/spec/semantics.md#quantize-precision: an element is a *near tie* when
its exact quotient q = x / scale lies within |q| * 2^-p of a half-integer, p
the significand precision of the scale's (the expressed) type: 24 for
float32, 11 for float16. The columns "beyond near ties" count the misses
outside that band, or more than one step off; the rule allows none.

x and scale of one type use opset 21, where they must share a type; a
float16 scale for float32 x needs opset 23 (its default division precision is
the scale's type). 4-bit outputs are read back through DequantizeLinear(y, 1,
0), as onnxruntime's Python API cannot return 4-bit tensors. Output: a
Markdown table (quoted in proposal/spec/semantics.md).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

from onnx_qtypes import QType
from onnx_qtypes.reference_ops.quant import quantize

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stock_tools as st  # noqa: E402

# storage type: (onnx data type, zero point); one scale value for all, rounded to the scale's type
STORAGE = {
    "int8": (TensorProto.INT8, -3),
    "uint8": (TensorProto.UINT8, 131),
    "int16": (TensorProto.INT16, -7),
    "uint16": (TensorProto.UINT16, 32771),
    "int4": (TensorProto.INT4, -1),
    "uint4": (TensorProto.UINT4, 9),
}
SCALE = 0.0173
FLOATS = {"float32": (np.float32, TensorProto.FLOAT), "float16": (np.float16, TensorProto.FLOAT16)}
PRECISION = {"float32": 24, "float16": 11}  # significand bits, implicit bit included
# (x type, scale type, opset)
PAIRS = [("float32", "float32", 21), ("float16", "float16", 21), ("float32", "float16", 23)]


def qlinear_model(storage: str, x_type: str, scale_type: str, opset: int, scale: float) -> onnx.ModelProto:
    data_type, zero_point = STORAGE[storage]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])]
    inits = [
        helper.make_tensor("s", FLOATS[scale_type][1], [], [scale]),
        helper.make_tensor("z", data_type, [], [zero_point]),
    ]
    out, out_type = "y", data_type
    if storage in ("int4", "uint4"):
        nodes.append(helper.make_node("DequantizeLinear", ["y", "one", "zero"], ["y_read"]))
        inits += [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]), helper.make_tensor("zero", data_type, [], [0])]
        out, out_type = "y_read", TensorProto.FLOAT
    return st.model(
        nodes,
        [helper.make_tensor_value_info("x", FLOATS[x_type][1], ["n"])],
        [helper.make_tensor_value_info(out, out_type, ["n"])],
        inits,
        opset=opset,
    )


def random_inputs(storage: str, x_type: str, scale: float, n: int, seed: int) -> np.ndarray:
    qtype = QType(storage, scale, STORAGE[storage][1])
    lo, hi = qtype.storage_min - qtype.zero_point[0] - 2, qtype.storage_max - qtype.zero_point[0] + 2
    rng = np.random.default_rng(seed)
    return (rng.uniform(lo, hi, n) * scale).astype(FLOATS[x_type][0])


@dataclass(frozen=True)
class Row:
    storage: str
    x_type: str
    scale_type: str
    opset: int
    n: int
    exact: np.ndarray
    near_tie: np.ndarray  # bool per value: the exact quotient within |q| 2^-p of a half-integer
    reference: st.Outcome
    onnxruntime: st.Outcome

    def off(self, outcome: st.Outcome) -> str:
        if not outcome.ran:
            return f"raises {outcome.error}"
        diff = np.abs(st.as_numbers(outcome.value) - self.exact)
        wrong = int(np.count_nonzero(diff))
        text = f"{wrong} ({100 * wrong / self.n:.3g} %)"
        return text + (f", max {int(diff.max())} step" if wrong else "")

    def beyond(self, outcome: st.Outcome) -> str:
        """Misses the near-tie rule does not allow: off a near tie, or more than one step."""
        if not outcome.ran:
            return "—"
        diff = np.abs(st.as_numbers(outcome.value) - self.exact)
        return str(int(np.count_nonzero((diff > 1) | ((diff == 1) & ~self.near_tie))))

    def cells(self) -> list[str]:
        between = st.count_different(self.reference, self.onnxruntime)
        return [
            self.storage,
            self.x_type,
            self.scale_type,
            str(self.opset),
            f"{self.n:,}",
            self.off(self.reference),
            self.off(self.onnxruntime),
            self.beyond(self.reference),
            self.beyond(self.onnxruntime),
            "—" if between is None else f"{between[0]} ({100 * between[0] / self.n:.3g} %)",
        ]


def measure(storage: str, x_type: str, scale_type: str, opset: int, n: int, seed: int = 0) -> Row:
    scale = float(FLOATS[scale_type][0](SCALE))  # the value the model stores, exactly
    x = random_inputs(storage, x_type, scale, n, seed)
    exact = quantize(x, QType(storage, scale, STORAGE[storage][1])).astype(np.int64)
    quotient = x.astype(np.float64) / scale  # correctly rounded: far finer than the band below
    near_tie = np.abs(quotient - (np.floor(quotient) + 0.5)) <= np.abs(quotient) * 2.0 ** -PRECISION[scale_type]
    m = qlinear_model(storage, x_type, scale_type, opset, scale)
    feeds = {"x": x}
    return Row(storage, x_type, scale_type, opset, n, exact, near_tie, st.run_reference(m, feeds), st.run_onnxruntime(m, feeds))


def measure_all(n: int, seed: int = 0) -> list[Row]:
    return [measure(s, x, sc, opset, n, seed) for x, sc, opset in PAIRS for s in STORAGE]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="random values per row (default 10^6)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(st.versions() + f"; {args.n:,} values per row, seed {args.seed}, scale {SCALE} in the scale's type\n")
    print(
        "| storage | x | scale | opset | values | onnx.reference ≠ exact | onnxruntime ≠ exact "
        "| onnx.reference beyond near ties | onnxruntime beyond near ties | onnx.reference ≠ onnxruntime |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in measure_all(args.n, args.seed):
        print("| " + " | ".join(row.cells()) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
