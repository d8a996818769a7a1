"""Where onnxruntime's com.microsoft QLinearAdd / QLinearMul and float32 QDQ round differently.

Run:  python proposal/experiments/qlinear_binary_ties.py            # prints the table, writes the .md here
      python proposal/experiments/qlinear_binary_ties.py --no-write

For each operator and storage type, 20 seeded sets of scales (uniform in [0.001, 0.05], float32) and zero points
(uniform over the storage type). Each set runs every one of the 65,536 (a, b) pairs through two one-node models on
the CPU provider with ORT_DISABLE_ALL: the contrib kernel, and DequantizeLinear -> Add / Mul -> QuantizeLinear at
opset 21 (what lower writes as QDQ). Both are compared with the definition computed in float64 (the dequantized
values and their sum or product are exact there or within 2^-52 relative; round half to even, saturate). Counted:
elements on which the two runs differ, and on which each differs from the definition. This is why lower's qoperator
form writes the contrib op back where lift read one (proposal/spec/interop.md#lower-qoperator): the meaning is the
same, the bits near ties are not. What onnxruntime computes is recorded as versioned data, not as the definition.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
SETS = 20
STORAGE = {"uint8": (TensorProto.UINT8, np.uint8), "int8": (TensorProto.INT8, np.int8)}


def _models(op: str, storage: str, params: dict[str, float | int]) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    elem, dtype = STORAGE[storage]
    inits = [numpy_helper.from_array(np.array(v, np.float32 if k.startswith("s") else dtype), k)
             for k, v in params.items()]
    io = [helper.make_tensor_value_info(n, elem, [65536]) for n in ("a", "b")]
    out = [helper.make_tensor_value_info("c", elem, [65536])]
    fused = helper.make_node(f"QLinear{op}", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["c"],
                             domain="com.microsoft")
    qdq = [helper.make_node("DequantizeLinear", ["a", "sa", "za"], ["fa"]),
           helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["fb"]),
           helper.make_node(op, ["fa", "fb"], ["fc"]), helper.make_node("QuantizeLinear", ["fc", "sc", "zc"], ["c"])]
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    return (helper.make_model(helper.make_graph([fused], "contrib", io, out, inits), opset_imports=opsets, ir_version=10),
            helper.make_model(helper.make_graph(qdq, "qdq", io, out, inits), opset_imports=opsets[:1], ir_version=10))


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def _definition(op: str, storage: str, p: dict, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    info = np.iinfo(STORAGE[storage][1])
    fa = (a.astype(np.float64) - p["za"]) * np.float64(p["sa"])
    fb = (b.astype(np.float64) - p["zb"]) * np.float64(p["sb"])
    real = fa + fb if op == "Add" else fa * fb
    return np.clip(np.rint(real / np.float64(p["sc"])) + p["zc"], info.min, info.max).astype(STORAGE[storage][1])


def measure() -> list[dict]:
    rows = []
    for op in ("Add", "Mul"):
        for storage, (_, dtype) in STORAGE.items():
            info = np.iinfo(dtype)
            grid = np.arange(info.min, info.max + 1).astype(dtype)
            a, b = (x.ravel() for x in np.meshgrid(grid, grid))
            rng = np.random.default_rng(0)
            counts = {"contrib vs qdq": 0, "contrib vs definition": 0, "qdq vs definition": 0}
            sets_differing = 0
            for _ in range(SETS):
                p = {"sa": float(np.float32(rng.uniform(0.001, 0.05))), "za": int(rng.integers(info.min, info.max + 1)),
                     "sb": float(np.float32(rng.uniform(0.001, 0.05))), "zb": int(rng.integers(info.min, info.max + 1)),
                     "sc": float(np.float32(rng.uniform(0.001, 0.05))), "zc": int(rng.integers(info.min, info.max + 1))}
                fused, qdq = (_run(m, {"a": a, "b": b}) for m in _models(op, storage, p))
                exact = _definition(op, storage, p, a, b)
                differ = int(np.count_nonzero(fused != qdq))
                sets_differing += differ > 0
                counts["contrib vs qdq"] += differ
                counts["contrib vs definition"] += int(np.count_nonzero(fused != exact))
                counts["qdq vs definition"] += int(np.count_nonzero(qdq != exact))
            rows.append({"op": op, "storage": storage, "sets differing": sets_differing, **counts})
    return rows


def table(rows: list[dict]) -> str:
    head = ["operator", "storage", f"sets (of {SETS}) where contrib and QDQ differ",
            f"elements, contrib vs QDQ (of {SETS} x 65,536)", "contrib vs definition", "QDQ vs definition"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append(f"| QLinear{r['op']} | {r['storage']} | {r['sets differing']} | {r['contrib vs qdq']} | "
                     f"{r['contrib vs definition']} | {r['qdq vs definition']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    text = (f"# onnxruntime's QLinearAdd / QLinearMul against float32 QDQ near ties\n\n"
            f"Generated by `python proposal/experiments/qlinear_binary_ties.py` (do not edit by hand).\n\n"
            f"Versions: onnx {onnx.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__} "
            f"(CPU provider, ORT_DISABLE_ALL).\n\n{table(measure())}\n")
    print(text)
    if not args.no_write:
        (HERE / "qlinear_binary_ties.md").write_text(text)


if __name__ == "__main__":
    main()
