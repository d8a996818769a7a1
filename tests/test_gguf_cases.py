"""The LLM weight-format conformance cases (gguf-*): what their generator writes, valid against the case schema,
and passed by the reference (both kernel modes) and by onnxruntime on their standard-ONNX form."""

from __future__ import annotations

import json

import jsonschema
import pytest
from builders import ROOT, load_script

import onnx_qtypes
from onnx_qtypes.checker import iter_diagnostics
from onnx_qtypes.conformance import ReferenceBackend, load_cases, run_suite

FOLDER = ROOT / "conformance_tests" / "cases" / "execution"
SCHEMA = json.loads((ROOT / "conformance_tests" / "case.schema.json").read_text())
GENERATOR = "conformance_tests/generators/gguf_cases.py"


def _files(folder) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.relative_to(folder).parts[0].startswith("gguf-")}


@pytest.fixture(scope="module")
def cases():
    return [c for c in load_cases() if c.id.startswith("gguf-")]


def test_committed_cases_are_what_the_generator_writes(tmp_path):
    written = load_script(GENERATOR).write(tmp_path)
    fresh, committed = _files(tmp_path), _files(FOLDER)
    assert sorted(fresh) == sorted(committed), f"run python {GENERATOR}"
    for name, data in fresh.items():
        assert data == committed[name], f"{name} is stale: run python {GENERATOR}"
    assert written == 2 * len(load_script(GENERATOR).formats()) == 28  # a Gather and a MatMul per format


def test_every_case_is_valid_and_checks_clean(cases):
    assert {c.id for c in cases} >= {"gguf-matmul-q4_k", "gguf-gather-q4_k", "gguf-matmul-nf4", "gguf-gather-mxfp4"}
    for case in cases:
        jsonschema.validate(case.metadata, SCHEMA)
        assert case.metadata["tags"]["version"] == 3 and "llm-format" in case.metadata["tags"]["feature"]
        errors = [d for d in iter_diagnostics(onnx_qtypes.load(case.model_path)) if d.severity.value == "error"]
        assert not errors, (case.id, [str(d) for d in errors[:2]])
        assert case.metadata["tolerance"]["y"] == (0 if case.operator == "Gather" else 1)


@pytest.mark.parametrize("kernels", ["definitional", "integer"])
def test_the_reference_passes_every_case(cases, kernels):
    results = run_suite(ReferenceBackend(kernels), cases=cases)
    assert {r.outcome for r in results} == {"pass"}, [(r.id, r.message) for r in results if r.outcome != "pass"]


def test_onnxruntime_passes_every_standard_form(cases):
    pytest.importorskip("onnxruntime")
    from onnx_qtypes.conformance import OnnxRuntimeBackend  # noqa: PLC0415

    results = run_suite(OnnxRuntimeBackend(optimize=False), cases=cases)
    assert {r.outcome for r in results} == {"pass"}, [(r.id, r.message) for r in results if r.outcome != "pass"]
