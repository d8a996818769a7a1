"""How close the interop paths come, in numbers the tests only bound.

Run: PYTHONPATH=. python proposal/experiments/interop_margins.py

1. QONNX: tests/corpus_qonnx.py's models, lifted; the largest difference
   between the reference on the lifted model and qonnx's execute_onnx on the
   original (inputs of seeds 0 and 1), absolute and in steps of the last Quant.
2. Dynamic quantization: tests/corpus_dynamic.py's models, lifted; the
   largest difference of the float outputs between the reference and
   onnxruntime's unoptimized path on the original.
3. MatMulNBits with a trivial g_idx (k / block_size) beside packed zero points
   other than 2^(bits-1): onnxruntime's unoptimized output against the same
   node without g_idx (the zero points read) and without zero points
   (2^(bits-1) read).
"""

from __future__ import annotations

import sys
import warnings
from importlib.metadata import version
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import stock_tools as st  # noqa: E402
from corpus import run_onnxruntime  # noqa: E402
from corpus_dynamic import dynamic_feeds, dynamic_models  # noqa: E402
from corpus_matmul_nbits import hand_built  # noqa: E402
from corpus_qonnx import qonnx_feeds, qonnx_models  # noqa: E402

from onnx_qtypes.interop import lift_model  # noqa: E402
from onnx_qtypes.reference_ops import ReferenceEvaluator  # noqa: E402


def reference(model: onnx.ModelProto, feeds: dict, outputs=None) -> list[np.ndarray]:
    return [np.asarray(v, np.float64) for v in ReferenceEvaluator(model).run(outputs, feeds)]


def qonnx_margins() -> None:
    from qonnx.core import onnx_exec
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.transformation.infer_shapes import InferShapes

    print(f"1. QONNX (qonnx {version('qonnx')}): reference on lift(m) against execute_onnx on m")
    for name, model in sorted(qonnx_models().items()):
        last = [n for n in model.graph.node if n.op_type in ("Quant", "IntQuant")][-1]
        step = float(np.max(onnx.numpy_helper.to_array(next(t for t in model.graph.initializer
                                                                if t.name == last.input[1]))))
        lifted = lift_model(model).model
        worst = 0.0
        for seed in (0, 1):
            feeds = qonnx_feeds(model, seed)
            want = onnx_exec.execute_onnx(ModelWrapper(model).transform(InferShapes()), feeds)[model.graph.output[0].name]
            worst = max(worst, float(np.max(np.abs(reference(lifted, feeds)[0] - want))))
        print(f"   {name}: max |difference| {worst:.3g} ({worst / step:.3g} steps of {step:.4g})")


def dynamic_margins() -> None:
    print("\n2. dynamic quantization: reference on lift(m) against onnxruntime (ORT_DISABLE_ALL) on m, float outputs")
    for name, model in sorted(dynamic_models().items()):
        feeds = dynamic_feeds(name)
        want = run_onnxruntime(model, feeds, optimize=False)
        got = reference(lift_model(model).model, feeds, list(want))
        worst = max(float(np.max(np.abs(g - np.asarray(w, np.float64)))) for g, w in zip(got, want.values()))
        scale = max(float(np.max(np.abs(np.asarray(w, np.float64)))) for w in want.values())
        print(f"   {name}: max |difference| {worst:.3g} (outputs up to {scale:.3g})")


def nbits_g_idx() -> None:
    print("\n3. MatMulNBits, 4 bits, blocks of 16, trivial g_idx beside packed zero points (onnxruntime, ORT_DISABLE_ALL)")
    feeds = {"A": np.random.default_rng(3).standard_normal((2, 48)).astype(np.float32)}
    with_g_idx = run_onnxruntime(hand_built(g_idx="trivial"), feeds, optimize=False)["Y"]
    for label, model in (("the zero points read (no g_idx)", hand_built()),
                         ("2^(bits-1) read (no zero points)", hand_built(zero_points="none"))):
        other = run_onnxruntime(model, feeds, optimize=False)["Y"]
        print(f"   with g_idx vs {label}: max |difference| {float(np.max(np.abs(with_g_idx - other))):.3g}")


def main() -> int:
    warnings.simplefilter("ignore")
    print(st.versions(), "\n")
    qonnx_margins()
    dynamic_margins()
    nbits_g_idx()
    return 0


if __name__ == "__main__":
    sys.exit(main())
