"""Counts the proposal quotes from the tree are generated (proposal/figures.py) and cannot go stale.

Every count of cases, rules or operators in the hand-written texts sits in a figure span that
proposal/figures.py fills from the case folders, the rule registry and the recorded results; a
count written outside a span fails here, and so does a span whose value the tree no longer gives.
"""

from __future__ import annotations

import json
import re

import pytest
from builders import ROOT, load_script

from onnx_qtypes.checker import all_rules

figures = load_script("proposal/figures.py")
TEXTS = figures.TEXTS
# a count of the suite or the registry: "1,140 execution cases", "242 checker cases", "66 rules", "45 operators"
COUNT = re.compile(r"\b\d[\d,]*\s+(?:(?:execution|checker|must-reject|reject|typed-only)\s+cases|rules|operators)\b")


def _outside_spans(text: str) -> str:
    return figures.SPAN.sub("", text)


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_figures_are_what_the_tree_gives(path):
    text = path.read_text(encoding="utf-8")
    assert figures.render(text) == text, f"{path.relative_to(ROOT)}: run `python proposal/figures.py`"


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_count_of_the_tree_outside_a_figure(path):
    bare = COUNT.findall(_outside_spans(path.read_text(encoding="utf-8")))
    assert not bare, f"{path.relative_to(ROOT)}: counts written by hand go stale; use a figure span: {bare}"


def test_the_figures_count_the_tree():
    # independent counts: folders and the registry, not the script's own helpers
    execution = [d for d in (ROOT / "conformance_tests/cases/execution").iterdir() if (d / "case.json").is_file()]
    checker = [d for d in (ROOT / "conformance_tests/cases/checker").iterdir() if (d / "case.json").is_file()]
    assert figures.value("execution-cases") == f"{len(execution):,}"
    assert figures.value("checker-cases") == f"{len(checker):,}"
    assert figures.value("rules") == f"{len(all_rules()):,}"
    typed_only = sum('"qdq_model": null' in (d / "case.json").read_text() for d in execution)
    assert figures.value("typed-only-cases") == f"{typed_only:,}"


def test_operators_are_onnx_operators_and_functions_are_counted_apart():
    import onnx.defs

    named = {json.loads((d / "case.json").read_text())["operator"]
             for d in (ROOT / "conformance_tests/cases/execution").iterdir() if (d / "case.json").is_file()}
    onnx_ops = {op for op in named if onnx.defs.has(op)}
    assert figures.value("operators") == f"{len(onnx_ops):,}"
    assert figures.value("function-operators") == f"{len(named - onnx_ops):,}"
    assert {"Poly", "Requant"} <= named - onnx_ops  # the model-local functions of the function-* cases


def test_vendor_figures_read_the_recorded_deviation():
    record = json.loads((ROOT / "conformance_tests/vendor_results/onnxruntime-1.32.0.json").read_text())
    entry = next(d for d in record["deviations"] if d["id"] == "gemm-bias-zero-point")
    optimized = entry["optimized"]
    steps = max(abs(a - b) for row, ref in zip(optimized, entry["reference"]) for a, b in zip(row, ref))
    assert figures.value("vendor:onnxruntime-1.32.0:gemm-bias-zero-point:optimized") == f"{steps:,}"
    with pytest.raises(KeyError, match="no deviation"):
        figures.value("vendor:onnxruntime-1.32.0:no-such-deviation:optimized")


def test_encoding_figures_count_the_committed_run():
    run = json.loads((ROOT / "proposal/experiments/encodings_vs_tools.json").read_text())
    assert figures.value("encodings:models") == f"{len(run['models'])}"
    assert figures.value("encodings:tools") == f"{len(run['tools']) - 1}"  # 'none' is the control, no tool
    assert "none" in run["tools"]
    opened = [r for r in run["records"] if r["verdict"] == "FAILS OPEN"]
    assert figures.value("encodings:a") == f"{sum(r['encoding'] == 'a' for r in opened)}"
    assert figures.value("encodings:c") == "0"
    kept = sum(r["encoding"] == "c" and r["tool"] == "extract_model" and r["verdict"] == "kept intact"
               for r in run["records"])
    assert figures.value("encodings:c:extract_model:i") == f"{kept}"


def test_the_results_table_has_every_recorded_backend():
    table = figures.value("results-table")
    for path in (ROOT / "conformance_tests/results").glob("*.json"):
        record = json.loads(path.read_text())
        if isinstance(record, dict) and "summary" in record:
            label = figures.BACKEND_LABELS.get(record["backend"], record["backend"])
            assert f"| {label} |" in table


def test_the_rfc_quotes_the_suite_through_figures():
    rfc = (ROOT / "proposal/0001-quantized-element-types.md").read_text(encoding="utf-8")
    for name in ("execution-cases", "checker-cases", "reject-cases", "rules", "results-table"):
        assert f"<!-- figure {name} -->" in rfc


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_figure_marker_is_a_span_the_script_fills(path):
    text = re.sub(r"`[^`\n]*`", "", path.read_text(encoding="utf-8"))  # a marker named in code is a mention
    assert text.count("<!-- figure ") == len(figures.SPAN.findall(text)), \
        f"{path.relative_to(ROOT)}: a figure marker the script does not read (a name with a character it refuses?)"


def test_an_unknown_figure_is_refused():
    with pytest.raises(KeyError, match="unknown figure"):
        figures.render("<!-- figure no-such-thing -->1<!-- /figure -->")
