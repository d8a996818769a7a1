"""conformance_tests/coverage.py: every value of every field of QuantizedType has an execution case, the list of values
follows proto/qtype.py's tables, tags agree with the models, and status.md shows the matrix."""

from __future__ import annotations

import json

import onnx
import pytest
from builders import ROOT

import onnx_qtypes
from onnx_qtypes.conformance import load_cases
from onnx_qtypes.conformance.coverage import REQUIRED, WEIGHT_READERS, case_features, case_tags, matrix, missing
from onnx_qtypes.conformance.deviations import normalize_message
from onnx_qtypes.conformance.status import coverage_section
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.storage_types import EXPRESSED_TYPES, STORAGE_TYPES

CASES = load_cases()


@pytest.fixture(scope="module")
def held():
    return [(c.id, case_features(onnx_qtypes.load(str(c.model_path)), c.feeds())) for c in CASES]


def test_every_value_of_every_field_has_a_case(held):
    counts = matrix(held)
    assert missing(counts) == []
    assert all(counts[f][v] > 0 for f, values in REQUIRED.items() for v in values)


def test_the_required_values_are_the_types_own_tables():
    assert set(REQUIRED["storage"]) == set(STORAGE_TYPES)
    assert set(REQUIRED["expressed"]) == set(EXPRESSED_TYPES)
    assert set(REQUIRED["schema"]) == set(REQUIRED["dynamic schema"]) == {s.name.lower() for s in Schema}
    assert {f"{op} weight" for op in WEIGHT_READERS} <= set(REQUIRED)
    assert set(REQUIRED["version"]) == {"absent", "1", "2", "3"}


def test_a_missing_value_is_reported():
    counts = matrix([("only", {("storage", "int8")})])
    assert ("storage", "uint8") in missing(counts) and ("storage", "int8") not in missing(counts)


def test_case_tags_are_what_the_model_holds():
    """Tags are derived from the same reading as the matrix (case.schema.json): recomputed, they are the case's."""
    for case in CASES[::25]:
        model = onnx_qtypes.load(str(case.model_path))
        tags = case_tags(model, case.operator, case.feeds(), [f for f in case.tags["feature"]])
        assert tags == case.tags, case.id


def test_every_case_carries_the_decided_tags():
    required = {"operator", "storage", "expressed", "granularity", "schema", "range", "scale_sign", "parameters",
                "version", "feature"}
    for case in CASES:
        assert required <= set(case.tags), case.id
        model = onnx.load(str(case.model_path), load_external_data=False)
        weights = {n for node in model.graph.node for i in WEIGHT_READERS.get(node.op_type, ())
                   for n in node.input[i:i + 1]} & {t.name for t in model.graph.initializer}
        if weights & set(onnx_qtypes.quantized_tensors(onnx_qtypes.load(str(case.model_path)))):
            assert {"weight_storage", "weight_granularity"} <= set(case.tags), case.id


def test_the_status_page_shows_the_matrix():
    page = (ROOT / "proposal" / "status.md").read_text(encoding="utf-8")
    section = "\n".join(coverage_section(CASES))
    assert section in page
    assert "| storage | int2 " in section and "Every value has a case." in section


def test_unsupported_reasons_keep_rule_ids_and_type_names():
    """The bug status.md showed: every digit became N (QTN, intN:floatN)."""
    key = normalize_message("QT120 expressed-type-too-narrow: int16:float16 scale[0] = 0.5, zero_point[0] = -3: "
                      "|q - zero_point| reaches 32771 > 2^10 in 'w'")
    assert key.startswith("QT120 expressed-type-too-narrow: int16:float16 scale[N] = N, zero_point[N] = N")
    assert "32771" not in key and "'…'" in key and "reaches N > N^N" in key


def test_the_schema_lists_every_tag_value_the_cases_use():
    schema = json.loads((ROOT / "conformance_tests" / "case.schema.json").read_text())
    tags = schema["$defs"]["execution"]["properties"]["tags"]["properties"]
    for case in CASES:
        for key in ("storage", "weight_storage", "granularity", "weight_granularity", "range", "scale_sign",
                    "parameters", "version"):
            if key in case.tags:
                allowed = tags[key]["enum"] if "$ref" not in tags[key] else \
                    schema["$defs"][tags[key]["$ref"].rsplit("/", 1)[1]]["enum"]
                assert case.tags[key] in allowed, (case.id, key)
