"""The published results: committed records of the current suite, every failure explained, the page in sync.

The records hold what vendor runtimes computed when they were recorded; these tests never rerun a vendor to
compare with them (vendors change their kernels). They check the records are complete and well formed, that
every failure and error has a known explanation for its backend and version, and that proposal/status.md is
what the records render to.
"""

from __future__ import annotations

import copy
import json
import re

import pytest

from onnx_qtypes.conformance import FAIL, PASS, iter_cases, load_cases
from onnx_qtypes.conformance.execution_cases import REJECT_ROOT
from onnx_qtypes.conformance.status import (
    COMMAND,
    DEVIATIONS,
    PAGE,
    RESULTS,
    Deviation,
    StatusError,
    explain,
    load_deviations,
    load_records,
    load_vendor_records,
    render,
    render_page,
    suite_digest,
)


@pytest.fixture(scope="module")
def cases():
    return load_cases()


@pytest.fixture(scope="module")
def records():
    return load_records()


@pytest.fixture(scope="module")
def deviations():
    return load_deviations()


def test_status_page_is_what_the_records_render_to():
    assert PAGE.read_text(encoding="utf-8") == render_page(), f"proposal/status.md is stale: run {COMMAND} --render-only"


def test_every_named_backend_has_a_record_of_the_current_suite(cases, records):
    digest = suite_digest(cases)
    names = {r["backend"] for r in records}
    assert {"reference", "reference-integer", "onnxruntime", "onnxruntime-unoptimized", "openvino", "tract",
            "iree"} <= names
    ids = {c.id for c in cases}
    for rec in records:
        assert rec["suite"]["digest"] == digest, f"{rec['_path']} was recorded on another suite: rerun {COMMAND}"
        assert set(rec["outcomes"]) == ids, rec["_path"]
        assert sum(rec["summary"].values()) == len(ids)
        assert set(rec["details"]) == {i for i, o in rec["outcomes"].items() if o != PASS}


def test_the_reference_records_pass_every_case(records):
    for rec in records:
        if rec["backend"].startswith("reference"):
            assert set(rec["outcomes"].values()) == {PASS}, rec["_path"]


def test_every_failure_and_error_is_explained(records, deviations):
    for rec in records:
        _, unexplained = explain(rec, deviations)
        assert not unexplained, f"{rec['_path']}: no deviation in deviations.json explains {unexplained[:5]}"


def test_every_deviation_explains_cases_of_its_record_and_reproduces_on_one(records, deviations):
    by_key = {(r["backend"], r["version"].split("-")[0]): r for r in records}
    for dev in deviations:
        rec = by_key.get((dev.backend, dev.version.split("-")[0]))
        assert rec is not None, f"{dev.backend} {dev.version}: no record"
        explained, _ = explain(rec, [dev])
        ids = explained.get(dev, [])
        assert ids, f"{dev.kind} ({dev.backend} {dev.version}): explains no failing case"
        assert dev.reproduction in ids, f"{dev.reproduction} is not one of the cases {dev.explanation[:40]!r} explains"
        messages = {i: rec["details"].get(i, {}).get("message", "") for i in rec["outcomes"]}  # "" for a pass
        matched = [i for i in rec["outcomes"] if dev.matches(rec["backend"], rec["version"], i, message=messages[i])]
        passing = [i for i in matched if rec["outcomes"][i] == PASS]
        assert not passing, f"{dev.cases} also match passing cases {passing[:3]}: the pattern is too wide"


def test_a_new_vendor_version_shows_as_a_changed_table_and_unexplained_failures(cases, records, deviations):
    ort = next(r for r in records if r["backend"] == "onnxruntime")
    newer = copy.deepcopy(ort)
    newer["version"] = "99.0.0"
    first_pass = next(i for i, o in newer["outcomes"].items() if o == PASS)
    newer["outcomes"][first_pass] = FAIL
    newer["details"][first_pass] = {"max_steps": 3, "elements": 1, "message": "output 'y': 1 element 3 steps off"}
    newer["summary"] = {**newer["summary"], PASS: newer["summary"][PASS] - 1, FAIL: newer["summary"][FAIL] + 1}
    page = render(cases, [*records, newer], deviations)
    assert "| onnxruntime | 99.0.0 |" in page and "onnxruntime 99.0.0" in page
    section = page.split("### onnxruntime 99.0.0", 1)[1].split("###", 1)[0]
    assert "not yet explained" in section and first_pass in section
    _, unexplained = explain(newer, deviations)
    assert first_pass in unexplained and len(unexplained) == newer["summary"][FAIL] + newer["summary"]["error"]


@pytest.fixture(scope="module")
def reject_cases():
    return list(iter_cases(REJECT_ROOT, kinds=("reject",)))


def test_every_record_holds_every_must_reject_case(records, reject_cases):
    digest = suite_digest(reject_cases)
    for rec in records:
        part = rec["reject"]
        assert part["digest"] == digest, f"{rec['_path']}: must-reject cases of another suite: rerun {COMMAND}"
        assert set(part["outcomes"]) == {c.id for c in reject_cases}, rec["_path"]
        assert sum(part["summary"].values()) == len(reject_cases)


def test_the_page_shows_what_each_backend_did_with_the_must_reject_cases(cases, records, reject_cases):
    page = PAGE.read_text(encoding="utf-8")
    assert "## Must-reject cases" in page and "| `reject-zero-scale` | QT101 |" in page
    ran = copy.deepcopy(next(r for r in records if r["backend"] == "reference"))
    ran["reject"]["outcomes"]["reject-zero-scale"] = FAIL  # a reader that ran a model it must refuse
    ran["reject"]["summary"][PASS] -= 1
    ran["reject"]["summary"][FAIL] += 1
    section = render(cases, [ran], [], (), reject_cases).split("## Must-reject cases", 1)[1].split("\n## ", 1)[0]
    assert f"| reference | {ran['version']} | {len(reject_cases) - 1} | 1 | 0 | 0 |" in section
    assert "| `reject-zero-scale` | QT101 | **ran it** |" in section
    assert "reject-zero-scale" in explain(ran, [])[1]  # and it is a failure to explain like any other


def test_a_record_of_another_suite_is_marked_stale(cases, records):
    rec = copy.deepcopy(records[0])
    rec["suite"]["digest"] = "0" * 64
    assert "(stale: recorded on another version of the suite)" in render(cases, [rec], [])


def test_deviation_patterns_are_keyed_by_backend_and_version():
    dev = Deviation("openvino", "openvino", "2026.4.1", ("clip-*",), "rounding mode", "x", "y", "clip-int8")
    assert dev.matches("openvino", "2026.4.1-22982-e213a147257-releases/2026/4", "clip-int8-float32-per-tensor")
    assert not dev.matches("openvino", "2026.5.0", "clip-int8-float32-per-tensor")
    assert not dev.matches("onnxruntime", "2026.4.1", "clip-int8-float32-per-tensor")
    assert not dev.matches("openvino", "2026.4.1", "relu-int8-float32-per-tensor")


def test_a_deviation_with_a_message_pattern_explains_only_cases_whose_message_matches(records):
    tract = next(r for r in records if r["backend"] == "tract")
    dev = Deviation("sonos", "tract", tract["version"], ("*",), "unsupported type", "x", "y",
                    "relu-int4-float32-per-tensor", message="Unknown DatumType U?[Ii]nt4")
    explained, unexplained = explain(tract, [dev])
    assert "relu-int4-float32-per-tensor" in explained[dev] and "relu-int2-float32-per-tensor" in unexplained
    assert all("Int4" in tract["details"][i]["message"] or "Uint4" in tract["details"][i]["message"]
               for i in explained[dev])
    # without a message to test (a caller that has none), the case-id pattern alone decides
    assert dev.matches("tract", tract["version"], "relu-int2-float32-per-tensor")


@pytest.mark.parametrize("content, words", [
    ("{", "not readable JSON"),
    ('{"deviations": {}}', "'deviations' list"),
    ('{"deviations": [{"vendor": "v"}]}', "needs vendor"),
    ('{"deviations": [{"vendor": "v", "backend": "b", "version": "1", "cases": ["a"], "kind": "bad luck", '
     '"explanation": "e", "evidence": "e", "reproduction": "a"}]}', "kind 'bad luck'"),
    ('{"deviations": [{"vendor": "v", "backend": "b", "version": "1", "cases": [], "kind": "rounding mode", '
     '"explanation": "e", "evidence": "e", "reproduction": "a"}]}', "case-id patterns"),
    ('{"deviations": [{"vendor": "v", "backend": "b", "version": "1", "cases": ["*"], "kind": "rounding mode", '
     '"explanation": "e", "evidence": "e", "reproduction": "a", "message": "Unknown (DatumType"}]}',
     "message: not a regular expression"),
    ('{"deviations": [{"vendor": "v", "backend": "b", "version": "1", "cases": ["*"], "kind": "rounding mode", '
     '"explanation": "e", "evidence": "e", "reproduction": "a", "script": "/tmp/repro.py"}]}',
     "script: '/tmp/repro.py' is not a .py file relative to the repository root"),
    ('{"deviations": [{"vendor": "v", "backend": "b", "version": "1", "cases": ["*"], "kind": "rounding mode", '
     '"explanation": "e", "evidence": "e", "reproduction": "a", "script": "r.py", "fixed": ">=1.0,"}]}',
     "fixed: '>=1.0,' has an empty clause"),
    ('{"deviations": [{"vendor": "v", "backend": "b", "version": "1", "cases": ["*"], "kind": "rounding mode", '
     '"explanation": "e", "evidence": "e", "reproduction": "a", "outcomes": ["pass"]}]}',
     "outcomes: a list of 'fail' and / or 'error'"),
])
def test_a_broken_deviations_file_is_a_located_error(tmp_path, content, words):
    path = tmp_path / "deviations.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(StatusError, match=words.replace("(", r"\(")) as info:
        load_deviations(path)
    assert str(path) in str(info.value)


def test_a_broken_record_is_a_located_error(tmp_path):
    (tmp_path / "x-1.json").write_text(json.dumps({"format": 99}), encoding="utf-8")
    with pytest.raises(StatusError, match="x-1.json: not a format-1 results record"):
        load_records(tmp_path)


def test_the_page_shows_the_fused_kernel_records():
    page = PAGE.read_text(encoding="utf-8")
    for vendor in load_vendor_records():
        assert f"{vendor['vendor']} {vendor['version']}" in page
        for entry in vendor["deviations"]:
            assert f"`{entry['id']}`" in page


def test_the_deviations_file_is_in_the_results_folder():
    assert DEVIATIONS.parent == RESULTS and DEVIATIONS.is_file()


def test_the_rfc_results_table_is_the_records_summary(records):
    """proposal/0001-... copies the summary of status.md into its Results table; a re-recorded vendor must show
    there too, not only on the generated page."""
    rfc = (PAGE.parent / "0001-quantized-element-types.md").read_text(encoding="utf-8")
    table = rfc.split("**Results**", 1)[1].split("\n\n", 2)[1]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    copied = sorted((version, *map(int, counts)) for _, version, *counts in rows)
    recorded = sorted((rec["version"].split("-")[0], *(rec["summary"].get(k, 0) for k in (PASS, FAIL, "unsupported",
                                                                                          "error")))
                      for rec in records)
    assert copied == recorded, "the RFC's Results table differs from conformance_tests/results/: copy proposal/status.md"


def test_a_deviation_reach_in_steps_is_printed_whole_or_to_three_digits_as_a_reader_compares_it():
    page = PAGE.read_text(encoding="utf-8")
    reaches = re.findall(r"up to ([^ ]+) step\(s\)", page)
    assert reaches, "the page names no deviation's reach"
    for reach in reaches:  # 766, 0.00485: never the 16 digits of a float's repr
        value = float(reach)
        assert value > 0 and (reach.isdigit() if value >= 100 else float(f"{value:.3g}") == value), reach
