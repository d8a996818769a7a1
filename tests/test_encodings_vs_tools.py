"""proposal/experiments/encodings_vs_tools.py: the recommended encoding stays fail-closed under stock tools,
and today's encoding does not (so the experiment can fail).

Runs today's encoding and the recommended one through onnx's own tools, onnxruntime's optimizer and every
optional tool that imports here (each skipped one is named by test_optional_tools_installed). Nothing here
asserts what onnxruntime's kernels compute: only whether it loads and runs a tool's output at all.
"""

from __future__ import annotations

import pytest
from builders import load_script

pytest.importorskip("onnxruntime")

experiment = load_script("proposal/experiments/encodings_vs_tools.py")
ENCODINGS = ["a", experiment.RECOMMENDED]


@pytest.fixture(scope="module")
def result() -> dict:
    return experiment.run_matrix(encodings=ENCODINGS)


def test_reference_answers_agree_with_the_reference_evaluator() -> None:
    checks = experiment.reference_check()
    assert set(checks.values()) == {"agrees"}, checks  # function_typed_body too: a typed body runs on storage


def test_every_pair_has_a_verdict(result: dict) -> None:
    assert len(result["records"]) == len(ENCODINGS) * len(result["models"]) * len(result["tools"])
    verdicts = {r["verdict"] for r in result["records"]}
    assert verdicts <= {"FAILS OPEN", "kept intact", "closed, lost", "tool refused"}


def test_each_encoding_is_closed_and_readable_before_any_tool(result: dict) -> None:
    untouched = [r for r in result["records"] if r["tool"] == "none"]
    assert untouched and all(r["verdict"] == "kept intact" for r in untouched), untouched


def test_recommended_encoding_has_no_fail_open_pair(result: dict) -> None:
    assert experiment.fail_open(result, experiment.RECOMMENDED) == []


def test_todays_encoding_fails_open_somewhere(result: dict) -> None:
    opened = experiment.fail_open(result, "a")
    assert opened, "today's encoding no longer fails open anywhere: the experiment cannot tell encodings apart"
    assert {r["tool"] for r in opened} >= {"infer_shapes", "strip_value_info"}


def test_recommended_encoding_survives_the_readers_path(result: dict) -> None:
    """Tools that only move or rename declarations keep every quantized type readable."""
    for tool in ("save_load", "infer_shapes", "compose_add_prefix", "compose_merge"):
        records = [r for r in result["records"] if r["encoding"] == experiment.RECOMMENDED and r["tool"] == tool]
        assert records and all(r["verdict"] == "kept intact" for r in records), (tool, records)


def test_optional_tools_installed(result: dict) -> None:
    if result["skipped_tools"]:
        pytest.skip("optional tools not importable, not measured: "
                    + ", ".join(f"{t} ({why})" for t, why in result["skipped_tools"].items()))


def test_a_call_whose_operand_type_is_not_its_typed_bodys_is_refused() -> None:
    """Storage crosses into a typed function body unchanged, so a call giving it other parameters would be read
    with the body's: the evaluator names the mismatch instead."""
    from onnx_qtypes import QType, set_qtypes
    from onnx_qtypes.reference_ops import ReferenceEvaluator
    from onnx_qtypes.reference_ops.errors import EvaluationError

    case = experiment.MODELS["function_typed_body"]()
    set_qtypes(case.model, {"a": QType("int8", 0.5, 0), "b": QType("int8", 0.5, 0)}, function="local:QAdd")
    with pytest.raises(EvaluationError, match="'a_q' is .* but the body of local:QAdd declares 'a' as"):
        ReferenceEvaluator(case.model).run(None, case.feeds)


def test_a_typed_body_whose_declaration_has_statistics_still_runs() -> None:
    """Statistics are no part of what the integers mean: a body declaring its types with statistics agrees with
    a call whose operands carry none."""
    from onnx_qtypes import Statistics, TensorStatistics, get_qtype, set_qtypes
    from onnx_qtypes.reference_ops import ReferenceEvaluator

    case = experiment.MODELS["function_typed_body"]()
    a = get_qtype(case.model, "a", function="local:QAdd")
    set_qtypes(case.model, {"a": a.with_statistics(TensorStatistics(tensor=Statistics(min=-1.0, max=1.0)))},
               function="local:QAdd")
    assert ReferenceEvaluator(case.model).run(None, case.feeds)[0].tolist() == case.expected[0].tolist()
