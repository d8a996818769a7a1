"""How far the reference evaluator on lift(q) is from onnxruntime's definition path on q, over the corpus models
(tests/corpus.py: 20 onnxruntime quantize_static models), and whether onnxruntime on lower(lift(q)) is
bit-identical to onnxruntime on q. The figures proposal/spec/interop.md quotes.

Run: PYTHONPATH=. python proposal/experiments/corpus_agreement.py
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import stock_tools as st  # noqa: E402
from corpus import corpus_feeds, corpus_models, run_onnxruntime  # noqa: E402

from onnx_qtypes import get_qtype, lift, lower  # noqa: E402
from onnx_qtypes.reference_ops import ReferenceEvaluator  # noqa: E402


def _step(typed, output: str) -> float:
    dq = next(n for n in typed.graph.node if output in n.output)
    return get_qtype(typed, dq.input[0]).scale[0]


def main() -> int:
    models = corpus_models()
    exact, elements, one, more, identical = 0, 0, {}, 0, 0
    for name, q in sorted(models.items()):
        typed = lift(q)
        lowered = lower(typed)
        outputs = [o.name for o in typed.graph.output]
        off = 0
        same = True
        for seed in range(2):
            feeds = corpus_feeds(name, seed)
            theirs = run_onnxruntime(q, feeds, optimize=False)
            again = run_onnxruntime(lowered, feeds, optimize=False)
            ours = dict(zip(outputs, ReferenceEvaluator(typed).run(outputs, feeds)))
            for out in outputs:
                step = _step(typed, out)
                diff = np.abs(np.rint(np.asarray(ours[out], np.float64) / step)
                              - np.rint(np.asarray(theirs[out], np.float64) / step))
                elements += diff.size
                off += int((diff == 1).sum())
                more += int((diff > 1).sum())
                same &= bool(np.array_equal(np.asarray(again[out]), np.asarray(theirs[out])))
        exact += off == 0
        identical += same
        if off:
            one[name] = off
    print(st.versions(), "(unoptimized: ORT_DISABLE_ALL), 2 inputs each")
    print(f"reference on lift(q) vs onnxruntime on q: {len(models)} models, {exact} exact; "
          f"{sum(one.values())} of {elements} output elements one step off ({', '.join(f'{k}: {v}' for k, v in one.items())}); "
          f"{more} more than one step")
    print(f"onnxruntime on lower(lift(q)) bit-identical to onnxruntime on q: {identical} / {len(models)} models")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
