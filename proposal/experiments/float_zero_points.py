"""What a zero point means for float storage types in onnx.reference and onnxruntime.

Run: python proposal/experiments/float_zero_points.py

QuantizeLinear and DequantizeLinear define y = saturate(x / scale + zero_point)
and x = (y − zero_point) · scale for every storage type. For each float
storage type (float8 e4m3fn and e5m2, float4 e2m1, float6 e2m3 and e3m2)
this runs, with scale 1 and zero point 1.0:

- QuantizeLinear(x = 2.0): 3 means the zero point is added, 2 that it is ignored;
- DequantizeLinear(q = 2.0): 1 means the zero point is subtracted, 2 that it
  is ignored;

each at the first opset that has the type, the output read back through
Cast to float32. Output: a Markdown table (quoted in proposal/0001).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stock_tools as st  # noqa: E402

# storage type: the first opset whose QuantizeLinear / DequantizeLinear take it
FLOAT_STORAGE = {
    "float8e4m3fn": (TensorProto.FLOAT8E4M3FN, 21),
    "float8e5m2": (TensorProto.FLOAT8E5M2, 21),
    "float4e2m1": (TensorProto.FLOAT4E2M1, 23),
    "float6e2m3": (TensorProto.FLOAT6E2M3, 28),
    "float6e3m2": (TensorProto.FLOAT6E3M2, 28),
}
VALUE, ZERO_POINT = 2.0, 1.0


def float_model(op: str, storage: str) -> onnx.ModelProto:
    """QuantizeLinear(x : float32) or DequantizeLinear(q = 2.0), scale 1, zero point 1.0, read as float32."""
    data_type, opset = FLOAT_STORAGE[storage]
    inits = [
        helper.make_tensor("s", TensorProto.FLOAT, [], [1.0]),
        helper.make_tensor("z", data_type, [], [ZERO_POINT]),
    ]
    if op == "QuantizeLinear":
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])]
        nodes = [
            helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
            helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT),
        ]
    else:
        inputs = []
        inits.append(helper.make_tensor("q", data_type, [1], [VALUE]))
        nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    return st.model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], inits, opset=opset)


MEANING = {
    "QuantizeLinear": {VALUE + ZERO_POINT: "adds it", VALUE: "ignores it"},
    "DequantizeLinear": {VALUE - ZERO_POINT: "subtracts it", VALUE: "ignores it"},
}


def verdict(op: str, outcome: st.Outcome) -> str:
    """What a tool did with the zero point, e.g. ``adds it (3)``."""
    if not outcome.ran:
        return f"raises {outcome.error}"
    value = float(np.asarray(outcome.value, np.float64).reshape(-1)[0])
    return f"{MEANING[op].get(value, 'neither')} ({value:g})"


def measure(storage: str) -> dict[str, str]:
    """For one storage type: the cell of each (tool, operator)."""
    cells = {}
    for op in MEANING:
        m = float_model(op, storage)
        feeds = {"x": np.array([VALUE], np.float32)} if op == "QuantizeLinear" else {}
        cells[f"onnx.reference {op}"] = verdict(op, st.run_reference(m, feeds))
        cells[f"onnxruntime {op}"] = verdict(op, st.run_onnxruntime(m, feeds))
    return cells


def main() -> int:
    print(st.versions() + f"; scale 1, zero point {ZERO_POINT}, x = q = {VALUE}\n")
    columns = [f"{tool} {op}" for tool in ("onnx.reference", "onnxruntime") for op in MEANING]
    print("| storage | opset | " + " | ".join(columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for storage, (_, opset) in FLOAT_STORAGE.items():
        cells = measure(storage)
        print(f"| {storage} | {opset} | " + " | ".join(cells[c] for c in columns) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
