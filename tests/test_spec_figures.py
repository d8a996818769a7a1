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


def test_an_unknown_figure_is_refused():
    with pytest.raises(KeyError, match="unknown figure"):
        figures.render("<!-- figure no-such-thing -->1<!-- /figure -->")
