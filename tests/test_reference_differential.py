"""The reference evaluator against onnxruntime's unoptimized path (ORT_DISABLE_ALL) on one-node float models:
every float operator the suite's models, the test corpora and the examples use, and the other common operators
of quantized CNN / transformer / OCR models, on seeded random shapes, attributes and values (two seeds each
here; `python proposal/experiments/float_op_differential.py --seeds 300` is the wide sweep).

A quantized node runs the float operator on dequantized values, so an operator the reference gets wrong in
float is wrong quantized too. Known onnxruntime deviations from ONNX's text, and inputs ONNX leaves undefined,
are named in the harness and counted apart."""

from __future__ import annotations

import glob

import numpy as np
import onnx
import pytest
from builders import ROOT, load_script

pytest.importorskip("onnxruntime")

harness = load_script("proposal/experiments/float_op_differential.py")
SEEDS = range(2)

# used by the suite or the corpora, covered elsewhere: not one-node float operators
ELSEWHERE = {
    "Constant": "computes nothing: its value is the attribute (tests/corpus_dynamic.py conv_constant_weight)",
    "If": "control flow: tests/test_control_flow.py",
    "Loop": "control flow: tests/test_control_flow.py, tests/test_reference_onnx_gaps.py",
    "Scan": "control flow: tests/test_control_flow.py, tests/test_reference_robustness.py",
    "SequenceLength": "a sequence operator",
}


def used_operators() -> set[str]:
    """Default-domain operators of the suite's cases, the examples, and the corpora's float models."""
    import corpus
    import corpus_dynamic
    import corpus_nncf_negative
    import corpus_real_inputs

    models = [onnx.load(path, load_external_data=False) for pattern in ("conformance_tests/cases/**/*.onnx",
                                                                        "examples/**/*.onnx")
              for path in glob.glob(str(ROOT / pattern), recursive=True)]
    models += [*corpus.float_models().values(), *corpus_real_inputs.float_models().values(),
               *(make() for make in corpus_dynamic.FLOAT_MODELS.values()), corpus_nncf_negative.float_model()]
    found = set()
    for model in models:
        graphs = [model.graph]
        while graphs:
            graph = graphs.pop()
            for node in graph.node:
                if node.domain in ("", "ai.onnx"):
                    found.add(node.op_type)
                graphs += [a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH]
                graphs += [g for a in node.attribute for g in a.graphs]
    return found


def test_every_operator_the_suite_and_the_corpora_use_is_measured():
    missing = used_operators() - set(harness.GENERATORS) - set(ELSEWHERE)
    assert not missing, f"add a generator to proposal/experiments/float_op_differential.py for {sorted(missing)}"


@pytest.mark.parametrize("op", sorted(harness.GENERATORS))
def test_the_reference_agrees_with_unoptimized_onnxruntime(op):
    for trial in harness.trials(op, SEEDS):
        verdict = harness.judge(trial)
        assert verdict.problem is None, f"{trial.describe()}: {verdict.problem}"


def test_the_comparison_catches_a_wrong_operator():
    """The harness is not vacuous: an implementation one ulp-scale off in one element is reported."""
    from onnx.reference.op_run import OpRun

    from onnx_qtypes.reference_ops import ReferenceEvaluator

    class Relu(OpRun):
        op_domain = ""

        def _run(self, x):
            y = np.maximum(x, 0)
            y.reshape(-1)[-1] += np.float32(0.01)
            return (y,)

    def wrong(trial):
        return harness._quiet(lambda: ReferenceEvaluator(trial.model(), new_ops=[Relu]).run(None, trial.feeds))

    trial = harness.Trial("Relu", [("x", np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3))])
    assert harness.judge(trial).problem is None
    assert "1 of 6 elements differ" in harness.judge(trial, wrong).problem
